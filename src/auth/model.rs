//! Stored records of authentication and the pure rules about them.
//!
//! Invariants: no secret is stored in the clear — API keys, recovery codes and invite tokens
//! are kept as SHA-256 digests; a lockout state is keyed by the normalised e-mail whether or
//! not such a user exists, so lockout reveals nothing about which accounts exist.

use serde::{Deserialize, Serialize};

use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::typed_id;

typed_id!(
    /// `key_…`
    ApiKeyId,
    "key_"
);
typed_id!(
    /// `aud_…`: one audit log entry.
    AuditId,
    "aud_"
);

/// An API key. The secret itself is shown once and only its digest is kept (see `db.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub org_id: OrgId,
    /// The issuer: the key acts with this user's current role in `org_id`.
    pub user_id: UserId,
    pub name: String,
    /// The first characters of the secret, to tell keys apart in lists.
    pub prefix: String,
    pub created_at: Timestamp,
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    #[serde(default)]
    pub revoked_at: Option<Timestamp>,
    /// When the key last authenticated a request, to the minute (`key_usage.rs`).
    #[serde(default)]
    pub last_used_at: Option<Timestamp>,
}

impl Record for ApiKey {
    const KIND: &'static str = "api key";
}

impl ApiKey {
    pub fn usable_at(&self, now: Timestamp) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|expires| now < expires)
    }
}

/// Failed sign-ins of one (normalised) e-mail address. Its size is bounded: at most
/// `max_failures` instants (reaching the limit clears them and locks) and one entry reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoginState {
    /// Failures inside the current window, oldest first.
    pub failures: Vec<Timestamp>,
    pub locked_until: Option<Timestamp>,
    /// The audit entry that counts this window's failures, updated in place.
    #[serde(default)]
    pub failure_entry: Option<FailureEntry>,
}

/// Where the failures of one window are counted in the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureEntry {
    pub org_id: Option<OrgId>,
    pub id: AuditId,
    /// The action of the entry (`login.failed`, `login.second_factor_failed`).
    pub action: String,
    pub started_at: Timestamp,
    pub count: u32,
}

impl Record for LoginState {
    const KIND: &'static str = "login state";
}

/// The outcome of recording one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureOutcome {
    Counted,
    /// This failure reached the limit: the account is locked until the given instant.
    Locked(Timestamp),
}

/// The lockout policy (`LOGIN_MAX_FAILURES` within `LOGIN_FAILURE_WINDOW_MINUTES` locks for
/// `LOGIN_LOCKOUT_MINUTES`).
#[derive(Debug, Clone, Copy)]
pub struct LockoutPolicy {
    pub max_failures: u32,
    pub window: std::time::Duration,
    pub lockout: std::time::Duration,
}

impl LoginState {
    /// The instant after which this state says nothing any more: its lock is over, its
    /// failures are out of the window and its audit entry's window has closed. The sweep
    /// removes it from then on.
    pub fn expires_at(&self, policy: &LockoutPolicy) -> Timestamp {
        let failures_end = self.failures.iter().map(|at| at.plus(policy.window));
        let entry_end = self
            .failure_entry
            .iter()
            .map(|entry| entry.started_at.plus(policy.window));
        failures_end
            .chain(entry_end)
            .chain(self.locked_until)
            .max()
            .unwrap_or(Timestamp(i64::MIN))
    }

    /// The audit entry of `action` still counting failures at `now`, if any.
    pub fn open_failure_entry(
        &self,
        action: &str,
        now: Timestamp,
        policy: &LockoutPolicy,
    ) -> Option<&FailureEntry> {
        self.failure_entry
            .as_ref()
            .filter(|entry| entry.action == action && now < entry.started_at.plus(policy.window))
    }

    /// When the account is locked at `now`, the instant it unlocks.
    pub fn locked_at(&self, now: Timestamp) -> Option<Timestamp> {
        self.locked_until.filter(|until| now < *until)
    }

    /// Adds a failure at `now`, forgetting failures outside the window.
    pub fn record_failure(&mut self, now: Timestamp, policy: &LockoutPolicy) -> FailureOutcome {
        let window_ms = i64::try_from(policy.window.as_millis()).unwrap_or(i64::MAX);
        self.failures
            .retain(|at| now.unix_millis().saturating_sub(at.unix_millis()) < window_ms);
        self.failures.push(now);
        if self.failures.len() >= policy.max_failures as usize {
            let until = now.plus(policy.lockout);
            self.failures.clear();
            self.locked_until = Some(until);
            return FailureOutcome::Locked(until);
        }
        FailureOutcome::Counted
    }
}

