//! The `/ingest/*` routes: errors, sessions, spans, ab-config and ab-uniques here, source maps
//! in `api_sourcemaps.rs`; all behind the gate (`gate::ingest_gate`).
//!
//! Invariants: the checks run in CONTRACT order (rate and origin in the gate, then the declared
//! size, key, the size of the bytes read, media type and encoding, parse, count, items), so no
//! body is read before its sender proved it holds a key; a 202 is sent only after the store committed the
//! accepted items; rejections carry reasons written here, never the rejected values.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRef, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use redb::WriteTransaction;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::experiments::{self, model::parse_exposure};
use super::item::Item;
use super::{
    Ingest, IngestError, NO_ORG_RETRY_AFTER, body, gate, scrub, sessions, spans, web_errors,
};
use crate::accounts::model::OrgId;
use crate::alerting::SpikeWake;
use crate::auth::Auth;
use crate::clock::Timestamp;
use crate::http::body_buffers::read_body_reused;
use crate::http::problems;
use crate::http::{ApiError, ClientAddr, ErrorCode};
use crate::store::StoreError;

impl From<IngestError> for ApiError {
    fn from(error: IngestError) -> ApiError {
        match error {
            IngestError::Store(store) => ApiError::from(store),
            IngestError::ConfiguredOrgMissing | IngestError::NoOrgYet => {
                ApiError::new(ErrorCode::IngestUnavailable, error.to_string())
                    .with_retry_after(NO_ORG_RETRY_AFTER)
            }
            IngestError::Work(_) => ApiError::internal(error),
        }
    }
}

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Ingest: FromRef<S>,
    Auth: FromRef<S>,
    crate::errors::Search: FromRef<S>,
    SpikeWake: FromRef<S>,
{
    let mut router = OpenApiRouter::new()
        .routes(routes!(post_web_errors))
        .routes(routes!(post_web_sessions))
        .routes(routes!(post_spans))
        .routes(routes!(super::api_sourcemaps::post_sourcemap))
        .routes(routes!(get_ab_config))
        .routes(routes!(post_ab_uniques));
    document_preflight(router.get_openapi_mut());
    // `layer`, not `route_layer`: the gate must also see the 405 of a wrong method.
    router.layer(axum::middleware::from_fn(gate::ingest_gate))
}

/// Every ingest route also answers the CORS preflight. The gate answers it before routing, so
/// no handler exists to carry an annotation; the document gets the operation here instead.
fn document_preflight(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::OperationBuilder;
    use utoipa::openapi::response::ResponseBuilder;
    for (path, item) in openapi.paths.paths.iter_mut() {
        if !path.starts_with("/ingest/") {
            continue;
        }
        let response = ResponseBuilder::new().description(
            "CORS preflight: Access-Control-Allow-Origin, -Methods (GET, POST, OPTIONS), \
             -Headers (Content-Type, X-Lookout-Key) and -Max-Age (86400)",
        );
        let operation = OperationBuilder::new()
            .tag("ingest")
            .summary(Some(format!("CORS preflight of {path}")))
            .response("204", response.build())
            .build();
        item.options = Some(operation);
    }
}

/// One item that was not accepted, by its index in the request.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Rejected {
    pub index: usize,
    pub reason: String,
}

/// The 202 body of every batch route.
#[derive(Debug, Serialize, ToSchema)]
pub struct IngestResult {
    /// Items stored, or acknowledged again when their id was stored before.
    pub accepted: usize,
    pub rejected: Vec<Rejected>,
}

/// Documentation of a batch body: `{"<kind>": [item, …]}`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct BatchBody {
    /// The items, under `events`, `sessions`, `spans` or `exposures` by route.
    #[schema(value_type = Vec<Object>)]
    items: Vec<Value>,
}

/// A batch read off the wire, items parsed one by one.
struct Batch<T> {
    org: OrgId,
    accepted: Vec<T>,
    /// The request index of each accepted item.
    indexes: Vec<usize>,
    rejected: Vec<Rejected>,
}

/// What the item reader gets besides the item.
#[derive(Clone)]
pub(super) struct ItemContext {
    pub(super) received_at: Timestamp,
    pub(super) client_ip: Option<String>,
}

