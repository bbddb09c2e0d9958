//! `GET /api/v1/ingest-settings` (viewer): what a person needs to point a browser or a script
//! at this server's ingest, for the settings page: the ingest URLs built from `BASE_URL`, how
//! many ingest keys are configured, the allowed origins, the limits and the scrubbing.
//!
//! Invariants: no key, and nothing derived from a key, is ever in this answer (keys are set
//! in the environment or the configuration file and read at start); it reflects the settings
//! the server started with.

use axum::Json;
use axum::extract::{FromRef, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Ingest;
use crate::auth::{Auth, Viewer};
use crate::config::AllowedOrigins;
use crate::http::ApiError;
use crate::http::problems;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Ingest: FromRef<S>,
    Auth: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(ingest_settings))
}

/// The ingest routes, as full URLs under `BASE_URL`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IngestUrls {
    pub web_errors: String,
    pub web_sessions: String,
    pub spans: String,
    pub sourcemaps: String,
    pub ab_config: String,
    pub ab_uniques: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IngestSettingsView {
    /// `BASE_URL` without a trailing slash.
    pub base_url: String,
    pub urls: IngestUrls,
    /// How many keys `WEB_INGEST_KEY` and `WEB_INGEST_KEYS` hold; 0 means ingest refuses
    /// every request until one is set.
    pub keys_configured: usize,
    /// `["*"]` for any origin, else the origins allowed to send (`WEB_INGEST_ALLOWED_ORIGINS`).
    pub allowed_origins: Vec<String>,
    /// Whether ingested data lands in the caller's organisation (`WEB_INGEST_ORG_ID`, else the
    /// first organisation).
    pub receives_this_org: bool,
    pub max_body_bytes: usize,
    pub max_events: usize,
    pub max_sourcemap_bytes: usize,
    pub rate_per_min: u32,
    pub scrub_pii: bool,
    pub scrub_ip: bool,
}

/// How to send data to this server's ingest (never the keys themselves).
#[utoipa::path(get, path = "/api/v1/ingest-settings", tag = "ingest",
    responses((status = 200, body = IngestSettingsView), problems::Unauthenticated))]
async fn ingest_settings(
    State(ingest): State<Ingest>,
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
) -> Result<Json<IngestSettingsView>, ApiError> {
    let settings = ingest.settings();
    // Before setup there is no organisation; a signed-in caller always has one.
    let receives_this_org = ingest.org().await.is_ok_and(|org| org == caller.org_id);
    let base = auth.base_url().to_string();
    let url = |path: &str| format!("{base}/ingest/{path}");
    let allowed_origins = match &settings.allowed_origins {
        AllowedOrigins::Any => vec!["*".to_string()],
        AllowedOrigins::List(origins) => origins.clone(),
    };
    Ok(Json(IngestSettingsView {
        urls: IngestUrls {
            web_errors: url("web-errors"),
            web_sessions: url("web-sessions"),
            spans: url("spans"),
            sourcemaps: url("sourcemaps"),
            ab_config: url("ab-config"),
            ab_uniques: url("ab-uniques"),
        },
        base_url: base,
        keys_configured: settings.keys.len(),
        allowed_origins,
        receives_this_org,
        max_body_bytes: settings.max_body_bytes,
        max_events: settings.max_events,
        max_sourcemap_bytes: settings.max_sourcemap_bytes,
        rate_per_min: settings.rate_per_min,
        scrub_pii: settings.scrub_pii,
        scrub_ip: settings.scrub_ip,
    }))
}
