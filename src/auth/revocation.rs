//! RegisterUserLogout and single-session logout, checked on every request without a disk read.
//!
//! Invariants: the stored tables are the truth and the in-memory maps mirror them — loaded at
//! start, updated right after each commit and before the response that reports it, so "the very
//! next request" of a revoked session is refused. A session is void when its user's cutoff is
//! later than its issue instant (ms), or when its `jti` was logged out. Each noted
//! RegisterUserLogout is then published to subscribers (open terminals), after the map holds
//! it: a subscriber that subscribes first and reads the map second misses none.

use std::collections::HashMap;
use std::sync::RwLock;

use redb::WriteTransaction;
use tokio::sync::broadcast;

use super::db;
use super::model::{RevokedSession, SessionCutoff};
use super::tokens::Claims;
use crate::accounts::model::UserId;
use crate::clock::Timestamp;
use crate::store::{Store, StoreError};

/// How many published logouts a slow subscriber may fall behind before it is told it lagged
/// (and must read the map instead).
const PUBLISHED_LOGOUTS: usize = 64;

/// One noted RegisterUserLogout: every session of `user` issued before `at` is void.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLogout {
    pub user: UserId,
    pub at: Timestamp,
}

#[derive(Debug)]
pub struct Revocations {
    /// User id -> cutoff instant.
    cutoffs: RwLock<HashMap<String, Timestamp>>,
    /// Session jti -> the token's own expiry (after which the entry is useless).
    revoked: RwLock<HashMap<String, Timestamp>>,
    /// Every noted user logout, sent after `cutoffs` holds it.
    logouts: broadcast::Sender<UserLogout>,
}

impl Default for Revocations {
    fn default() -> Self {
        Revocations {
            cutoffs: RwLock::default(),
            revoked: RwLock::default(),
            logouts: broadcast::channel(PUBLISHED_LOGOUTS).0,
        }
    }
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
            ..Revocations::default()
        })
    }

    /// Hears every user logout noted from now on. Subscribe before reading `user_cut_off`, so
    /// a logout is either already in the map or still to be heard.
    pub fn subscribe(&self) -> broadcast::Receiver<UserLogout> {
        self.logouts.subscribe()
    }

    /// Whether a RegisterUserLogout of `user` came after `issued_at` (what was issued then is void).
    pub fn user_cut_off(&self, user: &UserId, issued_at: Timestamp) -> bool {
        self.cutoffs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(user.as_str())
            .is_some_and(|cutoff| *cutoff > issued_at)
    }

    pub fn is_revoked(&self, claims: &Claims) -> bool {
        if self.user_cut_off(&claims.sub, claims.issued_at()) {
            return true;
        }
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

    /// Notes a committed RegisterUserLogout in memory, then publishes it (every path that
    /// ends a user's sessions, role changes and removals included, comes through here).
    pub fn note_user_logout(&self, user: &UserId, now: Timestamp) {
        let mut cutoffs = self.cutoffs.write().unwrap_or_else(|p| p.into_inner());
        let cutoff = cutoffs.entry(user.to_string()).or_insert(now);
        *cutoff = (*cutoff).max(now);
        drop(cutoffs);
        // An error only means nobody listens right now.
        let _ = self.logouts.send(UserLogout {
            user: user.clone(),
            at: now,
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::broadcast::error::TryRecvError;

    #[test]
    fn a_user_logout_is_in_the_map_before_it_is_published() {
        let revocations = Revocations::default();
        let (user, other) = (UserId::generate(), UserId::generate());
        let mut heard = revocations.subscribe();
        assert!(!revocations.user_cut_off(&user, Timestamp(0)));
        revocations.note_user_logout(&user, Timestamp(5));
        let logout = heard.try_recv().unwrap();
        assert_eq!(
            (logout.user.clone(), logout.at),
            (user.clone(), Timestamp(5))
        );
        assert!(revocations.user_cut_off(&user, Timestamp(4)));
        assert!(!revocations.user_cut_off(&user, Timestamp(5)));
        assert!(!revocations.user_cut_off(&other, Timestamp(0)));
    }

    #[test]
    fn a_lagging_subscriber_is_told_so_and_the_map_still_has_every_logout() {
        let revocations = Revocations::default();
        let user = UserId::generate();
        let mut heard = revocations.subscribe();
        revocations.note_user_logout(&user, Timestamp(10));
        for at in 0..PUBLISHED_LOGOUTS as i64 * 2 {
            revocations.note_user_logout(&UserId::generate(), Timestamp(at));
        }
        assert!(matches!(heard.try_recv(), Err(TryRecvError::Lagged(_))));
        assert!(revocations.user_cut_off(&user, Timestamp(9)));
    }
}
