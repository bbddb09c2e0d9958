//! How an account that already existed proves who it is when it accepts an invitation without
//! a session: its own password, then its second factor when it has one. Used by
//! `api_invitations.rs` only.
//!
//! Invariants: the checks are those of sign-in and share its bookkeeping — a locked account is
//! refused (423) before any password is evaluated, a wrong password or code counts as a failed
//! sign-in of that e-mail (and may lock it), and a code works once. The whole check holds the
//! e-mail's sign-in turn (`auth::account_locks`) and hashes on the bounded hashing pool.
//! Failures are filed under no organisation: the inviting org must not learn the account's id
//! or where it belongs.

use std::net::IpAddr;

use crate::accounts::model::User;
use crate::auth::audit::Actor;
use crate::auth::login::{self, SignInError};
use crate::auth::{Auth, db, totp};
use crate::secrets::password;
use crate::store::StoreError;

/// Checks `password` (and `code` when the account has a second factor) for `account`.
pub async fn prove(
    auth: &Auth,
    account: &User,
    password: String,
    code: Option<String>,
    client: IpAddr,
) -> Result<(), SignInError> {
    let key = account.email.clone();
    // Sign-in's turn for this e-mail, held until the outcome is written, so parallel accepts
    // and sign-ins together evaluate at most the lockout limit of passwords.
    let _turn = auth.account_locks().turn(&key).await;
    let now = auth.clock().now();
    let (state, two_factor) = {
        let (key, user) = (key.clone(), account.id.clone());
        auth.store()
            .read(move |txn| {
                let state = db::login_state(txn, &key)?;
                Ok::<_, StoreError>((state, db::two_factor_enabled(txn, &user)?))
            })
            .await?
    };
    if let Some(until) = state.locked_at(now) {
        return Err(SignInError::Locked { until, now });
    }
    // An account without a password (itself still invited elsewhere) is checked against the
    // dummy hash, so it takes as long and fails.
    let stored = if account.password_hash.is_empty() {
        auth.dummy_password_hash().to_string()
    } else {
        account.password_hash.clone()
    };
    let matches = password::verify_bounded(password, stored).await?;
    let actor = Actor {
        user_id: None,
        email: Some(key.clone()),
        ip: Some(client.to_string()),
    };
    if !matches || account.password_hash.is_empty() {
        login::record_failure(auth, &key, actor, None, "login.failed").await?;
        return Err(SignInError::WrongPassword);
    }
    if !two_factor {
        return Ok(());
    }
    let code = code.ok_or(SignInError::CodeMissing)?;
    let user = account.id.clone();
    let accepted = auth
        .store()
        .write(move |txn| totp::verify_and_consume(txn, &user, &code, now))
        .await?;
    if !accepted {
        login::record_failure(auth, &key, actor, None, "login.second_factor_failed").await?;
        return Err(SignInError::WrongCode);
    }
    Ok(())
}
