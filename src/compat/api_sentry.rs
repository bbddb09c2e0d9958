//! `POST /api/{project_id}/envelope/` and `/api/{project_id}/store/`: Sentry SDKs' events,
//! transactions and sessions, behind ingest's gate (`api.rs`).
//!
//! Order of checks: rate and origin (the gate), the declared size, a key sent as `sentry_key`,
//! in `X-Sentry-Auth` or `X-Lookout-Key` (refused before the body is read when wrong), the
//! project id, the body under its cap, encoding and media type, inflating under the
//! decompressed cap, framing (item size and count), then, when no key came with the request,
//! the key of the envelope header's `dsn`; then ingest's entry for decoded telemetry. A refused
//! request stores nothing; an accepted one is answered 200 `{"id"}` once durable.

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::envelope::{self, MAX_ENVELOPE_BYTES, MAX_ITEM_BYTES};
use super::{CompatError, project_id, sentry_event, sentry_other, sentry_spans};
use crate::alerting::SpikeWake;
use crate::http::body_buffers::read_body_reused;
use crate::http::{ApiError, problems};
use crate::ingest::Ingest;
use crate::ingest::api_decoded::{DecodedTelemetry, accept_decoded};

/// Sentry's answer: the id of the event the request carried, if any.
#[derive(Debug, Serialize, ToSchema)]
pub struct SentryReceipt {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// What a body reads into: the telemetry, the event id to answer, the key of a `dsn`.
struct Read {
    telemetry: DecodedTelemetry,
    event_id: Option<String>,
    dsn_key: Option<String>,
}

/// Stores the items of a Sentry envelope.
#[utoipa::path(post, path = "/api/{project_id}/envelope/", tag = "compat",
    description = "Sentry envelopes (`application/x-sentry-envelope`, JSON or text/plain; gzip, deflate or br). Key as `sentry_key`, in `X-Sentry-Auth` or in the envelope header's `dsn`. Items `event`, `transaction`, `session`, `sessions`; others are skipped. 1 MiB per item, 100 items, 20 MiB per envelope sent and inflated. See docs/compat.md.",
    params(("project_id" = String, Path, description = "the project id of `GET /api/v1/orgs/me/ingest`"),
        ("sentry_key" = Option<String>, Query, description = "the ingest key")),
    request_body(content = String, content_type = "application/x-sentry-envelope"),
    responses((status = 200, body = SentryReceipt), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge, problems::UnsupportedMediaType,
        problems::RateLimited, problems::Unavailable))]
pub async fn post_envelope(
    State(ingest): State<Ingest>,
    State(search): State<crate::errors::Search>,
    State(spikes): State<SpikeWake>,
    Path(project): Path<String>,
    request: Request,
) -> Result<Json<SentryReceipt>, ApiError> {
    receive(
        &ingest,
        &search,
        &spikes,
        &project,
        request,
        MAX_ENVELOPE_BYTES,
        read_envelope,
    )
    .await
}

/// Stores one Sentry event sent the older way, as the body itself.
#[utoipa::path(post, path = "/api/{project_id}/store/", tag = "compat",
    description = "One Sentry event as JSON (gzip, deflate or br), at most 1 MiB sent and inflated. Key as `sentry_key` or in `X-Sentry-Auth`. See docs/compat.md.",
    params(("project_id" = String, Path, description = "the project id of `GET /api/v1/orgs/me/ingest`"),
        ("sentry_key" = Option<String>, Query, description = "the ingest key")),
    request_body(content = Object, content_type = "application/json"),
    responses((status = 200, body = SentryReceipt), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge, problems::UnsupportedMediaType,
        problems::RateLimited, problems::Unavailable))]
pub async fn post_store(
    State(ingest): State<Ingest>,
    State(search): State<crate::errors::Search>,
    State(spikes): State<SpikeWake>,
    Path(project): Path<String>,
    request: Request,
) -> Result<Json<SentryReceipt>, ApiError> {
    receive(
        &ingest,
        &search,
        &spikes,
        &project,
        request,
        MAX_ITEM_BYTES,
        read_store,
    )
    .await
}

