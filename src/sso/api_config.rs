//! `GET|PUT /api/v1/orgs/me/sso` (CONTRACT section 9): the owner's SSO configuration, with
//! the facts an identity provider needs about Lookout (redirect URI, SAML metadata and ACS
//! URLs). Also the exhaustive mapping of `SsoError` and `ConfigRefusal` to problems.
//!
//! Invariants: owners only; a free organisation gets 403 `plan_required` and its saved
//! configuration is kept. The client secret is write-only: sealed when saved, never answered,
//! and kept when a PUT leaves it out. A domain belongs to one organisation (409
//! `sso_domain_taken`). The organisation's `sso_required` flag (read by the password sign-in)
//! changes in the same write as the configuration, with its audit entry.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{
    self, ConfigRefusal, MAX_SAML_METADATA_BYTES, OidcSettings, SamlSettings, SsoConfig,
};
use super::{Sso, SsoError, db, fetch};
use crate::accounts::model::{OrgId, Plan, Role};
use crate::auth::Owner;
use crate::auth::audit;
use crate::http::{ApiError, ApiJson, ErrorCode, problems};
use crate::store::StoreError;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Sso: FromRef<S>,
    crate::auth::Auth: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(get_config, put_config))
}

impl From<SsoError> for ApiError {
    fn from(error: SsoError) -> Self {
        let detail = error.to_string();
        match error {
            SsoError::PlanRequired => ApiError::new(ErrorCode::PlanRequired, detail),
            SsoError::NotConfigured => ApiError::new(ErrorCode::SsoNotConfigured, detail),
            SsoError::InvalidParameter(_) => ApiError::new(ErrorCode::InvalidParameter, detail),
            SsoError::Rejected(_)
            | SsoError::AttemptInvalid
            | SsoError::EmailUnverified
            | SsoError::Replayed
            | SsoError::AccountExists
            | SsoError::LinkedElsewhere
            | SsoError::AccountDisabled => ApiError::new(ErrorCode::Unauthorized, detail),
            SsoError::Provider(cause) => ApiError::new(
                ErrorCode::SsoProviderUnavailable,
                format!("the identity provider could not be used: {cause}"),
            ),
            SsoError::DestinationRefused(_) => ApiError::new(ErrorCode::DestinationRefused, detail),
            SsoError::Signing(cause) => ApiError::internal(cause),
            SsoError::Store(store) => ApiError::from(store),
        }
    }
}

