//! Typed access to the authentication tables. Functions take the transaction first.

use redb::WriteTransaction;

use super::model::{
    ApiKey, ApiKeyId, AuditEvent, AuditId, LockoutPolicy, LoginState, RevokedSession,
    SessionCutoff, TwoFactor,
};
use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::store::{
    ReadTxn, RecordTable, Scan, SecretTable, StoreError, WalkBounds, tables, walk_backwards,
};

/// API keys under their id, `digest -> id`, and `{org}/{id} -> id` (created, listed and revoked
/// by `token_flow`).
pub static API_KEYS: SecretTable<ApiKey> = SecretTable::by_id(
    tables::API_KEYS,
    tables::API_KEY_DIGESTS,
    tables::ORG_API_KEYS,
);
/// The same records read by id alone (`key_usage` knows only the id).
const API_KEY_RECORDS: RecordTable<ApiKey> = RecordTable::new(tables::API_KEYS);
const LOGIN_STATES: RecordTable<LoginState> = RecordTable::new(tables::LOGIN_STATES);
const SESSION_CUTOFFS: RecordTable<SessionCutoff> = RecordTable::new(tables::SESSION_CUTOFFS);
const REVOKED_SESSIONS: RecordTable<RevokedSession> = RecordTable::new(tables::REVOKED_SESSIONS);
const TWO_FACTOR: RecordTable<TwoFactor> = RecordTable::new(tables::TWO_FACTOR);
const AUDIT_EVENTS: RecordTable<AuditEvent> = RecordTable::new(tables::AUDIT_EVENTS);

crate::store::secret_record!(ApiKey);

/// Inserts a new key with the digest of its secret.
pub fn insert_api_key(
    txn: &WriteTransaction,
    key: &ApiKey,
    digest_hex: &str,
) -> Result<(), StoreError> {
    API_KEYS.insert(txn, key, digest_hex)
}

pub fn update_api_key(txn: &WriteTransaction, key: &ApiKey) -> Result<(), StoreError> {
    API_KEYS.put(txn, key)
}

pub fn get_api_key(txn: &impl ReadTxn, id: &ApiKeyId) -> Result<Option<ApiKey>, StoreError> {
    API_KEY_RECORDS.get(txn, id.as_str())
}

/// The key whose secret hashes to `digest_hex`, revoked or not.
pub fn find_api_key_by_digest(
    txn: &impl ReadTxn,
    digest_hex: &str,
) -> Result<Option<ApiKey>, StoreError> {
    API_KEYS.find_by_digest(txn, digest_hex)
}

/// Revokes, at `now`, every live API key `user` issued in `org`; returns how many.
pub fn revoke_api_keys_of_member(
    txn: &WriteTransaction,
    org: &OrgId,
    user: &UserId,
    now: Timestamp,
) -> Result<usize, StoreError> {
    let mut revoked = 0;
    for mut key in API_KEYS.list(txn, org.as_str())? {
        if &key.user_id == user && key.revoked_at.is_none() {
            key.revoked_at = Some(now);
            update_api_key(txn, &key)?;
            revoked += 1;
        }
    }
    Ok(revoked)
}

pub fn login_state(txn: &impl ReadTxn, email: &str) -> Result<LoginState, StoreError> {
    Ok(LOGIN_STATES.get(txn, email)?.unwrap_or_default())
}

pub fn put_login_state(
    txn: &WriteTransaction,
    email: &str,
    state: &LoginState,
) -> Result<(), StoreError> {
    if state == &LoginState::default() {
        LOGIN_STATES.remove(txn, email).map(|_| ())
    } else {
        LOGIN_STATES.insert(txn, email, state)
    }
}

/// Removes the lockout state of `email_key` (a normalised e-mail): the account is unlocked
/// and its failure count starts again. Whether there was a state to remove.
pub fn clear_login_state(txn: &WriteTransaction, email_key: &str) -> Result<bool, StoreError> {
    LOGIN_STATES.remove(txn, email_key)
}

/// What one bounded step of a sweep did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepStep {
    pub removed: usize,
    /// The key to resume after; `None` once the end of the table was reached.
    pub resume_after: Option<String>,
}

/// Looks at up to `limit` rows of `table` after the key `after` and removes those `expired`
/// says are; a step never reads more than `limit` rows, so the writer is held briefly.
fn sweep_step<R: Record>(
    table: &RecordTable<R>,
    txn: &WriteTransaction,
    after: Option<&str>,
    limit: usize,
    expired: impl Fn(&R) -> bool,
) -> Result<SweepStep, StoreError> {
    let rows = table.scan(
        txn,
        Scan {
            prefix: "",
            after,
            limit,
        },
    )?;
    let mut removed = 0;
    for (key, record) in &rows {
        if expired(record) && table.remove(txn, key)? {
            removed += 1;
        }
    }
    let resume_after = (rows.len() == limit)
        .then(|| rows.last().map(|(key, _)| key.clone()))
        .flatten();
    Ok(SweepStep {
        removed,
        resume_after,
    })
}

