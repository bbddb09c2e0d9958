//! The one versioned codec between stored records and bytes.
//!
//! Invariant: every stored record starts with a one-byte codec version; version 1 is JSON.
//! Records evolve by adding `#[serde(default)]` fields; a change that cannot be expressed that
//! way gets a migration, never a silent reinterpretation of old bytes.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

/// Version byte of records written by this binary.
pub const CODEC_VERSION: u8 = 1;

/// A type that is stored as a record (distinct from any wire type, see STYLE.md).
pub trait Record: Serialize + DeserializeOwned {
    /// A short name used in corruption reports, e.g. `"user"`.
    const KIND: &'static str;
}

pub fn encode<R: Record>(record: &R) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::with_capacity(128);
    bytes.push(CODEC_VERSION);
    serde_json::to_writer(&mut bytes, record).map_err(|err| StoreError::Corrupt {
        what: R::KIND,
        detail: format!("cannot encode: {err}"),
    })?;
    Ok(bytes)
}

pub fn decode<R: Record>(bytes: &[u8]) -> Result<R, StoreError> {
    match bytes.split_first() {
        Some((&CODEC_VERSION, body)) => {
            serde_json::from_slice(body).map_err(|err| StoreError::Corrupt {
                what: R::KIND,
                detail: format!("cannot decode: {err}"),
            })
        }
        Some((version, _)) => Err(StoreError::Corrupt {
            what: R::KIND,
            detail: format!("unknown codec version {version}"),
        }),
        None => Err(StoreError::Corrupt {
            what: R::KIND,
            detail: "empty record".to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        name: String,
        #[serde(default)]
        added_later: u32,
    }
    impl Record for Sample {
        const KIND: &'static str = "sample";
    }

    #[test]
    fn round_trips_and_tolerates_added_fields() {
        let sample = Sample {
            name: "a".into(),
            added_later: 7,
        };
        assert_eq!(decode::<Sample>(&encode(&sample).unwrap()).unwrap(), sample);
        let old = [&[CODEC_VERSION][..], br#"{"name":"old"}"#].concat();
        assert_eq!(
            decode::<Sample>(&old).unwrap(),
            Sample {
                name: "old".into(),
                added_later: 0
            }
        );
    }

    #[test]
    fn rejects_unknown_versions_and_garbage() {
        for bytes in [&b""[..], &b"\x02{}"[..], &b"\x01not json"[..]] {
            assert!(matches!(
                decode::<Sample>(bytes),
                Err(StoreError::Corrupt { .. })
            ));
        }
    }
}
