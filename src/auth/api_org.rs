//! HTTP face of organisation settings (CONTRACT.md section 2, "org 2FA enforcement" and "IP
//! allowlist"): the security settings object, renaming (the name and plan are read from
//! `GET /api/v1/auth/me`), two-factor enforcement and the IP allowlist.
//!
//! Invariants: both settings are read by `Caller` on every request, so a change applies from
//! the next request on, with no session to revoke. A saved allowlist never excludes the admin
//! who saves it unless they say `"force":true` (409 `would_lock_out`), judged on the same client
//! address `Caller` checks (the socket peer, or `X-Forwarded-For` from a trusted proxy). Each
//! change commits with its audit event.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::allowlist::{self, AllowlistError, NotAdmitted};
use super::{Admin, Auth, Viewer, audit};
use crate::accounts::model::{Org, OrgId, normalize_org_name};
use crate::accounts::{self, AccountsError};
use crate::clock::Clock;
use crate::http::error::Problem;
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Clock: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(get_settings, patch_settings))
        .routes(routes!(get_ip_allowlist, put_ip_allowlist))
}

impl From<NotAdmitted> for ApiError {
    fn from(refused: NotAdmitted) -> Self {
        ApiError::new(ErrorCode::IpNotAllowed, refused.to_string())
    }
}

impl From<AllowlistError> for ApiError {
    fn from(err: AllowlistError) -> Self {
        let detail = err.to_string();
        match err {
            AllowlistError::Invalid { .. } | AllowlistError::TooMany => {
                ApiError::new(ErrorCode::InvalidPayload, detail)
            }
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OrgSettings {
    /// Members without a second factor may only enrol until they have one.
    pub two_factor_required: bool,
    /// CIDRs allowed to use the API; empty means no restriction.
    pub ip_allowlist: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatch {
    /// 1 to 100 printable characters, unique among organisations. Left as is when omitted.
    #[serde(default)]
    pub name: Option<String>,
    /// Left as is when omitted.
    #[serde(default)]
    pub two_factor_required: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IpAllowlist {
    /// Networks with host bits cleared; a bare address is shown as /32 or /128.
    pub cidrs: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutIpAllowlist {
    /// IPv4 and IPv6 CIDRs or bare addresses; an empty list turns the allowlist off.
    pub cidrs: Vec<String>,
    /// Save even when the list excludes the caller's own address.
    #[serde(default)]
    pub force: bool,
}

fn settings_view(org: &Org) -> OrgSettings {
    OrgSettings {
        two_factor_required: org.two_factor_required,
        ip_allowlist: allowlist::to_strings(&org.ip_allowlist),
    }
}

async fn read_org(store: &Store, org: OrgId) -> Result<Org, ApiError> {
    store
        .read(move |txn| accounts::get_org(txn, &org))
        .await?
        .ok_or_else(|| ApiError::not_found("organisation"))
}

/// The organisation's security settings.
#[utoipa::path(get, path = "/api/v1/orgs/me/settings", tag = "org settings",
    responses((status = 200, body = OrgSettings)))]
async fn get_settings(
    State(store): State<Store>,
    Viewer(caller): Viewer,
) -> Result<Json<OrgSettings>, ApiError> {
    let org = read_org(&store, caller.org_id).await?;
    Ok(Json(settings_view(&org)))
}

/// Renames the organisation and turns two-factor enforcement on or off; omitted fields stay.
#[utoipa::path(patch, path = "/api/v1/orgs/me/settings", tag = "org settings", request_body = SettingsPatch,
    responses((status = 200, body = OrgSettings),
        problems::Invalid,
        problems::Forbidden,
        (status = 409, description = "org_name_taken", body = Problem, content_type = "application/problem+json")))]
async fn patch_settings(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(patch): ApiJson<SettingsPatch>,
) -> Result<Json<OrgSettings>, ApiError> {
    let name = match patch.name.as_deref() {
        Some(raw) => Some(
            normalize_org_name(raw)
                .map_err(|err| ApiError::new(ErrorCode::InvalidPayload, err.0))?,
        ),
        None => None,
    };
    let required = patch.two_factor_required;
    let now = clock.now();
    let (org_id, actor) = (caller.org_id.clone(), caller.actor());
    let org = store
        .write(move |txn| {
            // A missing organisation is a value here: the closure's errors are storage's.
            let Some(mut org) = accounts::get_org(txn, &org_id)? else {
                return Ok(None);
            };
            let mut detail = serde_json::Map::new();
            if let Some(name) = name.clone().filter(|name| *name != org.name) {
                detail.insert("name".into(), json!({"from": org.name, "to": name}));
                accounts::rename_org(txn, &mut org, name)?;
            }
            if let Some(required) = required.filter(|r| *r != org.two_factor_required) {
                let change = json!({"from": org.two_factor_required, "to": required});
                detail.insert("two_factor_required".into(), change);
                org.two_factor_required = required;
                accounts::update_org(txn, &org)?;
            }
            if !detail.is_empty() {
                let detail = serde_json::Value::Object(detail);
                audit::record(
                    txn,
                    Some(&org.id),
                    &actor,
                    "org.settings_changed",
                    None,
                    detail,
                    now,
                )?;
            }
            Ok::<_, AccountsError>(Some(org))
        })
        .await?
        .ok_or_else(|| ApiError::not_found("organisation"))?;
    Ok(Json(settings_view(&org)))
}

/// The organisation's IP allowlist.
#[utoipa::path(get, path = "/api/v1/orgs/me/ip-allowlist", tag = "org settings",
    responses((status = 200, body = IpAllowlist),
        problems::Forbidden))]
