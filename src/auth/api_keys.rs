//! HTTP face of API keys: create (the secret is returned once), list, revoke.
//!
//! Invariants: the secret is `lk_` + 43 base64url characters (32 random bytes); only its
//! SHA-256 is stored; a revoked key fails on the very next request (`Caller` reads the key on
//! every request); a key acts with its issuer's current role, so the listed `role` is live;
//! `last_used_at` is current to the minute (`key_usage.rs`).

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::caller::{API_KEY_LEN, API_KEY_PREFIX};
use super::model::{ApiKey, ApiKeyId};
use super::token_flow::{self, TokenFlow};
use super::{Admin, Auth, db};
use crate::accounts;
use crate::accounts::model::Role;
use crate::clock::{Clock, Timestamp};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::Store;

/// API keys: `lk_` + a random token, the first 10 characters kept as `prefix`, audited as
/// `api_key.*` with their name.
static KEYS: TokenFlow<ApiKey> = TokenFlow {
    table: &db::API_KEYS,
    noun: "api key",
    created: "api_key.created",
    revoked: "api_key.revoked",
    detail: |key| json!({"name": key.name}),
};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Clock: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_key, list_keys))
        .routes(routes!(revoke_key))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    pub name: String,
    /// RFC 3339; the key stops working then. Never expires when omitted.
    #[serde(default)]
    pub expires_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyResponse {
    pub id: String,
    pub name: String,
    /// The first characters of the secret, to tell keys apart.
    pub prefix: String,
    /// The issuer's current role: the key acts with it.
    pub role: Option<Role>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub created_by: String,
    /// When the key last authenticated a request, to the minute; `null` when never.
    pub last_used_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKeyResponse {
    pub id: String,
    pub name: String,
    pub prefix: String,
    /// The secret: shown only in this response.
    pub key: String,
    pub role: Role,
    pub created_at: String,
    pub expires_at: Option<String>,
}

/// `last_used`: the later of the stored instant and one noted since the last flush.
fn key_view(key: &ApiKey, role: Option<Role>, last_used: Option<Timestamp>) -> KeyResponse {
    KeyResponse {
        id: key.id.to_string(),
        name: key.name.clone(),
        prefix: key.prefix.clone(),
        role,
        created_at: key.created_at.to_rfc3339(),
        expires_at: key.expires_at.map(Timestamp::to_rfc3339),
        revoked_at: key.revoked_at.map(Timestamp::to_rfc3339),
        created_by: key.user_id.to_string(),
        last_used_at: key.last_used_at.max(last_used).map(Timestamp::to_rfc3339),
    }
}

/// Creates an API key for the calling admin; the secret is in this response only.
#[utoipa::path(post, path = "/api/v1/orgs/me/api-keys", tag = "api keys", request_body = CreateKeyRequest,
    responses((status = 201, body = CreatedKeyResponse),
        problems::Forbidden))]
async fn create_key(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateKeyRequest>,
) -> Result<(StatusCode, Json<CreatedKeyResponse>), ApiError> {
    let name = token_flow::valid_name(&request.name)?;
    let now = clock.now();
    let expires_at = match request.expires_at.as_deref() {
        None => None,
        Some(text) => {
            let at = Timestamp::parse_rfc3339(text).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidPayload,
                    "expires_at: not an RFC 3339 timestamp",
                )
            })?;
            if at <= now {
                return Err(ApiError::new(
                    ErrorCode::InvalidPayload,
                    "expires_at: must be in the future",
                ));
            }
            Some(at)
        }
    };
    let minted = crate::secrets::mint(API_KEY_PREFIX);
    debug_assert_eq!(minted.secret.len(), API_KEY_LEN);
    let key = ApiKey {
        id: ApiKeyId::generate(),
        org_id: caller.org_id.clone(),
        user_id: caller.user_id.clone(),
        name,
        prefix: minted.secret[..10].to_string(),
        created_at: now,
        expires_at,
        revoked_at: None,
        last_used_at: None,
    };
    let key = KEYS
        .create(&store, &caller, key, minted.digest, now)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKeyResponse {
            id: key.id.to_string(),
            name: key.name,
            prefix: key.prefix,
            key: minted.secret,
            role: caller.role,
            created_at: key.created_at.to_rfc3339(),
            expires_at: key.expires_at.map(Timestamp::to_rfc3339),
        }),
    ))
}

/// Lists the organisation's API keys, without secrets, oldest first, one page at a time.
#[utoipa::path(get, path = "/api/v1/orgs/me/api-keys", tag = "api keys",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<KeyResponse>)))]
async fn list_keys(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    page: PageRequest,
) -> Result<Json<Page<KeyResponse>>, ApiError> {
    // Each key with its issuer's current role, read in the same transaction.
    let (rows, next_cursor) = KEYS
        .page(
            auth.store(),
            &page,
            &caller.org_id,
            ApiKeyId::parse,
            |txn, key| {
                let membership = accounts::get_membership(txn, &key.org_id, &key.user_id)?;
                Ok(membership.map(|membership| membership.role))
            },
        )
        .await?;
    let usage = auth.key_usage();
    let items = rows
        .iter()
        .map(|(key, role)| key_view(key, *role, usage.unwritten(&key.id)))
        .collect();
    Ok(Json(Page::new(items, next_cursor)))
}

/// Revokes a key; the next request with it is refused.
#[utoipa::path(delete, path = "/api/v1/orgs/me/api-keys/{id}", tag = "api keys",
    params(("id" = String, Path, description = "key id")),
    responses((status = 204), problems::NotFound))]
async fn revoke_key(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    KEYS.revoke(&store, &caller, &id, ApiKeyId::parse, clock.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