async fn receive(
    ingest: &Ingest,
    search: &crate::errors::Search,
    spikes: &SpikeWake,
    project: &str,
    request: Request,
    limit: usize,
    read: fn(&[u8]) -> Result<Read, CompatError>,
) -> Result<Json<SentryReceipt>, ApiError> {
    let (mut parts, body) = request.into_parts();
    crate::ingest::body::check_declared_length(&parts.headers, limit)?;
    let sent_key = request_key(&parts);
    if let Some(key) = &sent_key {
        check_key(ingest, key)?;
    }
    let org = ingest.org().await?;
    if project.parse::<u32>().ok() != Some(project_id(&org)) {
        return Err(CompatError::WrongProject.into());
    }
    let raw = read_body_reused(body, ingest.body_rules(limit)).await?;
    let encoding = envelope::content_encoding(&parts.headers)?;
    media_type(&parts.headers)?;
    let read = ingest
        .cpu_work(move || {
            let decoded = crate::ingest::body::decode(&raw, encoding, limit)?;
            read(&decoded).map_err(ApiError::from)
        })
        .await??;
    if sent_key.is_none() {
        check_key(ingest, read.dsn_key.as_deref().unwrap_or(""))?;
    }
    accept_decoded(ingest, search, spikes, &mut parts, read.telemetry).await?;
    Ok(Json(SentryReceipt { id: read.event_id }))
}

/// 401 unless `key` is one of the ingest keys.
fn check_key(ingest: &Ingest, key: &str) -> Result<(), CompatError> {
    if !key.is_empty() && ingest.keys().accepts(key) {
        return Ok(());
    }
    Err(CompatError::MissingKey)
}

/// The key a request carries outside its body: `sentry_key` in the query, `X-Sentry-Auth` (or
/// `Authorization: Sentry …`), else `X-Lookout-Key` or `?key=` as on `/ingest/*`.
fn request_key(parts: &Parts) -> Option<String> {
    let query = parts.uri.query().unwrap_or("");
    let from_query = url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, value)| name == "sentry_key" && !value.is_empty())
        .map(|(_, value)| value.into_owned());
    if from_query.is_some() {
        return from_query;
    }
    let auth_headers = [
        parts.headers.get("x-sentry-auth"),
        parts.headers.get(header::AUTHORIZATION),
    ];
    let from_auth = auth_headers
        .into_iter()
        .flatten()
        .filter_map(|value| value.to_str().ok())
        .find_map(sentry_auth_key);
    from_auth.or_else(|| crate::ingest::gate::presented_key(parts))
}

/// `sentry_key` of a `Sentry sentry_version=7, sentry_key=…, …` header.
fn sentry_auth_key(value: &str) -> Option<String> {
    let fields = value.trim().strip_prefix("Sentry ")?;
    fields
        .split(',')
        .filter_map(|field| field.trim().split_once('='))
        .find(|(name, value)| name.trim() == "sentry_key" && !value.trim().is_empty())
        .map(|(_, value)| value.trim().to_string())
}

/// The key (user name) of a DSN.
fn dsn_key(dsn: &str) -> Option<String> {
    let url = url::Url::parse(dsn).ok()?;
    Some(url.username().to_string()).filter(|key| !key.is_empty())
}

/// Envelopes come as `application/x-sentry-envelope`, JSON, `text/plain` (browsers, to avoid a
/// preflight) or `application/octet-stream`, or without a type from some server SDKs.
fn media_type(headers: &HeaderMap) -> Result<(), CompatError> {
    match crate::http::extract::media_type(headers).as_str() {
        ""
        | "application/x-sentry-envelope"
        | "application/json"
        | "text/plain"
        | "application/octet-stream" => Ok(()),
        _ => Err(CompatError::UnsupportedMediaType(
            "application/x-sentry-envelope, application/json or text/plain",
        )),
    }
}

