//! Copies every table seen by one read transaction into a fresh redb file, and counts rows.
//!
//! Invariants: the source is read only through the caller's `ReadTransaction`, so the copy is
//! one consistent point in time while writers go on (redb MVCC); only tables of
//! `tables::ALL` are copied, and a source holding any other table is refused rather than
//! copied partly; the copy is durable (its last commit is `Durability::Immediate`) and is then
//! reopened and counted, so a copy that lost rows is never packed into a backup.

use std::collections::BTreeMap;
use std::path::Path;

use redb::{
    Database, Durability, MultimapTableHandle, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, Table, TableDefinition, TableHandle, Value,
};

use super::{Phase, Progress, ProgressFn, SnapshotError};
use crate::store::codec;
use crate::store::tables::{self, TableSpec, ValueKind};

/// Rows copied per intermediate (non-durable) commit: bounds the copy's dirty pages in memory.
const ROWS_PER_COMMIT: u64 = 16 * 1024;
/// Rows between two progress reports.
const ROWS_PER_REPORT: u64 = 2048;

/// Rows per table name.
pub type Counts = BTreeMap<String, u64>;

/// The tables present in `txn`, each with its entry of `tables::ALL`.
pub fn present_tables(txn: &ReadTransaction) -> Result<Vec<TableSpec>, SnapshotError> {
    let mut present = Vec::new();
    for table in txn.list_tables().map_err(store_error)? {
        let spec = tables::spec(table.name())
            .ok_or_else(|| SnapshotError::UnknownTable(table.name().to_string()))?;
        // The segments' state describes files a backup does not hold: its records are copied
        // whole (`copy_into`), and a restored store starts without segments.
        if spec.name != tables::SEGMENT_STATE {
            present.push(spec);
        }
    }
    if let Some(table) = txn.list_multimap_tables().map_err(store_error)?.next() {
        return Err(SnapshotError::UnknownTable(table.name().to_string()));
    }
    present.sort_by_key(|spec| spec.name);
    Ok(present)
}

/// Counts the rows of every table present in `txn`.
pub fn count_rows(txn: &ReadTransaction) -> Result<Counts, SnapshotError> {
    let mut counts = Counts::new();
    for spec in present_tables(txn)? {
        let rows = match spec.value {
            ValueKind::Bytes => txn.open_table(bytes_table(spec.name)).map(|t| t.len()),
            ValueKind::Text => txn.open_table(text_table(spec.name)).map(|t| t.len()),
        }
        .map_err(store_error)?
        .map_err(store_error)?;
        counts.insert(spec.name.to_string(), rows);
    }
    Ok(counts)
}

/// Copies the tables of `source` into a new database at `destination` and checks the copy
/// against `counts` (taken by the caller in the same transaction).
pub fn copy_into(
    source: &ReadTransaction,
    counts: &Counts,
    destination: &Path,
    progress: ProgressFn<'_>,
) -> Result<(), SnapshotError> {
    let total: u64 = counts.values().sum();
    let database = Database::create(destination).map_err(store_error)?;
    let mut copied = 0u64;
    for spec in present_tables(source)? {
        let mut rows = Rows {
            copied: &mut copied,
            total,
            progress,
        };
        match spec.value {
            ValueKind::Bytes if spec.name == tables::EVENTS => copy_table(
                source,
                &database,
                bytes_table(spec.name),
                &mut rows,
                |target, key, value| {
                    let whole = codec::inline(value).map_err(SnapshotError::Store)?;
                    target.insert(key, whole.as_ref()).map_err(store_error)?;
                    Ok(())
                },
            )?,
            ValueKind::Bytes => copy_table(
                source,
                &database,
                bytes_table(spec.name),
                &mut rows,
                |target, key, value| {
                    target.insert(key, value).map_err(store_error)?;
                    Ok(())
                },
            )?,
            ValueKind::Text => copy_table(
                source,
                &database,
                text_table(spec.name),
                &mut rows,
                |target, key, value| {
                    target.insert(key, value).map_err(store_error)?;
                    Ok(())
                },
            )?,
        }
    }
    // One last durable commit makes every earlier non-durable one durable too.
    let mut txn = database.begin_write().map_err(store_error)?;
    txn.set_durability(Durability::Immediate)
        .map_err(|err| SnapshotError::Check(err.to_string()))?;
    txn.commit().map_err(store_error)?;
    drop(database);

    report(progress, Phase::Checking, 0, total)?;
    let found = count_file(destination)?;
    if &found != counts {
        return Err(SnapshotError::Check(format!(
            "the copy holds {found:?} rows but the snapshot counted {counts:?}"
        )));
    }
    report(progress, Phase::Checking, total, total)
}

/// Opens the database file at `path` read-only and counts its rows per table.
pub fn count_file(path: &Path) -> Result<Counts, SnapshotError> {
    let database = redb::ReadOnlyDatabase::open(path).map_err(store_error)?;
    let txn = database.begin_read().map_err(store_error)?;
    count_rows(&txn)
}

/// The copy's progress over every table.
struct Rows<'a, 'p> {
    copied: &'a mut u64,
    total: u64,
    progress: ProgressFn<'p>,
}

