//! `/scim/v2` (CONTRACT section 7): the discovery documents, and the `ScimJson` body every
//! write reads. The Users and Groups handlers are in `api_users.rs` and `api_groups.rs`.
//!
//! Invariants: a body is read under the API's size and time limits, as `application/scim+json`
//! or `application/json`, and must be a JSON object; every refusal is a SCIM error; provisioning
//! failures map to SCIM errors in one exhaustive `match` (`provision_error`).

use axum::extract::{FromRef, FromRequest, Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::ScimCaller;
use super::discovery;
use super::protocol::{ScimError, scim_json};
use super::provision::{ProvisionError, Provisioner};
use crate::accounts::roles::Refusal;
use crate::auth::Auth;
use crate::auth::audit::Actor;
use crate::auth::members::{Changed, MemberError};
use crate::http::ApiError;
use crate::http::extract::{media_type, read_routed_body};
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(service_provider_config))
        .routes(routes!(resource_types))
        .routes(routes!(resource_type))
        .routes(routes!(schemas))
        .routes(routes!(schema))
        .merge(super::api_users::routes())
        .merge(super::api_groups::routes())
}

/// A SCIM request body: a JSON object.
pub struct ScimJson(pub Value);

impl<S: Send + Sync> FromRequest<S> for ScimJson {
    type Rejection = ScimError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ScimError> {
        let essence = media_type(request.headers());
        if essence != super::protocol::MEDIA_TYPE && essence != "application/json" {
            return Err(ScimError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                "send the body as application/scim+json",
            ));
        }
        let bytes = read_routed_body(request).await.map_err(from_api_error)?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|error| ScimError::bad("invalidSyntax", format!("not JSON: {error}")))?;
        if !value.is_object() {
            return Err(ScimError::bad("invalidSyntax", "expected a JSON object"));
        }
        Ok(ScimJson(value))
    }
}

/// A body-reading refusal (too large, too slow) as a SCIM error with the same status.
fn from_api_error(error: ApiError) -> ScimError {
    let status = error.code.status();
    ScimError::new(status, None, error.detail)
}

/// Who provisions for `caller`: its organisation, acting as the token's creator.
pub(super) fn provisioner(caller: &ScimCaller) -> Provisioner {
    Provisioner {
        org: caller.org_id.clone(),
        actor: Actor {
            user_id: Some(caller.acting_user.clone()),
            email: None,
            ip: Some(caller.client.to_string()),
        },
        actor_id: caller.acting_user.clone(),
        token: caller.token_id.to_string(),
    }
}

/// Notes a change's session cutoff in the running server's memory, after its commit.
pub(super) fn note_logout<T>(auth: &Auth, changed: &Changed<T>) {
    if let Some((user, cutoff)) = &changed.sessions_ended_at {
        auth.revocations().note_user_logout(user, *cutoff);
    }
}

/// A provisioning failure as a SCIM error.
pub(super) fn provision_error(error: ProvisionError) -> ScimError {
    match error {
        ProvisionError::Taken(email) => ScimError::new(
            StatusCode::CONFLICT,
            Some("uniqueness"),
            format!("{email} is already a user of this organisation"),
        ),
        ProvisionError::InvalidEmail(detail) => ScimError::bad("invalidValue", detail),
        ProvisionError::EmailChange => ScimError::bad(
            "mutability",
            "the e-mail of an account cannot change through SCIM",
        ),
        ProvisionError::NotFound => ScimError::not_found("user"),
        ProvisionError::Member(error) => member_error(error),
        ProvisionError::Store(error) => ScimError::internal(error),
    }
}

fn member_error(error: MemberError) -> ScimError {
    match error {
        MemberError::NoLongerMember => ScimError::new(
            StatusCode::UNAUTHORIZED,
            None,
            "the token's creator is no longer a member",
        ),
        MemberError::MemberNotFound => ScimError::not_found("user"),
        MemberError::Refused(refusal) => refused(refusal),
        MemberError::NoSecondFactor => ScimError::not_found("second factor"),
        MemberError::AlreadyMember(email) => ScimError::new(
            StatusCode::CONFLICT,
            Some("uniqueness"),
            format!("{email} is already a user of this organisation"),
        ),
        MemberError::InvalidPassword(invalid) => ScimError::bad("invalidValue", invalid.0),
        error @ (MemberError::Account(_) | MemberError::Hashing(_) | MemberError::Store(_)) => {
            ScimError::internal(error)
        }
    }
}

fn refused(refusal: Refusal) -> ScimError {
    let status = match refusal {
        Refusal::LastOwner => StatusCode::CONFLICT,
        Refusal::Forbidden(_) => StatusCode::FORBIDDEN,
    };
    ScimError::new(status, None, refusal.to_string())
}

/// The server's base URL, for `location`s.
pub(super) fn base(auth: &Auth) -> String {
    auth.base_url().trim_end_matches('/').to_string()
}

/// What this service supports (RFC 7644 section 5).
#[utoipa::path(get, path = "/scim/v2/ServiceProviderConfig", tag = "scim",
    responses((status = 200, description = "the service provider configuration", content_type = "application/scim+json"),
        (status = 401, description = "no or a bad SCIM token")))]
async fn service_provider_config(State(auth): State<Auth>, _caller: ScimCaller) -> Response {
    scim_json(
        StatusCode::OK,
        discovery::service_provider_config(&base(&auth)),
    )
}

/// The resource types: User and Group.
#[utoipa::path(get, path = "/scim/v2/ResourceTypes", tag = "scim",
    responses((status = 200, description = "a ListResponse of ResourceType", content_type = "application/scim+json")))]
async fn resource_types(State(auth): State<Auth>, _caller: ScimCaller) -> Response {
    scim_json(StatusCode::OK, discovery::resource_types(&base(&auth)))
}

/// One resource type.
#[utoipa::path(get, path = "/scim/v2/ResourceTypes/{name}", tag = "scim",
    params(("name" = String, Path, description = "User or Group")),
    responses((status = 200, description = "a ResourceType", content_type = "application/scim+json"),
        (status = 404, description = "no such resource type")))]
async fn resource_type(
    State(auth): State<Auth>,
    _caller: ScimCaller,
    Path(name): Path<String>,
) -> Result<Response, ScimError> {
    let found = discovery::resource_type_named(&base(&auth), &name)
        .ok_or_else(|| ScimError::not_found("resource type"))?;
    Ok(scim_json(StatusCode::OK, found))
}

/// The schemas of User and Group.
#[utoipa::path(get, path = "/scim/v2/Schemas", tag = "scim",
    responses((status = 200, description = "a ListResponse of Schema", content_type = "application/scim+json")))]
async fn schemas(State(auth): State<Auth>, _caller: ScimCaller) -> Response {
    scim_json(StatusCode::OK, discovery::schemas(&base(&auth)))
}

/// One schema, by its URN.
#[utoipa::path(get, path = "/scim/v2/Schemas/{id}", tag = "scim",
    params(("id" = String, Path, description = "the schema's URN")),
    responses((status = 200, description = "a Schema", content_type = "application/scim+json"),
        (status = 404, description = "no such schema")))]
async fn schema(
    State(auth): State<Auth>,
    _caller: ScimCaller,
    Path(id): Path<String>,
) -> Result<Response, ScimError> {
    let found = discovery::schema_with_id(&base(&auth), &id)
        .ok_or_else(|| ScimError::not_found("schema"))?;
    Ok(scim_json(StatusCode::OK, found))
}
