//! The telemetry age index that retention walks: one row per stored telemetry record, keyed
//! by its age and the record's kind. Here, below the capabilities, because each capability
//! that stores such records writes their age rows in its own transactions, and retention
//! walks them all. The store knows no record: a kind is an opaque tag its owner defines.
//!
//! Invariants: every stored telemetry record is named by exactly one row in `TELEMETRY_AGES`,
//! by its age (the earlier of the client's time and the arrival time, so a client cannot date
//! an item into the future to escape retention). A row is either a record's own, keyed
//! `{age}/{kind tag}/{record key}` with an empty value, or a bundle: the records of one kind
//! written in one transaction whose ages fall in one second, at most `BUNDLE_MAX` of them,
//! keyed `{newest age among them}/{kind tag}/{first record key}` with their keys as the value,
//! one per line. A bundle is one row where a record each would be as many rows spread over the
//! newest keys, which every transaction would otherwise rewrite; it expires when its newest
//! record does, at most a second after the oldest. Whoever replaces or removes a record with
//! its own row moves or removes that row in the same transaction; a bundle may name a record
//! removed since, which retention then finds gone.

use redb::WriteTransaction;

use super::tables::{self, time_key};
use super::{IndexTable, IndexWriter, ReadTxn, StoreError};
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

/// Most records named by one bundle row: retention rewrites a bundle it takes only part of,
/// so this bounds that rewrite.
pub const BUNDLE_MAX: usize = 1024;

/// The age rows of records of `kind` written in one transaction, as `(age, record key)`:
/// bundled per second of age (see the invariants), in `ages` held open for the batch.
pub fn put_ages_bundled<K: AsRef<str>>(
    ages: &mut IndexWriter<'_>,
    kind: Kind,
    records: &[(Timestamp, K)],
) -> Result<(), StoreError> {
    let mut by_second: std::collections::BTreeMap<i64, Vec<(Timestamp, &str)>> =
        std::collections::BTreeMap::new();
    for (age, key) in records {
        by_second
            .entry(age.unix_millis().div_euclid(1000))
            .or_default()
            .push((*age, key.as_ref()));
    }
    for bundle in by_second
        .values()
        .flat_map(|second| second.chunks(BUNDLE_MAX))
    {
        // `chunks` yields no empty slice.
        let newest = bundle
            .iter()
            .map(|(age, _)| *age)
            .fold(Timestamp(i64::MIN), Timestamp::max);
        let keys: Vec<&str> = bundle.iter().map(|(_, key)| *key).collect();
        ages.insert(&age_key(kind, newest, keys[0]), &keys.join("\n"))?;
    }
    Ok(())
}

pub fn put_age(
    txn: &WriteTransaction,
    kind: Kind,
    age: Timestamp,
    record_key: &str,
) -> Result<(), StoreError> {
    TELEMETRY_AGES.insert(txn, &age_key(kind, age, record_key), "")
}

/// Removes the record's own age row. A bundle whose key the record's happens to be (its first
/// record, at the bundle's newest age) is kept: it names other records, and the retention
/// that removes the record forgets it in the bundle (`forget_taken`).
pub fn remove_age(
    txn: &WriteTransaction,
    kind: Kind,
    age: Timestamp,
    record_key: &str,
) -> Result<(), StoreError> {
    let key = age_key(kind, age, record_key);
    if TELEMETRY_AGES
        .get(txn, &key)?
        .is_some_and(|bundled| bundled.is_empty())
    {
        TELEMETRY_AGES.remove(txn, &key)?;
    }
    Ok(())
}

/// An item older than a cutoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub age_key: String,
    pub kind: Kind,
    pub record_key: String,
}

/// Up to `limit` items aged strictly before `cutoff`, oldest first, each with the row naming
/// it (a bundle's records share its row). A row whose tag is none of `kinds` is corrupt. Rows
/// are read only until `limit` items are found: a bundle names up to `BUNDLE_MAX` of them.
pub fn expired(
    txn: &impl ReadTxn,
    (cutoff, kinds): (Timestamp, &[Kind]),
    limit: usize,
) -> Result<Vec<Expired>, StoreError> {
    let bound = time_key(cutoff);
    let mut found = Vec::new();
    let table = txn.open(TELEMETRY_AGES.definition())?;
    if limit == 0 {
        return Ok(found);
    }
    table.walk(std::ops::Bound::Unbounded, |key, bundled| {
        let mut parts = key.splitn(3, '/');
        let (Some(age), Some(kind), Some(record_key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupt(key));
        };
        if age >= bound.as_str() {
            return Ok(false);
        }
        let kind = *kinds
            .iter()
            .find(|known| known.as_str() == kind)
            .ok_or_else(|| corrupt(key))?;
        // A record's own row names it in its key; a bundle's value names its records.
        let records = if bundled.is_empty() {
            record_key
        } else {
            bundled
        };
        let wanted = limit - found.len();
        found.extend(records.split('\n').take(wanted).map(|record_key| Expired {
            kind,
            record_key: record_key.to_string(),
            age_key: key.to_string(),
        }));
        Ok(found.len() < limit)
    })?;
    Ok(found)
}

