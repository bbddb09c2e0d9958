//! The telemetry age index that retention walks: one row per stored telemetry record, keyed
//! by its age and the record's kind. Here, below the capabilities, because each capability
//! that stores such records writes their age rows in its own transactions, and retention
//! walks them all. The store knows no record: a kind is an opaque tag its owner defines.
//!
//! Invariants: every stored telemetry record has exactly one row in `TELEMETRY_AGES`, keyed
//! `{age}/{kind tag}/{record key}` by its age (the earlier of the client's time and the arrival
//! time, so a client cannot date an item into the future to escape retention); whoever
//! replaces or removes a record moves or removes its age row in the same transaction.

use redb::WriteTransaction;

use super::tables::{self, time_key};
use super::{IndexTable, IndexWriter, ReadTxn, Scan, StoreError};
use crate::clock::Timestamp;

pub const TELEMETRY_AGES: IndexTable = IndexTable::new(tables::TELEMETRY_AGES);

/// What an age row points at: a short tag the capability that owns the record chooses
/// (stored in the row's key, so a tag never changes once rows carry it). The store keeps
/// tags opaque; retention hands back each expired row's tag for its owner to act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind(&'static str);

impl Kind {
    /// A tag of letters only (the key's `/` separates it from the age and the record key).
    pub const fn new(tag: &'static str) -> Kind {
        Kind(tag)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

/// The age of an item: the earlier of its own time and its arrival.
pub fn age_of(client_time: Timestamp, received_at: Timestamp) -> Timestamp {
    client_time.min(received_at)
}

fn age_key(kind: Kind, age: Timestamp, record_key: &str) -> String {
    format!("{}/{}/{record_key}", time_key(age), kind.as_str())
}

/// `put_age` through a table held open for a batch.
pub fn put_age_with(
    ages: &mut IndexWriter<'_>,
    kind: Kind,
    age: Timestamp,
    record_key: &str,
) -> Result<(), StoreError> {
    ages.insert(&age_key(kind, age, record_key), "")
}

pub fn put_age(
    txn: &WriteTransaction,
    kind: Kind,
    age: Timestamp,
    record_key: &str,
) -> Result<(), StoreError> {
    TELEMETRY_AGES.insert(txn, &age_key(kind, age, record_key), "")
}

pub fn remove_age(
    txn: &WriteTransaction,
    kind: Kind,
    age: Timestamp,
    record_key: &str,
) -> Result<(), StoreError> {
    TELEMETRY_AGES.remove(txn, &age_key(kind, age, record_key))?;
    Ok(())
}

/// An item older than a cutoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub age_key: String,
    pub kind: Kind,
    pub record_key: String,
}

/// Up to `limit` items aged strictly before `cutoff`, oldest first. A row whose tag is none
/// of `kinds` is corrupt.
pub fn expired(
    txn: &impl ReadTxn,
    (cutoff, kinds): (Timestamp, &[Kind]),
    limit: usize,
) -> Result<Vec<Expired>, StoreError> {
    let bound = time_key(cutoff);
    let mut found = Vec::new();
    let scan = Scan {
        prefix: "",
        after: None,
        limit,
    };
    for (key, _) in TELEMETRY_AGES.scan(txn, scan)? {
        let mut parts = key.splitn(3, '/');
        let (Some(age), Some(kind), Some(record_key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupt(&key));
        };
        if age >= bound.as_str() {
            break;
        }
        let kind = *kinds
            .iter()
            .find(|known| known.as_str() == kind)
            .ok_or_else(|| corrupt(&key))?;
        found.push(Expired {
            kind,
            record_key: record_key.to_string(),
            age_key: key.clone(),
        });
    }
    Ok(found)
}

fn corrupt(key: &str) -> StoreError {
    StoreError::Corrupt {
        what: "telemetry age key",
        detail: key.to_string(),
    }
}

/// Removes the age row itself (the caller removed what it pointed at).
pub fn remove_age_key(txn: &WriteTransaction, age_key: &str) -> Result<(), StoreError> {
    TELEMETRY_AGES.remove(txn, age_key)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: Kind = Kind::new("evt");
    const SESSION: Kind = Kind::new("ses");
    const SPAN: Kind = Kind::new("spn");
    const KINDS: [Kind; 3] = [EVENT, SESSION, SPAN];

    #[test]
    fn ages_sort_by_time_and_round_trip() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        put_age(&txn, SPAN, Timestamp(3_000), "org_A/t/s").unwrap();
        put_age(&txn, EVENT, Timestamp(1_000), "org_A/evt_1").unwrap();
        put_age(&txn, SESSION, Timestamp(2_000), "org_A/s/1").unwrap();
        let found = expired(&txn, (Timestamp(3_000), &KINDS), 10).unwrap();
        let kinds: Vec<_> = found
            .iter()
            .map(|e| (e.kind, e.record_key.as_str()))
            .collect();
        assert_eq!(kinds, [(EVENT, "org_A/evt_1"), (SESSION, "org_A/s/1")]);
        assert_eq!(
            expired(&txn, (Timestamp(9_000), &KINDS), 1).unwrap().len(),
            1
        );
        remove_age(&txn, EVENT, Timestamp(1_000), "org_A/evt_1").unwrap();
        assert_eq!(
            expired(&txn, (Timestamp(3_000), &KINDS), 10).unwrap().len(),
            1
        );
        assert_eq!(age_of(Timestamp(5), Timestamp(3)), Timestamp(3));
        // A tag nobody claims is corrupt, not skipped.
        assert!(expired(&txn, (Timestamp(9_000), &[EVENT]), 10).is_err());
    }
}
