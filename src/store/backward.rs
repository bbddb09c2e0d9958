//! The one backward page scan: the newest-first lists walk a key range `[start, end)` of one
//! table last key first, from a cursor (the range's end) down, keep the rows a caller wants,
//! and stop at a page's worth of kept rows or after a bound on the rows read.
//!
//! Invariants: a walk reads at most `WalkBounds::rows` rows and keeps at most
//! `WalkBounds::kept`; when it stops early it names the last key it read, so the next page
//! starts strictly before that key and pages never overlap; the table is opened once and
//! dropped before the walk returns.

use std::ops::Bound;

use redb::{ReadableTable, TableDefinition, Value};

use super::table::OpenTable;
use super::{ReadTxn, StoreError};

/// When a backward walk stops: after `kept` rows were kept, or after `rows` rows were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkBounds {
    pub kept: usize,
    pub rows: usize,
}

impl WalkBounds {
    /// At most `limit` rows, each of them kept.
    pub fn rows(limit: usize) -> Self {
        WalkBounds {
            kept: usize::MAX,
            rows: limit,
        }
    }
}

/// Where a backward walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkEnd {
    /// The last key read when the walk stopped before the start of its range; the next page
    /// ends (exclusively) there. `None` when every row of the range was read.
    pub last_key: Option<String>,
}

impl WalkEnd {
    /// Every row of the range was read.
    pub fn complete(&self) -> bool {
        self.last_key.is_none()
    }
}

/// Walks the keys `[start, end)` of `table` last first, calling `visit(key, value)` on each
/// row read; `visit` answers whether it kept the row. Stops, naming the last key read, before
/// reading a row once `bounds.kept` rows were kept or `bounds.rows` rows were read.
pub fn walk_backwards<V: Value + 'static, E: From<StoreError>>(
    txn: &impl ReadTxn,
    table: TableDefinition<'static, &'static str, V>,
    (start, end): (&str, &str),
    bounds: WalkBounds,
    visit: impl FnMut(&str, V::SelfType<'_>) -> Result<bool, E>,
) -> Result<WalkEnd, E> {
    txn.open(table)?.walk_backwards((start, end), bounds, visit)
}

impl<V: Value + 'static> OpenTable<'_, V> {
    /// `walk_backwards` over a table already open.
    pub fn walk_backwards<E: From<StoreError>>(
        &self,
        (start, end): (&str, &str),
        bounds: WalkBounds,
        mut visit: impl FnMut(&str, V::SelfType<'_>) -> Result<bool, E>,
    ) -> Result<WalkEnd, E> {
        let range = (Bound::Included(start), Bound::Excluded(end));
        let range = match self {
            OpenTable::Read(table) => table.range::<&str>(range).map_err(StoreError::from)?,
            OpenTable::Write(table) => table.range::<&str>(range).map_err(StoreError::from)?,
        };
        let (mut kept, mut read, mut last_key) = (0, 0, None);
        for entry in range.rev() {
            if kept >= bounds.kept || read >= bounds.rows {
                return Ok(WalkEnd { last_key });
            }
            let (key, value) = entry.map_err(StoreError::from)?;
            read += 1;
            if visit(key.value(), value.value())? {
                kept += 1;
            }
            last_key = Some(key.value().to_string());
        }
        Ok(WalkEnd { last_key: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::migrations::scratch_database;
    use crate::store::tables;

    const TABLE: TableDefinition<'static, &'static str, &'static str> =
        TableDefinition::new(tables::TELEMETRY_AGES);

    /// Keys of `[start, end)` kept by `keep`, in walk order, and where the walk ended.
    fn walk(
        txn: &impl ReadTxn,
        (start, end): (&str, &str),
        bounds: WalkBounds,
        keep: impl Fn(&str) -> bool,
    ) -> (Vec<String>, WalkEnd) {
        let mut kept = Vec::new();
        let ended = walk_backwards(txn, TABLE, (start, end), bounds, |key, _| {
            let wanted = keep(key);
            if wanted {
                kept.push(key.to_string());
            }
            Ok::<_, StoreError>(wanted)
        })
        .unwrap();
        (kept, ended)
    }

    #[test]
    fn walks_last_first_and_stops_at_either_bound() {
        let (_dir, database) = scratch_database();
        let txn = database.begin_write().unwrap();
        {
            let mut table = txn.open_table(TABLE).unwrap();
            for key in ["a/1", "a/2", "a/3", "a/4", "a/5", "b/1"] {
                table.insert(key, "").unwrap();
            }
        }
        let every = |_: &str| true;
        let odd = |key: &str| key.ends_with(['1', '3', '5']);
        let whole = ("a/", "a0");

        // The whole range, newest first, complete.
        let (kept, ended) = walk(&txn, whole, WalkBounds::rows(10), every);
        assert_eq!(kept, ["a/5", "a/4", "a/3", "a/2", "a/1"]);
        assert!(ended.complete());

        // A page of two kept rows names the last key read; the next page ends there.
        let two = WalkBounds { kept: 2, rows: 10 };
        let (kept, ended) = walk(&txn, whole, two, odd);
        assert_eq!(
            (kept, ended.last_key.as_deref()),
            (vec!["a/5".into(), "a/3".into()], Some("a/3"))
        );
        let (kept, ended) = walk(&txn, ("a/", "a/3"), two, odd);
        assert_eq!((kept, ended.complete()), (vec!["a/1".to_string()], true));

        // The bound on rows read stops a walk that keeps little.
        let (kept, ended) = walk(&txn, whole, WalkBounds { kept: 5, rows: 2 }, odd);
        assert_eq!(
            (kept, ended.last_key.as_deref()),
            (vec!["a/5".into()], Some("a/4"))
        );

        // A range of exactly as many rows as the bound is read to its end.
        let (kept, ended) = walk(&txn, whole, WalkBounds::rows(5), every);
        assert_eq!((kept.len(), ended.complete()), (5, true));
        let (_, ended) = walk(&txn, ("a/", "b/"), WalkBounds::rows(5), every);
        assert!(ended.complete());
    }
}
