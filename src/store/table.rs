//! Typed access to tables: records through the codec, indexes as string -> string.
//!
//! Functions take the transaction first, so one write transaction can hold a state change and
//! everything that must commit with it. A table is opened per call and dropped before return,
//! so two calls never hold the same table open (redb refuses that within one transaction).

use std::marker::PhantomData;
use std::ops::Bound;

use redb::{
    ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, Table, TableDefinition,
    Value, WriteTransaction,
};

use super::StoreError;
use super::backward::WalkBounds;
use super::codec::{self, Record};

/// A transaction that can be read from: a read transaction, or a write transaction seeing its
/// own uncommitted writes.
pub trait ReadTxn {
    fn open<V: Value + 'static>(
        &self,
        def: TableDefinition<'static, &'static str, V>,
    ) -> Result<OpenTable<'_, V>, StoreError>;
}

impl ReadTxn for ReadTransaction {
    fn open<V: Value + 'static>(
        &self,
        def: TableDefinition<'static, &'static str, V>,
    ) -> Result<OpenTable<'_, V>, StoreError> {
        Ok(OpenTable::Read(self.open_table(def)?))
    }
}

impl ReadTxn for WriteTransaction {
    fn open<V: Value + 'static>(
        &self,
        def: TableDefinition<'static, &'static str, V>,
    ) -> Result<OpenTable<'_, V>, StoreError> {
        Ok(OpenTable::Write(self.open_table(def)?))
    }
}

/// An open table of either kind of transaction, with the few reads the codebase needs.
pub enum OpenTable<'t, V: Value + 'static> {
    Read(ReadOnlyTable<&'static str, V>),
    Write(Table<'t, &'static str, V>),
}

/// Which rows a scan returns: keys starting with `prefix`, strictly after `after` when given.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    pub prefix: &'a str,
    pub after: Option<&'a str>,
    pub limit: usize,
}

impl<'a> Scan<'a> {
    pub fn all() -> Self {
        Scan {
            prefix: "",
            after: None,
            limit: usize::MAX,
        }
    }

    pub fn prefix(prefix: &'a str) -> Self {
        Scan {
            prefix,
            after: None,
            limit: usize::MAX,
        }
    }
}

