//! Signing in: password check with per-account lockout, the second-factor step, and the
//! session that results.
//!
//! Invariants: an unknown e-mail and a wrong password take the same path — an argon2 verify (of
//! a dummy hash for unknown addresses), a recorded failure, the same 401 — so neither the body,
//! the status nor the timing tells them apart. Lockout is keyed by the normalised e-mail, not
//! the client address. A decision and its bookkeeping (failure count, lock, audit entry,
//! consumed code) commit together, and a rejected attempt is still recorded: the write
//! closures report rejection as a value, never as an error (an error would roll it back).
//!
//! Bounds: an e-mail that is not an address (or is over 254 bytes) is refused with 400
//! `invalid_email` before anything is read or written. The decisions of one e-mail take turns
//! (`account_locks.rs`): the lock is re-read after the previous decision was written, so at
//! most `LOGIN_MAX_FAILURES` passwords or codes are evaluated per window however many arrive
//! at once. argon2 runs on the bounded hashing pool (503 `overloaded` when its queue is full).

use std::net::IpAddr;

use serde_json::json;

use super::audit::{self, Actor};
use super::model::{FailureOutcome, LockoutPolicy, LoginState};
use super::revocation::Revocations;
use super::tokens::{Claims, LOGIN_TOKEN_TTL, TokenKind};
use super::{Auth, db, totp};
use crate::accounts::model::{Membership, Org, OrgId, Plan, Role, User, normalize_email};
use crate::accounts::{self};
use crate::clock::Timestamp;
use crate::secrets::hashing_pool::HashingError;
use crate::secrets::password;
use crate::store::StoreError;

/// Why a sign-in (or an invitation's proof of identity) was refused or failed;
/// `api_session.rs` maps it to a problem.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// 400 `invalid_email`: what was typed is not an address (it is not echoed: it may be long).
    #[error("the e-mail must be an address of at most {MAX_EMAIL_BYTES} bytes")]
    InvalidEmail,
    /// 423 `account_locked` until `until`, told as Retry-After from `now`.
    #[error("too many failed sign-ins: this account is locked for now")]
    Locked { until: Timestamp, now: Timestamp },
    /// 401 `invalid_credentials`, the same for an unknown e-mail and a wrong password.
    #[error("wrong e-mail or password")]
    WrongPassword,
    #[error("wrong, expired or already used code")]
    WrongCode,
    #[error("this account has a second factor: send `code` too")]
    CodeMissing,
    /// The login token did not verify; holds why.
    #[error("login token rejected: {0}; sign in again")]
    LoginTokenRejected(String),
    #[error("this login token was already used; sign in again")]
    LoginTokenUsed,
    #[error("the account no longer exists")]
    AccountGone,
    #[error("the membership no longer exists")]
    MembershipGone,
    /// 403 `sso_required`: the organisation signs its members in through SSO only.
    #[error("this organisation signs its members in through single sign-on only")]
    SsoRequired,
    /// A token could not be signed; holds why (logged, never sent).
    #[error("{0}")]
    Signing(String),
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new session.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub token: String,
    pub claims: Claims,
    pub csrf_token: String,
    pub user: User,
    pub org: Org,
    pub role: Role,
    pub two_factor_enabled: bool,
}

pub enum LoginOutcome {
    SignedIn(Box<SignedIn>),
    /// The password was right; a second factor is awaited with this login token.
    SecondFactor {
        login_token: String,
    },
}

/// What the sign-in needs from storage, read in one transaction.
struct Account {
    user: User,
    membership: Membership,
    org: Org,
    two_factor_enabled: bool,
}

/// The longest e-mail accepted, in bytes (RFC 5321's path limit less the angle brackets).
pub const MAX_EMAIL_BYTES: usize = 254;

pub(crate) fn policy(auth: &Auth) -> LockoutPolicy {
    let settings = auth.settings();
    LockoutPolicy {
        max_failures: settings.login_max_failures,
        window: settings.login_failure_window,
        lockout: settings.login_lockout,
    }
}

