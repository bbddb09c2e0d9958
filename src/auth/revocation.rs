//! RegisterUserLogout and single-session logout, checked on every request without a disk read.
//!
//! Invariants: the stored tables are the truth and the in-memory maps mirror them — loaded at
//! start, updated right after each commit and before the response that reports it, so "the very
//! next request" of a revoked session is refused. A session is void when its user's cutoff is
//! later than its issue instant (ms), or when its `jti` was logged out.

use std::collections::HashMap;
use std::sync::RwLock;

use redb::WriteTransaction;

use super::db;
use super::model::{RevokedSession, SessionCutoff};
use super::tokens::Claims;
use crate::accounts::model::UserId;
use crate::clock::Timestamp;
use crate::store::{Store, StoreError};

#[derive(Debug, Default)]
pub struct Revocations {
    /// User id -> cutoff instant.
    cutoffs: RwLock<HashMap<String, Timestamp>>,
    /// Session jti -> the token's own expiry (after which the entry is useless).
    revoked: RwLock<HashMap<String, Timestamp>>,
}

impl Revocations {
    /// Loads both maps, dropping revoked sessions that have expired anyway.
    pub async fn load(store: &Store, now: Timestamp) -> Result<Revocations, StoreError> {
        let (cutoffs, revoked) = store
            .read(|txn| {
                Ok::<_, StoreError>((
                    db::all_session_cutoffs(txn)?,
                    db::all_revoked_sessions(txn)?,
                ))
            })
            .await?;
        let expired: Vec<String> = revoked
            .iter()
            .filter(|(_, r)| r.expires_at <= now)
            .map(|(jti, _)| jti.clone())
            .collect();
        if !expired.is_empty() {
            store
                .write(move |txn| {
                    for jti in &expired {
                        db::remove_revoked_session(txn, jti)?;
                    }
                    Ok::<_, StoreError>(())
                })
                .await?;
        }
        Ok(Revocations {
            cutoffs: RwLock::new(
                cutoffs
                    .into_iter()
                    .map(|(user, c)| (user, c.after))
                    .collect(),
            ),
            revoked: RwLock::new(
                revoked
                    .into_iter()
                    .filter(|(_, r)| r.expires_at > now)
                    .map(|(jti, r)| (jti, r.expires_at))
                    .collect(),
            ),
        })
    }

    pub fn is_revoked(&self, claims: &Claims) -> bool {
        let cutoffs = self.cutoffs.read().unwrap_or_else(|p| p.into_inner());
        if cutoffs
            .get(claims.sub.as_str())
            .is_some_and(|cutoff| *cutoff > claims.issued_at())
        {
            return true;
        }
        drop(cutoffs);
        self.revoked
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&claims.jti)
    }

    /// Writes "every session of `user` issued before `now` is void" into `txn`; call
    /// `note_user_logout` once `txn` has committed.
    pub fn write_user_logout(
        txn: &WriteTransaction,
        user: &UserId,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        db::put_session_cutoff(txn, user, &SessionCutoff { after: now })
    }

    pub fn note_user_logout(&self, user: &UserId, now: Timestamp) {
        let mut cutoffs = self.cutoffs.write().unwrap_or_else(|p| p.into_inner());
        let cutoff = cutoffs.entry(user.to_string()).or_insert(now);
        *cutoff = (*cutoff).max(now);
    }

    pub fn write_session_logout(txn: &WriteTransaction, claims: &Claims) -> Result<(), StoreError> {
        db::put_revoked_session(
            txn,
            &claims.jti,
            &RevokedSession {
                expires_at: claims.expires_at(),
            },
        )
    }

    pub fn note_session_logout(&self, claims: &Claims) {
        let mut revoked = self.revoked.write().unwrap_or_else(|p| p.into_inner());
        revoked.insert(claims.jti.clone(), claims.expires_at());
    }

    /// Forgets revoked sessions that have expired (their tokens fail on `exp` anyway).
    pub fn prune(&self, now: Timestamp) {
        self.revoked
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, expires| *expires > now);
    }
}
