//! The one flow of records that carry a secret (API keys, enrolment tokens, inbound tokens):
//! validate the name, store the minted record with its `created` audit event, list a page of
//! the organisation's records, and revoke one with its `revoked` audit event. Each kind keeps
//! its own path, role, response body and status in its handlers; this holds what they share.
//!
//! Invariants: a record and its audit event commit in one write; revoking is soft (the row
//! stays with `revoked_at`) and audited once, a second revoke is a silent 204; an id that is
//! not the kind's, or another organisation's, is a 404 naming the kind.

use serde_json::Value;

use super::{Caller, audit};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::http::page::PageRequest;
use crate::http::{ApiError, ErrorCode};
use crate::store::{SecretRecord, SecretTable, Store, StoreError};

/// One kind of secret-bearing record: its table and the names its answers and audit use.
pub struct TokenFlow<R: 'static> {
    pub table: &'static SecretTable<R>,
    /// The noun of a 404, e.g. `api key`.
    pub noun: &'static str,
    /// The audit actions of creating and revoking one.
    pub created: &'static str,
    pub revoked: &'static str,
    /// The audit detail of both events.
    pub detail: fn(&R) -> Value,
}

/// A token's name, trimmed: 1 to 100 characters.
pub fn valid_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim().to_string();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::new(
            ErrorCode::InvalidPayload,
            "name: 1 to 100 characters",
        ));
    }
    Ok(name)
}

impl<R: SecretRecord + Clone + Send + Sync + 'static> TokenFlow<R> {
    /// Stores `record` with the digest of its secret and the `created` audit event.
    pub async fn create(
        &'static self,
        store: &Store,
        caller: &Caller,
        record: R,
        digest: String,
        now: Timestamp,
    ) -> Result<R, ApiError> {
        let (org, actor) = (caller.org_id.clone(), caller.actor());
        let stored = record.clone();
        store
            .write(move |txn| {
                self.table.insert(txn, &stored, &digest)?;
                let detail = (self.detail)(&stored);
                audit::record(
                    txn,
                    Some(&org),
                    &actor,
                    self.created,
                    Some(stored.id()),
                    detail,
                    now,
                )
            })
            .await?;
        Ok(record)
    }

    /// One page of the organisation's records after the page's cursor (an id `parse` accepts),
    /// each with what `with` reads beside it in the same transaction, and the next cursor.
    pub async fn page<I: std::fmt::Display, E, X: Send + 'static>(
        &'static self,
        store: &Store,
        page: &PageRequest,
        org: &OrgId,
        parse: impl FnOnce(&str) -> Result<I, E>,
        with: fn(&redb::ReadTransaction, &R) -> Result<X, StoreError>,
    ) -> Result<(Vec<(R, X)>, Option<String>), ApiError> {
        let after = page.cursor_as(parse)?.map(|id| id.to_string());
        let (org, limit) = (org.clone(), page.limit);
        let rows = store
            .read(move |txn| {
                // One row more than asked tells whether another page follows.
                let mut rows = Vec::new();
                for record in self
                    .table
                    .page(txn, (org.as_str(), after.as_deref()), limit + 1)?
                {
                    let beside = with(txn, &record)?;
                    rows.push((record, beside));
                }
                Ok::<_, StoreError>(rows)
            })
            .await?;
        Ok(page.split(rows, |(record, _)| record.id().to_string()))
    }

    /// Revokes the caller's organisation's record `id` (an id `parse` accepts) with the
    /// `revoked` audit event; returns the parsed id.
    pub async fn revoke<I: std::fmt::Display, E>(
        &'static self,
        store: &Store,
        caller: &Caller,
        id: &str,
        parse: impl FnOnce(&str) -> Result<I, E>,
        now: Timestamp,
    ) -> Result<I, ApiError> {
        let id = parse(id).map_err(|_| ApiError::not_found(self.noun))?;
        let (org, actor, target) = (caller.org_id.clone(), caller.actor(), id.to_string());
        let found = store
            .write(move |txn| {
                // An unknown id is a value here: the closure's errors are storage's.
                let Some((record, newly)) = self.table.revoke(txn, org.as_str(), &target, now)?
                else {
                    return Ok(false);
                };
                if newly {
                    let detail = (self.detail)(&record);
                    let target = Some(record.id());
                    audit::record(txn, Some(&org), &actor, self.revoked, target, detail, now)?;
                }
                Ok::<_, StoreError>(true)
            })
            .await?;
        if !found {
            return Err(ApiError::not_found(self.noun));
        }
        Ok(id)
    }
}