/// Copies one table, each row with `insert`, committing every `ROWS_PER_COMMIT` rows without
/// fsync.
fn copy_table<V: Value + 'static>(
    source: &ReadTransaction,
    destination: &Database,
    definition: TableDefinition<'static, &'static str, V>,
    rows_done: &mut Rows<'_, '_>,
    mut insert: impl for<'v> FnMut(
        &mut Table<'_, &'static str, V>,
        &str,
        V::SelfType<'v>,
    ) -> Result<(), SnapshotError>,
) -> Result<(), SnapshotError> {
    let (copied, total) = (&mut *rows_done.copied, rows_done.total);
    let progress = &mut *rows_done.progress;
    let table = source.open_table(definition).map_err(store_error)?;
    let mut rows = table.iter().map_err(store_error)?;
    loop {
        let mut txn = destination.begin_write().map_err(store_error)?;
        txn.set_durability(Durability::None)
            .map_err(|err| SnapshotError::Check(err.to_string()))?;
        let mut in_this_commit = 0u64;
        let mut exhausted = true;
        {
            // Opening the table even when it is empty recreates empty tables in the copy.
            let mut target = txn.open_table(definition).map_err(store_error)?;
            for row in rows.by_ref() {
                let (key, value) = row.map_err(store_error)?;
                insert(&mut target, key.value(), value.value())?;
                *copied += 1;
                in_this_commit += 1;
                if copied.is_multiple_of(ROWS_PER_REPORT) {
                    report(progress, Phase::Copying, *copied, total)?;
                }
                if in_this_commit == ROWS_PER_COMMIT {
                    exhausted = false;
                    break;
                }
            }
        }
        txn.commit().map_err(store_error)?;
        if exhausted {
            return report(progress, Phase::Copying, *copied, total);
        }
    }
}

fn report(
    progress: ProgressFn<'_>,
    phase: Phase,
    done: u64,
    total: u64,
) -> Result<(), SnapshotError> {
    progress(Progress { phase, done, total })
}

fn bytes_table(name: &'static str) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

fn text_table(name: &'static str) -> TableDefinition<'static, &'static str, &'static str> {
    TableDefinition::new(name)
}

/// Classifies any redb error the way the store does (disk trouble versus everything else).
pub(super) fn store_error(err: impl Into<redb::Error>) -> SnapshotError {
    SnapshotError::Store(match err.into() {
        redb::Error::Io(io) => crate::store::StoreError::Unavailable(io.to_string()),
        other => crate::store::StoreError::Storage(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated(path: &Path) -> Database {
        let database = Database::create(path).unwrap();
        crate::store::migrations::migrate(&database).unwrap();
        database
    }

    #[test]
    fn copy_holds_every_row_of_the_snapshot_even_across_commits() {
        let dir = tempfile::tempdir().unwrap();
        let source = migrated(&dir.path().join("source.redb"));
        let txn = source.begin_write().unwrap();
        {
            let mut orgs = txn.open_table(bytes_table(tables::ORGS)).unwrap();
            let mut names = txn.open_table(text_table(tables::ORG_NAMES)).unwrap();
            for index in 0..(ROWS_PER_COMMIT + 10) {
                let key = format!("org_{index:08}");
                orgs.insert(key.as_str(), [1u8, 2, 3].as_slice()).unwrap();
                names
                    .insert(format!("name{index}").as_str(), key.as_str())
                    .unwrap();
            }
        }
        txn.commit().unwrap();

        let snapshot = source.begin_read().unwrap();
        // A write after the snapshot began must not appear in the copy.
        let late = source.begin_write().unwrap();
        late.open_table(bytes_table(tables::ORGS))
            .unwrap()
            .insert("org_late", [9u8].as_slice())
            .unwrap();
        late.commit().unwrap();

        let counts = count_rows(&snapshot).unwrap();
        assert_eq!(counts[tables::ORGS], ROWS_PER_COMMIT + 10);
        assert_eq!(counts[tables::USERS], 0, "empty tables are listed too");
        let mut reports = Vec::new();
        let copy = dir.path().join("copy.redb");
        copy_into(&snapshot, &counts, &copy, &mut |p| {
            reports.push(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(count_file(&copy).unwrap(), counts);
        let last_copy = reports
            .iter()
            .rev()
            .find(|p| p.phase == Phase::Copying)
            .unwrap();
        assert_eq!(last_copy.done, last_copy.total);
        assert_eq!(reports.last().unwrap().phase, Phase::Checking);
    }

    #[test]
    fn unknown_tables_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let source = migrated(&dir.path().join("source.redb"));
        let txn = source.begin_write().unwrap();
        txn.open_table(bytes_table("from_the_future")).unwrap();
        txn.commit().unwrap();
        let snapshot = source.begin_read().unwrap();
        match count_rows(&snapshot) {
            Err(SnapshotError::UnknownTable(name)) => assert_eq!(name, "from_the_future"),
            other => panic!("expected an unknown-table error, got {other:?}"),
        }
    }

    #[test]
    fn a_cancelled_copy_stops() {
        let dir = tempfile::tempdir().unwrap();
        let source = migrated(&dir.path().join("source.redb"));
        let snapshot = source.begin_read().unwrap();
        let counts = count_rows(&snapshot).unwrap();
        let result = copy_into(
            &snapshot,
            &counts,
            &dir.path().join("copy.redb"),
            &mut |_| Err(SnapshotError::Cancelled),
        );
        assert!(matches!(result, Err(SnapshotError::Cancelled)));
    }
}
