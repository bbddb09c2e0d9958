//! Read APIs over ingested data (viewer and above): `/api/v1/sessions` and
//! `/api/v1/sessions/{id}` (with its errors, read through `errors`, and traces),
//! `/api/v1/traces/{trace_id}` and `/api/v1/spans` (duration percentiles per span name); the
//! series and trace list are in `api_trace_reads.rs`.
//!
//! Invariants: a caller sees only its own organisation's data; lists follow the CONTRACT list
//! convention with cursors that are positions in an index, so pages never overlap; every scan
//! is bounded (`MAX_SCANNED` rows per page, `MAX_TRACE_SPANS` spans per trace) and runs in one
//! read transaction on a blocking thread.

use std::collections::BTreeMap;
use std::ops::Bound;

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use redb::ReadTransaction;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_trace_reads::SpanFilter;
use super::session_spans::traces_of_session;
use super::sessions::{SESSION_STARTS, WEB_SESSIONS, WebSession, session_key};
use super::spans::{SPANS, Span, hex_id};
use super::traces::{SpanStats, build_tree, percentiles};
use super::views::*;
use crate::accounts::model::OrgId;
use crate::auth::{Auth, Viewer};
use crate::clock::{Clock, Timestamp};
use crate::http::ApiError;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, parameter_error as parameter, time_filter};
use crate::store::codec::decode;
use crate::store::tables::time_key;
use crate::store::{Scan, Store, StoreError, WalkBounds, tables, walk_backwards};

/// Most index rows one page of a filtered list reads before it answers with what it found.
const MAX_SCANNED: usize = 20_000;
/// Most spans returned for one trace.
const MAX_TRACE_SPANS: usize = 10_000;
/// Most errors listed with one session.
const MAX_SESSION_ERRORS: usize = 1_000;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Clock: FromRef<S>,
    crate::errors::Search: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_sessions))
        .routes(routes!(get_session))
        .routes(routes!(get_trace))
        .routes(routes!(span_stats))
        .routes(routes!(super::api_trace_reads::span_series))
        .routes(routes!(super::api_trace_reads::list_traces))
}

/// Runs `work` in one read transaction on a blocking thread.
pub(super) async fn read<T: Send + 'static>(
    store: &Store,
    work: impl FnOnce(&ReadTransaction) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    Ok(store.read(work).await?)
}

/// Browser sessions, latest start first; filters `service`, `environment`, `from`, `to`.
#[utoipa::path(get, path = "/api/v1/sessions", tag = "ingest",
    params(("service" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "started at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "started before"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<SessionView>), problems::Invalid))]
async fn list_sessions(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<SessionView>>, ApiError> {
    let filters = filters(query.as_deref(), &["service", "environment", "from", "to"])?;
    let (from, to) = (time_filter(&filters, "from")?, time_filter(&filters, "to")?);
    let (service, environment) = (
        filters.get("service").cloned(),
        filters.get("environment").cloned(),
    );
    let org = caller.org_id;
    let prefix = tables::owner_prefix(org.as_str());
    let start = format!("{prefix}{}", time_key(from.unwrap_or(Timestamp(0))));
    let mut end = match to {
        Some(to) => format!("{prefix}{}", time_key(to)),
        None => format!("{}0", org.as_str()),
    };
    if let Some(cursor) = &page.cursor {
        let position = format!("{prefix}{cursor}");
        if !cursor.contains('/') {
            return Err(PageRequest::bad_cursor());
        }
        end = end.min(position);
    }
    let limit = page.limit;
    let (sessions, last_key) = read(&store, move |txn| {
        let wanted = |session: &WebSession| {
            service
                .as_ref()
                .is_none_or(|s| session.service.as_ref() == Some(s))
                && environment
                    .as_ref()
                    .is_none_or(|e| session.environment.as_ref() == Some(e))
        };
        sessions_backwards(txn, &org, &start, &end, limit, wanted)
    })
    .await?;
    let next_cursor = last_key.and_then(|key| key.strip_prefix(&prefix).map(str::to_string));
    let items = sessions.into_iter().map(SessionView::from).collect();
    Ok(Json(Page::new(items, next_cursor)))
}

/// Sessions of the start index `[start, end)`, latest first, that `wanted` keeps: at most
/// `limit`, reading at most `MAX_SCANNED` index rows. The key to continue before is returned
/// when rows may remain.
fn sessions_backwards(
    txn: &ReadTransaction,
    org: &OrgId,
    start: &str,
    end: &str,
    limit: usize,
    wanted: impl Fn(&WebSession) -> bool,
) -> Result<(Vec<WebSession>, Option<String>), StoreError> {
    let mut found = Vec::new();
    let bounds = WalkBounds {
        kept: limit,
        rows: MAX_SCANNED,
    };
    let ended = walk_backwards(
        txn,
        SESSION_STARTS.definition(),
        (start, end),
        bounds,
        |key, _| {
            let id = key.rsplit('/').next().unwrap_or("");
            let kept = match WEB_SESSIONS.get(txn, &session_key(org, id))? {
                Some(session) if wanted(&session) => {
                    found.push(session);
                    true
                }
                _ => false,
            };
            Ok::<_, StoreError>(kept)
        },
    )?;
    Ok((found, ended.last_key))
}

/// One browser session by the client's id, with the errors that named it and the traces of
/// the spans sent with it (newest first, at most 200).
#[utoipa::path(get, path = "/api/v1/sessions/{id}", tag = "ingest",
    params(("id" = String, Path, description = "the client's session id")),
    responses((status = 200, body = SessionDetail), problems::NotFound))]
async fn get_session(
    State(store): State<Store>,
    State(search): State<crate::errors::Search>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<SessionDetail>, ApiError> {
    let org = caller.org_id;
    let found = read(&store, move |txn| {
        if id.contains('/') {
            return Ok(None);
        }
        let Some(session) = WEB_SESSIONS.get(txn, &session_key(&org, &id))? else {
            return Ok(None);
        };
        let errors = crate::errors::events_of_session(txn, &search, &org, &id, MAX_SESSION_ERRORS)?;
        let traces = traces_of_session(txn, &org, &id)?;
        Ok(Some(SessionDetail::new(session, errors, traces)))
    })
    .await?;
    found
        .map(Json)
        .ok_or_else(|| ApiError::not_found("session"))
}

/// A trace as a tree of spans.
#[utoipa::path(get, path = "/api/v1/traces/{trace_id}", tag = "ingest",
    params(("trace_id" = String, Path, description = "32 hex digits")),
    responses((status = 200, body = TraceView), problems::NotFound))]
