//! The SCIM filters identity providers send before they create or link a resource
//! (RFC 7644 section 3.4.2.2): one `eq` comparison, such as `userName eq "ada@example.com"`
//! (Okta, Entra ID), `externalId eq "…"` (Entra ID) or `displayName eq "…"` (group push).
//!
//! Invariants: attribute names compare case-insensitively (as RFC 7643 section 2.1 says) and
//! come back in one spelling; any other filter (other operators, `and`/`or`, value paths) is
//! refused as `invalidFilter` rather than read loosely, so a provider never links the wrong
//! account.

/// The attributes a filter may compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterAttribute {
    UserName,
    ExternalId,
    DisplayName,
    /// `emails.value` or `emails[type eq "work"].value` as one: an account has one address.
    Email,
    Id,
}

/// One parsed `attribute eq "value"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub attribute: FilterAttribute,
    pub value: String,
}

/// Why a filter was refused (the detail of an `invalidFilter` error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter: {0}")]
pub struct FilterError(pub &'static str);

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let text = text.trim();
        // The attribute ends at the first blank outside a `[…]` value filter.
        let mut depth = 0u32;
        let end = text
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                depth == 0 && c.is_whitespace()
            })
            .map(|(at, _)| at)
            .ok_or(FilterError("expected `attribute eq \"value\"`"))?;
        let (attribute, rest) = text.split_at(end);
        let (operator, value) = rest
            .trim_start()
            .split_once(char::is_whitespace)
            .ok_or(FilterError("expected `attribute eq \"value\"`"))?;
        if !operator.eq_ignore_ascii_case("eq") {
            return Err(FilterError("only the eq operator is supported"));
        }
        let attribute = match attribute.to_ascii_lowercase().as_str() {
            "username" => FilterAttribute::UserName,
            "externalid" => FilterAttribute::ExternalId,
            "displayname" => FilterAttribute::DisplayName,
            "id" => FilterAttribute::Id,
            "emails" | "emails.value" | "emails[type eq \"work\"].value" => FilterAttribute::Email,
            _ => return Err(FilterError("unsupported attribute")),
        };
        Ok(Filter {
            attribute,
            value: quoted(value.trim())?,
        })
    }
}

/// The content of a JSON string literal, as filters write values.
fn quoted(text: &str) -> Result<String, FilterError> {
    if !(text.len() >= 2 && text.starts_with('"') && text.ends_with('"')) {
        return Err(FilterError("the value must be a quoted string"));
    }
    serde_json::from_str::<String>(text).map_err(|_| FilterError("the value is not a valid string"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_providers_send_are_read() {
        let cases = [
            (
                "userName eq \"ada@example.com\"",
                FilterAttribute::UserName,
                "ada@example.com",
            ),
            (
                "USERNAME EQ \"Ada@Example.com\"",
                FilterAttribute::UserName,
                "Ada@Example.com",
            ),
            (
                "externalId eq \"a1-b2\"",
                FilterAttribute::ExternalId,
                "a1-b2",
            ),
            (
                "displayName eq \"Lookout admins\"",
                FilterAttribute::DisplayName,
                "Lookout admins",
            ),
            (
                "emails[type eq \"work\"].value eq \"x@y.z\"",
                FilterAttribute::Email,
                "x@y.z",
            ),
            (
                "userName eq \"quote \\\" inside\"",
                FilterAttribute::UserName,
                "quote \" inside",
            ),
        ];
        for (text, attribute, value) in cases {
            let filter = Filter::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(
                (filter.attribute, filter.value.as_str()),
                (attribute, value),
                "{text}"
            );
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "",
            "userName",
            "userName eq",
            "userName ne \"a\"",
            "userName sw \"a\"",
            "userName eq a",
            "userName eq \"a\" and active eq true",
            "password eq \"a\"",
            "userName eq \"unterminated",
        ] {
            assert!(Filter::parse(text).is_err(), "{text}");
        }
    }
}