/// One step of the login-state sweep: removes states that expired by `now` under `policy`.
pub fn sweep_login_states(
    txn: &WriteTransaction,
    after: Option<&str>,
    limit: usize,
    now: Timestamp,
    policy: &LockoutPolicy,
) -> Result<SweepStep, StoreError> {
    sweep_step(&LOGIN_STATES, txn, after, limit, |state| {
        state.expires_at(policy) <= now
    })
}

/// One step of the audit retention sweep: removes entries older than `cutoff`.
pub fn sweep_audit_events(
    txn: &WriteTransaction,
    after: Option<&str>,
    limit: usize,
    cutoff: Timestamp,
) -> Result<SweepStep, StoreError> {
    sweep_step(&AUDIT_EVENTS, txn, after, limit, |event| event.at < cutoff)
}

pub fn put_session_cutoff(
    txn: &WriteTransaction,
    user: &UserId,
    cutoff: &SessionCutoff,
) -> Result<(), StoreError> {
    SESSION_CUTOFFS.insert(txn, user.as_str(), cutoff)
}

pub fn all_session_cutoffs(txn: &impl ReadTxn) -> Result<Vec<(String, SessionCutoff)>, StoreError> {
    SESSION_CUTOFFS.scan(txn, Scan::all())
}

pub fn put_revoked_session(
    txn: &WriteTransaction,
    jti: &str,
    revoked: &RevokedSession,
) -> Result<(), StoreError> {
    REVOKED_SESSIONS.insert(txn, jti, revoked)
}

pub fn all_revoked_sessions(
    txn: &impl ReadTxn,
) -> Result<Vec<(String, RevokedSession)>, StoreError> {
    REVOKED_SESSIONS.scan(txn, Scan::all())
}

pub fn is_session_revoked(txn: &impl ReadTxn, jti: &str) -> Result<bool, StoreError> {
    REVOKED_SESSIONS.contains(txn, jti)
}

pub fn remove_revoked_session(txn: &WriteTransaction, jti: &str) -> Result<(), StoreError> {
    REVOKED_SESSIONS.remove(txn, jti).map(|_| ())
}

pub fn two_factor(txn: &impl ReadTxn, user: &UserId) -> Result<Option<TwoFactor>, StoreError> {
    TWO_FACTOR.get(txn, user.as_str())
}

pub fn put_two_factor(
    txn: &WriteTransaction,
    user: &UserId,
    enrolment: &TwoFactor,
) -> Result<(), StoreError> {
    TWO_FACTOR.insert(txn, user.as_str(), enrolment)
}

pub fn remove_two_factor(txn: &WriteTransaction, user: &UserId) -> Result<bool, StoreError> {
    TWO_FACTOR.remove(txn, user.as_str())
}

/// Whether `user` has a confirmed second factor.
pub fn two_factor_enabled(txn: &impl ReadTxn, user: &UserId) -> Result<bool, StoreError> {
    Ok(two_factor(txn, user)?.is_some_and(|enrolment| enrolment.enabled))
}

/// The audit key: events of no organisation (e.g. a failed sign-in of an unknown address)
/// are filed under `-`.
fn audit_owner(org: Option<&OrgId>) -> &str {
    org.map(OrgId::as_str).unwrap_or("-")
}

pub fn insert_audit_event(txn: &WriteTransaction, event: &AuditEvent) -> Result<(), StoreError> {
    let key = tables::composite_key(audit_owner(event.org_id.as_ref()), event.id.as_str());
    AUDIT_EVENTS.insert(txn, &key, event)
}

/// One event by its organisation (`None`: filed under `-`) and id.
pub fn get_audit_event(
    txn: &impl ReadTxn,
    org: Option<&OrgId>,
    id: &AuditId,
) -> Result<Option<AuditEvent>, StoreError> {
    let key = tables::composite_key(audit_owner(org), id.as_str());
    AUDIT_EVENTS.get(txn, &key)
}

/// An organisation's events, oldest first, after the event id `after` when given.
pub fn audit_events_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<AuditEvent>, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    let cursor = after.map(|id| tables::composite_key(org.as_str(), id));
    let scan = Scan {
        prefix: &prefix,
        after: cursor.as_deref(),
        limit,
    };
    Ok(AUDIT_EVENTS
        .scan(txn, scan)?
        .into_iter()
        .map(|(_, event)| event)
        .collect())
}

/// At most this many audit events are examined for one filtered page; a page that reaches it
/// ends there with a cursor to go on from, so a rare match never scans the whole log at once.
pub const AUDIT_MAX_EXAMINED: usize = 10_000;

/// A page of audit events and where the next one starts.
#[derive(Debug)]
pub struct AuditPage {
    /// Matching events, newest first, at most the limit asked for.
    pub events: Vec<AuditEvent>,
    /// The id to read on before (the `next_cursor`), when more may follow.
    pub resume_before: Option<AuditId>,
}

