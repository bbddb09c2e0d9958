//! Who a `/scim/v2` request acts for: `ScimCaller`, read from `Authorization: Bearer` with a
//! SCIM token, and nothing else (no cookies, no API keys, no CSRF: CONTRACT section 7).
//!
//! Order of checks: a token that is present, known and not revoked (401); its organisation on
//! the enterprise plan (403 with the `plan_required` detail); its creator still an admin or
//! owner there (else 401: the token is as dead as their rights); the client admitted by the
//! organisation's IP allowlist (403). Every refusal is a SCIM error.

use std::net::IpAddr;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};

use super::db;
use super::model::{ScimTokenId, TOKEN_PREFIX};
use super::protocol::ScimError;
use crate::accounts;
use crate::accounts::model::{OrgId, Plan, Role, UserId};
use crate::auth::allowlist;
use crate::http::extract::ClientAddr;
use crate::store::{Store, StoreError};

/// The organisation a SCIM request provisions, and the role it acts with.
#[derive(Debug, Clone)]
pub struct ScimCaller {
    pub org_id: OrgId,
    pub token_id: ScimTokenId,
    /// The token's creator, whose current role the token acts with.
    pub acting_user: UserId,
    pub role: Role,
    pub client: IpAddr,
}

/// What the token lookup found, read in one transaction.
enum Found {
    Unknown,
    FreePlan,
    CreatorGone,
    NotAdmitted,
    Caller(ScimCaller),
}

impl<S> FromRequestParts<S> for ScimCaller
where
    S: Send + Sync,
    Store: FromRef<S>,
{
    type Rejection = ScimError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ScimError> {
        let unauthorized = |detail: &str| ScimError::new(StatusCode::UNAUTHORIZED, None, detail);
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| token.starts_with(TOKEN_PREFIX))
            .ok_or_else(|| unauthorized("a SCIM token is required in Authorization: Bearer"))?;
        let digest = crate::secrets::digest_hex(presented);
        let ClientAddr(client) = ClientAddr::from_request_parts(parts, state)
            .await
            .map_err(|_| ScimError::internal("no client address"))?;
        let store = Store::from_ref(state);
        let found = store
            .read(move |txn| lookup(txn, &digest, client))
            .await
            .map_err(ScimError::internal)?;
        match found {
            Found::Caller(caller) => Ok(caller),
            Found::Unknown | Found::CreatorGone => {
                Err(unauthorized("unknown or revoked SCIM token"))
            }
            Found::FreePlan => Err(ScimError::new(
                StatusCode::FORBIDDEN,
                None,
                "plan_required: SCIM provisioning needs the enterprise plan",
            )),
            Found::NotAdmitted => Err(ScimError::new(
                StatusCode::FORBIDDEN,
                None,
                format!("{client} is not in the organisation's IP allowlist"),
            )),
        }
    }
}

fn lookup(
    txn: &impl crate::store::ReadTxn,
    digest: &str,
    client: IpAddr,
) -> Result<Found, StoreError> {
    let Some(token) = db::TOKENS.find_live(txn, digest)? else {
        return Ok(Found::Unknown);
    };
    let Some(org) = accounts::get_org(txn, &token.org_id)? else {
        return Ok(Found::Unknown);
    };
    if org.plan != Plan::Enterprise {
        return Ok(Found::FreePlan);
    }
    let role = match accounts::get_membership(txn, &org.id, &token.created_by)? {
        Some(membership)
            if membership.role.at_least(Role::Admin) && !membership.awaits_existing_account() =>
        {
            membership.role
        }
        _ => return Ok(Found::CreatorGone),
    };
    let creator_enabled =
        accounts::get_user(txn, &token.created_by)?.is_some_and(|user| user.disabled_at.is_none());
    if !creator_enabled {
        return Ok(Found::CreatorGone);
    }
    if !allowlist::admits(&org.ip_allowlist, client) {
        return Ok(Found::NotAdmitted);
    }
    Ok(Found::Caller(ScimCaller {
        org_id: org.id,
        token_id: token.id,
        acting_user: token.created_by,
        role,
        client,
    }))
}
