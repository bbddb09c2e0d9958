//! Reading the fields of one ingested item (a JSON object, `item.rs`) into typed values, with
//! the reason an item is rejected when a field has the wrong type or shape.
//!
//! Invariants: a reason names the field and what was expected, never the value (it may be
//! personal data); identifiers that become parts of storage keys are 1–128 printable ASCII
//! characters without `/`, so composite keys stay unambiguous.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::item::{Item, Slot, lookup};
use crate::clock::Timestamp;

/// Longest client-chosen identifier (event, session, visitor ids).
pub const MAX_ID_LEN: usize = 128;
/// Longest name of a service, environment or release.
pub const MAX_NAME_LEN: usize = 200;

/// The fields of one item.
pub struct Fields<'a> {
    fields: &'a [(Cow<'a, str>, Slot<'a>)],
}

impl<'a> Fields<'a> {
    pub fn of(item: &'a Item<'a>) -> Result<Self, String> {
        match item.fields() {
            Some(fields) => Ok(Fields { fields }),
            None => Err("the item must be a JSON object".into()),
        }
    }

    fn present(&self, name: &str) -> Option<&'a Slot<'a>> {
        lookup(self.fields, name).filter(|slot| !slot.is_null())
    }

    /// A string field, absent or null meaning `None`. Copied out of the body's buffer (or the
    /// scrubbed text), beside the event's other copies (docs/benchmarks.md, step 12).
    pub fn text(&self, name: &str) -> Result<Option<String>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(Slot::Text(text)) => Ok(Some(text.to_string())),
            Some(Slot::Json(_)) => Err(format!("{name} must be a string")),
        }
    }

    pub fn required_text(&self, name: &str) -> Result<String, String> {
        match self.text(name)? {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Err(format!("{name} is required")),
        }
    }

    /// A service, environment or release name: 1–200 characters without control characters.
    pub fn name(&self, name: &str) -> Result<Option<String>, String> {
        let Some(text) = self.text(name)? else {
            return Ok(None);
        };
        valid_name(name, &text)?;
        Ok(Some(text))
    }

    pub fn required_name(&self, name: &str) -> Result<String, String> {
        self.name(name)?
            .ok_or_else(|| format!("{name} is required"))
    }

    /// A client identifier (see `valid_id`).
    pub fn id(&self, name: &str) -> Result<Option<String>, String> {
        let Some(text) = self.text(name)? else {
            return Ok(None);
        };
        valid_id(name, &text)?;
        Ok(Some(text))
    }

    /// RFC 3339 text or epoch milliseconds (CONTRACT section 1).
    pub fn timestamp(&self, name: &str) -> Result<Option<Timestamp>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(slot) => crate::ingest::experiments::model::parse_timestamp(slot)
                .map(Some)
                .ok_or_else(|| format!("{name} must be RFC 3339 text or epoch milliseconds")),
        }
    }

    pub fn required_timestamp(&self, name: &str) -> Result<Timestamp, String> {
        self.timestamp(name)?
            .ok_or_else(|| format!("{name} is required"))
    }

    /// A whole number of zero or more.
    pub fn count(&self, name: &str) -> Result<Option<u64>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(slot) => json_of(slot)
                .and_then(Value::as_u64)
                .map(Some)
                .ok_or_else(|| format!("{name} must be a whole number of zero or more")),
        }
    }

    /// A finite number of milliseconds, zero or more (fractions allowed).
    pub fn milliseconds(&self, name: &str) -> Result<Option<f64>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(slot) => json_of(slot)
                .and_then(Value::as_f64)
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .map(Some)
                .ok_or_else(|| format!("{name} must be a number of milliseconds, zero or more")),
        }
    }

    pub fn object(&self, name: &str) -> Result<Option<Map<String, Value>>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(Slot::Json(Value::Object(map))) => Ok(Some(map.clone())),
            Some(_) => Err(format!("{name} must be an object")),
        }
    }

    pub fn array(&self, name: &str) -> Result<Option<Vec<Value>>, String> {
        match self.present(name) {
            None => Ok(None),
            Some(Slot::Json(Value::Array(items))) => Ok(Some(items.clone())),
            Some(_) => Err(format!("{name} must be an array")),
        }
    }

    /// Any JSON value but null.
    pub fn value(&self, name: &str) -> Option<Value> {
        self.present(name).map(Slot::to_value)
    }
}

/// The JSON of a slot holding JSON other than a string.
fn json_of<'a>(slot: &'a Slot<'a>) -> Option<&'a Value> {
    match slot {
        Slot::Json(value) => Some(value),
        Slot::Text(_) => None,
    }
}

/// 1–128 printable ASCII characters other than `/` and space.
pub fn valid_id(what: &str, text: &str) -> Result<(), String> {
    let ok = !text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text.bytes().all(|b| b.is_ascii_graphic() && b != b'/');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} must be 1 to {MAX_ID_LEN} printable ASCII characters without / or spaces"
        ))
    }
}

/// 1–200 characters without control characters.
pub fn valid_name(what: &str, text: &str) -> Result<(), String> {
    let ok = !text.is_empty()
        && text.chars().count() <= MAX_NAME_LEN
        && !text.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} must be 1 to {MAX_NAME_LEN} characters without control characters"
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_are_typed_and_reasons_never_quote_values() {
        let item = Item::from(json!({"a": "x", "n": 3, "f": 1.5, "neg": -1,
            "t": "2026-11-22T12:00:00Z", "ms": 1795348800000u64, "bad": "secret@example.com",
            "o": {}, "null": null}));
        let fields = Fields::of(&item).unwrap();
        assert_eq!(fields.text("a").unwrap().as_deref(), Some("x"));
        assert_eq!(fields.text("null").unwrap(), None);
        assert_eq!(fields.count("n").unwrap(), Some(3));
        assert!(fields.count("neg").is_err() && fields.count("f").is_err());
        assert_eq!(fields.milliseconds("f").unwrap(), Some(1.5));
        assert_eq!(
            fields.timestamp("t").unwrap(),
            fields.timestamp("ms").unwrap()
        );
        let reason = fields.timestamp("bad").unwrap_err();
        assert!(!reason.contains("secret"), "{reason}");
        assert!(fields.object("o").unwrap().is_some() && fields.object("a").is_err());
        assert!(fields.required_text("missing").is_err());
        assert!(Fields::of(&Item::from(json!([1]))).is_err());
        assert!(fields.count("a").is_err() && fields.milliseconds("a").is_err());
        assert_eq!(fields.value("a"), Some(json!("x")));
    }

    #[test]
    fn ids_and_names() {
        assert!(valid_id("id", "3f2c-11:aa_b.c").is_ok());
        for bad in ["", "a/b", "a b", "é", &"x".repeat(129)] {
            assert!(valid_id("id", bad).is_err(), "{bad:?}");
        }
        assert!(valid_name("service", "checkout web (EU)").is_ok());
        assert!(valid_name("service", "a\nb").is_err());
    }
}
