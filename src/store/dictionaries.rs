//! Compression dictionaries for records: zstd dictionaries trained on an owner's own records
//! (an organisation's error events, `errors/dictionary.rs`), stored in `RECORD_DICTIONARIES`
//! and held, prepared for use, in a process-wide registry that the codec reads.
//!
//! A record of a few kilobytes compressed on its own keeps most of its size: the frame has no
//! history to match against. With a dictionary made from the same kind of records (the same
//! stack frames, URLs, user agents), each record compresses to a fifth of that, and can still
//! be read alone.
//!
//! Invariants:
//! - A dictionary's id is the first 8 bytes of the SHA-256 of its bytes, so an id names the
//!   same dictionary in every store a process opens, and the registry is a cache of content,
//!   never of state that two stores could disagree on.
//! - A dictionary is registered (and may be used to encode) only after the transaction that
//!   stores it committed: no record on disk names a dictionary the disk does not hold.
//! - Dictionaries are never removed: records compressed with one may outlive every newer
//!   one. Prepared dictionaries (about 200 KB each) live as long as the process; their owner
//!   keeps their number small (`errors/dictionary.rs`: ten in ten years).
//! - Every stored dictionary is registered when the store opens (`load_all`), before any read.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use redb::{TableDefinition, WriteTransaction};
use sha2::{Digest, Sha256};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

use super::{ReadTxn, Scan, StoreError, tables};
use crate::clock::Timestamp;

/// zstd level used with a dictionary (as for records without one, `codec.rs`): matches are
/// found as at level 1 and literals are stored as they are.
const LEVEL: i32 = -1;
/// The stored form's version byte: `[1][trained_at ms, i64 LE][dictionary]`.
const STORED_VERSION: u8 = 1;

/// One dictionary, prepared for compressing and decompressing.
pub struct Dictionary {
    id: u64,
    trained_at: Timestamp,
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

impl Dictionary {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the dictionary was trained.
    pub fn trained_at(&self) -> Timestamp {
        self.trained_at
    }

    pub(super) fn encoder(&self) -> &EncoderDictionary<'static> {
        &self.encoder
    }

    pub(super) fn decoder(&self) -> &DecoderDictionary<'static> {
        &self.decoder
    }
}

#[derive(Default)]
struct Registry {
    by_id: HashMap<u64, &'static Dictionary>,
    /// Each owner's newest dictionary, the one new records are compressed with.
    current: HashMap<String, &'static Dictionary>,
    /// How many dictionaries each owner has.
    held: HashMap<String, usize>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(RwLock::default);

fn registry() -> std::sync::RwLockReadGuard<'static, Registry> {
    REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The dictionary named `id`, if this process holds it.
pub fn by_id(id: u64) -> Option<&'static Dictionary> {
    registry().by_id.get(&id).copied()
}

/// The dictionary `owner`'s new records are compressed with, if it has one.
pub fn current(owner: &str) -> Option<&'static Dictionary> {
    registry().current.get(owner).copied()
}

/// How many dictionaries `owner` has (its current one and those before it).
pub fn held(owner: &str) -> usize {
    registry().held.get(owner).copied().unwrap_or(0)
}

/// The id of `bytes` as a dictionary.
pub fn id_of(bytes: &[u8]) -> u64 {
    let digest = Sha256::digest(bytes);
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes of a digest"))
}

/// Registers `bytes` (trained at `trained_at`) as a dictionary of `owner`, current unless the
/// owner already has a newer one. Registering the same dictionary again changes nothing.
fn register(owner: &str, bytes: &[u8], trained_at: Timestamp) -> Result<u64, StoreError> {
    let id = id_of(bytes);
    let mut registry = REGISTRY.write().unwrap_or_else(|p| p.into_inner());
    let dictionary = match registry.by_id.get(&id) {
        Some(known) => *known,
        None => {
            *registry.held.entry(owner.to_string()).or_default() += 1;
            let corrupt = |err: std::io::Error| StoreError::Corrupt {
                what: "record dictionary",
                detail: format!("cannot prepare dictionary {id:016x}: {err}"),
            };
            let prepared = Dictionary {
                id,
                trained_at,
                encoder: EncoderDictionary::try_copy(bytes, LEVEL).map_err(corrupt)?,
                decoder: DecoderDictionary::try_copy(bytes).map_err(corrupt)?,
            };
            let leaked: &'static Dictionary = Box::leak(Box::new(prepared));
            registry.by_id.insert(id, leaked);
            leaked
        }
    };
    let newer_held = registry
        .current
        .get(owner)
        .is_some_and(|held| held.trained_at > dictionary.trained_at);
    if !newer_held {
        registry.current.insert(owner.to_string(), dictionary);
    }
    Ok(id)
}