/// Size, key, media type, parse, count, scrub and per-item checks, in that order.
async fn receive<T: Send + 'static>(
    ingest: &Ingest,
    request: Request,
    field: &'static str,
    parse: fn(&Item<'_>, &ItemContext) -> Result<T, String>,
) -> Result<Batch<T>, ApiError> {
    let (mut parts, body) = request.into_parts();
    let settings = ingest.settings();
    // A declared size over the limit, then the key, and only then the body: a keyless sender
    // gets its answer without the server holding any of its bytes.
    body::check_declared_length(&parts.headers, settings.max_body_bytes)?;
    gate::require_key(ingest, &parts)?;
    let raw = read_body_reused(body, ingest.body_rules(settings.max_body_bytes)).await?;
    let encoding = body::encoding(&parts.headers)?;
    body::media_type(&parts.headers, false)?;
    let org = ingest.org().await?;
    let context = ItemContext {
        received_at: ingest.clock().now(),
        client_ip: stored_client_ip(ingest, &mut parts).await?,
    };
    let (limit, max_items) = (settings.max_body_bytes, settings.max_events);
    let scrub_items = settings.scrub_pii;
    let parsed = ingest.cpu_work(move || {
        let decoded = body::decode(&raw, encoding, limit)?;
        // The items' texts are borrowed from the body's buffer, which goes back to the stock
        // once they are read.
        let mut items = body::parse_batch(&decoded, field)?;
        body::check_count(&items, max_items)?;
        let mut batch = Batch {
            org,
            accepted: Vec::with_capacity(items.len()),
            indexes: Vec::with_capacity(items.len()),
            rejected: Vec::new(),
        };
        for (index, item) in items.iter_mut().enumerate() {
            if scrub_items {
                scrub::scrub_item(item);
            }
            match parse(item, &context) {
                Ok(value) => {
                    batch.accepted.push(value);
                    batch.indexes.push(index);
                }
                Err(reason) => batch.rejected.push(Rejected { index, reason }),
            }
        }
        drop(items);
        drop(decoded);
        drop(raw);
        Ok::<_, ApiError>(batch)
    });
    parsed.await?
}

/// The routes whose accepted items are all stored as read (sessions, spans): receive the batch,
/// write every accepted item in one transaction, and answer 202 once it is durable.
async fn receive_and_store<T: Send + Sync + 'static>(
    ingest: &Ingest,
    request: Request,
    field: &'static str,
    parse: fn(&Item<'_>, &ItemContext) -> Result<T, String>,
    store: fn(&WriteTransaction, &OrgId, &[T]) -> Result<(), StoreError>,
) -> Result<(StatusCode, Json<IngestResult>), ApiError> {
    let batch = receive(ingest, request, field, parse).await?;
    let count = batch.accepted.len();
    if count > 0 {
        let (org, items) = (batch.org, batch.accepted);
        ingest
            .store()
            .write(move |txn| store(txn, &org, &items))
            .await
            .map_err(ApiError::from)?;
    }
    Ok(accepted(count, batch.rejected))
}

/// The client address to keep with items: none unless `WEB_INGEST_SCRUB_IP=false`.
pub(super) async fn stored_client_ip(
    ingest: &Ingest,
    parts: &mut Parts,
) -> Result<Option<String>, ApiError> {
    if ingest.settings().scrub_ip {
        return Ok(None);
    }
    let ClientAddr(address) = ClientAddr::from_request_parts(parts, &()).await?;
    Ok(Some(address.to_string()))
}

fn accepted(accepted: usize, rejected: Vec<Rejected>) -> (StatusCode, Json<IngestResult>) {
    let body = IngestResult { accepted, rejected };
    (StatusCode::ACCEPTED, Json(body))
}

/// Stores browser errors and warnings.
#[utoipa::path(post, path = "/ingest/web-errors", tag = "ingest",
    description = "Key in `X-Lookout-Key` or `?key=`. Body `{\"events\":[…]}` as JSON or text/plain, optionally gzip. See docs/ingest.md.",
    request_body(content = BatchBody, content_type = "application/json"),
    params(("key" = Option<String>, Query, description = "the ingest key, for sendBeacon")),
    responses((status = 202, body = IngestResult), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge, problems::UnsupportedMediaType,
        problems::RateLimited, problems::Unavailable))]
async fn post_web_errors(
    State(ingest): State<Ingest>,
    State(search): State<crate::errors::Search>,
    State(spikes): State<SpikeWake>,
    request: Request,
) -> Result<(StatusCode, Json<IngestResult>), ApiError> {
    let parse = |item: &Item<'_>, context: &ItemContext| {
        web_errors::parse_event(item, context.received_at, context.client_ip.as_deref())
    };
    let batch = receive(&ingest, request, "events", parse).await?;
    let count = store_error_events(&ingest, &search, &spikes, batch.org, batch.accepted).await?;
    Ok(accepted(count, batch.rejected))
}

/// Resolves, groups, stores and indexes parsed error events; the count acknowledged. The one
/// way error events reach `errors`, whatever wire format they came in (`api_decoded.rs`).
pub(super) async fn store_error_events(
    ingest: &Ingest,
    search: &crate::errors::Search,
    spikes: &SpikeWake,
    org: OrgId,
    events: Vec<crate::errors::ErrorEvent>,
) -> Result<usize, ApiError> {
    if events.is_empty() {
        return Ok(0);
    }
    // Source maps already uploaded resolve the frames before they are stored.
    let events = crate::errors::resolve_batch(ingest.store(), &org, events).await?;
    // Fingerprints here, so that the store's one writer thread only looks up and writes. The
    // write closure owns the batch; its events come back once the writer dropped it.
    let batch_org = org.clone();
    let (to_store, returned) = ingest
        .cpu_work(move || crate::errors::EventBatch::returning(&batch_org, events))
        .await?;
    // Taken before the write: the index learns of every write that may commit events.
    let ticket = crate::errors::index_ticket(search)?;
    // Written together with the batches of other requests waiting for the store's writer.
    let stored = ingest
        .event_writes()
        .write(org.clone(), to_store)
        .await
        .map_err(ApiError::from)?;
    let count = stored.accepted();
    crate::errors::events_committed(ticket, &org, returned, stored).await?;
    spikes.nudge();
    Ok(count)
}