async fn get_ip_allowlist(
    State(store): State<Store>,
    Admin(caller): Admin,
) -> Result<Json<IpAllowlist>, ApiError> {
    let org = read_org(&store, caller.org_id).await?;
    Ok(Json(IpAllowlist {
        cidrs: allowlist::to_strings(&org.ip_allowlist),
    }))
}

/// Replaces the IP allowlist; an empty list turns it off.
#[utoipa::path(put, path = "/api/v1/orgs/me/ip-allowlist", tag = "org settings", request_body = PutIpAllowlist,
    responses((status = 200, body = IpAllowlist),
        problems::Invalid,
        problems::Forbidden,
        (status = 409, description = "would_lock_out: the list excludes your own address; send force to save anyway", body = Problem, content_type = "application/problem+json")))]
async fn put_ip_allowlist(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<PutIpAllowlist>,
) -> Result<Json<IpAllowlist>, ApiError> {
    let networks = allowlist::parse(&request.cidrs)?;
    if !request.force && !allowlist::admits(&networks, caller.client) {
        return Err(ApiError::new(
            ErrorCode::WouldLockOut,
            format!(
                "your address {} is not in this list, so you would lose access; include it, or send \"force\":true",
                caller.client
            ),
        ));
    }
    let now = clock.now();
    let (org_id, actor, forced) = (caller.org_id.clone(), caller.actor(), request.force);
    let org = store
        .write(move |txn| {
            let Some(mut org) = accounts::get_org(txn, &org_id)? else {
                return Ok(None);
            };
            if org.ip_allowlist != networks {
                let detail = json!({
                    "from": allowlist::to_strings(&org.ip_allowlist),
                    "to": allowlist::to_strings(&networks),
                    "force": forced,
                });
                org.ip_allowlist = networks.clone();
                accounts::update_org(txn, &org)?;
                audit::record(
                    txn,
                    Some(&org.id),
                    &actor,
                    "ip_allowlist.changed",
                    None,
                    detail,
                    now,
                )?;
            }
            Ok::<_, AccountsError>(Some(org))
        })
        .await?
        .ok_or_else(|| ApiError::not_found("organisation"))?;
    Ok(Json(IpAllowlist {
        cidrs: allowlist::to_strings(&org.ip_allowlist),
    }))
}