impl<V: Value + 'static> OpenTable<'_, V> {
    pub fn get_with<T>(
        &self,
        key: &str,
        read: impl FnOnce(V::SelfType<'_>) -> T,
    ) -> Result<Option<T>, StoreError> {
        let guard = match self {
            OpenTable::Read(table) => table.get(key)?,
            OpenTable::Write(table) => table.get(key)?,
        };
        Ok(guard.map(|guard| read(guard.value())))
    }

    pub fn scan_with<T>(
        &self,
        scan: Scan<'_>,
        mut read: impl FnMut(&str, V::SelfType<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        // Start at the later of the prefix and the cursor; stop at the first key outside the prefix.
        let start = match scan.after {
            Some(after) if after >= scan.prefix => Bound::Excluded(after),
            _ => Bound::Included(scan.prefix),
        };
        let mut rows = Vec::new();
        if scan.limit == 0 {
            return Ok(rows);
        }
        self.walk(start, |key, value| {
            if !key.starts_with(scan.prefix) {
                return Ok(false);
            }
            rows.push(read(key, value)?);
            Ok(rows.len() < scan.limit)
        })?;
        Ok(rows)
    }

    /// Walks the rows from `start` on in key order, calling `visit(key, value)` on each until
    /// it answers `false` (before reading the next row) or the table ends.
    pub fn walk(
        &self,
        start: Bound<&str>,
        mut visit: impl FnMut(&str, V::SelfType<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let range = match self {
            OpenTable::Read(table) => table.range::<&str>((start, Bound::Unbounded))?,
            OpenTable::Write(table) => table.range::<&str>((start, Bound::Unbounded))?,
        };
        for entry in range {
            let (key, value) = entry?;
            if !visit(key.value(), value.value())? {
                break;
            }
        }
        Ok(())
    }

    /// Rows whose keys start with `prefix` (which ends in `/`) and sort before `before` when
    /// given, last key first, at most `limit`: the newest-first pages of ULID-keyed lists.
    pub fn scan_back_with<T>(
        &self,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
        mut read: impl FnMut(&str, V::SelfType<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        // `0` is the character right after `/`: `{owner}0` is the first key past the owner's.
        let past = format!("{}0", prefix.trim_end_matches('/'));
        let end = before
            .filter(|before| *before < past.as_str())
            .unwrap_or(&past);
        let mut rows = Vec::new();
        self.walk_backwards((prefix, end), WalkBounds::rows(limit), |key, value| {
            rows.push(read(key, value)?);
            Ok::<_, StoreError>(true)
        })?;
        Ok(rows)
    }

    pub fn row_count(&self) -> Result<u64, StoreError> {
        Ok(match self {
            OpenTable::Read(table) => table.len()?,
            OpenTable::Write(table) => table.len()?,
        })
    }
}

/// A table of records of one type, keyed by string.
pub struct RecordTable<R> {
    def: TableDefinition<'static, &'static str, &'static [u8]>,
    record: PhantomData<fn() -> R>,
}

impl<R: Record> RecordTable<R> {
    pub const fn new(name: &'static str) -> Self {
        RecordTable {
            def: TableDefinition::new(name),
            record: PhantomData,
        }
    }

    pub fn definition(&self) -> TableDefinition<'static, &'static str, &'static [u8]> {
        self.def
    }

    pub fn get(&self, txn: &impl ReadTxn, key: &str) -> Result<Option<R>, StoreError> {
        self.get_part(txn, key)
    }

    /// Part of a record (`codec::Decode`): the fields `P` holds, the others skipped.
    pub fn get_part<P: codec::Decode>(
        &self,
        txn: &impl ReadTxn,
        key: &str,
    ) -> Result<Option<P>, StoreError> {
        txn.open(self.def)?
            .get_with(key, codec::decode::<P>)?
            .transpose()
    }

    pub fn contains(&self, txn: &impl ReadTxn, key: &str) -> Result<bool, StoreError> {
        Ok(txn.open(self.def)?.get_with(key, |_| ())?.is_some())
    }

    pub fn insert(&self, txn: &WriteTransaction, key: &str, record: &R) -> Result<(), StoreError> {
        let bytes = codec::encode(record)?;
        let mut table = txn.open_table(self.def)?;
        if let Some(old) = table.insert(key, bytes.as_slice())? {
            codec::releasing(old.value());
        }
        Ok(())
    }

    pub fn remove(&self, txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
        let mut table = txn.open_table(self.def)?;
        let removed = table.remove(key)?;
        if let Some(old) = &removed {
            codec::releasing(old.value());
        }
        Ok(removed.is_some())
    }

    /// The table held open for a batch of inserts (`RecordWriter`).
    pub fn writer<'t>(&self, txn: &'t WriteTransaction) -> Result<RecordWriter<'t, R>, StoreError> {
        Ok(RecordWriter {
            table: txn.open_table(self.def)?,
            row: Vec::new(),
            record: PhantomData,
        })
    }

    /// Rows in key order, as `(key, record)`.
    pub fn scan(&self, txn: &impl ReadTxn, scan: Scan<'_>) -> Result<Vec<(String, R)>, StoreError> {
        txn.open(self.def)?.scan_with(scan, |key, bytes| {
            Ok((key.to_string(), codec::decode(bytes)?))
        })
    }

    pub fn row_count(&self, txn: &impl ReadTxn) -> Result<u64, StoreError> {
        txn.open(self.def)?.row_count()
    }

    /// One page of the records keyed `{owner}/{id}`, in id order, after the id `after`.
    pub fn page_of_owner(
        &self,
        txn: &impl ReadTxn,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<R>, StoreError> {
        page_of_owner(owner, after, limit, |scan| self.scan(txn, scan))
    }
}

/// A record table held open for many writes in one transaction (a batch). Opening a table
/// looks it up in redb's table directory; once per row that was a tenth of ingest's CPU.
/// While a writer lives, its table must not be opened again in the same transaction (redb
/// refuses that).
pub struct RecordWriter<'t, R> {
    table: Table<'t, &'static str, &'static [u8]>,
    /// Where a tagged row is put together, kept from one row to the next.
    row: Vec<u8>,
    record: PhantomData<fn() -> R>,
}

impl<R: Record> RecordWriter<'_, R> {
    pub fn insert(&mut self, key: &str, record: &R) -> Result<(), StoreError> {
        let bytes = codec::encode(record)?;
        if let Some(old) = self.table.insert(key, bytes.as_slice())? {
            codec::releasing(old.value());
        }
        Ok(())
    }

    /// Stores a record encoded ahead of the write, with its tag (`codec::Encoded::tagged_into`).
    pub fn insert_tagged(
        &mut self,
        key: &str,
        encoded: &codec::Encoded<R>,
        tag: &str,
    ) -> Result<(), StoreError> {
        encoded.tagged_into(tag, &mut self.row)?;
        if let Some(old) = self.table.insert(key, self.row.as_slice())? {
            codec::releasing(old.value());
        }
        Ok(())
    }
}