fn definition() -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(tables::RECORD_DICTIONARIES)
}

/// Stores `bytes` as a dictionary of `owner` in `txn`; returns its id. Register it with
/// `activate` once `txn` committed.
pub fn put(
    txn: &WriteTransaction,
    owner: &str,
    bytes: &[u8],
    trained_at: Timestamp,
) -> Result<u64, StoreError> {
    let id = id_of(bytes);
    let mut stored = Vec::with_capacity(9 + bytes.len());
    stored.push(STORED_VERSION);
    stored.extend_from_slice(&trained_at.0.to_le_bytes());
    stored.extend_from_slice(bytes);
    let key = tables::composite_key(owner, &format!("{id:016x}"));
    txn.open_table(definition())?
        .insert(key.as_str(), stored.as_slice())?;
    Ok(id)
}

/// Makes a dictionary stored by `put` (and committed) the current one of `owner`.
pub fn activate(owner: &str, bytes: &[u8], trained_at: Timestamp) -> Result<u64, StoreError> {
    register(owner, bytes, trained_at)
}

/// Registers every stored dictionary (the store does this when it opens); how many.
pub fn load_all(txn: &impl ReadTxn) -> Result<usize, StoreError> {
    let stored = txn
        .open(definition())?
        .scan_with(Scan::all(), |key, value| {
            let corrupt = |detail: String| StoreError::Corrupt {
                what: "record dictionary",
                detail,
            };
            let (owner, _) = tables::split_composite_key(key)
                .ok_or_else(|| corrupt(format!("key {key:?} has no owner")))?;
            let (trained_at, bytes) = parse_stored(value).ok_or_else(|| {
                corrupt(format!(
                    "dictionary {key:?} is cut short or of an unknown version"
                ))
            })?;
            register(owner, bytes, trained_at)
        })?;
    Ok(stored.len())
}

fn parse_stored(value: &[u8]) -> Option<(Timestamp, &[u8])> {
    let (&version, rest) = value.split_first()?;
    if version != STORED_VERSION {
        return None;
    }
    let (at, bytes) = rest.split_at_checked(8)?;
    let at = i64::from_le_bytes(at.try_into().ok()?);
    (!bytes.is_empty()).then_some((Timestamp(at), bytes))
}

/// A dictionary trained on `count` JSON records like error events (for tests).
#[cfg(test)]
pub(crate) fn sample_dictionary(seed: &str, count: usize) -> Vec<u8> {
    let samples: Vec<Vec<u8>> = (0..count)
        .map(|n| {
            format!(
                r#"{{"id":"evt_{n:06}","message":"TypeError {seed} {n}","stack":"at render (https://app.example.com/assets/{seed}.js:{n}:20)\nat commit (https://app.example.com/assets/vendor.js:1:{n})","url":"https://app.example.com/checkout/{n}","user_agent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0"}}"#
            )
            .into_bytes()
        })
        .collect();
    zstd::dict::from_samples(&samples, 16 * 1024).expect("a dictionary")
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableDatabase;

    #[test]
    fn stored_dictionaries_load_and_the_newest_is_current() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let owner = format!("org_{}", id_of(b"owner-1"));
        let (old, new) = (sample_dictionary("old", 300), sample_dictionary("new", 300));
        let txn = database.begin_write().unwrap();
        let old_id = put(&txn, &owner, &old, Timestamp(1_000)).unwrap();
        let new_id = put(&txn, &owner, &new, Timestamp(2_000)).unwrap();
        txn.commit().unwrap();
        assert!(current(&owner).is_none(), "registered only when loaded");
        let txn = database.begin_read().unwrap();
        assert_eq!(load_all(&txn).unwrap(), 2);
        assert_eq!(current(&owner).unwrap().id(), new_id);
        assert_eq!(held(&owner), 2);
        assert_eq!(by_id(old_id).unwrap().trained_at(), Timestamp(1_000));
        // An older dictionary registered later does not displace the newer one.
        activate(&owner, &old, Timestamp(1_000)).unwrap();
        assert_eq!(current(&owner).unwrap().id(), new_id);
        assert_eq!(held(&owner), 2, "the same dictionary is counted once");
    }

    #[test]
    fn damaged_stored_dictionaries_are_refused() {
        assert!(parse_stored(&[]).is_none());
        assert!(parse_stored(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 1]).is_none());
        assert!(parse_stored(&[1, 0, 0, 0]).is_none());
        assert!(parse_stored(&[1, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert_eq!(
            parse_stored(&[1, 5, 0, 0, 0, 0, 0, 0, 0, 9]),
            Some((Timestamp(5), &[9u8][..]))
        );
        assert!(register("o", b"not a dictionary but raw content", Timestamp(0)).is_ok());
    }
}
