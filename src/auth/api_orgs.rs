//! The organisations of the signed-in person (CONTRACT.md section 9): `GET /api/v1/auth/orgs`
//! lists them, `POST /api/v1/auth/switch-org` exchanges the session for one in another of them.
//!
//! Invariants: only memberships the person has joined count (a pending invitation is held under
//! a placeholder id, never the person's own); any other organisation id, existing or not, is
//! the same 404 `not_found`, so nothing tells what else exists. An API key belongs to one
//! organisation: the list names that one, and switching needs a session (403 `forbidden`).
//! A switch answers exactly as a sign-in does (body and cookies) and revokes the old session's
//! `jti` in the transaction that records `auth.switch_org` (once: a session already exchanged
//! is refused, `401 session_revoked`); the target organisation's IP
//! allowlist applies before anything is written, and its 2FA enforcement applies to the new
//! session as it does to a signed-in one (`caller.rs`). The person already proved a second
//! factor for the session being exchanged, so none is asked again.

use axum::Json;
use axum::extract::{FromRef, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_session::{SessionResponse, session_response};
use super::revocation::Revocations;
use super::{Auth, Caller, Credential, audit, db, login};
use crate::accounts;
use crate::accounts::model::{Membership, Org, OrgId, Role};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_own_orgs))
        .routes(routes!(switch_org))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OwnOrg {
    pub id: String,
    pub name: String,
    pub role: Role,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SwitchOrgRequest {
    pub org_id: String,
}

/// The joined memberships of `caller` with their organisations, in organisation id order
/// (their creation order); for an API key, its own organisation only.
fn own_orgs(
    txn: &redb::ReadTransaction,
    caller: &Caller,
) -> Result<Vec<(Org, Membership)>, StoreError> {
    let mut memberships = match caller.credential {
        Credential::Session(_) => accounts::memberships_of_user(txn, &caller.user_id)?,
        Credential::ApiKey(_) => accounts::get_membership(txn, &caller.org_id, &caller.user_id)?
            .into_iter()
            .collect(),
    };
    memberships.retain(|membership| !membership.awaits_existing_account());
    memberships.sort_by(|a, b| a.org_id.as_str().cmp(b.org_id.as_str()));
    let mut found = Vec::with_capacity(memberships.len());
    for membership in memberships {
        if let Some(org) = accounts::get_org(txn, &membership.org_id)? {
            found.push((org, membership));
        }
    }
    Ok(found)
}

/// The organisations the caller belongs to, with the caller's role in each.
#[utoipa::path(get, path = "/api/v1/auth/orgs", tag = "auth",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, description = "joined organisations; an API key lists its own only", body = Page<OwnOrg>)))]
async fn list_own_orgs(
    State(store): State<Store>,
    caller: Caller,
    page: PageRequest,
) -> Result<Json<Page<OwnOrg>>, ApiError> {
    let orgs = store.read(move |txn| own_orgs(txn, &caller)).await?;
    let (orgs, next_cursor) = page.of_sorted(orgs, |(org, _)| org.id.to_string());
    let items = orgs
        .into_iter()
        .map(|(org, membership)| OwnOrg {
            id: org.id.to_string(),
            name: org.name,
            role: membership.role,
        })
        .collect();
    Ok(Json(Page::new(items, next_cursor)))
}

/// Signs the caller in to another of its organisations and ends the current session.
#[utoipa::path(post, path = "/api/v1/auth/switch-org", tag = "auth", request_body = SwitchOrgRequest,
    responses(
        (status = 200, description = "signed in to that organisation (cookies set), as a sign-in answers", body = SessionResponse),
        problems::Unauthenticated,
        problems::Forbidden,
        problems::NotFound,
    ))]
async fn switch_org(
    State(auth): State<Auth>,
    caller: Caller,
    ApiJson(request): ApiJson<SwitchOrgRequest>,
) -> Result<Response, ApiError> {
    let Some(old_claims) = caller.session().cloned() else {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "an API key belongs to one organisation: sign in with a session to switch",
        ));
    };
    let not_member = || ApiError::new(ErrorCode::NotFound, "no organisation of yours has that id");
    let target = OrgId::parse(request.org_id.trim()).map_err(|_| not_member())?;
    let user_id = caller.user_id.clone();
    let lookup = target.clone();
    let found = auth
        .store()
        .read(move |txn| {
            let membership = accounts::get_membership(txn, &lookup, &user_id)?;
            let Some(membership) = membership.filter(|m| !m.awaits_existing_account()) else {
                return Ok::<_, StoreError>(None);
            };
            let org = accounts::get_org(txn, &lookup)?;
            let user = accounts::get_user(txn, &user_id)?;
            let enabled = db::two_factor_enabled(txn, &user_id)?;
            Ok(org
                .zip(user)
                .map(|(org, user)| (org, user, membership, enabled)))
        })
        .await?;
    let (org, user, membership, two_factor_enabled) = found.ok_or_else(not_member)?;
    super::allowlist::require_admitted(&org.ip_allowlist, caller.client, "that")?;
    let now = auth.clock().now();
    let signed = login::issue_session(&auth, user, org, membership.role, two_factor_enabled, now)?;
    let (actor, from, revoked) = (caller.actor(), caller.org_id.clone(), old_claims.clone());
    let detail = json!({"from_org": from.to_string(), "role": membership.role.as_str()});
    // A session is exchanged once: of two switches racing with one token, the second finds it
    // revoked in its own transaction and is refused (a value, so nothing is rolled back).
    let exchanged = auth
        .store()
        .write(move |txn| {
            if db::is_session_revoked(txn, &revoked.jti)? {
                return Ok::<_, StoreError>(false);
            }
            Revocations::write_session_logout(txn, &revoked)?;
            let (action, detail) = ("auth.switch_org", detail.clone());
            audit::record(txn, Some(&target), &actor, action, None, detail, now)?;
            Ok(true)
        })
        .await?;
    if !exchanged {
        return Err(ApiError::new(
            ErrorCode::SessionRevoked,
            "this session has been ended; sign in again",
        ));
    }
    auth.revocations().note_session_logout(&old_claims);
    Ok(session_response(&auth, signed))
}
