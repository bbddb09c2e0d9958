//! HTTP face of members (CONTRACT.md section 2, "members"): list, add (with a password or an
//! invitation link), change a role, remove, and reset a member's second factor. The rules are
//! in `roles.rs`, the transactional steps in `members.rs`, invitation acceptance in
//! `api_invitations.rs`.
//!
//! Invariants: every role change, removal and second-factor reset writes RegisterUserLogout for
//! the target and its audit event in the same transaction as the change; the in-memory cutoff
//! is noted after the commit and before the response, so the target's old session fails on its
//! very next request. A removal also revokes the target's API keys in the org, so re-adding the
//! user later does not bring old keys back to life. An invitation token is returned once, in
//! the answer that created it; only its digest is stored.

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::members::{
    AddMember, Change, Changed, MemberError, MemberOfOrg, MemberRow, add_member_txn,
    authorize_credential_change, change_member, hash_password, remove_from_org, set_role,
};
use crate::accounts;
use crate::accounts::model::{Role, UserId, normalize_email};
use crate::accounts::roles::{self, MemberChange, Refusal};
use crate::auth::{Admin, Auth, Caller, Viewer};
use crate::http::error::Problem;
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
        .routes(routes!(list_members, add_member))
        .routes(routes!(change_role, remove_member))
        .routes(routes!(reset_two_factor))
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        let detail = refusal.to_string();
        match refusal {
            Refusal::Forbidden(_) => ApiError::new(ErrorCode::Forbidden, detail),
            Refusal::LastOwner => ApiError::new(ErrorCode::LastOwner, detail),
        }
    }
}

impl From<MemberError> for ApiError {
    fn from(error: MemberError) -> Self {
        let detail = error.to_string();
        match error {
            MemberError::NoLongerMember => ApiError::new(ErrorCode::Forbidden, detail),
            MemberError::MemberNotFound => ApiError::new(ErrorCode::NotFound, detail),
            MemberError::NoSecondFactor => ApiError::new(ErrorCode::NotFound, detail),
            MemberError::Refused(refusal) => ApiError::from(refusal),
            MemberError::AlreadyMember(_) => ApiError::new(ErrorCode::AlreadyMember, detail),
            MemberError::InvalidPassword(input) => {
                ApiError::new(ErrorCode::InvalidPayload, input.0)
            }
            MemberError::Account(account) => ApiError::from(account),
            MemberError::Hashing(hashing) => ApiError::from(hashing),
            MemberError::Store(store) => ApiError::from(store),
        }
    }
}

/// Whether the member can sign in yet.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemberStatus {
    Active,
    /// Added without a password; waiting for the invitation to be accepted.
    Invited,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberResponse {
    pub user_id: String,
    pub email: String,
    pub role: Role,
    pub status: MemberStatus,
    pub two_factor_enabled: bool,
    pub joined_at: String,
    /// `{BASE_URL}/invite?token=…`: only in the answer that created the invitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invite_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invite_expires_at: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberRequest {
    pub email: String,
    pub role: Role,
    /// For a new user. Without it the answer carries an `invite_url`. An existing account keeps
    /// its own password: this is never applied to it, and the answer does not say so.
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRoleRequest {
    pub role: Role,
}

fn member_view(row: &MemberRow) -> MemberResponse {
    MemberResponse {
        user_id: row.membership.user_id.to_string(),
        email: row.email.clone(),
        role: row.membership.role,
        status: if row.invited {
            MemberStatus::Invited
        } else {
            MemberStatus::Active
        },
        two_factor_enabled: row.two_factor_enabled,
        joined_at: row.membership.created_at.to_rfc3339(),
        invite_url: None,
        invite_expires_at: None,
    }
}

fn parse_user_id(text: &str) -> Result<UserId, ApiError> {
    UserId::parse(text).map_err(|_| ApiError::not_found("member"))
}

/// Lists the organisation's members in user-id order.
#[utoipa::path(get, path = "/api/v1/orgs/me/members", tag = "members",
    params(("limit" = Option<usize>, Query, description = "1 to 500, default 50"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = Page<MemberResponse>),
        problems::Invalid))]
async fn list_members(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<Page<MemberResponse>>, ApiError> {
    let after = page.cursor_as(UserId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let rows = store
        .read(move |txn| {
            // One extra row tells whether another page follows.
            let memberships =
                accounts::memberships_of_org_page(txn, &org, after.as_ref(), limit + 1)?;
            memberships
                .into_iter()
                .map(|membership| MemberRow::read(txn, membership))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |row| row.membership.user_id.to_string(),
        member_view,
    )))
}

/// Adds a member. A new user gets the given password, or an invitation link without one; an
/// existing account is invited and joins when it accepts as itself. The answer is the same
/// either way.
#[utoipa::path(post, path = "/api/v1/orgs/me/members", tag = "members", request_body = AddMemberRequest,
    responses((status = 201, body = MemberResponse),
        problems::Invalid,
        (status = 403, description = "forbidden: admins add members and viewers only", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "already_member", body = Problem, content_type = "application/problem+json")))]
