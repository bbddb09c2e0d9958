//! `SecretTable`: records that carry a secret (API keys, enrolment tokens, inbound tokens),
//! found by the SHA-256 digest of that secret, listed per owner and revoked softly.
//!
//! Invariants: a record and its `digest -> key` row are written together, so a digest never
//! points at a missing record; the secret itself is never stored; revoking sets `revoked_at`
//! once and keeps the row (its digest still finds it, and callers refuse it as revoked).

use redb::WriteTransaction;

use super::codec::Record;
use super::table::{IndexTable, ReadTxn, RecordTable, Scan};
use super::{StoreError, tables};
use crate::clock::Timestamp;

/// A record that carries a secret: its owner (an organisation id), its own id and when it was
/// revoked.
pub trait SecretRecord: Record {
    fn owner(&self) -> &str;
    fn id(&self) -> &str;
    fn revoked_at(&self) -> Option<Timestamp>;
    fn set_revoked_at(&mut self, at: Timestamp);
}

/// Implements `SecretRecord` for a record whose owner is its `org_id`, whose id is `id` (both
/// typed ids with `as_str`) and which has `revoked_at: Option<Timestamp>`.
macro_rules! secret_record {
    ($record:ty) => {
        impl $crate::store::SecretRecord for $record {
            fn owner(&self) -> &str {
                self.org_id.as_str()
            }
            fn id(&self) -> &str {
                self.id.as_str()
            }
            fn revoked_at(&self) -> Option<$crate::clock::Timestamp> {
                self.revoked_at
            }
            fn set_revoked_at(&mut self, at: $crate::clock::Timestamp) {
                self.revoked_at = Some(at);
            }
        }
    };
}
pub(crate) use secret_record;

/// Where the records sit: under `{owner}/{id}`, or under `{id}` with an index
/// `{owner}/{id} -> id` beside them (the API keys' layout since the first release).
#[derive(Clone, Copy)]
enum Layout {
    ByOwner,
    ById { owners: IndexTable },
}

/// Records owned by an organisation and found by the SHA-256 digest (hex) of their secret.
pub struct SecretTable<R> {
    records: RecordTable<R>,
    digests: IndexTable,
    layout: Layout,
}

impl<R: SecretRecord> SecretTable<R> {
    /// Records under `{owner}/{id}`, digests `digest -> {owner}/{id}`.
    pub const fn new(records: &'static str, digests: &'static str) -> Self {
        SecretTable {
            records: RecordTable::new(records),
            digests: IndexTable::new(digests),
            layout: Layout::ByOwner,
        }
    }

    /// Records under `{id}`, digests `digest -> id`, and the owner index `{owner}/{id} -> id`.
    pub const fn by_id(records: &'static str, digests: &'static str, owners: &'static str) -> Self {
        SecretTable {
            records: RecordTable::new(records),
            digests: IndexTable::new(digests),
            layout: Layout::ById {
                owners: IndexTable::new(owners),
            },
        }
    }

    fn key(&self, owner: &str, id: &str) -> String {
        match self.layout {
            Layout::ByOwner => tables::composite_key(owner, id),
            Layout::ById { .. } => id.to_string(),
        }
    }

    /// Stores a new record and the digest of its secret.
    pub fn insert(
        &self,
        txn: &WriteTransaction,
        record: &R,
        digest: &str,
    ) -> Result<(), StoreError> {
        let key = self.key(record.owner(), record.id());
        self.records.insert(txn, &key, record)?;
        self.digests.insert(txn, digest, &key)?;
        if let Layout::ById { owners } = self.layout {
            let owned = tables::composite_key(record.owner(), record.id());
            owners.insert(txn, &owned, record.id())?;
        }
        Ok(())
    }

    /// Replaces an existing record (its secret is unchanged).
    pub fn put(&self, txn: &WriteTransaction, record: &R) -> Result<(), StoreError> {
        self.records
            .insert(txn, &self.key(record.owner(), record.id()), record)
    }

    /// The record `id` of `owner`; another owner's record is `None`.
    pub fn get(&self, txn: &impl ReadTxn, owner: &str, id: &str) -> Result<Option<R>, StoreError> {
        let record = self.records.get(txn, &self.key(owner, id))?;
        Ok(record.filter(|record| record.owner() == owner))
    }

    /// Every record of `owner`, in id order.
    pub fn list(&self, txn: &impl ReadTxn, owner: &str) -> Result<Vec<R>, StoreError> {
        let prefix = tables::owner_prefix(owner);
        match self.layout {
            Layout::ByOwner => Ok(self
                .records
                .scan(txn, Scan::prefix(&prefix))?
                .into_iter()
                .map(|(_, record)| record)
                .collect()),
            Layout::ById { owners } => {
                let mut records = Vec::new();
                for (_, id) in owners.scan(txn, Scan::prefix(&prefix))? {
                    records.extend(self.records.get(txn, &id)?);
                }
                Ok(records)
            }
        }
    }

    /// One page of `owner`'s records, in id order, after the id `after`.
    pub fn page(
        &self,
        txn: &impl ReadTxn,
        (owner, after): (&str, Option<&str>),
        limit: usize,
    ) -> Result<Vec<R>, StoreError> {
        let Layout::ById { owners } = self.layout else {
            return self.records.page_of_owner(txn, owner, after, limit);
        };
        let ids = owners.page_of_owner(txn, owner, after, limit)?;
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            let record = self
                .records
                .get(txn, &id)?
                .ok_or_else(|| StoreError::Corrupt {
                    what: R::KIND,
                    detail: format!("{id} is indexed but missing"),
                })?;
            records.push(record);
        }
        Ok(records)
    }

    /// The record whose secret hashes to `digest`, revoked or not.
    pub fn find_by_digest(
        &self,
        txn: &impl ReadTxn,
        digest: &str,
    ) -> Result<Option<R>, StoreError> {
        let Some(key) = self.digests.get(txn, digest)? else {
            return Ok(None);
        };
        match (self.records.get(txn, &key)?, self.layout) {
            (Some(record), _) => Ok(Some(record)),
            // API keys have always read a dangling digest as an unknown key.
            (None, Layout::ById { .. }) => Ok(None),
            (None, Layout::ByOwner) => Err(StoreError::Corrupt {
                what: R::KIND,
                detail: format!("{key} is indexed but missing"),
            }),
        }
    }

    /// The unrevoked record whose secret hashes to `digest`.
    pub fn find_live(&self, txn: &impl ReadTxn, digest: &str) -> Result<Option<R>, StoreError> {
        Ok(self
            .find_by_digest(txn, digest)?
            .filter(|record| record.revoked_at().is_none()))
    }

    /// Revokes the record `id` of `owner` at `now`. `None` when there is no such record;
    /// otherwise the record and whether this call revoked it (false: it already was).
    pub fn revoke(
        &self,
        txn: &WriteTransaction,
        owner: &str,
        id: &str,
        now: Timestamp,
    ) -> Result<Option<(R, bool)>, StoreError> {
        let Some(mut record) = self.get(txn, owner, id)? else {
            return Ok(None);
        };
        if record.revoked_at().is_some() {
            return Ok(Some((record, false)));
        }
        record.set_revoked_at(now);
        self.put(txn, &record)?;
        Ok(Some((record, true)))
    }
}
