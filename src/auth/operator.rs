//! Operator recovery of one account, whatever organisations it belongs to: a new password, the
//! second factor removed, the sign-in lock lifted, the account disabled (`lookout user
//! reset-password|reset-2fa|unlock|disable`, docs/cli.md). Only the operator holds these
//! powers: an organisation's admins act on credentials only of accounts that belong to their
//! organisation alone (`roles::check_credential_change`).
//!
//! Invariants: each change, its RegisterUserLogout (password, second factor, disable) and its
//! audit entries commit in one write (`members::change_member`, the frame of every member
//! change); the entry goes to the audit log of every organisation the
//! account belongs to (under no organisation when it has none), so each org's admins see what
//! the operator did to their member. The caller notes the returned cutoff in the running
//! server's memory after the commit (`admin::execute`).

use redb::WriteTransaction;
use serde_json::{Value, json};

use crate::accounts::model::{User, UserId, normalize_email};
use crate::accounts::{self, AccountsError, hash_new_password};
use crate::auth::audit::{self, Actor};
use crate::auth::members::{Change, ChangeTarget, Changed, change_member};
use crate::clock::{Clock, Timestamp};
use crate::store::Store;

/// What a recovery command did to an account.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub user: User,
    /// When the account's sessions were ended (RegisterUserLogout), if they were.
    pub sessions_ended_at: Option<Timestamp>,
    /// What changed, for the command's output and the audit entry.
    pub detail: Value,
}

/// Sets a new password; every session of the account ends.
pub async fn reset_password(
    store: &Store,
    clock: &Clock,
    email: &str,
    password: String,
) -> Result<Recovered, AccountsError> {
    let target = AccountByEmail::parse(email)?;
    let password_hash = hash_new_password(password).await?;
    let changed = change_member(store, clock, target, move |txn, mut user, _| {
        user.password_hash = password_hash.clone();
        accounts::update_user(txn, &user)?;
        Ok(ending_sessions("user.password_reset", json!({}), user))
    })
    .await?;
    Ok(recovered(changed))
}

/// Removes the second factor, if any; every session of the account ends.
pub async fn reset_two_factor(
    store: &Store,
    clock: &Clock,
    email: &str,
) -> Result<Recovered, AccountsError> {
    let target = AccountByEmail::parse(email)?;
    let changed = change_member(store, clock, target, |txn, user, _| {
        let removed = super::db::remove_two_factor(txn, &user.id)?;
        let detail = json!({"two_factor_removed": removed});
        Ok(ending_sessions("two_factor.reset", detail, user))
    })
    .await?;
    Ok(recovered(changed))
}

/// Forgets the failed sign-ins of the account and lifts its lock; sessions go on.
pub async fn unlock(store: &Store, clock: &Clock, email: &str) -> Result<Recovered, AccountsError> {
    let target = AccountByEmail::parse(email)?;
    let changed = change_member(store, clock, target, |txn, user, _| {
        let cleared = super::db::clear_login_state(txn, &user.email)?;
        let detail = json!({"login_state_cleared": cleared});
        Ok(Change::Made {
            action: "login.unlocked",
            detail: detail.clone(),
            ends_sessions: false,
            answer: (user, detail),
        })
    })
    .await?;
    Ok(recovered(changed))
}

/// Disables the account: it signs in no more, every session ends and every API key it issued
/// is revoked, in every organisation.
pub async fn disable(
    store: &Store,
    clock: &Clock,
    email: &str,
) -> Result<Recovered, AccountsError> {
    let target = AccountByEmail::parse(email)?;
    let changed = change_member(store, clock, target, |txn, mut user, now| {
        user.disabled_at.get_or_insert(now);
        accounts::update_user(txn, &user)?;
        let mut revoked_keys = 0;
        for membership in accounts::memberships_of_user(txn, &user.id)? {
            revoked_keys +=
                super::db::revoke_api_keys_of_member(txn, &membership.org_id, &user.id, now)?;
        }
        let detail = json!({"api_keys_revoked": revoked_keys});
        Ok(ending_sessions("user.disabled", detail, user))
    })
    .await?;
    Ok(recovered(changed))
}

/// A change that ends every session of the account (RegisterUserLogout); the command reports
/// the account and the detail.
fn ending_sessions(action: &'static str, detail: Value, user: User) -> Change<(User, Value)> {
    Change::Made {
        action,
        detail: detail.clone(),
        ends_sessions: true,
        answer: (user, detail),
    }
}

/// What the command reports of a change made through `change_member`.
fn recovered(changed: Changed<(User, Value)>) -> Recovered {
    let (user, detail) = changed.answer;
    Recovered {
        user,
        sessions_ended_at: changed.sessions_ended_at.map(|(_, at)| at),
        detail,
    }
}

/// The operator's change to the account of a normalised e-mail, whatever organisations it
/// belongs to; its audit entries go to each of them (or under none).
pub struct AccountByEmail {
    email: String,
}

impl AccountByEmail {
    pub fn parse(email: &str) -> Result<AccountByEmail, AccountsError> {
        Ok(AccountByEmail {
            email: normalize_email(email)?,
        })
    }
}

impl ChangeTarget for AccountByEmail {
    type Subject = User;
    type Error = AccountsError;

    /// The account, or the operator's error naming it.
    fn load(&self, txn: &WriteTransaction) -> Result<User, AccountsError> {
        accounts::find_user_by_email(txn, &self.email)?
            .ok_or_else(|| AccountsError::UserNotFound(self.email.clone()))
    }

    fn user_id(user: &User) -> UserId {
        user.id.clone()
    }

    /// One audit entry of `action` on `user` in each of its organisations (or under none).
    fn record(
        &self,
        txn: &WriteTransaction,
        user: &UserId,
        action: &str,
        detail: &Value,
        now: Timestamp,
    ) -> Result<(), AccountsError> {
        // The operator is nobody's account: the entry says "operator" in its detail instead.
        let operator = Actor {
            user_id: None,
            email: None,
            ip: None,
        };
        let mut entry = detail.clone();
        entry["by"] = json!("operator");
        let orgs: Vec<_> = accounts::memberships_of_user(txn, user)?
            .into_iter()
            .map(|membership| Some(membership.org_id))
            .collect();
        let orgs = if orgs.is_empty() { vec![None] } else { orgs };
        for org in &orgs {
            let target = Some(user.as_str());
            audit::record(
                txn,
                org.as_ref(),
                &operator,
                action,
                target,
                entry.clone(),
                now,
            )?;
        }
        Ok(())
    }
}
