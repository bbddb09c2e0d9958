//! Prefixed, time-sortable identifiers (CONTRACT.md section 1): `usr_01J…`.
//!
//! Invariant: an id is its type prefix followed by a 26-character ULID in upper-case Crockford
//! base32, and ids made by one process sort in creation order (a monotonic generator is shared
//! process-wide, so two ids minted in the same millisecond still sort by creation).

use std::sync::Mutex;

use ulid::{Generator, Ulid};

/// The process-wide monotonic generator behind every new id.
static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

/// A fresh ULID, strictly greater than every one this process made before.
pub fn next_ulid() -> Ulid {
    let mut guard = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let generator = guard.get_or_insert_with(Generator::new);
    // The generator only fails when 2^80 ids were made in one millisecond; fall back to a
    // plain (still time-ordered) ULID rather than fail the caller.
    generator.generate().unwrap_or_else(|_| Ulid::generate())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed id: expected {prefix} followed by a 26-character ulid")]
pub struct IdError {
    pub prefix: &'static str,
}

/// Checks `text` is `prefix` + a canonical ULID.
pub fn validate(prefix: &'static str, text: &str) -> Result<(), IdError> {
    let rest = text.strip_prefix(prefix).ok_or(IdError { prefix })?;
    let canonical = rest.len() == 26
        && rest
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
        && Ulid::from_string(rest).is_ok();
    if canonical {
        Ok(())
    } else {
        Err(IdError { prefix })
    }
}

/// Declares a string-backed id newtype with its prefix, generation, parsing and serde.
#[macro_export]
macro_rules! typed_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A new id, sorting after every id this process made before.
            pub fn generate() -> Self {
                $name(format!("{}{}", $prefix, $crate::store::ids::next_ulid()))
            }

            pub fn parse(text: &str) -> Result<Self, $crate::store::ids::IdError> {
                $crate::store::ids::validate($prefix, text)?;
                Ok($name(text.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::store::ids::IdError;
            fn try_from(text: String) -> Result<Self, Self::Error> {
                $crate::store::ids::validate($prefix, &text)?;
                Ok($name(text))
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

#[cfg(test)]
mod tests {
    typed_id!(TestId, "tst_");

    #[test]
    fn generated_ids_sort_in_creation_order() {
        let ids: Vec<TestId> = (0..1000).map(|_| TestId::generate()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert!(ids[0].as_str().starts_with("tst_"));
        assert_eq!(ids[0].as_str().len(), 4 + 26);
    }

    #[test]
    fn parse_rejects_wrong_prefix_and_shapes() {
        let good = TestId::generate();
        assert_eq!(TestId::parse(good.as_str()).unwrap(), good);
        let bad = [
            "",
            "tst_",
            "usr_01JD0000000000000000000000",
            "tst_01jd0000000000000000000000",
            "tst_01JD000000000000000000000",
            "tst_01JD00000000000000000000000",
            "tst_01JD00000000000000000000U0",
        ];
        for text in bad {
            assert!(TestId::parse(text).is_err(), "{text:?} should be rejected");
        }
    }

    #[test]
    fn serde_round_trip_validates() {
        let id = TestId::generate();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<TestId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<TestId>("\"tst_nope\"").is_err());
    }
}