/// Removes the rows naming `taken` (from `expired`, whose records the caller removed), or,
/// for a bundle taken only in part, keeps the row with the records not taken.
pub fn forget_taken(txn: &WriteTransaction, taken: &[Expired]) -> Result<(), StoreError> {
    let mut rows: std::collections::BTreeMap<&str, std::collections::HashSet<&str>> =
        std::collections::BTreeMap::new();
    for item in taken {
        rows.entry(item.age_key.as_str())
            .or_default()
            .insert(item.record_key.as_str());
    }
    let mut table = TELEMETRY_AGES.writer(txn)?;
    for (age_key, gone) in rows {
        // A record's own row (an empty value) goes with its record.
        let left: Vec<String> = match table.get(age_key)? {
            Some(bundled) => bundled
                .split('\n')
                .filter(|key| !key.is_empty() && !gone.contains(key))
                .map(str::to_string)
                .collect(),
            None => continue,
        };
        if left.is_empty() {
            table.remove(age_key)?;
        } else {
            table.insert(age_key, &left.join("\n"))?;
        }
    }
    Ok(())
}

fn corrupt(key: &str) -> StoreError {
    StoreError::Corrupt {
        what: "telemetry age key",
        detail: key.to_string(),
    }
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
    #[test]
    fn bundles_name_their_records_until_all_are_taken_and_split_at_their_bound() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        let own = "org_A/evt_0";
        put_age(&txn, EVENT, Timestamp(500), own).unwrap();
        // Three records in second 1 (newest 1_900), one in second 2, and BUNDLE_MAX + 1 in
        // second 5, which take two rows.
        let many: Vec<String> = (0..=BUNDLE_MAX)
            .map(|n| format!("org_A/evt_m{n:05}"))
            .collect();
        let mut records = vec![
            (Timestamp(1_900), "org_A/evt_1"),
            (Timestamp(1_100), "org_A/evt_2"),
            (Timestamp(2_050), "org_A/evt_3"),
            (Timestamp(1_500), "org_A/evt_4"),
        ];
        records.extend(many.iter().map(|key| (Timestamp(5_000), key.as_str())));
        let mut rows = TELEMETRY_AGES.writer(&txn).unwrap();
        put_ages_bundled(&mut rows, EVENT, &records).unwrap();
        drop(rows);
        assert_eq!(TELEMETRY_AGES.row_count(&txn).unwrap(), 5);
        let keys = |found: &[Expired]| -> Vec<String> {
            found.iter().map(|e| e.record_key.clone()).collect()
        };

        // A bundle is due only once its newest record is: at 1_900 none of second 1 is.
        let due = expired(&txn, (Timestamp(1_900), &KINDS), 10).unwrap();
        assert_eq!(keys(&due), [own]);
        // Taken in part: the row keeps the rest.
        let due = expired(&txn, (Timestamp(1_901), &KINDS), 3).unwrap();
        assert_eq!(keys(&due), [own, "org_A/evt_1", "org_A/evt_2"]);
        forget_taken(&txn, &due).unwrap();
        let due = expired(&txn, (Timestamp(1_901), &KINDS), 10).unwrap();
        assert_eq!(keys(&due), ["org_A/evt_4"]);
        forget_taken(&txn, &due).unwrap();
        assert!(
            expired(&txn, (Timestamp(1_901), &KINDS), 10)
                .unwrap()
                .is_empty()
        );

        let due = expired(&txn, (Timestamp(9_000), &KINDS), 5_000).unwrap();
        assert_eq!(due.len(), 1 + BUNDLE_MAX + 1);
        assert_eq!(due[0].record_key, "org_A/evt_3");
        let rows_of_many: std::collections::BTreeSet<&str> =
            due[1..].iter().map(|e| e.age_key.as_str()).collect();
        assert_eq!(rows_of_many.len(), 2, "a bundle holds at most BUNDLE_MAX");
        forget_taken(&txn, &due).unwrap();
        assert_eq!(TELEMETRY_AGES.row_count(&txn).unwrap(), 0);
    }

    /// A bundle names up to `BUNDLE_MAX` records: rows are read only until `limit` are found,
    /// not `limit` rows (each copied whole). A row after them, here one no kind claims, is
    /// not even read.
    #[test]
    fn rows_are_read_only_until_the_limit_is_found() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        let keys: Vec<String> = (0..5).map(|n| format!("org_A/evt_{n}")).collect();
        let records: Vec<_> = keys.iter().map(|key| (Timestamp(1_000), key)).collect();
        let mut rows = TELEMETRY_AGES.writer(&txn).unwrap();
        put_ages_bundled(&mut rows, EVENT, &records).unwrap();
        drop(rows);
        put_age(&txn, SPAN, Timestamp(2_000), "org_A/t/s").unwrap();
        let due = expired(&txn, (Timestamp(9_000), &[EVENT]), 3).unwrap();
        let found: Vec<&str> = due.iter().map(|e| e.record_key.as_str()).collect();
        assert_eq!(found, &keys[..3]);
        assert!(expired(&txn, (Timestamp(9_000), &[EVENT]), 6).is_err());
    }
}
