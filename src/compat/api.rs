//! `GET /api/v1/orgs/me/ingest` (viewer): the project id, the Sentry envelope URL, the OTLP
//! traces URL and, for admins, a ready DSN; the routes of the Sentry and OTLP rooms behind
//! ingest's gate with the headers SDKs read; and the exhaustive `CompatError` mapping.
//!
//! Invariants: the DSN holds a key only for an admin of the organisation that receives ingest,
//! and only a key Sentry's SDKs can parse (`[A-Za-z0-9_]+`); every compat ingest route passes
//! ingest's gate (rate limit first, allowed origins, CORS) like `/ingest/*`, and a 429 carries
//! `X-Sentry-Rate-Limits` beside `Retry-After`.

use axum::Json;
use axum::extract::{FromRef, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{CompatError, project_id, usable_in_dsn};
use crate::accounts::model::Role;
use crate::alerting::SpikeWake;
use crate::auth::{Auth, Viewer};
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};
use crate::ingest::Ingest;

impl From<CompatError> for ApiError {
    fn from(error: CompatError) -> ApiError {
        let code = match &error {
            CompatError::TooLarge { .. } => ErrorCode::BodyTooLarge,
            CompatError::TooManyItems(_) => ErrorCode::TooManyEvents,
            CompatError::TooManyChunks(_) => ErrorCode::BodyTooLarge,
            CompatError::Invalid(_) => ErrorCode::InvalidPayload,
            CompatError::UnsupportedEncoding | CompatError::UnsupportedMediaType(_) => {
                ErrorCode::UnsupportedMediaType
            }
            CompatError::MissingKey | CompatError::WrongProject => ErrorCode::InvalidIngestKey,
        };
        ApiError::new(code, error.to_string())
    }
}

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Ingest: FromRef<S>,
    Auth: FromRef<S>,
    crate::errors::Search: FromRef<S>,
    SpikeWake: FromRef<S>,
    super::Artifacts: FromRef<S>,
{
    let ingest_routes = OpenApiRouter::new()
        .routes(routes!(super::api_sentry::post_envelope))
        .routes(routes!(super::api_sentry::post_store))
        .routes(routes!(super::api_otlp::post_traces))
        // `layer`, not `route_layer`: the gate must also see preflights and wrong methods.
        .layer(axum::middleware::from_fn(crate::ingest::gate::ingest_gate))
        .layer(axum::middleware::from_fn(sdk_headers));
    // sentry-cli's source map upload: API-key routes, outside ingest's gate.
    let artifact_routes = OpenApiRouter::new()
        .routes(routes!(
            super::api_artifacts::chunk_upload_options,
            super::api_artifacts::upload_chunks
        ))
        .routes(routes!(super::api_artifacts::assemble_bundle));
    OpenApiRouter::new()
        .routes(routes!(ingest_endpoints))
        .merge(artifact_routes)
        .merge(ingest_routes)
}

/// The headers Sentry and OpenTelemetry SDKs need around ingest's gate: the preflight allows
/// their auth headers, every answer exposes the back-off headers, and a 429 says how long in
/// Sentry's own header too.
async fn sdk_headers(request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS;
    let mut response = next.run(request).await;
    let status = response.status();
    let headers = response.headers_mut();
    if preflight && status == StatusCode::NO_CONTENT {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "Content-Type, Content-Encoding, X-Sentry-Auth, X-Lookout-Key",
            ),
        );
    }
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("X-Sentry-Rate-Limits, Retry-After"),
    );
    if status == StatusCode::TOO_MANY_REQUESTS {
        let seconds = headers
            .get(header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<u64>().ok())
            .unwrap_or(60);
        // `retry_after:categories:scope`; no categories means every kind of data.
        if let Ok(value) = HeaderValue::from_str(&format!("{seconds}::organization")) {
            headers.insert("x-sentry-rate-limits", value);
        }
    }
    response
}

/// Where Sentry SDKs and OTLP exporters send this organisation's data.
#[derive(Debug, Serialize, ToSchema)]
pub struct IngestEndpoints {
    /// A stable integer per organisation: the project id of Sentry's DSNs and URLs.
    pub project_id: u32,
    /// `{BASE_URL}/api/{project_id}/envelope/`.
    pub envelope_url: String,
    /// `{BASE_URL}/v1/traces`.
    pub otlp_traces_url: String,
    /// `http://<ingest key>@<host:port>/<project_id>` for admins of the organisation receiving
    /// ingest when an ingest key is made of `[A-Za-z0-9_]`; else null.
    pub dsn: Option<String>,
}

/// The project id, the Sentry envelope and OTLP URLs, and (admins) a DSN.
#[utoipa::path(get, path = "/api/v1/orgs/me/ingest", tag = "compat",
    responses((status = 200, body = IngestEndpoints), problems::Unauthenticated))]
async fn ingest_endpoints(
    State(ingest): State<Ingest>,
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
) -> Result<Json<IngestEndpoints>, ApiError> {
    let project = project_id(&caller.org_id);
    let base = auth.base_url().trim_end_matches('/').to_string();
    let receives = ingest.org().await.is_ok_and(|org| org == caller.org_id);
    let key = ingest.settings().keys.iter().find(|key| usable_in_dsn(key));
    let dsn = match key {
        Some(key) if receives && caller.role.at_least(Role::Admin) => dsn(&base, key, project),
        _ => None,
    };
    Ok(Json(IngestEndpoints {
        project_id: project,
        envelope_url: format!("{base}/api/{project}/envelope/"),
        otlp_traces_url: format!("{base}/v1/traces"),
        dsn,
    }))
}

/// `scheme://key@host[:port][/path]/project`, from `BASE_URL`.
fn dsn(base: &str, key: &str, project: u32) -> Option<String> {
    let mut url = url::Url::parse(base).ok()?;
    url.set_username(key).ok()?;
    let path = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{path}/{project}"));
    Some(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsns_carry_the_key_and_project() {
        assert_eq!(
            dsn("http://127.0.0.1:8080", "abc_1", 42).as_deref(),
            Some("http://abc_1@127.0.0.1:8080/42")
        );
        assert_eq!(
            dsn("https://mon.example.com/lookout", "k", 7).as_deref(),
            Some("https://k@mon.example.com/lookout/7")
        );
    }

    #[test]
    fn every_error_has_its_code() {
        let cases = [
            (
                CompatError::TooLarge {
                    what: "x",
                    limit: 1,
                },
                ErrorCode::BodyTooLarge,
            ),
            (CompatError::TooManyItems(1), ErrorCode::TooManyEvents),
            (CompatError::TooManyChunks(1), ErrorCode::BodyTooLarge),
            (CompatError::Invalid("x".into()), ErrorCode::InvalidPayload),
            (
                CompatError::UnsupportedEncoding,
                ErrorCode::UnsupportedMediaType,
            ),
            (CompatError::MissingKey, ErrorCode::InvalidIngestKey),
            (CompatError::WrongProject, ErrorCode::InvalidIngestKey),
        ];
        for (error, code) in cases {
            assert_eq!(ApiError::from(error).code, code);
        }
    }
}
