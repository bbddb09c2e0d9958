//! Inbound tokens: how build servers, CI systems and external monitors authenticate to the
//! inbound endpoints. Admins create (the secret returned once), list and revoke them; the
//! `Inbound<K>` extractor checks one on each inbound request.
//!
//! Invariants: only the SHA-256 digest of a token is stored, found through its own index (so
//! the lookup compares digests, never secrets); a token opens only the endpoint of its kind
//! (another kind is 403 `wrong_token_kind`, a missing, unknown or revoked one 401
//! `invalid_inbound_token`); the check runs before the body is read, so an unauthenticated
//! sender learns nothing about body rules. Tokens are never logged.

use std::marker::PhantomData;

use axum::Json;
use axum::extract::{FromRef, FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::model::{InboundToken, InboundTokenId, TokenKind};
use crate::alerting::Alerting;
use crate::auth::token_flow::{self, TokenFlow};
use crate::auth::{Admin, Auth};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::Store;

/// The header an inbound sender puts its token in; `?token=` is the fallback for senders that
/// cannot set headers (the Jenkins Notification plugin, many monitoring tools).
pub const TOKEN_HEADER: &str = "x-lookout-token";

/// Inbound tokens: `lkin_` + a random token, the first 9 characters kept as `prefix`, audited
/// as `inbound_token.*` with their name and kind.
static TOKENS: TokenFlow<InboundToken> = TokenFlow {
    table: &db::TOKENS,
    noun: "inbound token",
    created: "inbound_token.created",
    revoked: "inbound_token.revoked",
    detail: |token| json!({"name": token.name, "kind": token.kind.as_str()}),
};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInboundTokenRequest {
    /// `jenkins`, `deployments` or `alerts`.
    pub kind: String,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedInboundTokenResponse {
    pub id: String,
    pub kind: String,
    pub name: String,
    /// The secret: shown here only, stored as a digest.
    pub token: String,
    pub prefix: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InboundTokenResponse {
    pub id: String,
    pub kind: String,
    pub name: String,
    pub prefix: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

fn token_view(token: &InboundToken) -> InboundTokenResponse {
    InboundTokenResponse {
        id: token.id.to_string(),
        kind: token.kind.as_str().to_string(),
        name: token.name.clone(),
        prefix: token.prefix.clone(),
        created_at: token.created_at.to_rfc3339(),
        revoked_at: token.revoked_at.map(|at| at.to_rfc3339()),
    }
}

/// Creates an inbound token; the secret is in this response only.
#[utoipa::path(post, path = "/api/v1/orgs/me/inbound-tokens", tag = "inbound",
    request_body = CreateInboundTokenRequest,
    responses((status = 201, body = CreatedInboundTokenResponse),
        problems::Invalid,
        problems::Forbidden))]
async fn create_token(
    State(alerting): State<Alerting>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateInboundTokenRequest>,
) -> Result<(StatusCode, Json<CreatedInboundTokenResponse>), ApiError> {
    let kind = TokenKind::parse(&request.kind).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPayload,
            "kind: one of jenkins, deployments, alerts",
        )
    })?;
    let name = token_flow::valid_name(&request.name)?;
    let minted = crate::secrets::mint("lkin_");
    let now = alerting.clock().now();
    let token = InboundToken {
        id: InboundTokenId::generate(),
        org_id: caller.org_id.clone(),
        kind,
        name,
        prefix: minted.secret.chars().take(9).collect(),
        created_by: caller.user_id.clone(),
        created_at: now,
        revoked_at: None,
    };
    let token = TOKENS
        .create(alerting.store(), &caller, token, minted.digest, now)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedInboundTokenResponse {
            id: token.id.to_string(),
            kind: kind.as_str().to_string(),
            name: token.name,
            token: minted.secret,
            prefix: token.prefix,
            created_at: now.to_rfc3339(),
        }),
    ))
}