/// Stores browser sessions; the same id again updates the session.
#[utoipa::path(post, path = "/ingest/web-sessions", tag = "ingest",
    description = "Body `{\"sessions\":[…]}`; see docs/ingest.md.",
    request_body(content = BatchBody, content_type = "application/json"),
    params(("key" = Option<String>, Query, description = "the ingest key, for sendBeacon")),
    responses((status = 202, body = IngestResult), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge))]
async fn post_web_sessions(
    State(ingest): State<Ingest>,
    request: Request,
) -> Result<(StatusCode, Json<IngestResult>), ApiError> {
    let parse = |item: &Item<'_>, context: &ItemContext| {
        sessions::parse_session(item, context.received_at, context.client_ip.as_deref())
    };
    receive_and_store(
        &ingest,
        request,
        "sessions",
        parse,
        sessions::upsert_sessions,
    )
    .await
}

/// Stores front-end spans.
#[utoipa::path(post, path = "/ingest/spans", tag = "ingest",
    description = "Body `{\"spans\":[…]}`; see docs/ingest.md.",
    request_body(content = BatchBody, content_type = "application/json"),
    params(("key" = Option<String>, Query, description = "the ingest key, for sendBeacon")),
    responses((status = 202, body = IngestResult), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge))]
async fn post_spans(
    State(ingest): State<Ingest>,
    request: Request,
) -> Result<(StatusCode, Json<IngestResult>), ApiError> {
    let parse =
        |item: &Item<'_>, context: &ItemContext| spans::parse_span(item, context.received_at);
    receive_and_store(&ingest, request, "spans", parse, spans::store_spans).await
}

/// Counts experiment exposures: a visitor once per experiment, variant and UTC day.
#[utoipa::path(post, path = "/ingest/ab-uniques", tag = "ingest",
    description = "Body `{\"exposures\":[{\"experiment\",\"variant\",\"visitor_id\",\"timestamp\"?}]}`.",
    request_body(content = BatchBody, content_type = "application/json"),
    params(("key" = Option<String>, Query, description = "the ingest key, for sendBeacon")),
    responses((status = 202, body = IngestResult), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge))]
async fn post_ab_uniques(
    State(ingest): State<Ingest>,
    request: Request,
) -> Result<(StatusCode, Json<IngestResult>), ApiError> {
    // Scrubbed as every kind is; the visitor id is kept (`scrub`), since only its digest is
    // stored and scrubbing would merge every visitor whose id looks like an address into one.
    let parse = |item: &Item<'_>, context: &ItemContext| parse_exposure(item, context.received_at);
    let batch = receive(&ingest, request, "exposures", parse).await?;
    let mut rejected = batch.rejected;
    let mut count = batch.accepted.len();
    if count > 0 {
        let (org, exposures) = (batch.org, batch.accepted);
        let outcomes = ingest
            .store()
            .write(move |txn| experiments::record_exposures(txn, &org, &exposures))
            .await
            .map_err(ApiError::from)?;
        for (index, outcome) in batch.indexes.into_iter().zip(outcomes) {
            if let Some(reason) = outcome {
                count -= 1;
                rejected.push(Rejected { index, reason });
            }
        }
        rejected.sort_by_key(|r| r.index);
    }
    Ok(accepted(count, rejected))
}

/// Flags and experiments for the browser SDK, with an ETag.
#[utoipa::path(get, path = "/ingest/ab-config", tag = "ingest",
    description = "`{\"flags\":{name:value},\"experiments\":[…]}` with `ETag` and `Cache-Control: no-cache`; `If-None-Match` with the current ETag gives 304.",
    params(("key" = Option<String>, Query, description = "the ingest key")),
    responses((status = 200, body = experiments::AbConfig), (status = 304),
        problems::Unauthenticated, problems::Forbidden))]
async fn get_ab_config(
    State(ingest): State<Ingest>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, _) = request.into_parts();
    gate::require_key(&ingest, &parts)?;
    let org = ingest.org().await?;
    let config = ingest
        .store()
        .read(move |txn| experiments::ab_config(txn, &org))
        .await
        .map_err(|error: StoreError| ApiError::from(error))?;
    let (document, etag) = experiments::render_ab_config(&config);
    let fresh = parts
        .headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*");
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = Body::from(document).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    Ok(response)
}
