//! HTTP face of invitations: `POST /api/v1/auth/invitations/accept` (see `api_members.rs`).
//! A new account (added without a password) sets its password here; an account that already
//! existed proves who it is — a session of that same account, or its own password plus its
//! second factor when it has one — and only then becomes a member.
//!
//! Invariants: tokens are stored only as SHA-256 digests; an invitation is deleted when
//! accepted, so it works once; it is refused once expired (`INVITATION_TTL`), once its
//! membership is gone or younger than itself, or once a new account has a password. Accepting
//! never sets or changes the password of an account that existed before the invitation (an
//! inviting admin holds the token, so a token alone proves nothing about that account). A
//! password tried here counts towards the account's sign-in lockout like one tried at sign-in.
//! A wrong token costs a read, never a password hash.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::members::hash_password;
use crate::accounts;
use crate::accounts::model::{Invitation, Membership, Role, User, normalize_email};
use crate::accounts::{OrgView, UserView};
use crate::auth::audit::{self, Actor};
use crate::auth::revocation::Revocations;
use crate::auth::{Auth, Caller};
use crate::clock::Timestamp;
use crate::http::error::Problem;
use crate::http::problems;
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
    /// A new account: the password to set. An account that already existed: its own current
    /// password (never changed here), unless the request carries a session of that account.
    #[serde(default)]
    pub password: Option<String>,
    /// With `password`, when the existing account has a second factor: a current code or a
    /// recovery code.
    #[serde(default)]
    pub code: Option<String>,
    /// Optional: the invited e-mail, as a sign-in form sends it; when given it must be the one
    /// invited.
    #[serde(default)]
    pub email: Option<String>,
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

fn invalid_credentials() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidCredentials,
        "sign in as the invited account first, or send its own password",
    )
}

/// An invitation that can still be accepted, and whose account it is for.
enum OpenInvitation {
    /// A user added without a password: accepting sets it.
    NewAccount(Invitation, User, Membership),
    /// An account that existed when it was invited: accepting turns the placeholder membership
    /// into its own.
    ExistingAccount(Invitation, User, Membership),
}

impl OpenInvitation {
    /// The e-mail of the invited account.
    fn email(&self) -> &str {
        match self {
            OpenInvitation::NewAccount(_, user, _)
            | OpenInvitation::ExistingAccount(_, user, _) => &user.email,
        }
    }
}

/// The invitation of `digest` if it can still be accepted at `now`: unexpired, its membership
/// still there and no younger than the invitation (a link sent before a removal stays dead when
/// the user is added again), and for a new account still without a password (a password set
/// since, through another invitation, must not be overwritten by this one).
fn open_invitation(
    txn: &impl ReadTxn,
    digest: &str,
    now: Timestamp,
) -> Result<Option<OpenInvitation>, StoreError> {
    let Some(invitation) = accounts::get_invitation(txn, digest)?.filter(|i| i.usable_at(now))
    else {
        return Ok(None);
    };
    let Some(membership) = accounts::get_membership(txn, &invitation.org_id, &invitation.user_id)?
        .filter(|m| m.created_at <= invitation.created_at)
    else {
        return Ok(None);
    };
    Ok(match membership.invitee_email.clone() {
        Some(email) => accounts::find_user_by_email(txn, &email)?
            .filter(|account| account.disabled_at.is_none())
            .map(|account| OpenInvitation::ExistingAccount(invitation, account, membership)),
        None => accounts::get_user(txn, &invitation.user_id)?
            .filter(|user| user.password_hash.is_empty())
            .map(|user| OpenInvitation::NewAccount(invitation, user, membership)),
    })
}

/// Accepts an invitation: a new account sets its password; an existing account proves who it
/// is and joins. The invitation works once.
#[utoipa::path(post, path = "/api/v1/auth/invitations/accept", tag = "members", request_body = AcceptInvitationRequest,
    responses((status = 200, description = "accepted: the account is a member", body = InvitationAccepted),
        problems::Invalid,
        (status = 401, description = "invalid_invitation; invalid_credentials or invalid_code when an existing account did not prove who it is", body = Problem, content_type = "application/problem+json"),
        problems::Locked))]
