//! HTTP face of enrolment tokens and agent records: create a token (its secret returned once),
//! list tokens with their last use, revoke one; list agents and read one.
//!
//! Invariants: admins manage tokens, every member reads agents; only a digest of a token is
//! stored; revoking a token closes the connections enrolled with it at once; an agent's
//! `status` is live (the hub), not stored, so it can never say online for a dead connection.

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{Agent, AgentId, EnrolmentToken, EnrolmentTokenId};
use super::protocol::HostMetrics;
use super::{Agents, db};
use crate::auth::token_flow::{self, TokenFlow};
use crate::auth::{Admin, Auth, Viewer};
use crate::clock::{Clock, Timestamp};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson};
use crate::store::Store;

/// Enrolment tokens: no prefix (the agent sends the bare token), audited as
/// `agent.enrolment_token.*` with their name.
static TOKENS: TokenFlow<EnrolmentToken> = TokenFlow {
    table: &db::TOKENS,
    noun: "enrolment token",
    created: "agent.enrolment_token.created",
    revoked: "agent.enrolment_token.revoked",
    detail: |token| json!({"name": token.name}),
};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Clock: FromRef<S>,
    Agents: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
        .routes(routes!(list_agents))
        .routes(routes!(get_agent))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnrolmentTokenRequest {
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedEnrolmentTokenResponse {
    pub id: String,
    pub name: String,
    /// The secret for `lookout agent --token`: shown only in this response.
    pub token: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EnrolmentTokenResponse {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub created_by: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AgentResponse {
    pub id: String,
    pub name: String,
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub version: String,
    /// `online` while connected and heartbeating, else `offline`.
    pub status: &'static str,
    pub last_seen: String,
    /// The latest heartbeat's figures; null until the first one.
    pub metrics: Option<HostMetrics>,
    pub shell_enabled: bool,
    pub enrolment_token_id: String,
    pub created_at: String,
}

fn token_view(token: &EnrolmentToken) -> EnrolmentTokenResponse {
    EnrolmentTokenResponse {
        id: token.id.to_string(),
        name: token.name.clone(),
        created_at: token.created_at.to_rfc3339(),
        created_by: token.created_by.to_string(),
        last_used_at: token.last_used_at.map(Timestamp::to_rfc3339),
        revoked_at: token.revoked_at.map(Timestamp::to_rfc3339),
    }
}

pub(crate) fn agent_view(agents: &Agents, agent: &Agent) -> AgentResponse {
    let status = if agents.hub().is_online(&agent.id) {
        "online"
    } else {
        "offline"
    };
    AgentResponse {
        id: agent.id.to_string(),
        name: agent.name.clone(),
        hostname: agent.hostname.clone(),
        os: agent.os.clone(),
        arch: agent.arch.clone(),
        version: agent.version.clone(),
        status,
        last_seen: agent.last_seen.to_rfc3339(),
        metrics: agent.metrics.clone(),
        shell_enabled: agent.shell_enabled,
        enrolment_token_id: agent.enrolment_token_id.to_string(),
        created_at: agent.created_at.to_rfc3339(),
    }
}

/// Creates an enrolment token; the secret is in this response only.
#[utoipa::path(post, path = "/api/v1/agents/enrolment-tokens", tag = "agents",
    request_body = CreateEnrolmentTokenRequest,
    responses((status = 201, body = CreatedEnrolmentTokenResponse),
        problems::Forbidden))]
async fn create_token(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateEnrolmentTokenRequest>,
) -> Result<(StatusCode, Json<CreatedEnrolmentTokenResponse>), ApiError> {
    let name = token_flow::valid_name(&request.name)?;
    let now = clock.now();
    let token = EnrolmentToken {
        id: EnrolmentTokenId::generate(),
        org_id: caller.org_id.clone(),
        name,
        created_by: caller.user_id.clone(),
        created_at: now,
        last_used_at: None,
        revoked_at: None,
    };
    let minted = crate::secrets::mint("");
    let token = TOKENS
        .create(&store, &caller, token, minted.digest, now)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedEnrolmentTokenResponse {
            id: token.id.to_string(),
            name: token.name,
            token: minted.secret,
            created_at: now.to_rfc3339(),
        }),
    ))
}

/// Lists the organisation's enrolment tokens with their last use, without secrets.
#[utoipa::path(get, path = "/api/v1/agents/enrolment-tokens", tag = "agents",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<EnrolmentTokenResponse>)))]
async fn list_tokens(
    State(store): State<Store>,
    Admin(caller): Admin,
    page: PageRequest,
) -> Result<Json<Page<EnrolmentTokenResponse>>, ApiError> {
    let (rows, next_cursor) = TOKENS
        .page(
            &store,
            &page,
            &caller.org_id,
            EnrolmentTokenId::parse,
            |_, _| Ok(()),
        )
        .await?;
    let items = rows.iter().map(|(token, ())| token_view(token)).collect();
    Ok(Json(Page::new(items, next_cursor)))
}

/// Revokes an enrolment token: agents using it are disconnected and cannot connect again.
#[utoipa::path(delete, path = "/api/v1/agents/enrolment-tokens/{id}", tag = "agents",
    params(("id" = String, Path, description = "enrolment token id")),
    responses((status = 204), problems::NotFound))]
async fn revoke_token(
    State(agents): State<Agents>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = agents.clock().now();
    let id = TOKENS
        .revoke(agents.store(), &caller, &id, EnrolmentTokenId::parse, now)
        .await?;
    agents.hub().disconnect_token(&id);
    Ok(StatusCode::NO_CONTENT)
}

/// Lists the organisation's agents, oldest first.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<AgentResponse>)))]
async fn list_agents(
    State(agents): State<Agents>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<AgentResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let after = page.cursor_as(AgentId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    // One row more than asked tells whether another page follows.
    let rows = agents
        .store()
        .read(move |txn| db::agents_of_org(txn, &org, after.as_ref(), limit + 1))
        .await?;
    Ok(Json(page.answer(
        rows,
        |agent| agent.id.to_string(),
        |agent| agent_view(&agents, agent),
    )))
}

/// One agent.
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = AgentResponse), problems::NotFound))]
async fn get_agent(
    State(agents): State<Agents>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<AgentResponse>, ApiError> {
    let agent = find_agent(&agents, &caller.org_id, &id).await?;
    Ok(Json(agent_view(&agents, &agent)))
}

/// The agent `id` of `org`, or 404 (another organisation's agent does not exist for a caller).
pub(crate) async fn find_agent(
    agents: &Agents,
    org: &crate::accounts::model::OrgId,
    id: &str,
) -> Result<Agent, ApiError> {
    let id = AgentId::parse(id).map_err(|_| ApiError::not_found("agent"))?;
    let org = org.clone();
    agents
        .store()
        .read(move |txn| db::agent_of_org(txn, &org, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("agent"))
}
