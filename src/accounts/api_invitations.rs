//! HTTP face of invitations: `POST /api/v1/auth/invitations/accept` sets the password of a
//! user added without one (see `api_members.rs`).
//!
//! Invariants: tokens are stored only as SHA-256 digests; an invitation is deleted when
//! accepted, so it works once; it is refused once expired (`INVITATION_TTL`), once its
//! membership is gone or younger than itself, or once its user has a password. A wrong token
//! costs a read, never a password hash.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api::{OrgView, UserView};
use super::db;
use super::members::hash_password;
use super::model::{Invitation, Membership, Role, User};
use crate::auth::Auth;
use crate::auth::audit::{self, Actor};
use crate::auth::revocation::Revocations;
use crate::clock::Timestamp;
use crate::http::error::Problem;
use crate::http::{ApiError, ApiJson, ClientAddr, ErrorCode};
use crate::store::{ReadTxn, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(accept_invitation))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitationRequest {
    pub token: String,
    pub password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationAccepted {
    pub user: UserView,
    pub org: OrgView,
    pub role: Role,
}

fn invalid_invitation() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidInvitation,
        "this invitation is unknown, used or expired; ask an admin for a new one",
    )
}

/// The invitation of `digest` if it can still be accepted at `now`: unexpired, its membership
/// still there and no younger than the invitation (a link sent before a removal stays dead when
/// the user is added again), and its user still without a password (a password set since —
/// through another invitation — must not be overwritten by this one).
fn open_invitation(
    txn: &impl ReadTxn,
    digest: &str,
    now: Timestamp,
) -> Result<Option<(Invitation, User, Membership)>, StoreError> {
    let Some(invitation) = db::get_invitation(txn, digest)?.filter(|i| i.usable_at(now)) else {
        return Ok(None);
    };
    let user = db::get_user(txn, &invitation.user_id)?.filter(|u| u.password_hash.is_empty());
    let membership = db::get_membership(txn, &invitation.org_id, &invitation.user_id)?
        .filter(|m| m.created_at <= invitation.created_at);
    Ok(user.zip(membership).map(|(user, m)| (invitation, user, m)))
}

/// Sets the password of an invited user; the invitation works once.
#[utoipa::path(post, path = "/api/v1/auth/invitations/accept", tag = "members", request_body = AcceptInvitationRequest,
    responses((status = 200, description = "password set; sign in with it", body = InvitationAccepted),
        (status = 400, description = "invalid_payload (e.g. a short password)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "invalid_invitation", body = Problem, content_type = "application/problem+json")))]
async fn accept_invitation(
    State(auth): State<Auth>,
    ClientAddr(client): ClientAddr,
    ApiJson(request): ApiJson<AcceptInvitationRequest>,
) -> Result<Json<InvitationAccepted>, ApiError> {
    let digest = hex::encode(crate::auth::token_digest(request.token.trim()));
    let now = auth.clock().now();
    // A cheap look first, so a wrong token costs no password hash.
    let lookup = digest.clone();
    if auth
        .store()
        .read(move |txn| open_invitation(txn, &lookup, now))
        .await?
        .is_none()
    {
        return Err(invalid_invitation());
    }
    let password_hash = hash_password(request.password).await?;
    let (user, org, membership) = auth
        .store()
        .write(move |txn| {
            let (invitation, mut user, membership) =
                open_invitation(txn, &digest, now)?.ok_or_else(invalid_invitation)?;
            db::remove_invitation(txn, &digest)?;
            user.password_hash = password_hash.clone();
            db::update_user(txn, &user)?;
            // Setting a password is a password change: RegisterUserLogout, as everywhere.
            Revocations::write_user_logout(txn, &user.id, now)?;
            let actor = Actor {
                user_id: Some(user.id.clone()),
                email: Some(user.email.clone()),
                ip: Some(client.to_string()),
            };
            let detail = json!({"invited_by": invitation.invited_by});
            let org = invitation.org_id.clone();
            audit::record(
                txn,
                Some(&org),
                &actor,
                "invitation.accepted",
                Some(user.id.as_str()),
                detail,
                now,
            )?;
            let org = db::get_org(txn, &org)?.ok_or_else(|| ApiError::not_found("organisation"))?;
            Ok::<_, ApiError>((user, org, membership))
        })
        .await?;
    auth.revocations().note_user_logout(&user.id, now);
    Ok(Json(InvitationAccepted {
        user: (&user).into(),
        org: (&org).into(),
        role: membership.role,
    }))
}