async fn add_member(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<AddMemberRequest>,
) -> Result<(StatusCode, Json<MemberResponse>), ApiError> {
    let email = normalize_email(&request.email)
        .map_err(|err| ApiError::new(ErrorCode::InvalidPayload, err.0))?;
    // Checked again in the transaction; refusing here first saves a password hash.
    roles::check_grant(caller.role, request.role)?;
    let password_hash = match request.password {
        Some(password) => Some(hash_password(password).await?),
        None => None,
    };
    let token = crate::secrets::random_token();
    let add_email = email.clone();
    let add = AddMember {
        org: caller.org_id.clone(),
        actor: caller.actor(),
        actor_id: caller.user_id.clone(),
        email,
        role: request.role,
        password_hash,
        digest: crate::secrets::digest_hex(&token),
        now: auth.clock().now(),
    };
    let added = auth
        .store()
        .write(move |txn| add_member_txn(txn, &add))
        .await?;
    // Built from the request, not from the account: the answer is the same whether the
    // e-mail had an account or not (docs/api.md, "Adding a member").
    let view = MemberResponse {
        user_id: added.member_id.to_string(),
        email: add_email,
        role: added.membership.role,
        status: match added.invitation {
            Some(_) => MemberStatus::Invited,
            None => MemberStatus::Active,
        },
        two_factor_enabled: false,
        joined_at: added.membership.created_at.to_rfc3339(),
        invite_url: added
            .invitation
            .as_ref()
            .map(|_| format!("{}/invite?token={token}", auth.base_url())),
        invite_expires_at: added
            .invitation
            .as_ref()
            .map(|invitation| invitation.expires_at.to_rfc3339()),
    };
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes a member's role; the member's sessions end (RegisterUserLogout).
#[utoipa::path(patch, path = "/api/v1/orgs/me/members/{user_id}", tag = "members", request_body = ChangeRoleRequest,
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 200, body = MemberResponse),
        problems::Forbidden,
        problems::NotFound,
        (status = 409, description = "last_owner", body = Problem, content_type = "application/problem+json")))]
async fn change_role(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
    ApiJson(request): ApiJson<ChangeRoleRequest>,
) -> Result<Json<MemberResponse>, ApiError> {
    let new_role = request.role;
    let target = member_of_org(&caller, &user_id, MemberChange::SetRole(new_role))?;
    let changed = change_member(
        auth.store(),
        auth.clock(),
        target,
        move |txn, membership, _| {
            set_role(txn, membership, new_role)?
                .try_map(|membership| MemberRow::read(txn, membership).map_err(MemberError::from))
        },
    )
    .await?;
    note_logout(&auth, &changed);
    Ok(Json(member_view(&changed.answer)))
}

/// The target of an admin's `change` to the member `user_id` of the caller's organisation.
fn member_of_org(
    caller: &Caller,
    user_id: &str,
    change: MemberChange,
) -> Result<MemberOfOrg, ApiError> {
    Ok(MemberOfOrg {
        org: caller.org_id.clone(),
        actor: caller.actor(),
        actor_id: caller.user_id.clone(),
        member: parse_user_id(user_id)?,
        change,
    })
}

/// Notes a change's session cutoff in the running server's memory, after its commit.
fn note_logout<T>(auth: &Auth, changed: &Changed<T>) {
    if let Some((user, cutoff)) = &changed.sessions_ended_at {
        auth.revocations().note_user_logout(user, *cutoff);
    }
}

/// Removes a member from the organisation; its sessions end and its API keys here are revoked.
#[utoipa::path(delete, path = "/api/v1/orgs/me/members/{user_id}", tag = "members",
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 204),
        problems::Forbidden,
        problems::NotFound,
        (status = 409, description = "last_owner", body = Problem, content_type = "application/problem+json")))]
async fn remove_member(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let target = member_of_org(&caller, &user_id, MemberChange::Remove)?;
    let changed = change_member(
        auth.store(),
        auth.clock(),
        target,
        |txn, membership, now| remove_from_org(txn, &membership, now),
    )
    .await?;
    note_logout(&auth, &changed);
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member's second factor so they sign in with the password alone and can enrol
/// again; the member's sessions end.
#[utoipa::path(delete, path = "/api/v1/orgs/me/members/{user_id}/two-factor", tag = "members",
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 204),
        problems::Forbidden,
        (status = 404, description = "no such member, or no second factor to reset", body = Problem, content_type = "application/problem+json")))]
async fn reset_two_factor(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let target = member_of_org(&caller, &user_id, MemberChange::ResetTwoFactor)?;
    let changed = change_member(auth.store(), auth.clock(), target, |txn, membership, _| {
        let member = membership.user_id.clone();
        authorize_credential_change(txn, membership)?;
        if !super::db::remove_two_factor(txn, &member)? {
            return Err(MemberError::NoSecondFactor);
        }
        Ok(Change::Made {
            action: "two_factor.reset",
            detail: json!({}),
            ends_sessions: true,
            answer: (),
        })
    })
    .await?;
    note_logout(&auth, &changed);
    Ok(StatusCode::NO_CONTENT)
}