impl From<ConfigRefusal> for ApiError {
    fn from(refusal: ConfigRefusal) -> Self {
        let detail = refusal.to_string();
        match refusal {
            ConfigRefusal::Issuer => ApiError::new(ErrorCode::InvalidIssuer, detail),
            ConfigRefusal::ClientId | ConfigRefusal::ClientSecret => {
                ApiError::new(ErrorCode::InvalidClient, detail)
            }
            ConfigRefusal::DefaultRole => ApiError::new(ErrorCode::InvalidRole, detail),
            ConfigRefusal::Domain(_) => ApiError::new(ErrorCode::InvalidDomain, detail),
            ConfigRefusal::SamlMetadata(_) => ApiError::new(ErrorCode::InvalidSamlMetadata, detail),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcConfigRequest {
    pub issuer: String,
    pub client_id: String,
    /// Write-only; when left out, the stored secret is kept.
    #[serde(default)]
    pub client_secret: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SamlConfigRequest {
    /// The IdP's metadata document (at most 256 KiB).
    #[serde(default)]
    pub idp_metadata_xml: Option<String>,
    /// Where to fetch the IdP's metadata from, once, when this is saved.
    #[serde(default)]
    pub idp_metadata_url: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SsoConfigRequest {
    #[serde(default)]
    pub oidc: Option<OidcConfigRequest>,
    #[serde(default)]
    pub saml: Option<SamlConfigRequest>,
    /// The role people get when they first sign in (`admin`, `member` or `viewer`).
    #[serde(default = "default_role_name")]
    pub default_role: String,
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub required: bool,
}

fn default_role_name() -> String {
    "member".to_string()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OidcConfigResponse {
    pub issuer: String,
    pub client_id: String,
    /// Whether a client secret is stored (the secret itself is never shown).
    pub client_secret_set: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SamlConfigResponse {
    pub idp_metadata_xml: String,
    pub idp_metadata_url: Option<String>,
}

/// What to tell the identity provider about Lookout.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceProviderFacts {
    /// The OIDC redirect (callback) URI.
    pub oidc_redirect_uri: String,
    pub saml_metadata_url: String,
    pub saml_acs_url: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SsoConfigResponse {
    pub oidc: Option<OidcConfigResponse>,
    pub saml: Option<SamlConfigResponse>,
    pub default_role: Role,
    pub domains: Vec<String>,
    pub required: bool,
    pub service_provider: ServiceProviderFacts,
}

fn response_of(sso: &Sso, org: &OrgId, config: Option<SsoConfig>) -> SsoConfigResponse {
    let base = sso.auth().base_url();
    let service_provider = ServiceProviderFacts {
        oidc_redirect_uri: format!("{base}{}", super::oidc::CALLBACK_PATH),
        saml_metadata_url: format!("{base}/api/v1/auth/sso/saml/metadata?org={org}"),
        saml_acs_url: format!("{base}/api/v1/auth/sso/saml/acs"),
    };
    let Some(config) = config else {
        return SsoConfigResponse {
            oidc: None,
            saml: None,
            default_role: Role::Member,
            domains: Vec::new(),
            required: false,
            service_provider,
        };
    };
    SsoConfigResponse {
        oidc: config.oidc.map(|oidc| OidcConfigResponse {
            issuer: oidc.issuer,
            client_id: oidc.client_id,
            client_secret_set: !oidc.sealed_client_secret.is_empty(),
        }),
        saml: config.saml.map(|saml| SamlConfigResponse {
            idp_metadata_xml: saml.idp_metadata_xml,
            idp_metadata_url: saml.idp_metadata_url,
        }),
        default_role: config.default_role,
        domains: config.domains,
        required: config.required,
        service_provider,
    }
}

/// The saved configuration of an enterprise organisation, and what it has on record.
async fn read_own(sso: &Sso, org: &OrgId) -> Result<Option<SsoConfig>, ApiError> {
    let org = org.clone();
    let (found, config) = sso
        .store()
        .read(move |txn| {
            let found = crate::accounts::get_org(txn, &org)?;
            Ok::<_, StoreError>((found, db::get_config(txn, &org)?))
        })
        .await?;
    match found {
        Some(org) if org.plan == Plan::Enterprise => Ok(config),
        _ => Err(SsoError::PlanRequired.into()),
    }
}

/// The organisation's SSO configuration (the client secret is never shown).
#[utoipa::path(get, path = "/api/v1/orgs/me/sso", tag = "sso",
    responses((status = 200, body = SsoConfigResponse), problems::Unauthenticated,
        (status = 403, description = "forbidden (owners only), or plan_required on the free plan", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn get_config(
    State(sso): State<Sso>,
    Owner(caller): Owner,
) -> Result<Json<SsoConfigResponse>, ApiError> {
    let config = read_own(&sso, &caller.org_id).await?;
    Ok(Json(response_of(&sso, &caller.org_id, config)))
}

/// Saves the organisation's SSO configuration.
#[utoipa::path(put, path = "/api/v1/orgs/me/sso", tag = "sso", request_body = SsoConfigRequest,
    responses((status = 200, body = SsoConfigResponse),
        (status = 400, description = "invalid_issuer, invalid_client, invalid_role, invalid_domain, invalid_saml_metadata, invalid_payload; destination_refused for an idp_metadata_url on a private or loopback address", body = crate::http::error::Problem, content_type = "application/problem+json"),
        problems::Unauthenticated,
        (status = 403, description = "forbidden (owners only), or plan_required on the free plan", body = crate::http::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "sso_domain_taken: another organisation claims a domain", body = crate::http::error::Problem, content_type = "application/problem+json")))]
async fn put_config(
    State(sso): State<Sso>,
    Owner(caller): Owner,
    ApiJson(request): ApiJson<SsoConfigRequest>,
) -> Result<Json<SsoConfigResponse>, ApiError> {
    let stored = read_own(&sso, &caller.org_id).await?;
    let default_role = parse_role(&request.default_role)?;
    let domains = model::valid_domains(&request.domains)?;
    let kept_secret = stored
        .as_ref()
        .and_then(|config| config.oidc.as_ref())
        .map(|oidc| oidc.sealed_client_secret.clone());
    let oidc = match request.oidc {
        None => None,
        Some(oidc) => Some(oidc_settings(&sso, oidc, kept_secret)?),
    };
    let saml = match request.saml {
        None => None,
        Some(saml) => Some(saml_settings(&sso, saml).await?),
    };
    if request.required && oidc.is_none() && saml.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidPayload,
            "required needs oidc or saml to be configured",
        ));
    }
    let now = sso.auth().clock().now();
    let config = SsoConfig {
        org_id: caller.org_id.clone(),
        oidc,
        saml,
        default_role,
        domains,
        required: request.required,
        updated_at: now,
    };
    let actor = caller.actor();
    let saved = config.clone();
    let taken = sso
        .store()
        .write(move |txn| save(txn, &saved, &actor, now))
        .await?;
    if let Some(domain) = taken {
        return Err(ApiError::new(
            ErrorCode::SsoDomainTaken,
            format!("{domain} is claimed by another organisation"),
        ));
    }
    Ok(Json(response_of(&sso, &caller.org_id, Some(config))))
}

/// Writes `config`, the org's `sso_required` flag and the audit entry; or names a domain
/// another organisation claims (and writes nothing).
fn save(
    txn: &redb::WriteTransaction,
    config: &SsoConfig,
    actor: &audit::Actor,
    now: crate::clock::Timestamp,
) -> Result<Option<String>, StoreError> {
    for domain in &config.domains {
        if db::org_of_domain(txn, domain)?.is_some_and(|owner| owner != config.org_id) {
            return Ok(Some(domain.clone()));
        }
    }
    let Some(mut org) = crate::accounts::get_org(txn, &config.org_id)? else {
        return Err(StoreError::Storage("the organisation vanished".to_string()));
    };
    org.sso_required = config.required;
    crate::accounts::update_org(txn, &org)?;
    db::put_config(txn, config)?;
    let detail = json!({
        "oidc": config.oidc.as_ref().map(|oidc| &oidc.issuer),
        "saml": config.saml.is_some(),
        "default_role": config.default_role,
        "domains": config.domains,
        "required": config.required,
    });
    audit::record(
        txn,
        Some(&config.org_id),
        actor,
        "sso.configured",
        None,
        detail,
        now,
    )?;
    Ok(None)
}

fn parse_role(raw: &str) -> Result<Role, ApiError> {
    let role = Role::ALL
        .into_iter()
        .find(|role| serde_json::to_value(role).is_ok_and(|name| name == raw))
        .ok_or(ConfigRefusal::DefaultRole)?;
    Ok(model::valid_default_role(role)?)
}

fn oidc_settings(
    sso: &Sso,
    request: OidcConfigRequest,
    kept_secret: Option<String>,
) -> Result<OidcSettings, ApiError> {
    let issuer = model::valid_issuer(&request.issuer)?;
    let client_id = model::valid_field(&request.client_id, ConfigRefusal::ClientId)?;
    let sealed_client_secret = match request.client_secret {
        Some(secret) => {
            let secret = model::valid_field(&secret, ConfigRefusal::ClientSecret)?;
            crate::secrets::seal::seal(&sso.sealing_key(), &secret)
        }
        None => kept_secret.ok_or(ConfigRefusal::ClientSecret)?,
    };
    Ok(OidcSettings {
        issuer,
        client_id,
        sealed_client_secret,
    })
}

/// The SAML settings of a request: the XML as given, or fetched once from the URL.
/// The URL is owner-given: its addresses pass the outbound destination guard (400
/// `destination_refused` for a private or loopback one unless `WEBHOOK_ALLOW_PRIVATE`).
async fn saml_settings(sso: &Sso, request: SamlConfigRequest) -> Result<SamlSettings, ApiError> {
    match (request.idp_metadata_xml, request.idp_metadata_url) {
        (Some(xml), None) => Ok(SamlSettings {
            idp_metadata_xml: model::valid_saml_metadata(&xml)?,
            idp_metadata_url: None,
        }),
        (None, Some(url)) => {
            // The same rule as an issuer: https, or http to this machine.
            let url = model::valid_issuer(&url).map_err(|_| {
                ConfigRefusal::SamlMetadata(
                    "idp_metadata_url must be an https URL (http only for loopback)".to_string(),
                )
            })?;
            let (fetch_url, fetcher) = (url.clone(), sso.fetcher().clone());
            let answer = tokio::task::spawn_blocking(move || {
                fetcher.get(
                    &fetch_url,
                    "application/samlmetadata+xml, application/xml, text/xml",
                    MAX_SAML_METADATA_BYTES,
                )
            })
            .await
            .map_err(|err| ApiError::internal(err.to_string()))?
            .map_err(|cause| match cause {
                fetch::FetchError::Refused(why) => ApiError::new(
                    ErrorCode::DestinationRefused,
                    format!("idp_metadata_url: {why}"),
                ),
                fetch::FetchError::Failed(why) => {
                    ConfigRefusal::SamlMetadata(format!("cannot fetch the metadata: {why}")).into()
                }
            })?;
            if answer.status != 200 {
                let status = answer.status;
                return Err(ConfigRefusal::SamlMetadata(format!(
                    "the metadata URL answered {status}"
                ))
                .into());
            }
            let xml = String::from_utf8(answer.body).map_err(|_| {
                ConfigRefusal::SamlMetadata("the metadata is not UTF-8".to_string())
            })?;
            Ok(SamlSettings {
                idp_metadata_xml: model::valid_saml_metadata(&xml)?,
                idp_metadata_url: Some(url),
            })
        }
        _ => Err(ConfigRefusal::SamlMetadata(
            "give exactly one of idp_metadata_xml and idp_metadata_url".to_string(),
        )
        .into()),
    }
}