async fn accept_invitation(
    State(auth): State<Auth>,
    ClientAddr(client): ClientAddr,
    session: Result<Caller, ApiError>,
    ApiJson(request): ApiJson<AcceptInvitationRequest>,
) -> Result<Json<InvitationAccepted>, ApiError> {
    let digest = crate::secrets::digest_hex(request.token.trim());
    let now = auth.clock().now();
    // A cheap look first, so a wrong token costs no password hash.
    let lookup = digest.clone();
    let opened = auth
        .store()
        .read(move |txn| open_invitation(txn, &lookup, now))
        .await?
        .ok_or_else(invalid_invitation)?;
    let typed = request.email.as_deref().map(normalize_email);
    if typed.is_some_and(|typed| typed.as_deref() != Ok(opened.email())) {
        return Err(invalid_credentials());
    }
    let actor = move |user: &User| Actor {
        user_id: Some(user.id.clone()),
        email: Some(user.email.clone()),
        ip: Some(client.to_string()),
    };
    let (user, org, role) = match opened {
        OpenInvitation::NewAccount(..) => {
            let password = request.password.ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidPayload, "choose a password: `password`")
            })?;
            let password_hash = hash_password(password).await?;
            let accepted = auth
                .store()
                .write(move |txn| {
                    let Some(OpenInvitation::NewAccount(invitation, mut user, membership)) =
                        open_invitation(txn, &digest, now)?
                    else {
                        return Err(invalid_invitation());
                    };
                    accounts::remove_invitation(txn, &digest)?;
                    user.password_hash = password_hash.clone();
                    accounts::update_user(txn, &user)?;
                    // Setting a password is a password change: RegisterUserLogout, as everywhere.
                    Revocations::write_user_logout(txn, &user.id, now)?;
                    record_acceptance(txn, &invitation, &actor(&user), &user, now)?;
                    finish(txn, invitation, user, membership.role)
                })
                .await?;
            auth.revocations().note_user_logout(&accepted.0.id, now);
            accepted
        }
        OpenInvitation::ExistingAccount(_, account, _) => {
            let signed_in_as_account = session
                .as_ref()
                .is_ok_and(|caller| caller.session().is_some() && caller.user_id == account.id);
            if !signed_in_as_account {
                let password = request.password.ok_or_else(invalid_credentials)?;
                super::invitation_proof::prove(&auth, &account, password, request.code, client)
                    .await?;
            }
            auth.store()
                .write(move |txn| {
                    let Some(OpenInvitation::ExistingAccount(invitation, user, placeholder)) =
                        open_invitation(txn, &digest, now)?
                    else {
                        return Err(invalid_invitation());
                    };
                    if user.id != account.id {
                        return Err(invalid_invitation());
                    }
                    accounts::remove_invitation(txn, &digest)?;
                    accounts::remove_membership(txn, &placeholder.org_id, &placeholder.user_id)?;
                    if accounts::get_membership(txn, &placeholder.org_id, &user.id)?.is_none() {
                        let membership = Membership::active(
                            placeholder.org_id.clone(),
                            user.id.clone(),
                            placeholder.role,
                            now,
                        );
                        accounts::insert_membership(txn, &membership)?;
                    }
                    record_acceptance(txn, &invitation, &actor(&user), &user, now)?;
                    finish(txn, invitation, user, placeholder.role)
                })
                .await?
        }
    };
    Ok(Json(InvitationAccepted {
        user: (&user).into(),
        org: (&org).into(),
        role,
    }))
}

/// The audit entry of an accepted invitation, in the inviting organisation.
fn record_acceptance(
    txn: &redb::WriteTransaction,
    invitation: &Invitation,
    actor: &Actor,
    user: &User,
    now: Timestamp,
) -> Result<(), StoreError> {
    let detail = json!({"invited_by": invitation.invited_by});
    let org = Some(&invitation.org_id);
    let target = Some(user.id.as_str());
    audit::record(txn, org, actor, "invitation.accepted", target, detail, now)
}

/// The answer's parts: the account, the organisation joined and the role there.
fn finish(
    txn: &redb::WriteTransaction,
    invitation: Invitation,
    user: User,
    role: Role,
) -> Result<(User, accounts::model::Org, Role), ApiError> {
    let org = accounts::get_org(txn, &invitation.org_id)?
        .ok_or_else(|| ApiError::not_found("organisation"))?;
    Ok((user, org, role))
}