/// "Every session of this user issued before `after` is void" (RegisterUserLogout).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SessionCutoff {
    pub after: Timestamp,
}

impl Record for SessionCutoff {
    const KIND: &'static str = "session cutoff";
}

/// One revoked session token (by `jti`), kept until the token would have expired anyway.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RevokedSession {
    pub expires_at: Timestamp,
}

impl Record for RevokedSession {
    const KIND: &'static str = "revoked session";
}

/// A user's TOTP enrolment. `enabled` turns true once a first code confirmed the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwoFactor {
    /// The shared secret, base32 (RFC 4648, no padding), 160 bits.
    pub secret: String,
    pub enabled: bool,
    /// The last time step whose code was accepted: a code of this step or earlier is refused,
    /// so every code works once.
    #[serde(default)]
    pub last_used_step: Option<u64>,
    /// Hex SHA-256 digests of the unused recovery codes.
    #[serde(default)]
    pub recovery_code_digests: Vec<String>,
    pub created_at: Timestamp,
    #[serde(default)]
    pub enabled_at: Option<Timestamp>,
}

impl Record for TwoFactor {
    const KIND: &'static str = "two-factor enrolment";
}

/// One security event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub id: AuditId,
    pub org_id: Option<OrgId>,
    pub at: Timestamp,
    /// e.g. `login.succeeded`, `api_key.revoked`, `member.role_changed`.
    pub action: String,
    pub actor_user_id: Option<UserId>,
    pub actor_email: Option<String>,
    pub target: Option<String>,
    pub ip: Option<String>,
    #[serde(default)]
    pub detail: serde_json::Value,
}

impl Record for AuditEvent {
    const KIND: &'static str = "audit event";
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// Three failures within a minute lock for five minutes; shared by the auth unit tests.
    pub(crate) const POLICY: LockoutPolicy = LockoutPolicy {
        max_failures: 3,
        window: Duration::from_secs(60),
        lockout: Duration::from_secs(300),
    };

    #[test]
    fn the_limit_within_the_window_locks() {
        let mut state = LoginState::default();
        let start = Timestamp(1_000_000);
        assert_eq!(
            state.record_failure(start, &POLICY),
            FailureOutcome::Counted
        );
        assert_eq!(
            state.record_failure(start.plus(Duration::from_secs(10)), &POLICY),
            FailureOutcome::Counted
        );
        let third = start.plus(Duration::from_secs(20));
        let until = third.plus(POLICY.lockout);
        assert_eq!(
            state.record_failure(third, &POLICY),
            FailureOutcome::Locked(until)
        );
        assert_eq!(state.locked_at(third), Some(until));
        assert_eq!(state.locked_at(until), None, "the lock ends at its instant");
    }

    #[test]
    fn failures_outside_the_window_are_forgotten() {
        let mut state = LoginState::default();
        let start = Timestamp(1_000_000);
        state.record_failure(start, &POLICY);
        state.record_failure(start.plus(Duration::from_secs(30)), &POLICY);
        // The first failure is 61 s old by now: only two count.
        let later = start.plus(Duration::from_secs(61));
        assert_eq!(
            state.record_failure(later, &POLICY),
            FailureOutcome::Counted
        );
        assert_eq!(state.failures.len(), 2);
    }

    #[test]
    fn state_expires_with_its_window_and_its_lock() {
        let mut state = LoginState::default();
        let start = Timestamp(1_000_000);
        state.record_failure(start, &POLICY);
        assert_eq!(state.expires_at(&POLICY), start.plus(POLICY.window));
        state.record_failure(start, &POLICY);
        state.record_failure(start, &POLICY);
        assert_eq!(state.expires_at(&POLICY), start.plus(POLICY.lockout));
        assert!(
            LoginState::default().expires_at(&POLICY) < start,
            "an empty state is already expired"
        );
    }

    #[test]
    fn keys_expire_and_revoke() {
        let key = ApiKey {
            id: ApiKeyId::generate(),
            org_id: OrgId::generate(),
            user_id: UserId::generate(),
            name: "ci".into(),
            prefix: "lk_abcd".into(),
            created_at: Timestamp(0),
            expires_at: Some(Timestamp(100)),
            revoked_at: None,
            last_used_at: None,
        };
        assert!(key.usable_at(Timestamp(99)));
        assert!(!key.usable_at(Timestamp(100)));
        let revoked = ApiKey {
            revoked_at: Some(Timestamp(5)),
            expires_at: None,
            ..key
        };
        assert!(!revoked.usable_at(Timestamp(1)));
    }
}
