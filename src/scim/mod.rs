//! SCIM 2.0 provisioning (RFC 7643/7644, CONTRACT section 7) for organisations on the
//! enterprise plan: identity providers create, change, deactivate and delete members and their
//! roles under `/scim/v2` with a SCIM token.
//!
//! Protocol pieces: `protocol.rs` (media type, error body, list windows), `filter.rs` (the
//! `eq` filters providers send), `patch.rs` (PatchOp bodies), `user.rs` (the User resource);
//! records in `model.rs` (tokens, provisioned users) and their tables in `db.rs`.

pub mod access;
pub mod api;
mod api_groups;
pub mod api_tokens;
mod api_users;
pub mod db;
pub mod discovery;
pub mod filter;
pub mod model;
pub mod patch;
pub mod protocol;
pub mod provision;
pub mod user;

/// Whether this organisation's SCIM provisioned `user` (so a sign-in through the
/// organisation's SSO may use that account), in a caller's transaction.
pub fn is_provisioned(
    txn: &impl crate::store::ReadTxn,
    org: &crate::accounts::model::OrgId,
    user: &crate::accounts::model::UserId,
) -> Result<bool, crate::store::StoreError> {
    Ok(db::get_user(txn, org, user)?.is_some())
}