/// How long a client refused by a lock until `until` is told to wait: whole seconds, at least one.
pub(crate) fn lock_retry_after(until: Timestamp, now: Timestamp) -> std::time::Duration {
    let seconds =
        u64::try_from((until.unix_millis() - now.unix_millis()).max(1000) / 1000).unwrap_or(1);
    std::time::Duration::from_secs(seconds)
}

/// The lockout key of what was typed: the normalised address, or 400 `invalid_email` for
/// anything else (the input is not echoed: it may be long).
fn lockout_key(email: &str) -> Result<String, SignInError> {
    if email.trim().len() > MAX_EMAIL_BYTES {
        return Err(SignInError::InvalidEmail);
    }
    normalize_email(email).map_err(|_| SignInError::InvalidEmail)
}

/// Reads the account of `email` in `org_hint` (id or name) or its oldest membership.
async fn find_account(
    auth: &Auth,
    email: &str,
    org_hint: Option<&str>,
) -> Result<(LoginState, Option<Account>), SignInError> {
    let email = email.to_string();
    let org_hint = org_hint.map(str::to_string);
    let found = auth
        .store()
        .read(move |txn| {
            let state = db::login_state(txn, &email)?;
            // A disabled account signs in no more: it takes the unknown address's path.
            let found = accounts::find_user_by_email(txn, &email)?;
            let Some(user) = found.filter(|user| user.disabled_at.is_none()) else {
                return Ok::<_, StoreError>((state, None));
            };
            let memberships = accounts::memberships_of_user(txn, &user.id)?;
            let chosen = match &org_hint {
                Some(hint) => {
                    let org = accounts::find_org(txn, hint)?;
                    memberships
                        .into_iter()
                        .find(|m| org.as_ref().is_some_and(|o| o.id == m.org_id))
                }
                None => memberships.into_iter().min_by_key(|m| m.created_at),
            };
            let Some(membership) = chosen else {
                return Ok((state, None));
            };
            let Some(org) = accounts::get_org(txn, &membership.org_id)? else {
                return Ok((state, None));
            };
            let two_factor_enabled = db::two_factor_enabled(txn, &user.id)?;
            Ok((
                state,
                Some(Account {
                    user,
                    membership,
                    org,
                    two_factor_enabled,
                }),
            ))
        })
        .await?;
    Ok(found)
}

