//! Flags, experiments and exposures: stored records and the pure rules about them.
//!
//! Invariants: names and keys are 1–64 characters of `[A-Za-z0-9_.:-]`, so they can sit in
//! composite keys (no `/`); an experiment has at least one variant, unique variant keys and a
//! positive total weight; a visitor is stored only as a digest and counts once per experiment,
//! variant and UTC day.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Timestamp;
use crate::ingest::item::{Item, Slot};
use crate::store::codec::Record;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub name: String,
    pub value: Value,
    pub updated_at: Timestamp,
}

impl Record for Flag {
    const KIND: &'static str = "flag";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Variant {
    pub key: String,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub key: String,
    pub variants: Vec<Variant>,
    pub active: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Finished: off, left out of `ab-config`, its results kept (deleting removes them).
    /// Absent in experiments stored before archiving existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
}

impl Record for Experiment {
    const KIND: &'static str = "experiment";
}

/// Unique visitors of one experiment, variant and day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ExposureCount {
    pub visitors: u64,
}

impl Record for ExposureCount {
    const KIND: &'static str = "exposure count";
}

/// One validated exposure from `POST /ingest/ab-uniques`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    pub experiment: String,
    pub variant: String,
    /// Hex SHA-256 of the visitor id (the id itself is never stored).
    pub visitor_digest: String,
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
}

/// Checks a flag name, experiment key or variant key.
pub fn validate_key(what: &str, key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} must be 1 to 64 characters of A-Z a-z 0-9 _ . : -"
        ))
    }
}

pub fn validate_variants(variants: &[Variant]) -> Result<(), String> {
    if variants.is_empty() || variants.len() > 100 {
        return Err("an experiment has 1 to 100 variants".into());
    }
    let mut seen = std::collections::HashSet::new();
    for variant in variants {
        validate_key("variant key", &variant.key)?;
        if !seen.insert(variant.key.as_str()) {
            return Err(format!("variant {:?} appears twice", variant.key));
        }
    }
    if variants.iter().map(|v| u64::from(v.weight)).sum::<u64>() == 0 {
        return Err("the variant weights add up to zero".into());
    }
    Ok(())
}

/// The UTC day of an instant, `YYYY-MM-DD`.
pub fn utc_day(at: Timestamp) -> String {
    at.to_rfc3339()[..10].to_string()
}

/// Reads one exposure item; `now` dates items without a timestamp.
pub fn parse_exposure(item: &Item<'_>, now: Timestamp) -> Result<Exposure, String> {
    let text = |field: &str| -> Result<&str, String> {
        item.get(field)
            .and_then(Slot::as_str)
            .ok_or_else(|| format!("{field} must be a string"))
    };
    let experiment = text("experiment")?;
    let variant = text("variant")?;
    let visitor = text("visitor_id")?;
    validate_key("experiment", experiment)?;
    validate_key("variant", variant)?;
    if visitor.is_empty() || visitor.len() > 256 {
        return Err("visitor_id must be 1 to 256 characters".into());
    }
    let at = match item.get("timestamp") {
        None => now,
        Some(slot) if slot.is_null() => now,
        Some(slot) => {
            parse_timestamp(slot).ok_or("timestamp must be RFC 3339 or epoch milliseconds")?
        }
    };
    Ok(Exposure {
        experiment: experiment.to_string(),
        variant: variant.to_string(),
        visitor_digest: crate::secrets::digest_hex(visitor),
        day: utc_day(at),
    })
}

/// RFC 3339 text or epoch milliseconds (CONTRACT section 1).
pub fn parse_timestamp(slot: &Slot<'_>) -> Option<Timestamp> {
    match slot {
        Slot::Text(text) => Timestamp::parse_rfc3339(text),
        Slot::Json(Value::Number(number)) => number.as_i64().filter(|ms| *ms >= 0).map(Timestamp),
        Slot::Json(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_and_variants() {
        assert!(validate_key("flag", "new-checkout.v2").is_ok());
        for bad in ["", "a/b", "space here", &"x".repeat(65)] {
            assert!(validate_key("flag", bad).is_err(), "{bad:?}");
        }
        let variant = |key: &str, weight| Variant {
            key: key.into(),
            weight,
        };
        assert!(validate_variants(&[variant("a", 1), variant("b", 0)]).is_ok());
        assert!(validate_variants(&[]).is_err());
        assert!(validate_variants(&[variant("a", 1), variant("a", 1)]).is_err());
        assert!(validate_variants(&[variant("a", 0)]).is_err());
    }

    #[test]
    fn exposures_are_dated_and_visitors_hashed() {
        let now = Timestamp(1_795_348_800_000);
        let item = json!({"experiment": "checkout", "variant": "b", "visitor_id": "v-1"});
        let exposure = parse_exposure(&Item::from(item.clone()), now).unwrap();
        assert_eq!(exposure.day, "2026-11-22");
        assert_eq!(exposure.visitor_digest.len(), 64);
        assert!(!exposure.visitor_digest.contains("v-1"));
        let dated =
            json!({"experiment": "checkout", "variant": "b", "visitor_id": "v-1", "timestamp": 0});
        assert_eq!(
            parse_exposure(&Item::from(dated.clone()), now).unwrap().day,
            "1970-01-01"
        );
        let dated = json!({"experiment": "checkout", "variant": "b", "visitor_id": "v-1", "timestamp": "2026-01-02T23:59:59+00:00"});
        assert_eq!(
            parse_exposure(&Item::from(dated.clone()), now).unwrap().day,
            "2026-01-02"
        );
        for bad in [
            json!({"variant": "b", "visitor_id": "v"}),
            json!({"experiment": "x", "variant": 3, "visitor_id": "v"}),
            json!({"experiment": "x", "variant": "b", "visitor_id": ""}),
            json!({"experiment": "x", "variant": "b", "visitor_id": "v", "timestamp": "soon"}),
        ] {
            assert!(
                parse_exposure(&Item::from(bad.clone()), now).is_err(),
                "{bad}"
            );
        }
    }
}
