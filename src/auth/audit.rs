//! The audit log of security events: sign-ins, lockouts, 2FA changes, API keys, roles,
//! allowlists. Written in the same transaction as the change it records, so the log never
//! claims a change that did not happen, nor misses one that did.
//!
//! Failed sign-ins are counted, not listed: the failures of one e-mail within a lockout window
//! are one entry whose `detail.count` rises in place, so a flood of guesses writes a bounded
//! number of bytes. Entries older than `AUDIT_RETENTION_DAYS` are removed by the sweep.

use redb::WriteTransaction;
use serde_json::{Value, json};

use super::db;
use super::model::{AuditEvent, AuditId, FailureEntry, LockoutPolicy, LoginState};
use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// Who did it, from where.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    pub user_id: Option<UserId>,
    pub email: Option<String>,
    pub ip: Option<String>,
}

/// Appends one event to `txn`.
pub fn record(
    txn: &WriteTransaction,
    org: Option<&OrgId>,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Value,
    at: Timestamp,
) -> Result<(), StoreError> {
    let event = new_event(org, actor, action, target, detail, at);
    db::insert_audit_event(txn, &event)
}

fn new_event(
    org: Option<&OrgId>,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Value,
    at: Timestamp,
) -> AuditEvent {
    AuditEvent {
        id: AuditId::generate(),
        org_id: org.cloned(),
        at,
        action: action.to_string(),
        actor_user_id: actor.user_id.clone(),
        actor_email: actor.email.clone(),
        target: target.map(str::to_string),
        ip: actor.ip.clone(),
        detail,
    }
}

/// What a failed sign-in is and where it is counted.
pub struct FailedSignIn<'a> {
    pub org: Option<&'a OrgId>,
    pub actor: &'a Actor,
    /// `login.failed` or `login.second_factor_failed`.
    pub action: &'a str,
    pub target: Option<&'a str>,
}

/// Counts one failed sign-in: the open entry of this window gets `count + 1` (and the latest
/// time and address) in place; without one, a new entry with count 1 opens the window.
/// `state` remembers the entry, and is written by the caller in the same transaction.
pub fn count_failure(
    txn: &WriteTransaction,
    state: &mut LoginState,
    failure: &FailedSignIn<'_>,
    now: Timestamp,
    policy: &LockoutPolicy,
) -> Result<(), StoreError> {
    let detail = |count: u32| json!({"count": count, "last_at": now.to_rfc3339()});
    if let Some(open) = state
        .open_failure_entry(failure.action, now, policy)
        .cloned()
        && let Some(mut event) = db::get_audit_event(txn, open.org_id.as_ref(), &open.id)?
    {
        let count = open.count.saturating_add(1);
        event.detail = detail(count);
        event.ip = failure.actor.ip.clone();
        db::insert_audit_event(txn, &event)?;
        state.failure_entry = Some(FailureEntry { count, ..open });
        return Ok(());
    }
    let event = new_event(
        failure.org,
        failure.actor,
        failure.action,
        failure.target,
        detail(1),
        now,
    );
    db::insert_audit_event(txn, &event)?;
    state.failure_entry = Some(FailureEntry {
        org_id: event.org_id,
        id: event.id,
        action: failure.action.to_string(),
        started_at: now,
        count: 1,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::model::tests::POLICY;
    use crate::store::{RecordTable, Scan, tables};

    #[test]
    fn failures_of_a_window_are_one_entry_and_the_next_window_opens_another() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let txn = database.begin_write().unwrap();
        let actor = Actor::default();
        let failure = FailedSignIn {
            org: None,
            actor: &actor,
            action: "login.failed",
            target: Some("ada@example.com"),
        };
        let mut state = LoginState::default();
        let start = Timestamp(1_000_000);
        for second in 0..3 {
            let at = start.plus(Duration::from_secs(second));
            count_failure(&txn, &mut state, &failure, at, &POLICY).unwrap();
        }
        let next_window = start.plus(Duration::from_secs(61));
        count_failure(&txn, &mut state, &failure, next_window, &POLICY).unwrap();
        let events: RecordTable<AuditEvent> = RecordTable::new(tables::AUDIT_EVENTS);
        let mut counts: Vec<_> = events
            .scan(&txn, Scan::all())
            .unwrap()
            .into_iter()
            .map(|(_, event)| (event.at, event.detail["count"].as_u64()))
            .collect();
        counts.sort();
        assert_eq!(counts, [(start, Some(3)), (next_window, Some(1))]);
    }
}