/// An index table held open for many reads and writes in one transaction (see `RecordWriter`).
pub struct IndexWriter<'t> {
    table: Table<'t, &'static str, &'static str>,
}

impl IndexWriter<'_> {
    pub fn contains(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.table.get(key)?.is_some())
    }

    pub fn insert(&mut self, key: &str, target: &str) -> Result<(), StoreError> {
        self.table.insert(key, target)?;
        Ok(())
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .table
            .get(key)?
            .map(|target| target.value().to_string()))
    }

    pub fn remove(&mut self, key: &str) -> Result<bool, StoreError> {
        Ok(self.table.remove(key)?.is_some())
    }
}

/// A table mapping a string key to an id (a secondary index or a membership set).
#[derive(Clone, Copy)]
pub struct IndexTable {
    def: TableDefinition<'static, &'static str, &'static str>,
}

impl IndexTable {
    pub const fn new(name: &'static str) -> Self {
        IndexTable {
            def: TableDefinition::new(name),
        }
    }

    pub fn definition(&self) -> TableDefinition<'static, &'static str, &'static str> {
        self.def
    }

    pub fn get(&self, txn: &impl ReadTxn, key: &str) -> Result<Option<String>, StoreError> {
        txn.open(self.def)?.get_with(key, str::to_string)
    }

    pub fn insert(
        &self,
        txn: &WriteTransaction,
        key: &str,
        target: &str,
    ) -> Result<(), StoreError> {
        txn.open_table(self.def)?.insert(key, target)?;
        Ok(())
    }

    pub fn remove(&self, txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
        Ok(txn.open_table(self.def)?.remove(key)?.is_some())
    }

    /// The table held open for a batch of reads and inserts (`IndexWriter`).
    pub fn writer<'t>(&self, txn: &'t WriteTransaction) -> Result<IndexWriter<'t>, StoreError> {
        Ok(IndexWriter {
            table: txn.open_table(self.def)?,
        })
    }

    /// Rows in key order, as `(key, target)`.
    pub fn scan(
        &self,
        txn: &impl ReadTxn,
        scan: Scan<'_>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        txn.open(self.def)?.scan_with(scan, |key, target| {
            Ok((key.to_string(), target.to_string()))
        })
    }

    pub fn row_count(&self, txn: &impl ReadTxn) -> Result<u64, StoreError> {
        txn.open(self.def)?.row_count()
    }

    /// One page of the targets of the rows keyed `{owner}/{id}`, in id order, after the id
    /// `after` (an owner's index of its records, read one list page at a time).
    pub fn page_of_owner(
        &self,
        txn: &impl ReadTxn,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        page_of_owner(owner, after, limit, |scan| self.scan(txn, scan))
    }
}

/// Reads a single value of the `meta` table.
pub fn meta_get(txn: &impl ReadTxn, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
    txn.open(super::tables::META)?.get_with(key, <[u8]>::to_vec)
}

pub fn meta_put(txn: &WriteTransaction, key: &str, value: &[u8]) -> Result<(), StoreError> {
    txn.open_table(super::tables::META)?.insert(key, value)?;
    Ok(())
}

pub fn meta_remove(txn: &WriteTransaction, key: &str) -> Result<(), StoreError> {
    txn.open_table(super::tables::META)?.remove(key)?;
    Ok(())
}

/// One page of the rows keyed `{owner}/{id}` after the id `after`, as `scan` reads them,
/// without their keys: the list page of an owner's records or of its index.
fn page_of_owner<T>(
    owner: &str,
    after: Option<&str>,
    limit: usize,
    scan: impl FnOnce(Scan<'_>) -> Result<Vec<(String, T)>, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let prefix = super::tables::owner_prefix(owner);
    let after = after.map(|id| super::tables::composite_key(owner, id));
    let rows = scan(Scan {
        prefix: &prefix,
        after: after.as_deref(),
        limit,
    })?;
    Ok(rows.into_iter().map(|(_, value)| value).collect())
}

/// One page of the rows of `table` keyed `{owner}/{id}`, newest id first, before the id
/// `before`, each turned into a value by `read(key, value)`. Record tables pass
/// `codec::decode` as `read`, index tables take the target.
pub fn page_of_owner_newest_first<V: Value + 'static, T>(
    txn: &impl ReadTxn,
    table: TableDefinition<'static, &'static str, V>,
    (owner, before): (&str, Option<&str>),
    limit: usize,
    read: impl FnMut(&str, V::SelfType<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let prefix = super::tables::owner_prefix(owner);
    let before = before.map(|id| super::tables::composite_key(owner, id));
    txn.open(table)?
        .scan_back_with(&prefix, before.as_deref(), limit, read)
}
