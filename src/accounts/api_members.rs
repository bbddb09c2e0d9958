//! HTTP face of members (CONTRACT.md section 2, "members"): list, add (with a password or an
//! invitation link), change a role, remove, reset a member's second factor, and accept an
//! invitation.
//!
//! Invariants:
//! - Who may manage whom is `roles.rs`, judged inside the write transaction against the actor's
//!   membership as stored then, and the owners counted then: the single writer serialises
//!   changes, so two owners demoting each other at once cannot leave the org without one.
//! - Every role change, removal and second-factor reset writes RegisterUserLogout for the target
//!   and its audit event in the same transaction as the change; the in-memory cutoff is noted
//!   after the commit and before the response, so the target's old session fails on its very
//!   next request. A removal also revokes the target's API keys in the org, so re-adding the
//!   user later does not bring old keys back to life.
//! - An existing account is never given a password or an invitation by another org's admin:
//!   only a brand-new user (or one with no password and no other membership) is.
//! - Invitation tokens are stored only as SHA-256 digests, valid `INVITATION_TTL`, and deleted
//!   when accepted, so each works once.

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use redb::WriteTransaction;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api::{OrgView, UserView};
use super::db;
use super::model::{
    Invitation, Membership, OrgId, Role, User, UserId, normalize_email, validate_password,
};
use super::roles::{self, MemberChange, Refusal};
use crate::auth::audit::{self, Actor};
use crate::auth::revocation::Revocations;
use crate::auth::{Admin, Auth, Viewer};
use crate::clock::Timestamp;
use crate::http::error::Problem;
use crate::http::page::PageRequest;
use crate::http::{ApiError, ApiJson, ClientAddr, ErrorCode};
use crate::store::StoreError;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_members, add_member))
        .routes(routes!(change_role, remove_member))
        .routes(routes!(reset_two_factor))
        .routes(routes!(accept_invitation))
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

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberList {
    pub items: Vec<MemberResponse>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberRequest {
    pub email: String,
    pub role: Role,
    /// For a new user. Without it the answer carries an `invite_url`. An existing account keeps
    /// its own password and this is ignored.
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRoleRequest {
    pub role: Role,
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

/// A member as stored, with what its view needs.
struct MemberRow {
    user: User,
    membership: Membership,
    two_factor_enabled: bool,
}

impl MemberRow {
    fn read(txn: &impl crate::store::ReadTxn, membership: Membership) -> Result<Self, StoreError> {
        let user = db::get_user(txn, &membership.user_id)?.ok_or_else(|| StoreError::Corrupt {
            what: "membership",
            detail: format!("names missing user {}", membership.user_id),
        })?;
        let two_factor_enabled = crate::auth::db::two_factor_enabled(txn, &user.id)?;
        Ok(MemberRow {
            user,
            membership,
            two_factor_enabled,
        })
    }

    fn view(&self) -> MemberResponse {
        MemberResponse {
            user_id: self.user.id.to_string(),
            email: self.user.email.clone(),
            role: self.membership.role,
            status: if self.user.password_hash.is_empty() {
                MemberStatus::Invited
            } else {
                MemberStatus::Active
            },
            two_factor_enabled: self.two_factor_enabled,
            joined_at: self.membership.created_at.to_rfc3339(),
            invite_url: None,
            invite_expires_at: None,
        }
    }
}

/// The actor's role as stored now: a session carries the role it was issued with, and the
/// decision must not rest on a role taken away a moment ago.
fn live_role(txn: &WriteTransaction, org: &OrgId, actor: &UserId) -> Result<Role, ApiError> {
    db::get_membership(txn, org, actor)?
        .map(|membership| membership.role)
        .ok_or_else(|| ApiError::new(ErrorCode::Forbidden, "you are no longer a member"))
}

fn owner_count(txn: &WriteTransaction, org: &OrgId) -> Result<usize, StoreError> {
    Ok(db::memberships_of_org(txn, org)?
        .iter()
        .filter(|membership| membership.role == Role::Owner)
        .count())
}

/// The target's membership, and a check that `actor` may apply `change` to it.
fn authorize_change(
    txn: &WriteTransaction,
    org: &OrgId,
    actor: &UserId,
    target: &UserId,
    change: MemberChange,
) -> Result<Membership, ApiError> {
    let membership =
        db::get_membership(txn, org, target)?.ok_or_else(|| ApiError::not_found("member"))?;
    let actor_role = live_role(txn, org, actor)?;
    roles::check_change(actor_role, membership.role, change, owner_count(txn, org)?)?;
    Ok(membership)
}

fn parse_user_id(text: &str) -> Result<UserId, ApiError> {
    UserId::parse(text).map_err(|_| ApiError::not_found("member"))
}

async fn hash_password(password: String) -> Result<String, ApiError> {
    validate_password(&password).map_err(|err| ApiError::new(ErrorCode::InvalidPayload, err.0))?;
    tokio::task::spawn_blocking(move || crate::auth::password::hash_password(&password))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

/// Lists the organisation's members in user-id order.
#[utoipa::path(get, path = "/api/v1/orgs/me/members", tag = "members",
    params(("limit" = Option<usize>, Query, description = "1 to 500, default 50"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = MemberList),
        (status = 400, description = "invalid_parameter", body = Problem, content_type = "application/problem+json")))]
async fn list_members(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<MemberList>, ApiError> {
    let after = match page.cursor.as_deref() {
        None => None,
        Some(cursor) => Some(UserId::parse(cursor).map_err(|_| PageRequest::bad_cursor())?),
    };
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let rows = auth
        .store()
        .read(move |txn| {
            // One extra row tells whether another page follows.
            let memberships = db::memberships_of_org_page(txn, &org, after.as_ref(), limit + 1)?;
            memberships
                .into_iter()
                .map(|membership| MemberRow::read(txn, membership))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await?;
    let next_cursor = (rows.len() > limit).then(|| rows[limit - 1].user.id.to_string());
    let items = rows.iter().take(limit).map(MemberRow::view).collect();
    Ok(Json(MemberList { items, next_cursor }))
}

/// What `add_member` decided inside its transaction.
struct Added {
    row: MemberRow,
    invitation: Option<Invitation>,
}

/// Adds `email` to `org` with `role`: an existing user as is, a new one with `password_hash`
/// or, without one, an invitation stored under `digest`.
struct AddMember {
    org: OrgId,
    actor: Actor,
    actor_id: UserId,
    email: String,
    role: Role,
    password_hash: Option<String>,
    digest: String,
    now: Timestamp,
}

fn add_member_txn(txn: &WriteTransaction, add: &AddMember) -> Result<Added, ApiError> {
    roles::check_grant(live_role(txn, &add.org, &add.actor_id)?, add.role)?;
    let existing = db::find_user_by_email(txn, &add.email)?;
    if let Some(user) = &existing
        && db::get_membership(txn, &add.org, &user.id)?.is_some()
    {
        return Err(ApiError::new(
            ErrorCode::AlreadyMember,
            format!("{} is already a member; change the role instead", add.email),
        ));
    }
    let (user, sets_credential) = match existing {
        None => {
            let user = User {
                id: UserId::generate(),
                email: add.email.clone(),
                password_hash: String::new(),
                created_at: add.now,
            };
            db::insert_user(txn, &user)?;
            (user, true)
        }
        // Nobody can sign in to an account with no password and no organisation: treat it as
        // new. Any other account belongs to someone, who keeps their own credentials.
        Some(user) => {
            let unclaimed =
                user.password_hash.is_empty() && db::memberships_of_user(txn, &user.id)?.is_empty();
            (user, unclaimed)
        }
    };
    let mut user = user;
    let mut invitation = None;
    if sets_credential {
        match &add.password_hash {
            Some(hash) => {
                user.password_hash = hash.clone();
                db::update_user(txn, &user)?;
            }
            None => {
                let created = Invitation::new(
                    add.org.clone(),
                    user.id.clone(),
                    add.actor_id.clone(),
                    add.now,
                );
                db::insert_invitation(txn, &add.digest, &created)?;
                invitation = Some(created);
            }
        }
    }
    let membership = Membership {
        org_id: add.org.clone(),
        user_id: user.id.clone(),
        role: add.role,
        created_at: add.now,
    };
    db::insert_membership(txn, &membership)?;
    let detail = json!({"email": user.email, "role": add.role, "invited": invitation.is_some()});
    audit::record(
        txn,
        Some(&add.org),
        &add.actor,
        "member.added",
        Some(user.id.as_str()),
        detail,
        add.now,
    )?;
    let two_factor_enabled = crate::auth::db::two_factor_enabled(txn, &user.id)?;
    Ok(Added {
        row: MemberRow {
            user,
            membership,
            two_factor_enabled,
        },
        invitation,
    })
}

/// Adds a member. A new user gets the given password, or an invitation link without one.
#[utoipa::path(post, path = "/api/v1/orgs/me/members", tag = "members", request_body = AddMemberRequest,
    responses((status = 201, body = MemberResponse),
        (status = 400, description = "invalid_payload", body = Problem, content_type = "application/problem+json"),
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
    let token = crate::auth::random_token();
    let add = AddMember {
        org: caller.org_id.clone(),
        actor: caller.actor(),
        actor_id: caller.user_id.clone(),
        email,
        role: request.role,
        password_hash,
        digest: hex::encode(crate::auth::token_digest(&token)),
        now: auth.clock().now(),
    };
    let added = auth
        .store()
        .write(move |txn| add_member_txn(txn, &add))
        .await?;
    let mut view = added.row.view();
    if let Some(invitation) = added.invitation {
        view.invite_url = Some(format!("{}/invite?token={token}", auth.base_url()));
        view.invite_expires_at = Some(invitation.expires_at.to_rfc3339());
    }
    Ok((StatusCode::CREATED, Json(view)))
}

/// Changes a member's role; the member's sessions end (RegisterUserLogout).
#[utoipa::path(patch, path = "/api/v1/orgs/me/members/{user_id}", tag = "members", request_body = ChangeRoleRequest,
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 200, body = MemberResponse),
        (status = 403, description = "forbidden", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "last_owner", body = Problem, content_type = "application/problem+json")))]
async fn change_role(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
    ApiJson(request): ApiJson<ChangeRoleRequest>,
) -> Result<Json<MemberResponse>, ApiError> {
    let target = parse_user_id(&user_id)?;
    let now = auth.clock().now();
    let (org, actor, actor_id, new_role) = (
        caller.org_id.clone(),
        caller.actor(),
        caller.user_id.clone(),
        request.role,
    );
    let written_target = target.clone();
    let (row, changed) = auth
        .store()
        .write(move |txn| {
            let change = MemberChange::SetRole(new_role);
            let mut membership = authorize_change(txn, &org, &actor_id, &written_target, change)?;
            let old_role = membership.role;
            if old_role == new_role {
                return Ok::<_, ApiError>((MemberRow::read(txn, membership)?, false));
            }
            membership.role = new_role;
            db::insert_membership(txn, &membership)?;
            Revocations::write_user_logout(txn, &written_target, now)?;
            let detail = json!({"from": old_role, "to": new_role});
            let target_text = Some(written_target.as_str());
            audit::record(
                txn,
                Some(&org),
                &actor,
                "member.role_changed",
                target_text,
                detail,
                now,
            )?;
            Ok((MemberRow::read(txn, membership)?, true))
        })
        .await?;
    if changed {
        auth.revocations().note_user_logout(&target, now);
    }
    Ok(Json(row.view()))
}

/// Removes a member from the organisation; its sessions end and its API keys here are revoked.
#[utoipa::path(delete, path = "/api/v1/orgs/me/members/{user_id}", tag = "members",
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 204),
        (status = 403, description = "forbidden", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "last_owner", body = Problem, content_type = "application/problem+json")))]
