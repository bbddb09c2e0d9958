//! When each API key was last used, without a write on every request's path.
//!
//! `Caller` notes a key's use in memory (`KeyUsage::note`): a key noted less than
//! `RECORD_EVERY` ago is not noted again, so a key is recorded at most once a minute however
//! busy it is. The housekeeping tick (and shutdown) writes the noted instants of every key in
//! one transaction (`flush`). Until then the key list shows the noted instant from memory, so
//! "last used" is current at once.
//!
//! Invariants: the map holds at most one entry per key that authenticated within the last
//! minute (older entries are forgotten on each flush), so its size is bounded by the keys in
//! use; a flush never moves `last_used_at` backwards and never touches anything else of a key
//! (a revocation committed meanwhile stays); a flush that fails puts its instants back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::model::ApiKeyId;
use super::{Auth, db};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// A key's use is recorded at most this often.
pub const RECORD_EVERY: Duration = Duration::from_secs(60);

/// Uses noted since the last flush, shared by every request.
#[derive(Default)]
pub struct KeyUsage {
    state: Mutex<UsageState>,
}

#[derive(Default)]
struct UsageState {
    /// The instant each key was last noted: the throttle.
    noted: HashMap<ApiKeyId, Timestamp>,
    /// Instants not written yet.
    unwritten: HashMap<ApiKeyId, Timestamp>,
}

impl KeyUsage {
    fn state(&self) -> std::sync::MutexGuard<'_, UsageState> {
        // A panic while holding this lock leaves plain maps behind, still consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes that `key` authenticated a request at `now` (a map look-up, no I/O).
    pub fn note(&self, key: &ApiKeyId, now: Timestamp) {
        let mut state = self.state();
        let recent = state
            .noted
            .get(key)
            .is_some_and(|at| now < at.plus(RECORD_EVERY));
        if recent {
            return;
        }
        state.noted.insert(key.clone(), now);
        state.unwritten.insert(key.clone(), now);
    }

    /// The noted instant of `key` not written yet, if any.
    pub fn unwritten(&self, key: &ApiKeyId) -> Option<Timestamp> {
        self.state().unwritten.get(key).copied()
    }

    /// Takes the unwritten instants and forgets throttle entries that have run out.
    fn take(&self, now: Timestamp) -> HashMap<ApiKeyId, Timestamp> {
        let mut state = self.state();
        state.noted.retain(|_, at| now < at.plus(RECORD_EVERY));
        std::mem::take(&mut state.unwritten)
    }

    /// Puts back instants a failed flush could not write (newer notes win).
    fn restore(&self, batch: HashMap<ApiKeyId, Timestamp>) {
        let mut state = self.state();
        for (key, at) in batch {
            let slot = state.unwritten.entry(key).or_insert(at);
            *slot = (*slot).max(at);
        }
    }
}

/// Writes the noted uses in one transaction; how many keys it updated.
pub async fn flush(auth: &Auth) -> Result<usize, StoreError> {
    let usage = auth.key_usage();
    let batch = usage.take(auth.clock().now());
    if batch.is_empty() {
        return Ok(0);
    }
    let written = batch.clone();
    let outcome = auth
        .store()
        .write(move |txn| {
            let mut updated = 0;
            for (id, at) in &written {
                // A key deleted meanwhile has nothing to update.
                let Some(mut key) = db::get_api_key(txn, id)? else {
                    continue;
                };
                if key.last_used_at.is_some_and(|last| last >= *at) {
                    continue;
                }
                key.last_used_at = Some(*at);
                db::update_api_key(txn, &key)?;
                updated += 1;
            }
            Ok::<_, StoreError>(updated)
        })
        .await;
    if outcome.is_err() {
        usage.restore(batch);
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_noted_at_most_once_a_minute() {
        let usage = KeyUsage::default();
        let key = ApiKeyId::generate();
        usage.note(&key, Timestamp(1_000));
        usage.note(&key, Timestamp(30_000));
        assert_eq!(usage.unwritten(&key), Some(Timestamp(1_000)));
        let batch = usage.take(Timestamp(30_000));
        assert_eq!(batch.len(), 1);
        assert_eq!(usage.unwritten(&key), None);
        // Still inside the minute: not noted again.
        usage.note(&key, Timestamp(50_000));
        assert_eq!(usage.unwritten(&key), None);
        usage.note(&key, Timestamp(61_000));
        assert_eq!(usage.unwritten(&key), Some(Timestamp(61_000)));
    }

    #[test]
    fn a_failed_flush_puts_its_instants_back_without_losing_newer_ones() {
        let usage = KeyUsage::default();
        let (first, second) = (ApiKeyId::generate(), ApiKeyId::generate());
        usage.note(&first, Timestamp(1_000));
        let batch = usage.take(Timestamp(1_000));
        usage.note(&second, Timestamp(2_000));
        usage.restore(batch);
        assert_eq!(usage.unwritten(&first), Some(Timestamp(1_000)));
        assert_eq!(usage.unwritten(&second), Some(Timestamp(2_000)));
        // Throttle entries past their minute are forgotten on the next take.
        usage.take(Timestamp(200_000));
        assert!(usage.state().noted.is_empty());
    }
}