async fn get_trace(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(trace_id): Path<String>,
) -> Result<Json<TraceView>, ApiError> {
    let trace_id = hex_id("trace_id", &trace_id, 32).map_err(parameter)?;
    let (org, id) = (caller.org_id, trace_id.clone());
    let spans = read(&store, move |txn| {
        let prefix = format!("{}/{id}/", org.as_str());
        let scan = Scan {
            prefix: &prefix,
            after: None,
            limit: MAX_TRACE_SPANS,
        };
        Ok(SPANS
            .scan(txn, scan)?
            .into_iter()
            .map(|(_, span)| span)
            .collect::<Vec<_>>())
    })
    .await?;
    if spans.is_empty() {
        return Err(ApiError::not_found("trace"));
    }
    let spans = tokio::task::spawn_blocking(move || build_tree(spans))
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(TraceView { trace_id, spans }))
}

/// Count and p50/p95/p99 duration per span name; filters `service`, `environment`, `name`,
/// `from`, `to`.
#[utoipa::path(get, path = "/api/v1/spans", tag = "ingest",
    params(("service" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("name" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "spans starting at or after"),
        ("to" = Option<String>, Query, description = "spans starting before"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<SpanStats>), problems::Invalid))]
async fn span_stats(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<SpanStats>>, ApiError> {
    let names = ["service", "environment", "name", "from", "to"];
    let filters = filters(query.as_deref(), &names)?;
    let (from, to) = (time_filter(&filters, "from")?, time_filter(&filters, "to")?);
    let wanted_span = SpanFilter::read(&filters);
    let org = caller.org_id;
    let durations = read(&store, move |txn| {
        let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for_each_span(txn, &org, |span| {
            let wanted = wanted_span.wants(&span)
                && from.is_none_or(|from| span.start_time >= from)
                && to.is_none_or(|to| span.start_time < to);
            if wanted {
                durations
                    .entry(span.name)
                    .or_default()
                    .push(span.duration_ms);
            }
        })?;
        Ok(durations)
    })
    .await?;
    // Names come in order from the map, so the page is a position in name order.
    let page = PageRequest::from_query(query.as_deref())?;
    let (items, next_cursor) = page.of_sorted(percentiles(durations), |stats| stats.name.clone());
    Ok(Json(Page::new(items, next_cursor)))
}

/// Every span of `org`, decoded one at a time (nothing but the durations is kept).
pub(super) fn for_each_span(
    txn: &ReadTransaction,
    org: &OrgId,
    mut each: impl FnMut(Span),
) -> Result<(), StoreError> {
    let table = txn.open_table(SPANS.definition())?;
    let start = tables::owner_prefix(org.as_str());
    let end = format!("{}0", org.as_str());
    for entry in table.range::<&str>((
        Bound::Included(start.as_str()),
        Bound::Excluded(end.as_str()),
    ))? {
        let (_, value) = entry?;
        each(decode::<Span>(value.value())?);
    }
    Ok(())
}
