//! Query-string filters shared by read APIs: each named parameter at most once (else 400
//! `invalid_parameter`), and times given as RFC 3339 or epoch milliseconds.
//!
//! Invariants: parameters a handler does not name are ignored here (the list convention of
//! `page.rs` reads `limit` and `cursor` from the same string); a value is never echoed back.

use std::collections::HashMap;

use super::error::{ApiError, ErrorCode};
use crate::clock::Timestamp;

/// 400 `invalid_parameter` with `detail`.
pub fn parameter_error(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParameter, detail)
}

/// The parameters of `query` among `names` (each at most once).
pub fn filters(query: Option<&str>, names: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let mut found = HashMap::new();
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if names.contains(&name.as_ref())
            && found.insert(name.to_string(), value.into_owned()).is_some()
        {
            return Err(parameter_error(format!("{name}: given more than once")));
        }
    }
    Ok(found)
}

/// The time filter `name` (`from`, `to`): RFC 3339 or non-negative epoch milliseconds.
pub fn time_filter(
    filters: &HashMap<String, String>,
    name: &str,
) -> Result<Option<Timestamp>, ApiError> {
    let Some(text) = filters.get(name) else {
        return Ok(None);
    };
    let parsed = match text.parse::<i64>() {
        Ok(ms) if ms >= 0 => Some(Timestamp(ms)),
        Ok(_) => None,
        Err(_) => Timestamp::parse_rfc3339(text),
    };
    parsed
        .map(Some)
        .ok_or_else(|| parameter_error(format!("{name}: expected RFC 3339 or epoch milliseconds")))
}

/// The list order `order`: `oldest` (the default) or `newest`; answers whether newest first.
pub fn newest_first(filters: &HashMap<String, String>) -> Result<bool, ApiError> {
    match filters.get("order").map(String::as_str) {
        None | Some("" | "oldest") => Ok(false),
        Some("newest") => Ok(true),
        Some(_) => Err(parameter_error("order: oldest or newest")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_names_are_refused_and_times_parse_both_ways() {
        assert!(filters(Some("from=1&from=2"), &["from"]).is_err());
        let found = filters(
            Some("from=1000&to=2026-11-22T12:00:00Z&x=1"),
            &["from", "to"],
        )
        .unwrap();
        assert_eq!(time_filter(&found, "from").unwrap(), Some(Timestamp(1000)));
        assert!(time_filter(&found, "to").unwrap().is_some());
        assert!(!found.contains_key("x"));
        let bad = filters(Some("from=-5"), &["from"]).unwrap();
        assert!(time_filter(&bad, "from").is_err());
    }

    #[test]
    fn order_is_oldest_unless_newest_is_asked() {
        let order = |query: &str| newest_first(&filters(Some(query), &["order"]).unwrap());
        assert!(!order("").unwrap());
        assert!(!order("order=oldest").unwrap());
        assert!(order("order=newest").unwrap());
        assert!(order("order=latest").is_err());
    }
}
