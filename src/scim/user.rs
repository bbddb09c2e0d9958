//! The SCIM User resource of a member (RFC 7643 section 4.1): the attributes Lookout keeps,
//! read from a POST or PUT body, changed by a PATCH, and rendered for answers.
//!
//! Invariants: `userName` is required and at most 254 bytes; the account's e-mail is the
//! primary (or first) `emails` value, else `userName`, and must be an address; attributes
//! Lookout does not keep (titles, phone numbers, the enterprise extension …) are accepted and
//! ignored, as providers send them whatever the service supports; `id` and `meta` are never
//! taken from a client. Text attributes are trimmed and at most `MAX_TEXT` characters.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::patch::{self, Op, PatchOperation};
use super::protocol::{ScimError, USER_SCHEMA};

/// The longest text attribute kept.
pub const MAX_TEXT: usize = 256;

/// What a provider says about a user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAttributes {
    pub user_name: String,
    /// The primary e-mail the provider sent, if any.
    pub email: Option<String>,
    pub external_id: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub formatted_name: Option<String>,
    pub display_name: Option<String>,
    pub active: bool,
}

impl UserAttributes {
    /// The attributes of a POST or PUT body (a PUT replaces them all).
    pub fn from_resource(body: &Value) -> Result<UserAttributes, ScimError> {
        let object = body
            .as_object()
            .ok_or_else(|| ScimError::bad("invalidSyntax", "expected a User object"))?;
        let mut attributes = UserAttributes {
            active: true,
            ..UserAttributes::default()
        };
        attributes.set_all(object)?;
        if attributes.user_name.is_empty() {
            return Err(ScimError::bad("invalidValue", "userName: required"));
        }
        Ok(attributes)
    }

    /// Applies a PATCH's operations in order; nothing changes when one of them is refused.
    pub fn patched(&self, operations: &[PatchOperation]) -> Result<UserAttributes, ScimError> {
        let mut next = self.clone();
        for operation in operations {
            match (&operation.path, &operation.value) {
                (None, Some(Value::Object(values))) => next.set_all(values)?,
                (Some(path), Some(value)) => next.set(path, value)?,
                (Some(path), None) if operation.op == Op::Remove => next.remove(path)?,
                _ => {
                    return Err(ScimError::bad(
                        "invalidSyntax",
                        "an operation without a value",
                    ));
                }
            }
        }
        Ok(next)
    }

    /// The e-mail of the account this user is: the primary address, else `userName`.
    pub fn account_email(&self) -> &str {
        self.email.as_deref().unwrap_or(&self.user_name)
    }

    fn set_all(&mut self, values: &Map<String, Value>) -> Result<(), ScimError> {
        for (name, value) in values {
            self.set(name, value)?;
        }
        Ok(())
    }