async fn remove_member(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let target = parse_user_id(&user_id)?;
    let now = auth.clock().now();
    let (org, actor, actor_id) = (
        caller.org_id.clone(),
        caller.actor(),
        caller.user_id.clone(),
    );
    let written_target = target.clone();
    auth.store()
        .write(move |txn| {
            let membership =
                authorize_change(txn, &org, &actor_id, &written_target, MemberChange::Remove)?;
            db::remove_membership(txn, &org, &written_target)?;
            let mut revoked_keys = 0;
            for mut key in crate::auth::db::api_keys_of_org(txn, &org)? {
                if key.user_id == written_target && key.revoked_at.is_none() {
                    key.revoked_at = Some(now);
                    crate::auth::db::update_api_key(txn, &key)?;
                    revoked_keys += 1;
                }
            }
            Revocations::write_user_logout(txn, &written_target, now)?;
            let detail = json!({"role": membership.role, "api_keys_revoked": revoked_keys});
            let target_text = Some(written_target.as_str());
            audit::record(
                txn,
                Some(&org),
                &actor,
                "member.removed",
                target_text,
                detail,
                now,
            )?;
            Ok::<_, ApiError>(())
        })
        .await?;
    auth.revocations().note_user_logout(&target, now);
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member's second factor so they sign in with the password alone and can enrol
/// again; the member's sessions end.
#[utoipa::path(delete, path = "/api/v1/orgs/me/members/{user_id}/two-factor", tag = "members",
    params(("user_id" = String, Path, description = "the member's user id")),
    responses((status = 204),
        (status = 403, description = "forbidden", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "no such member, or no second factor to reset", body = Problem, content_type = "application/problem+json")))]