/// `POST /api/v1/auth/login`.
pub async fn password_login(
    auth: &Auth,
    email: &str,
    password: &str,
    org_hint: Option<&str>,
    client: IpAddr,
) -> Result<LoginOutcome, SignInError> {
    let key = lockout_key(email)?;
    // Held until the outcome is written, so the next attempt of this e-mail sees it.
    let _turn = auth.account_locks().turn(&key).await;
    let now = auth.clock().now();
    let (state, account) = find_account(auth, &key, org_hint).await?;
    if let Some(until) = state.locked_at(now) {
        return Err(SignInError::Locked { until, now });
    }
    // Always one argon2 verify, against a dummy hash when there is no such account.
    let stored = match &account {
        Some(account) if !account.user.password_hash.is_empty() => {
            account.user.password_hash.clone()
        }
        _ => auth.dummy_password_hash().to_string(),
    };
    let matches = password::verify_bounded(password.to_string(), stored).await?;
    let actor = Actor {
        user_id: account.as_ref().map(|a| a.user.id.clone()),
        email: Some(key.clone()),
        ip: Some(client.to_string()),
    };
    // A known user's failures go to the audit log of their organisation, where admins see them.
    let audit_org = account.as_ref().map(|account| account.org.id.clone());
    let Some(account) = account.filter(|_| matches) else {
        record_failure(auth, &key, actor, audit_org, "login.failed").await?;
        return Err(SignInError::WrongPassword);
    };
    let org_id = account.org.id.clone();
    let second_factor = account.two_factor_enabled;
    // "SSO required" holds members to SSO; an owner's password is the audited break-glass path.
    let sso_only = account.org.sso_required && account.org.plan == Plan::Enterprise;
    if sso_only && account.membership.role != Role::Owner {
        auth.store()
            .write(move |txn| {
                let detail = json!({"reason": "sso_required"});
                audit::record(
                    txn,
                    Some(&org_id),
                    &actor,
                    "login.refused",
                    None,
                    detail,
                    now,
                )
            })
            .await?;
        return Err(SignInError::SsoRequired);
    }
    auth.store()
        .write(move |txn| {
            if sso_only {
                audit::record(
                    txn,
                    Some(&org_id),
                    &actor,
                    "login.break_glass",
                    None,
                    json!({}),
                    now,
                )?;
            }
            // With a second factor pending, the failure count (wrong codes included) stays:
            // only a completed sign-in resets it, so re-entering the password buys no new tries.
            if !second_factor {
                db::put_login_state(txn, &key, &LoginState::default())?;
            }
            let action = if second_factor {
                "login.password_accepted"
            } else {
                "login.succeeded"
            };
            audit::record(txn, Some(&org_id), &actor, action, None, json!({}), now)
        })
        .await?;
    if account.two_factor_enabled {
        let (login_token, _) = auth
            .signer()
            .issue(
                TokenKind::Login,
                &account.user.id,
                &account.org.id,
                None,
                now,
                LOGIN_TOKEN_TTL,
            )
            .map_err(|err| SignInError::Signing(err.to_string()))?;
        return Ok(LoginOutcome::SecondFactor { login_token });
    }
    issue_session(
        auth,
        account.user,
        account.org,
        account.membership.role,
        false,
        now,
    )
    .map(|s| LoginOutcome::SignedIn(Box::new(s)))
}

/// Counts a failed attempt (and locks when it is the last allowed), with its audit entry.
pub(crate) async fn record_failure(
    auth: &Auth,
    key: &str,
    actor: Actor,
    org: Option<OrgId>,
    action: &'static str,
) -> Result<(), StoreError> {
    let key = key.to_string();
    let policy = policy(auth);
    let now = auth.clock().now();
    auth.store()
        .write(move |txn| {
            let mut state = db::login_state(txn, &key)?;
            let failure = audit::FailedSignIn {
                org: org.as_ref(),
                actor: &actor,
                action,
                target: Some(&key),
            };
            count_failure(txn, &key, &mut state, &failure, now, &policy)
        })
        .await?;
    Ok(())
}

/// Adds one failure to `state` (the state of `key`) and the audit log, writes the state, and
/// records the lock when this failure reached the limit.
fn count_failure(
    txn: &redb::WriteTransaction,
    key: &str,
    state: &mut LoginState,
    failure: &audit::FailedSignIn<'_>,
    now: Timestamp,
    policy: &LockoutPolicy,
) -> Result<(), StoreError> {
    let outcome = state.record_failure(now, policy);
    audit::count_failure(txn, state, failure, now, policy)?;
    db::put_login_state(txn, key, state)?;
    if let FailureOutcome::Locked(until) = outcome {
        audit::record(
            txn,
            failure.org,
            failure.actor,
            "login.locked",
            Some(key),
            json!({"until": until.to_rfc3339()}),
            now,
        )?;
    }
    Ok(())
}

/// Signs a session for `user` in `org`.
pub fn issue_session(
    auth: &Auth,
    user: User,
    org: Org,
    role: Role,
    two_factor_enabled: bool,
    now: Timestamp,
) -> Result<SignedIn, SignInError> {
    let ttl = auth.settings().jwt_ttl;
    let (token, claims) = auth
        .signer()
        .issue(TokenKind::Session, &user.id, &org.id, Some(role), now, ttl)
        .map_err(|err| SignInError::Signing(err.to_string()))?;
    let csrf_token = auth.csrf_token(&claims.jti);
    Ok(SignedIn {
        token,
        claims,
        csrf_token,
        user,
        org,
        role,
        two_factor_enabled,
    })
}

