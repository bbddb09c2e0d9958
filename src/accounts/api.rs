//! HTTP face of accounts: first-run setup (CONTRACT.md section 0).

use axum::Json;
use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{Org, Plan, Role, User};
use super::{AccountsError, CreatedUser, setup};
use crate::clock::Clock;
use crate::http::error::Problem;
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Store: FromRef<S>,
    Clock: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(setup_status, complete_setup))
}

impl From<AccountsError> for ApiError {
    fn from(err: AccountsError) -> Self {
        let detail = err.to_string();
        match err {
            AccountsError::Invalid(_) => ApiError::new(ErrorCode::InvalidPayload, detail),
            AccountsError::EmailTaken(_) => ApiError::new(ErrorCode::EmailTaken, detail),
            AccountsError::OrgNameTaken(_) => ApiError::new(ErrorCode::OrgNameTaken, detail),
            AccountsError::OrgNotFound(_) | AccountsError::UserNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, detail)
            }
            AccountsError::InvalidSetupToken => ApiError::new(ErrorCode::InvalidSetupToken, detail),
            AccountsError::SetupCompleted => ApiError::new(ErrorCode::SetupCompleted, detail),
            AccountsError::Store(store) => ApiError::from(store),
            AccountsError::Hashing(hashing) => ApiError::from(hashing),
            AccountsError::Internal(cause) => ApiError::internal(cause),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupRequest {
    /// The token from the setup URL printed at first start.
    pub token: String,
    pub email: String,
    pub password: String,
    /// Name of the first organisation; `default` when omitted.
    #[serde(default)]
    pub org_name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    pub id: String,
    pub email: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OrgView {
    pub id: String,
    pub name: String,
    pub plan: Plan,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SetupResponse {
    pub user: UserView,
    pub org: OrgView,
    pub role: Role,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SetupStatus {
    /// True while no user exists and the setup URL is the way in.
    pub required: bool,
}

impl From<&User> for UserView {
    fn from(user: &User) -> Self {
        UserView {
            id: user.id.to_string(),
            email: user.email.clone(),
        }
    }
}

impl From<&Org> for OrgView {
    fn from(org: &Org) -> Self {
        OrgView {
            id: org.id.to_string(),
            name: org.name.clone(),
            plan: org.plan,
        }
    }
}

impl From<CreatedUser> for SetupResponse {
    fn from(created: CreatedUser) -> Self {
        SetupResponse {
            user: (&created.user).into(),
            org: (&created.org).into(),
            role: created.role,
        }
    }
}

/// Whether first-run setup is still open.
#[utoipa::path(get, path = "/api/v1/setup", tag = "setup",
    responses((status = 200, body = SetupStatus)))]
async fn setup_status(State(store): State<Store>) -> Result<Json<SetupStatus>, ApiError> {
    let required = setup::is_required(&store).await?;
    Ok(Json(SetupStatus { required }))
}

/// Creates the first organisation and its owner with the one-time setup token.
#[utoipa::path(post, path = "/api/v1/setup", tag = "setup", request_body = SetupRequest,
    responses(
        (status = 201, body = SetupResponse),
        problems::Invalid,
        problems::Unauthenticated,
        (status = 409, description = "setup already completed", body = Problem, content_type = "application/problem+json"),
        problems::Unavailable,
    ))]
async fn complete_setup(
    State(store): State<Store>,
    State(clock): State<Clock>,
    ApiJson(request): ApiJson<SetupRequest>,
) -> Result<(StatusCode, Json<SetupResponse>), ApiError> {
    let org_name = request
        .org_name
        .unwrap_or_else(|| super::DEFAULT_ORG_NAME.to_string());
    let created = setup::complete(
        &store,
        &clock,
        &request.token,
        request.email,
        request.password,
        org_name,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}
