//! `POST /v1/traces`: OTLP/HTTP trace export (JSON or protobuf, optionally gzip) behind
//! ingest's gate (`api.rs`), key in `X-Lookout-Key` or `?key=` as on `/ingest/*`.
//!
//! Order of checks: rate and origin (the gate), the declared size, the key, the body under
//! `MAX_OTLP_BYTES`, encoding and media type, inflating under the same cap, decoding, then
//! ingest's entry for decoded telemetry. Answers 200 with an `ExportTraceServiceResponse` in the
//! request's own encoding, with `partial_success` when spans were rejected.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::envelope;
use super::{CompatError, otlp, otlp_proto};
use crate::alerting::SpikeWake;
use crate::http::body_buffers::read_body_reused;
use crate::http::extract::media_type;
use crate::http::{ApiError, problems};
use crate::ingest::Ingest;
use crate::ingest::api_decoded::accept_decoded;

/// The most bytes one export may have, as sent and once inflated.
pub const MAX_OTLP_BYTES: usize = 4 << 20;

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Json,
    Protobuf,
}

/// Stores the spans of an OTLP/HTTP trace export; span `exception` events become error events.
#[utoipa::path(post, path = "/v1/traces", tag = "compat",
    description = "OTLP/HTTP `ExportTraceServiceRequest` as `application/json` or `application/x-protobuf`, optionally gzip; at most 4 MiB sent and inflated. Key in `X-Lookout-Key` or `?key=`. See docs/compat.md.",
    params(("key" = Option<String>, Query, description = "the ingest key")),
    request_body(content = Object, content_type = "application/json"),
    responses((status = 200, description = "ExportTraceServiceResponse, with partialSuccess when spans were rejected"),
        problems::Invalid, problems::Unauthenticated, problems::Forbidden, problems::TooLarge,
        problems::UnsupportedMediaType, problems::RateLimited, problems::Unavailable))]
pub async fn post_traces(
    State(ingest): State<Ingest>,
    State(search): State<crate::errors::Search>,
    State(spikes): State<SpikeWake>,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    crate::ingest::body::check_declared_length(&parts.headers, MAX_OTLP_BYTES)?;
    crate::ingest::gate::require_key(&ingest, &parts)?;
    let raw = read_body_reused(body, ingest.body_rules(MAX_OTLP_BYTES)).await?;
    let encoding = envelope::content_encoding(&parts.headers)?;
    let format = format(&parts.headers)?;
    let telemetry = ingest
        .cpu_work(move || {
            let decoded = crate::ingest::body::decode(&raw, encoding, MAX_OTLP_BYTES)?;
            let request = match format {
                Format::Json => serde_json::from_slice(&decoded).map_err(|_| {
                    CompatError::Invalid("the body is not an OTLP/JSON export request".into())
                })?,
                Format::Protobuf => otlp_proto::export_request(&decoded)?,
            };
            Ok::<_, ApiError>(otlp::telemetry(&request))
        })
        .await??;
    let outcome = accept_decoded(&ingest, &search, &spikes, &mut parts, telemetry).await?;
    let rejected = outcome
        .rejected
        .iter()
        .filter(|(kind, _)| *kind == "span")
        .count() as u64;
    let message = outcome
        .rejected
        .first()
        .map(|(kind, rejected)| format!("{kind} {}: {}", rejected.index, rejected.reason))
        .unwrap_or_default();
    Ok(answer(format, rejected, &message))
}

fn answer(format: Format, rejected: u64, message: &str) -> Response {
    let (body, content_type) = match format {
        Format::Protobuf => (
            otlp_proto::export_response(rejected, message),
            "application/x-protobuf",
        ),
        Format::Json if rejected == 0 => (b"{}".to_vec(), "application/json"),
        Format::Json => (
            json!({"partialSuccess": {"rejectedSpans": rejected.to_string(), "errorMessage": message}})
                .to_string()
                .into_bytes(),
            "application/json",
        ),
    };
    let mut response = Body::from(body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn format(headers: &HeaderMap) -> Result<Format, CompatError> {
    let essence = media_type(headers);
    match essence.as_str() {
        "application/json" => Ok(Format::Json),
        "application/x-protobuf" | "application/protobuf" => Ok(Format::Protobuf),
        _ => Err(CompatError::UnsupportedMediaType(
            "application/json or application/x-protobuf",
        )),
    }
}
