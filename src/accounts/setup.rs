//! First-run setup: while no user exists, a one-time token lets whoever holds the printed URL
//! create the first organisation and its owner (`POST /api/v1/setup`).
//!
//! Invariants: only the token's SHA-256 is stored; a token works once, because completing
//! setup creates a user and the check "no user exists" runs in the same transaction as the
//! insert; any user created another way (the CLI) also retires the token.

use super::model::Role;
use super::{AccountsError, CreatedUser, NewUser, db, prepare_user, write_user};
use crate::clock::Clock;
use crate::secrets::{digests_match, random_token, token_digest};
use crate::store::{Store, meta_get, meta_put, meta_remove};

const SETUP_TOKEN_KEY: &str = "setup_token_sha256";

/// When no user exists, mints a fresh setup token (replacing any earlier one) and returns it.
pub async fn prepare(store: &Store) -> Result<Option<String>, AccountsError> {
    let token = random_token();
    let digest = token_digest(&token);
    let minted = store
        .write(move |txn| {
            if db::count_users(txn)? > 0 {
                meta_remove(txn, SETUP_TOKEN_KEY)?;
                return Ok::<_, AccountsError>(false);
            }
            meta_put(txn, SETUP_TOKEN_KEY, &digest)?;
            Ok(true)
        })
        .await?;
    Ok(minted.then_some(token))
}

/// Whether setup is still open (no user yet).
pub async fn is_required(store: &Store) -> Result<bool, AccountsError> {
    store.read(|txn| Ok(db::count_users(txn)? == 0)).await
}

/// Removes the token; called in the transaction that creates a user.
pub(super) fn retire_token(txn: &redb::WriteTransaction) -> Result<(), AccountsError> {
    Ok(meta_remove(txn, SETUP_TOKEN_KEY)?)
}

/// Creates the first organisation and its owner, consuming the token.
pub async fn complete(
    store: &Store,
    clock: &Clock,
    token: &str,
    email: String,
    password: String,
    org_name: String,
) -> Result<CreatedUser, AccountsError> {
    // Refuse a finished setup or a wrong token before spending time on the password hash.
    let digest = token_digest(token);
    check(store, digest).await?;
    let prepared = prepare_user(NewUser {
        email,
        password,
        role: Role::Owner,
        org_name: Some(org_name),
    })
    .await?;
    let clock = clock.clone();
    store
        .write(move |txn| {
            if db::count_users(txn)? > 0 {
                return Err(AccountsError::SetupCompleted);
            }
            match meta_get(txn, SETUP_TOKEN_KEY)? {
                Some(stored) if digests_match(&stored, &digest) => {}
                _ => return Err(AccountsError::InvalidSetupToken),
            }
            write_user(txn, &prepared, &clock)
        })
        .await
}

async fn check(store: &Store, digest: [u8; 32]) -> Result<(), AccountsError> {
    store
        .read(move |txn| {
            if db::count_users(txn)? > 0 {
                return Err(AccountsError::SetupCompleted);
            }
            match meta_get(txn, SETUP_TOKEN_KEY)? {
                Some(stored) if digests_match(&stored, &digest) => Ok(()),
                _ => Err(AccountsError::InvalidSetupToken),
            }
        })
        .await
}