async fn reset_two_factor(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    Path(user_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let target = parse_user_id(&user_id)?;
    let now = auth.clock().now();
    let (org, actor, actor_id) = (
        caller.org_id.clone(),
        caller.actor(),
        caller.user_id.clone(),
    );
    let written_target = target.clone();
    auth.store()
        .write(move |txn| {
            let change = MemberChange::ResetTwoFactor;
            authorize_change(txn, &org, &actor_id, &written_target, change)?;
            if !crate::auth::db::remove_two_factor(txn, &written_target)? {
                return Err(ApiError::new(
                    ErrorCode::NotFound,
                    "this member has no second factor to reset",
                ));
            }
            Revocations::write_user_logout(txn, &written_target, now)?;
            let target_text = Some(written_target.as_str());
            audit::record(
                txn,
                Some(&org),
                &actor,
                "two_factor.reset",
                target_text,
                json!({}),
                now,
            )?;
            Ok::<_, ApiError>(())
        })
        .await?;
    auth.revocations().note_user_logout(&target, now);
    Ok(StatusCode::NO_CONTENT)
}

fn invalid_invitation() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidInvitation,
        "this invitation is unknown, used or expired; ask an admin for a new one",
    )
}

/// The invitation of `digest` if it can still be accepted at `now`: unexpired, its membership
/// still there, and its user still without a password (a password set since — through another
/// invitation — must not be overwritten by this one).
fn open_invitation(
    txn: &impl crate::store::ReadTxn,
    digest: &str,
    now: Timestamp,
) -> Result<Option<(Invitation, User, Membership)>, StoreError> {
    let Some(invitation) = db::get_invitation(txn, digest)?.filter(|i| i.usable_at(now)) else {
        return Ok(None);
    };
    let user = db::get_user(txn, &invitation.user_id)?.filter(|u| u.password_hash.is_empty());
    let membership = db::get_membership(txn, &invitation.org_id, &invitation.user_id)?;
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