/// Lists the organisation's inbound tokens, without secrets.
#[utoipa::path(get, path = "/api/v1/orgs/me/inbound-tokens", tag = "inbound",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<InboundTokenResponse>), problems::Invalid, problems::Forbidden))]
async fn list_tokens(
    State(alerting): State<Alerting>,
    Admin(caller): Admin,
    page: PageRequest,
) -> Result<Json<Page<InboundTokenResponse>>, ApiError> {
    let (rows, next_cursor) = TOKENS
        .page(
            alerting.store(),
            &page,
            &caller.org_id,
            InboundTokenId::parse,
            |_, _| Ok(()),
        )
        .await?;
    Ok(Json(Page::new(
        rows.iter().map(|(token, ())| token_view(token)).collect(),
        next_cursor,
    )))
}

/// Revokes an inbound token: the next request carrying it gets 401.
#[utoipa::path(delete, path = "/api/v1/orgs/me/inbound-tokens/{id}", tag = "inbound",
    params(("id" = String, Path, description = "inbound token id")),
    responses((status = 204), problems::NotFound))]
async fn revoke_token(
    State(alerting): State<Alerting>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = alerting.clock().now();
    TOKENS
        .revoke(alerting.store(), &caller, &id, InboundTokenId::parse, now)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Names the token kind an inbound endpoint requires.
pub trait RequiredKind: Send + Sync + 'static {
    const KIND: TokenKind;
}

pub struct JenkinsKind;
pub struct DeploymentsKind;
pub struct AlertsKind;

impl RequiredKind for JenkinsKind {
    const KIND: TokenKind = TokenKind::Jenkins;
}
impl RequiredKind for DeploymentsKind {
    const KIND: TokenKind = TokenKind::Deployments;
}
impl RequiredKind for AlertsKind {
    const KIND: TokenKind = TokenKind::Alerts;
}

/// An inbound request authenticated by a live token of kind `K`.
pub struct Inbound<K: RequiredKind> {
    pub token: InboundToken,
    kind: PhantomData<K>,
}

/// The token a request carries: a non-empty `X-Lookout-Token`, else `?token=`.
pub fn presented_token(parts: &Parts) -> Option<String> {
    let header = parts
        .headers
        .get(TOKEN_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty());
    if let Some(header) = header {
        return Some(header.to_string());
    }
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, value)| name == "token" && !value.is_empty())
        .map(|(_, value)| value.into_owned())
}

fn invalid_token() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidInboundToken,
        "send a live inbound token in X-Lookout-Token or ?token=",
    )
}

impl<S, K> FromRequestParts<S> for Inbound<K>
where
    S: Send + Sync,
    Store: FromRef<S>,
    K: RequiredKind,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let secret = presented_token(parts).ok_or_else(invalid_token)?;
        let digest = crate::secrets::digest_hex(&secret);
        let store = Store::from_ref(state);
        let token = store
            .read(move |txn| db::TOKENS.find_live(txn, &digest))
            .await?
            .ok_or_else(invalid_token)?;
        if token.kind != K::KIND {
            return Err(ApiError::new(
                ErrorCode::WrongTokenKind,
                format!(
                    "this endpoint takes a {} token; this one is a {} token",
                    K::KIND.as_str(),
                    token.kind.as_str()
                ),
            ));
        }
        Ok(Inbound {
            token,
            kind: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(uri: &str, header: Option<&str>) -> Parts {
        let mut request = Request::builder().uri(uri);
        if let Some(value) = header {
            request = request.header(TOKEN_HEADER, value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn header_wins_and_the_query_is_the_fallback() {
        let presented = |uri, header| presented_token(&parts(uri, header));
        assert_eq!(presented("/x?token=q", Some("h")).as_deref(), Some("h"));
        assert_eq!(presented("/x?token=q", Some(" ")).as_deref(), Some("q"));
        assert_eq!(
            presented("/x?a=1&token=a%2Bb", None).as_deref(),
            Some("a+b")
        );
        assert_eq!(presented("/x?token=", None), None);
        assert_eq!(presented("/x", None), None);
    }
}