/// Which audit events a page holds.
pub struct AuditFilter<'a> {
    pub before: Option<&'a AuditId>,
    /// Events at or after this instant; the scan stops at the first older one.
    pub from: Option<Timestamp>,
    /// Events before this instant.
    pub to: Option<Timestamp>,
    pub wanted: &'a dyn Fn(&AuditEvent) -> bool,
}

/// An organisation's events, newest first, older than the event `filter.before` when given,
/// that pass the filter.
///
/// Read with the store's one backward walk (`store::walk_backwards`); audit ids are
/// ULIDs minted when the event is recorded, so key order within an organisation is time order
/// and the scan ends at the first event older than `from`.
pub fn audit_events_of_org_newest_first(
    txn: &redb::ReadTransaction,
    org: &OrgId,
    filter: &AuditFilter<'_>,
    limit: usize,
) -> Result<AuditPage, StoreError> {
    let start = tables::owner_prefix(org.as_str());
    // Keys of this org are `{org}/…`; `0` is the character right after `/`, so `{org}0` is
    // the first key past them.
    let end = match filter.before {
        Some(id) => tables::composite_key(org.as_str(), id.as_str()),
        None => format!("{}0", org.as_str()),
    };
    let mut events: Vec<AuditEvent> = Vec::new();
    let (mut examined, mut last_examined) = (0usize, None);
    // One match more than the page tells whether a further one exists.
    let bounds = WalkBounds {
        kept: limit + 1,
        rows: AUDIT_MAX_EXAMINED,
    };
    let walked = walk_backwards(
        txn,
        AUDIT_EVENTS.definition(),
        (&start, &end),
        bounds,
        |_, value| {
            let event = crate::store::codec::decode::<AuditEvent>(value)?;
            if filter.from.is_some_and(|from| event.at < from) {
                return Err(AuditWalk::ReachedFrom);
            }
            examined += 1;
            last_examined = Some(event.id.clone());
            let matches = filter.to.is_none_or(|to| event.at < to) && (filter.wanted)(&event);
            if matches {
                events.push(event);
            }
            Ok(matches)
        },
    );
    match walked {
        Ok(_) | Err(AuditWalk::ReachedFrom) => {}
        Err(AuditWalk::Store(error)) => return Err(error),
    }
    let resume_before = if events.len() > limit {
        // A further match exists: the next page starts before the last one kept.
        events.truncate(limit);
        events.last().map(|kept| kept.id.clone())
    } else if examined == AUDIT_MAX_EXAMINED {
        // The budget ran out: the next page goes on before the last event examined.
        last_examined
    } else {
        None
    };
    Ok(AuditPage {
        events,
        resume_before,
    })
}

/// How an audit walk stopped early: at the first event older than `from`, or on a store error.
enum AuditWalk {
    ReachedFrom,
    Store(StoreError),
}

impl From<StoreError> for AuditWalk {
    fn from(error: StoreError) -> AuditWalk {
        AuditWalk::Store(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(org: &OrgId, action: &str, at: i64) -> AuditEvent {
        AuditEvent {
            id: AuditId::generate(),
            org_id: Some(org.clone()),
            at: Timestamp(at),
            action: action.into(),
            actor_user_id: None,
            actor_email: None,
            target: None,
            ip: None,
            detail: serde_json::Value::Null,
        }
    }

    /// A rare match past the examination budget is reached by following the cursor, and `from`
    /// ends the scan.
    #[test]
    fn a_filtered_page_stops_at_its_budget_with_a_cursor_to_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(
            &dir.path().join("db.redb"),
            crate::store::StoreOptions::default(),
        )
        .unwrap();
        let org = OrgId::generate();
        // The oldest event is the only match, behind more events than one page examines.
        let mut events = vec![event(&org, "api_key.revoked", 1_000)];
        events.extend(
            (0..AUDIT_MAX_EXAMINED + 5).map(|n| event(&org, "login.succeeded", 2_000 + n as i64)),
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let written = events.clone();
        runtime
            .block_on(store.write(move |txn| {
                written
                    .iter()
                    .try_for_each(|event| insert_audit_event(txn, event))
            }))
            .unwrap();
        let wanted = |event: &AuditEvent| event.action == "api_key.revoked";
        let page = |before: Option<&AuditId>, from: Option<Timestamp>| {
            store
                .read_blocking(|txn| {
                    let filter = AuditFilter {
                        before,
                        from,
                        to: None,
                        wanted: &wanted,
                    };
                    audit_events_of_org_newest_first(txn, &org, &filter, 10)
                })
                .unwrap()
        };
        let first = page(None, None);
        assert!(first.events.is_empty());
        let cursor = first.resume_before.expect("a cursor past the budget");
        let second = page(Some(&cursor), None);
        assert_eq!(second.events.len(), 1);
        assert_eq!(second.events[0].id, events[0].id);
        assert_eq!(second.resume_before, None);
        // Everything matched is older than `from`: the scan ends at once, with no cursor.
        let bounded = page(None, Some(Timestamp(2_000 + AUDIT_MAX_EXAMINED as i64)));
        assert!(bounded.events.is_empty() && bounded.resume_before.is_none());
    }
}