/// The same session re-signed as multi-factor, for a sign-in an identity provider asserted
/// was: it satisfies the organisation's 2FA enforcement (`Claims::mfa`).
pub fn with_provider_mfa(auth: &Auth, mut signed: SignedIn) -> Result<SignedIn, SignInError> {
    signed.claims.mfa = true;
    signed.token = auth
        .signer()
        .sign(&signed.claims)
        .map_err(SignInError::Signing)?;
    Ok(signed)
}

/// What the second-factor transaction decided.
enum CodeOutcome {
    Accepted,
    WrongCode,
    TokenUsed,
    Locked(Timestamp),
}

/// `POST /api/v1/auth/2fa/complete`: exchanges a login token and a code for a session.
pub async fn complete_second_factor(
    auth: &Auth,
    login_token: &str,
    code: &str,
    client: IpAddr,
) -> Result<SignedIn, SignInError> {
    let now = auth.clock().now();
    let claims = auth
        .signer()
        .verify(TokenKind::Login, login_token, now)
        .map_err(|err| SignInError::LoginTokenRejected(err.to_string()))?;
    let user_id = claims.sub.clone();
    let user = auth
        .store()
        .read_blocking(|txn| accounts::get_user(txn, &user_id))?
        .filter(|user| user.disabled_at.is_none())
        .ok_or(SignInError::AccountGone)?;
    let key = user.email.clone();
    let policy = policy(auth);
    let actor = Actor {
        user_id: Some(user.id.clone()),
        email: Some(key.clone()),
        ip: Some(client.to_string()),
    };
    let (code, txn_claims, org_id) = (code.to_string(), claims.clone(), claims.org.clone());
    // Codes take turns with passwords of the same e-mail, so both count against one limit.
    let turn = auth.account_locks().turn(&key).await;
    let outcome = auth
        .store()
        .write(move |txn| {
            let mut state = db::login_state(txn, &key)?;
            if let Some(until) = state.locked_at(now) {
                return Ok::<_, StoreError>(CodeOutcome::Locked(until));
            }
            // A login token is single-use: its jti joins the revoked sessions on success.
            if db::is_session_revoked(txn, &txn_claims.jti)? {
                return Ok(CodeOutcome::TokenUsed);
            }
            if totp::verify_and_consume(txn, &txn_claims.sub, &code, now)? {
                Revocations::write_session_logout(txn, &txn_claims)?;
                db::put_login_state(txn, &key, &LoginState::default())?;
                audit::record(
                    txn,
                    Some(&org_id),
                    &actor,
                    "login.succeeded",
                    None,
                    json!({"second_factor": true}),
                    now,
                )?;
                return Ok(CodeOutcome::Accepted);
            }
            let failure = audit::FailedSignIn {
                org: Some(&org_id),
                actor: &actor,
                action: "login.second_factor_failed",
                target: None,
            };
            count_failure(txn, &key, &mut state, &failure, now, &policy)?;
            Ok(CodeOutcome::WrongCode)
        })
        .await?;
    drop(turn);
    match outcome {
        CodeOutcome::Accepted => {}
        CodeOutcome::Locked(until) => return Err(SignInError::Locked { until, now }),
        CodeOutcome::TokenUsed => {
            return Err(SignInError::LoginTokenUsed);
        }
        CodeOutcome::WrongCode => {
            return Err(SignInError::WrongCode);
        }
    }
    auth.revocations().note_session_logout(&claims);
    let (org, role) = auth
        .store()
        .read_blocking(|txn| {
            let org = accounts::get_org(txn, &claims.org)?;
            let membership = accounts::get_membership(txn, &claims.org, &claims.sub)?;
            Ok::<_, StoreError>(org.zip(membership.map(|m| m.role)))
        })?
        .ok_or(SignInError::MembershipGone)?;
    issue_session(auth, user, org, role, true, now)
}