/// An envelope's items as native telemetry.
fn read_envelope(bytes: &[u8]) -> Result<Read, CompatError> {
    let envelope = envelope::parse(bytes)?;
    let mut read = Read {
        telemetry: DecodedTelemetry::default(),
        event_id: sentry_event::text(envelope.header.get("event_id")),
        dsn_key: sentry_event::text(envelope.header.get("dsn")).and_then(|dsn| dsn_key(&dsn)),
    };
    // Aggregated sessions get ids unique to this request.
    let receipt = ulid::Ulid::generate().to_string();
    for (index, item) in envelope.items.iter().enumerate() {
        let payload = envelope::json_object(&item.payload, "an item payload")?;
        match item.kind.as_str() {
            "event" => {
                read.event_id = read
                    .event_id
                    .or_else(|| sentry_event::text(payload.get("event_id")));
                read.telemetry
                    .errors
                    .push(sentry_event::error_item(&payload));
            }
            "transaction" => {
                read.event_id = read
                    .event_id
                    .or_else(|| sentry_event::text(payload.get("event_id")));
                read.telemetry
                    .spans
                    .extend(sentry_other::transaction_spans(&payload));
            }
            "span" => read
                .telemetry
                .spans
                .extend(sentry_spans::streamed_spans(&payload)),
            "session" => read
                .telemetry
                .sessions
                .push(sentry_other::session(&payload)),
            "sessions" => {
                let prefix = format!("{receipt}-{index}");
                let sessions = sentry_other::aggregated_sessions(&payload, &prefix);
                read.telemetry.sessions.extend(sessions);
            }
            _ => {}
        }
    }
    Ok(read)
}

/// A `/store/` body: one event.
fn read_store(bytes: &[u8]) -> Result<Read, CompatError> {
    let event: Map<String, Value> = envelope::json_object(bytes, "the event")?;
    let event_id = sentry_event::text(event.get("event_id"));
    let mut telemetry = DecodedTelemetry::default();
    if event.get("type").and_then(Value::as_str) == Some("transaction") {
        telemetry.spans = sentry_other::transaction_spans(&event);
    } else {
        telemetry.errors.push(sentry_event::error_item(&event));
    }
    Ok(Read {
        telemetry,
        event_id,
        dsn_key: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_every_place_sentry_puts_them() {
        assert_eq!(
            sentry_auth_key(
                "Sentry sentry_version=7, sentry_client=sentry.python/2.0, sentry_key=abc_1"
            )
            .as_deref(),
            Some("abc_1")
        );
        assert_eq!(sentry_auth_key("Bearer x"), None);
        assert_eq!(sentry_auth_key("Sentry sentry_key="), None);
        assert_eq!(
            dsn_key("https://abc@o1.example.com/42").as_deref(),
            Some("abc")
        );
        assert_eq!(dsn_key("not a url"), None);
        let parts = |uri: &str| {
            axum::http::Request::builder()
                .uri(uri)
                .body(())
                .unwrap()
                .into_parts()
                .0
        };
        assert_eq!(
            request_key(&parts("/api/1/envelope/?sentry_key=k&sentry_version=7")).as_deref(),
            Some("k")
        );
        assert_eq!(
            request_key(&parts("/api/1/envelope/?key=n")).as_deref(),
            Some("n")
        );
        assert_eq!(request_key(&parts("/api/1/envelope/")), None);
    }

    #[test]
    fn an_envelope_reads_into_native_items() {
        let body =
            b"{\"event_id\":\"9ec79c33ec9942ab8353589fcb2e04dc\",\"dsn\":\"http://k_1@h:1/5\"}\n\
            {\"type\":\"event\"}\n{\"message\":\"m\",\"level\":\"error\"}\n\
            {\"type\":\"client_report\"}\n{}\n\
            {\"type\":\"session\"}\n{\"sid\":\"s1\",\"started\":\"2026-11-22T12:00:00Z\"}\n";
        let read = read_envelope(body).unwrap();
        assert_eq!(read.dsn_key.as_deref(), Some("k_1"));
        assert_eq!(
            read.event_id.as_deref(),
            Some("9ec79c33ec9942ab8353589fcb2e04dc")
        );
        assert_eq!(read.telemetry.errors.len(), 1);
        assert_eq!(read.telemetry.sessions.len(), 1);
        assert!(read_envelope(b"{}\n{\"type\":\"event\"}\n[1]\n").is_err());
    }
}
