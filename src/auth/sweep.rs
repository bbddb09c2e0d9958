//! The sweeps that keep what sign-ins leave behind bounded in total: login states that have
//! expired (their window and lock are over) and audit entries older than
//! `AUDIT_RETENTION_DAYS`.
//!
//! Invariants: a sweep walks its table in key order in transactions of at most `STEP_ROWS`
//! rows, so it never holds the writer for a long scan, and a crash or a failed step only
//! leaves work for the next sweep (the housekeeping tick, once a minute and at start-up).

use redb::WriteTransaction;

use super::db::{self, SweepStep};
use super::{Auth, login};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// Rows read (and at most removed) per transaction.
pub const STEP_ROWS: usize = 256;

/// Removes every login state that has expired by now; returns how many.
pub async fn sweep_login_states(auth: &Auth) -> usize {
    let policy = login::policy(auth);
    let now = auth.clock().now();
    let step = move |txn: &WriteTransaction, after: Option<&str>| {
        db::sweep_login_states(txn, after, STEP_ROWS, now, &policy)
    };
    sweep_in_steps(auth, "login_states", step).await
}

/// Removes every audit entry older than the retention; returns how many.
pub async fn sweep_audit_events(auth: &Auth) -> usize {
    let cutoff = retention_cutoff(auth.clock().now(), auth.settings().audit_retention);
    let step = move |txn: &WriteTransaction, after: Option<&str>| {
        db::sweep_audit_events(txn, after, STEP_ROWS, cutoff)
    };
    sweep_in_steps(auth, "audit_events", step).await
}

/// The instant before which audit entries are removed.
pub fn retention_cutoff(now: Timestamp, retention: std::time::Duration) -> Timestamp {
    let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    Timestamp(now.unix_millis().saturating_sub(ms))
}

/// Runs `step` from the start of its table to the end, one transaction per step.
async fn sweep_in_steps<F>(auth: &Auth, table: &'static str, step: F) -> usize
where
    F: Fn(&WriteTransaction, Option<&str>) -> Result<SweepStep, StoreError>
        + Clone
        + Send
        + 'static,
{
    let mut resume_after: Option<String> = None;
    let mut removed = 0;
    loop {
        let (step, after) = (step.clone(), resume_after.clone());
        let done = auth
            .store()
            .write(move |txn| step(txn, after.as_deref()))
            .await;
        match done {
            Ok(done) => {
                removed += done.removed;
                match done.resume_after {
                    Some(key) => resume_after = Some(key),
                    None => break,
                }
            }
            Err(error) => {
                tracing::warn!(%error, table, "sweep failed; retrying at the next tick");
                break;
            }
        }
    }
    if removed > 0 {
        metrics::counter!("lookout_auth_swept_total", "table" => table).increment(removed as u64);
        tracing::info!(removed, table, "sweep removed expired rows");
    }
    removed
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::auth::audit::{self, Actor};
    use crate::auth::model::LoginState;
    use crate::auth::model::tests::POLICY;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    #[test]
    fn steps_are_bounded_and_only_expired_rows_go() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        for index in 0..5 {
            let mut state = LoginState::default();
            // Even-numbered states failed long ago; odd ones just now.
            let at = if index % 2 == 0 { Timestamp(0) } else { NOW };
            state.record_failure(at, &POLICY);
            db::put_login_state(&txn, &format!("user{index}@example.com"), &state).unwrap();
            audit::record(&txn, None, &Actor::default(), "x", None, json!({}), at).unwrap();
        }
        let first = db::sweep_login_states(&txn, None, 2, NOW, &POLICY).unwrap();
        assert_eq!(first.removed, 1, "user0 only: user1 is fresh");
        let after = first.resume_after.expect("more to come");
        let rest = db::sweep_login_states(&txn, Some(&after), 10, NOW, &POLICY).unwrap();
        assert_eq!((rest.removed, rest.resume_after), (2, None));
        let cutoff = retention_cutoff(NOW, Duration::from_secs(86_400));
        let swept = db::sweep_audit_events(&txn, None, 10, cutoff).unwrap();
        assert_eq!(swept.removed, 3);
        let state = |key: &str| db::login_state(&txn, key).unwrap();
        assert_eq!(state("user0@example.com"), LoginState::default());
        assert_ne!(state("user1@example.com"), LoginState::default());
    }
}
