//! The telemetry age index that retention walks: one row per stored error event, session and
//! span, keyed by its age. Here, below the capabilities, because the one that stores a record
//! (error events in `errors`, sessions and spans in `ingest`) writes its age row in the same
//! transaction, and `ingest::retention` walks them all.
//!
//! Invariants: every stored event, session and span has exactly one row in `TELEMETRY_AGES`,
//! keyed by its age (the earlier of the client's time and the arrival time, so a client cannot
//! date an item into the future to escape retention); whoever replaces or removes a record
//! moves or removes its age row in the same transaction.

use redb::WriteTransaction;

use super::tables::{self, time_key};
use super::{IndexTable, IndexWriter, ReadTxn, Scan, StoreError};
use crate::clock::Timestamp;

pub const TELEMETRY_AGES: IndexTable = IndexTable::new(tables::TELEMETRY_AGES);

/// What an age row points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Event,
    Session,
    Span,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Event => "evt",
            Kind::Session => "ses",
            Kind::Span => "spn",
        }
    }

    fn parse(text: &str) -> Option<Kind> {
        match text {
            "evt" => Some(Kind::Event),
            "ses" => Some(Kind::Session),
            "spn" => Some(Kind::Span),
            _ => None,
        }
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

/// Up to `limit` items aged strictly before `cutoff`, oldest first.
pub fn expired(
    txn: &impl ReadTxn,
    cutoff: Timestamp,
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
        let kind = Kind::parse(kind).ok_or_else(|| corrupt(&key))?;
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

    #[test]
    fn ages_sort_by_time_and_round_trip() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        put_age(&txn, Kind::Span, Timestamp(3_000), "org_A/t/s").unwrap();
        put_age(&txn, Kind::Event, Timestamp(1_000), "org_A/evt_1").unwrap();
        put_age(&txn, Kind::Session, Timestamp(2_000), "org_A/s/1").unwrap();
        let found = expired(&txn, Timestamp(3_000), 10).unwrap();
        let kinds: Vec<_> = found
            .iter()
            .map(|e| (e.kind, e.record_key.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [(Kind::Event, "org_A/evt_1"), (Kind::Session, "org_A/s/1")]
        );
        assert_eq!(expired(&txn, Timestamp(9_000), 1).unwrap().len(), 1);
        remove_age(&txn, Kind::Event, Timestamp(1_000), "org_A/evt_1").unwrap();
        assert_eq!(expired(&txn, Timestamp(3_000), 10).unwrap().len(), 1);
        assert_eq!(age_of(Timestamp(5), Timestamp(3)), Timestamp(3));
    }
}