    /// Sets one attribute (a path such as `name.givenName` or `emails[type eq "work"].value`).
    fn set(&mut self, path: &str, value: &Value) -> Result<(), ScimError> {
        let lower = path.to_ascii_lowercase();
        match lower.as_str() {
            "username" => self.user_name = required_text("userName", value)?,
            "externalid" => self.external_id = text("externalId", value)?,
            "displayname" => self.display_name = text("displayName", value)?,
            "active" => {
                self.active = patch::boolean(value)
                    .ok_or_else(|| ScimError::bad("invalidValue", "active: expected a boolean"))?;
            }
            "name" => {
                let parts = value
                    .as_object()
                    .ok_or_else(|| ScimError::bad("invalidValue", "name: expected an object"))?;
                for (part, value) in parts {
                    self.set(&format!("name.{part}"), value)?;
                }
            }
            "name.givenname" => self.given_name = text("name.givenName", value)?,
            "name.familyname" => self.family_name = text("name.familyName", value)?,
            "name.formatted" => self.formatted_name = text("name.formatted", value)?,
            "emails" => self.email = primary_email(value)?,
            _ if lower.starts_with("emails[") && lower.ends_with("].value") => {
                self.email = text("emails.value", value)?;
            }
            "id" | "meta" | "schemas" | "groups" | "password" => {}
            // Attributes Lookout does not keep (see the invariants).
            _ => {}
        }
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<(), ScimError> {
        let lower = path.to_ascii_lowercase();
        match lower.as_str() {
            "externalid" => self.external_id = None,
            "displayname" => self.display_name = None,
            "name" => (self.given_name, self.family_name, self.formatted_name) = (None, None, None),
            "name.givenname" => self.given_name = None,
            "name.familyname" => self.family_name = None,
            "name.formatted" => self.formatted_name = None,
            "emails" => self.email = None,
            _ if lower.starts_with("emails[") => self.email = None,
            "username" | "active" => {
                return Err(ScimError::bad(
                    "mutability",
                    format!("{path}: cannot be removed"),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The resource as answers show it.
    pub fn render(&self, id: &str, meta: Value) -> Value {
        let mut resource = json!({
            "schemas": [USER_SCHEMA],
            "id": id,
            "userName": self.user_name,
            "active": self.active,
            "emails": [{"value": self.account_email(), "type": "work", "primary": true}],
            "meta": meta,
        });
        let name: Map<String, Value> = [
            ("givenName", &self.given_name),
            ("familyName", &self.family_name),
            ("formatted", &self.formatted_name),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.as_ref().map(|value| (key.to_string(), json!(value))))
        .collect();
        if !name.is_empty() {
            resource["name"] = Value::Object(name);
        }
        if let Some(external_id) = &self.external_id {
            resource["externalId"] = json!(external_id);
        }
        if let Some(display_name) = &self.display_name {
            resource["displayName"] = json!(display_name);
        }
        resource
    }
}

/// An optional text attribute: null or blank is `None`.
fn text(name: &str, value: &Value) -> Result<Option<String>, ScimError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => {
            let text = text.trim();
            if text.chars().count() > MAX_TEXT {
                return Err(ScimError::bad(
                    "invalidValue",
                    format!("{name}: at most {MAX_TEXT} characters"),
                ));
            }
            Ok((!text.is_empty()).then(|| text.to_string()))
        }
        _ => Err(ScimError::bad(
            "invalidValue",
            format!("{name}: expected a string"),
        )),
    }
}

fn required_text(name: &str, value: &Value) -> Result<String, ScimError> {
    text(name, value)?.ok_or_else(|| ScimError::bad("invalidValue", format!("{name}: required")))
}

/// The primary address of an `emails` array (else its first).
fn primary_email(value: &Value) -> Result<Option<String>, ScimError> {
    let emails = value
        .as_array()
        .ok_or_else(|| ScimError::bad("invalidValue", "emails: expected an array"))?;
    let chosen = emails
        .iter()
        .find(|email| patch::boolean(&email["primary"]) == Some(true))
        .or_else(|| emails.first());
    match chosen {
        None => Ok(None),
        Some(email) => text("emails.value", &email["value"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scim::patch::parse;
    use crate::scim::protocol::PATCH_SCHEMA;

    fn okta_user() -> Value {
        json!({
            "schemas": [USER_SCHEMA],
            "userName": "ada@example.com",
            "name": {"givenName": "Ada", "familyName": "Lovelace"},
            "emails": [{"primary": true, "value": "ada@example.com", "type": "work"}],
            "displayName": "Ada Lovelace",
            "locale": "en-GB",
            "externalId": "00u1",
            "groups": [],
            "password": "ignored-never-stored",
            "active": true
        })
    }

    #[test]
    fn a_created_user_keeps_what_lookout_uses_and_ignores_the_rest() {
        let user = UserAttributes::from_resource(&okta_user()).unwrap();
        assert_eq!(user.user_name, "ada@example.com");
        assert_eq!(user.account_email(), "ada@example.com");
        assert_eq!(user.given_name.as_deref(), Some("Ada"));
        assert_eq!(user.external_id.as_deref(), Some("00u1"));
        assert!(user.active);
        let shown = user.render("usr_1", json!({"resourceType": "User"}));
        assert_eq!(shown["name"]["familyName"], "Lovelace");
        assert_eq!(shown["emails"][0]["value"], "ada@example.com");
        assert!(shown.get("password").is_none());
        for body in [
            json!({}),
            json!({"userName": "  "}),
            json!({"userName": 5}),
            json!([]),
        ] {
            assert!(UserAttributes::from_resource(&body).is_err(), "{body}");
        }
    }

    #[test]
    fn patches_as_okta_and_entra_send_them() {
        let user = UserAttributes::from_resource(&okta_user()).unwrap();
        let ops = |operations: Value| {
            parse(
                &json!({"schemas": [PATCH_SCHEMA], "Operations": operations}),
                USER_SCHEMA,
            )
            .unwrap()
        };
        let okta = user
            .patched(&ops(json!([{"op": "replace", "value": {"active": false}}])))
            .unwrap();
        assert!(!okta.active);
        let entra = user
            .patched(&ops(json!([
                {"op": "Replace", "path": "active", "value": "False"},
                {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "ada@example.org"},
                {"op": "Add", "path": "name.familyName", "value": "King"},
                {"op": "Remove", "path": "externalId"},
                {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "R&D"},
            ])))
            .unwrap();
        assert!(!entra.active);
        assert_eq!(entra.account_email(), "ada@example.org");
        assert_eq!(entra.family_name.as_deref(), Some("King"));
        assert_eq!(entra.external_id, None);
        // A refused operation changes nothing.
        let refused = user.patched(&ops(json!([
            {"op": "replace", "path": "displayName", "value": "Changed"},
            {"op": "remove", "path": "userName"},
        ])));
        assert!(refused.is_err());
        assert!(
            user.patched(&ops(
                json!([{"op": "replace", "path": "active", "value": "maybe"}])
            ))
            .is_err()
        );
    }
}
