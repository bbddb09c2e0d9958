//! `/api/v1/orgs/me/scim-tokens` (CONTRACT section 9): admins of an enterprise organisation
//! create, list and revoke the tokens identity providers provision with. The secret is in the
//! creation's answer only.
//!
//! Invariants: a free organisation gets 403 `plan_required` on every one of these routes (its
//! tokens are kept, and work again when the plan comes back); creating and revoking are audited
//! through the shared token flow.

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::model::{ScimToken, ScimTokenId, TOKEN_PREFIX};
use crate::accounts::model::{OrgId, Plan};
use crate::auth::token_flow::{self, TokenFlow};
use crate::auth::{Admin, Auth};
use crate::clock::Clock;
use crate::http::page::{Page, PageRequest};
use crate::http::{ApiError, ApiJson, ErrorCode, problems};
use crate::store::Store;

static TOKENS: TokenFlow<ScimToken> = TokenFlow {
    table: &db::TOKENS,
    noun: "SCIM token",
    created: "scim_token.created",
    revoked: "scim_token.revoked",
    detail: |token| json!({"name": token.name}),
};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Clock: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateScimTokenRequest {
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedScimTokenResponse {
    pub id: String,
    pub name: String,
    /// The bearer token for `/scim/v2`; shown here only.
    pub token: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScimTokenResponse {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub created_at: String,
    /// When it was revoked; a revoked token is listed, and refused on `/scim/v2`.
    pub revoked_at: Option<String>,
}

fn token_view(token: &ScimToken) -> ScimTokenResponse {
    ScimTokenResponse {
        id: token.id.to_string(),
        name: token.name.clone(),
        created_by: token.created_by.to_string(),
        created_at: token.created_at.to_rfc3339(),
        revoked_at: token.revoked_at.map(|at| at.to_rfc3339()),
    }
}

/// 403 `plan_required` unless `org` is on the enterprise plan.
pub(super) async fn require_enterprise(store: &Store, org: &OrgId) -> Result<(), ApiError> {
    let org = org.clone();
    let found = store
        .read(move |txn| crate::accounts::get_org(txn, &org))
        .await?;
    match found {
        Some(org) if org.plan == Plan::Enterprise => Ok(()),
        _ => Err(ApiError::new(
            ErrorCode::PlanRequired,
            "SCIM provisioning needs the enterprise plan",
        )),
    }
}

/// Creates a SCIM token; it acts with its creator's role from then on.
#[utoipa::path(post, path = "/api/v1/orgs/me/scim-tokens", tag = "scim",
    request_body = CreateScimTokenRequest,
    responses((status = 201, body = CreatedScimTokenResponse), problems::Invalid,
        (status = 403, description = "forbidden, or plan_required on the free plan", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn create_token(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateScimTokenRequest>,
) -> Result<(StatusCode, Json<CreatedScimTokenResponse>), ApiError> {
    require_enterprise(&store, &caller.org_id).await?;
    let name = token_flow::valid_name(&request.name)?;
    let now = clock.now();
    let token = ScimToken {
        id: ScimTokenId::generate(),
        org_id: caller.org_id.clone(),
        name,
        created_by: caller.user_id.clone(),
        created_at: now,
        revoked_at: None,
    };
    let minted = crate::secrets::mint(TOKEN_PREFIX);
    let token = TOKENS
        .create(&store, &caller, token, minted.digest, now)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedScimTokenResponse {
            id: token.id.to_string(),
            name: token.name,
            token: minted.secret,
            created_at: now.to_rfc3339(),
        }),
    ))
}

/// Lists the organisation's SCIM tokens, without secrets.
#[utoipa::path(get, path = "/api/v1/orgs/me/scim-tokens", tag = "scim",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<ScimTokenResponse>), problems::Forbidden))]
async fn list_tokens(
    State(store): State<Store>,
    Admin(caller): Admin,
    page: PageRequest,
) -> Result<Json<Page<ScimTokenResponse>>, ApiError> {
    require_enterprise(&store, &caller.org_id).await?;
    let (rows, next_cursor) = TOKENS
        .page(&store, &page, &caller.org_id, ScimTokenId::parse, |_, _| {
            Ok(())
        })
        .await?;
    let items = rows.iter().map(|(token, ())| token_view(token)).collect();
    Ok(Json(Page::new(items, next_cursor)))
}

/// Revokes a SCIM token: the provider using it is refused from the next request.
#[utoipa::path(delete, path = "/api/v1/orgs/me/scim-tokens/{id}", tag = "scim",
    params(("id" = String, Path, description = "SCIM token id")),
    responses((status = 204), problems::Forbidden, problems::NotFound))]
async fn revoke_token(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    require_enterprise(&store, &caller.org_id).await?;
    TOKENS
        .revoke(&store, &caller, &id, ScimTokenId::parse, clock.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
