//! Read APIs over ingested data (viewer and above): `GET /api/v1/errors` (stored events,
//! newest first), `/api/v1/sessions` and `/api/v1/sessions/{id}` (with its errors and
//! traces), `/api/v1/traces/{trace_id}` and `/api/v1/spans` (duration percentiles per span
//! name).
//!
//! Invariants: a caller sees only its own organisation's data; lists follow the CONTRACT list
//! convention with cursors that are positions in an index, so pages never overlap; every scan
//! is bounded (`MAX_SCANNED` rows per page, `MAX_TRACE_SPANS` spans per trace) and runs in one
//! read transaction on a blocking thread.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use redb::ReadTransaction;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{EVENTS, ErrorEvent, EventId, SESSION_EVENTS};
use super::fields::time_key;
use super::session_spans::traces_of_session;
use super::sessions::{SESSION_STARTS, WEB_SESSIONS, WebSession, session_key};
use super::spans::{SPANS, Span, hex_id};
use super::traces::{build_tree, percentiles};
use super::views::*;
use crate::accounts::model::OrgId;
use crate::auth::{Auth, Viewer};
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::http::error::Problem;
use crate::http::page::PageRequest;
use crate::http::query::{filters, parameter_error as parameter, time_filter};
use crate::search::query::SearchRequest;
use crate::search::{EXACT_TOTAL_UP_TO, Search, SearchError};
use crate::store::codec::decode;
use crate::store::{Scan, StoreError, tables};

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
    Search: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_errors))
        .routes(routes!(list_sessions))
        .routes(routes!(get_session))
        .routes(routes!(get_trace))
        .routes(routes!(span_stats))
}

async fn read<T: Send + 'static>(
    auth: &Auth,
    work: impl FnOnce(&ReadTransaction) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    auth.store().read(work).await
}

/// The keys `[start, end)` of `table`, last first, at most `limit`.
pub(crate) fn keys_backwards<V: redb::Value + 'static>(
    txn: &ReadTransaction,
    table: redb::TableDefinition<'static, &'static str, V>,
    start: &str,
    end: &str,
    limit: usize,
    mut each: impl FnMut(&str, V::SelfType<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let table = txn.open_table(table)?;
    let range = table.range::<&str>((Bound::Included(start), Bound::Excluded(end)))?;
    for entry in range.rev().take(limit) {
        let (key, value) = entry?;
        each(key.value(), value.value())?;
    }
    Ok(())
}

/// Stored browser errors and warnings, newest first. With `q`, `from` or `to` the search
/// index answers (newest event time first); `group` lists one error group's events. Frames
/// are resolved on read through source maps uploaded after the event arrived.
#[utoipa::path(get, path = "/api/v1/errors", tag = "ingest",
    params(("q" = Option<String>, Query, description = "tantivy query language over message, name, stack, url, release, service, environment, level, tag.KEY"),
        ("from" = Option<String>, Query, description = "event time at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "event time before"),
        ("group" = Option<String>, Query, description = "grp_…: only this error group's events"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = ErrorEventList),
        (status = 400, body = Problem, content_type = "application/problem+json")))]
async fn list_errors(
    State(auth): State<Auth>,
    State(search): State<Search>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<ErrorEventList>, ApiError> {
    let filters = filters(query.as_deref(), &["group", "q", "from", "to"])?;
    if ["q", "from", "to"]
        .iter()
        .any(|name| filters.contains_key(*name))
    {
        return search_errors(auth, search, caller.org_id, page, filters).await;
    }
    let cursor = match &page.cursor {
        Some(text) => Some(EventId::parse(text).map_err(|_| PageRequest::bad_cursor())?),
        None => None,
    };
    let group = filters.get("group").cloned();
    let group_filter = group.clone();
    if group
        .as_deref()
        .is_some_and(|g| g.contains('/') || g.is_empty())
    {
        return Err(parameter("group: expected an error group id"));
    }
    let org = caller.org_id;
    let org_id = org.clone();
    let limit = page.limit;
    let (items, counted) = read(&auth, move |txn| {
        // Events in key order of either the event table or the group's event index; both end
        // in the event id, so the cursor is the last event id in both cases.
        let owner = match &group {
            Some(group) => format!("{}/{group}", org.as_str()),
            None => org.as_str().to_string(),
        };
        let start = tables::owner_prefix(&owner);
        // `0` follows `/`, so `{owner}0` is past every key of the owner.
        let end = match &cursor {
            Some(id) => tables::composite_key(&owner, id.as_str()),
            None => format!("{owner}0"),
        };
        let mut ids = Vec::new();
        let mut collect = |key: &str| {
            ids.push(key.rsplit('/').next().unwrap_or_default().to_string());
        };
        match group {
            Some(_) => {
                let index = crate::errors::db::GROUP_EVENTS.definition();
                keys_backwards(txn, index, &start, &end, limit, |key, _| {
                    collect(key);
                    Ok(())
                })?
            }
            None => keys_backwards(txn, EVENTS.definition(), &start, &end, limit, |key, _| {
                collect(key);
                Ok(())
            })?,
        }
        // The total counts the whole list, not what follows the cursor.
        let whole_end = format!("{owner}0");
        let counted = match group {
            Some(_) => {
                let index = crate::errors::db::GROUP_EVENTS.definition();
                count_keys(txn, index, &start, &whole_end)?
            }
            None => count_keys(txn, EVENTS.definition(), &start, &whole_end)?,
        };
        Ok((events_of(txn, &org, ids)?, counted))
    })
    .await?;
    let (total, total_is_estimate) = match counted {
        Some(exact) => (exact, false),
        None => {
            // Past the exact bound the index counts the events (it may lag by a commit).
            let request = SearchRequest {
                group: group_filter,
                ..SearchRequest::of_org(org_id.to_string())
            };
            let indexed = tokio::task::spawn_blocking(move || search.count(&request))
                .await
                .map_err(ApiError::internal)?
                .map_err(ApiError::internal)?;
            (indexed.max(EXACT_TOTAL_UP_TO + 1), true)
        }
    };
    let next_cursor = (items.len() == limit)
        .then(|| items.last().map(|event| event.id.to_string()))
        .flatten();
    let items = items.into_iter().map(ErrorEventView::from).collect();
    Ok(Json(ErrorEventList {
        items,
        next_cursor,
        total: total as u64,
        total_is_estimate,
    }))
}

/// The keys of `[start, end)` when there are at most `EXACT_TOTAL_UP_TO`, else `None`.
pub(crate) fn count_keys<V: redb::Value + 'static>(
    txn: &ReadTransaction,
    table: redb::TableDefinition<'static, &'static str, V>,
    start: &str,
    end: &str,
) -> Result<Option<usize>, StoreError> {
    let table = txn.open_table(table)?;
    let range = table.range::<&str>((Bound::Included(start), Bound::Excluded(end)))?;
    let mut counted = 0;
    for entry in range {
        entry?;
        counted += 1;
        if counted > EXACT_TOTAL_UP_TO {
            return Ok(None);
        }
    }
    Ok(Some(counted))
}

/// The stored events of `ids`, in order, frames resolved for reading; an id whose event is
/// gone (retention may delete it before the index forgets it) is skipped.
fn events_of(
    txn: &ReadTransaction,
    org: &OrgId,
    ids: Vec<String>,
) -> Result<Vec<ErrorEvent>, ApiError> {
    let mut events = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut event) = EVENTS.get(txn, &tables::composite_key(org.as_str(), &id))? else {
            continue;
        };
        crate::errors::resolve::resolve_for_reading(txn, org, &mut event)?;
        events.push(event);
    }
    Ok(events)
}

/// `GET /api/v1/errors` answered by the search index. The cursor is `o{offset}`.
async fn search_errors(
    auth: Auth,
    search: Search,
    org: OrgId,
    page: PageRequest,
    filters: HashMap<String, String>,
) -> Result<Json<ErrorEventList>, ApiError> {
    let offset = match &page.cursor {
        Some(cursor) => cursor
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(PageRequest::bad_cursor)?,
        None => 0,
    };
    let request = SearchRequest {
        q: filters.get("q").cloned(),
        from: time_filter(&filters, "from")?.map(|at| at.0),
        to: time_filter(&filters, "to")?.map(|at| at.0),
        group: filters.get("group").cloned(),
        limit: page.limit,
        offset,
        ..SearchRequest::of_org(org.to_string())
    };
    // The index counts every match without reading a document: the total is exact.
    let (ids, total) =
        tokio::task::spawn_blocking(move || Ok((search.query(&request)?, search.count(&request)?)))
            .await
            .map_err(ApiError::internal)?
            .map_err(search_problem)?;
    let found = ids.len();
    let items = read(&auth, move |txn| events_of(txn, &org, ids)).await?;
    let next_cursor = (found == page.limit).then(|| format!("o{}", offset + found));
    let items = items.into_iter().map(ErrorEventView::from).collect();
    Ok(Json(ErrorEventList {
        items,
        next_cursor,
        total: total as u64,
        total_is_estimate: false,
    }))
}

/// A search failure as a problem: an invalid `q` is the caller's, anything else is ours.
pub fn search_problem(error: SearchError) -> ApiError {
    match error {
        SearchError::InvalidQuery(detail) => parameter(format!("q: {detail}")),
        other => ApiError::internal(other),
    }
}

/// Browser sessions, latest start first; filters `service`, `environment`, `from`, `to`.
#[utoipa::path(get, path = "/api/v1/sessions", tag = "ingest",
    params(("service" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "started at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "started before"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = SessionList),
        (status = 400, body = Problem, content_type = "application/problem+json")))]
async fn list_sessions(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<SessionList>, ApiError> {
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
    let (sessions, last_key) = read(&auth, move |txn| {
        let wanted = |session: &WebSession| {
            service
                .as_ref()
                .is_none_or(|s| session.service.as_ref() == Some(s))
                && environment
                    .as_ref()
                    .is_none_or(|e| session.environment.as_ref() == Some(e))
        };
        Ok(sessions_backwards(txn, &org, &start, &end, limit, wanted)?)
    })
    .await?;
    let next_cursor = last_key.and_then(|key| key.strip_prefix(&prefix).map(str::to_string));
    let items = sessions.into_iter().map(SessionView::from).collect();
    Ok(Json(SessionList { items, next_cursor }))
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
    let table = txn.open_table(SESSION_STARTS.definition())?;
    let range = table.range::<&str>((Bound::Included(start), Bound::Excluded(end)))?;
    let (mut found, mut last, mut scanned) = (Vec::new(), None, 0);
    for entry in range.rev() {
        if found.len() >= limit || scanned >= MAX_SCANNED {
            return Ok((found, last));
        }
        let (key, _) = entry?;
        let key = key.value().to_string();
        scanned += 1;
        let id = key.rsplit('/').next().unwrap_or("");
        if let Some(session) = WEB_SESSIONS.get(txn, &session_key(org, id))?
            && wanted(&session)
        {
            found.push(session);
        }
        last = Some(key);
    }
    Ok((found, None))
}

/// One browser session by the client's id, with the errors that named it and the traces of
/// the spans sent with it (newest first, at most 200).
#[utoipa::path(get, path = "/api/v1/sessions/{id}", tag = "ingest",
    params(("id" = String, Path, description = "the client's session id")),
    responses((status = 200, body = SessionDetail),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
async fn get_session(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<SessionDetail>, ApiError> {
    let org = caller.org_id;
    let found = read(&auth, move |txn| {
        if id.contains('/') {
            return Ok(None);
        }
        let Some(session) = WEB_SESSIONS.get(txn, &session_key(&org, &id))? else {
            return Ok(None);
        };
        let prefix = format!("{}/{id}/", org.as_str());
        let rows = SESSION_EVENTS.scan(
            txn,
            Scan {
                prefix: &prefix,
                after: None,
                limit: MAX_SESSION_ERRORS,
            },
        )?;
        let mut errors = Vec::with_capacity(rows.len());
        for (key, _) in rows {
            let event_id = &key[prefix.len()..];
            if let Some(event) = EVENTS.get(txn, &tables::composite_key(org.as_str(), event_id))? {
                errors.push(event);
            }
        }
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
    responses((status = 200, body = TraceView),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
async fn get_trace(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    Path(trace_id): Path<String>,
) -> Result<Json<TraceView>, ApiError> {
    let trace_id = hex_id("trace_id", &trace_id, 32).map_err(parameter)?;
    let (org, id) = (caller.org_id, trace_id.clone());
    let spans = read(&auth, move |txn| {
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

/// Count and p50/p95/p99 duration per span name; filters `service`, `name`, `from`, `to`.
#[utoipa::path(get, path = "/api/v1/spans", tag = "ingest",
    params(("service" = Option<String>, Query), ("name" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "spans starting at or after"),
        ("to" = Option<String>, Query, description = "spans starting before"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = SpanStatsList),
        (status = 400, body = Problem, content_type = "application/problem+json")))]
async fn span_stats(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<SpanStatsList>, ApiError> {
    let filters = filters(query.as_deref(), &["service", "name", "from", "to"])?;
    let (from, to) = (time_filter(&filters, "from")?, time_filter(&filters, "to")?);
    let (service, name) = (
        filters.get("service").cloned(),
        filters.get("name").cloned(),
    );
    let org = caller.org_id;
    let durations = read(&auth, move |txn| {
        let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for_each_span(txn, &org, |span| {
            let wanted = service.as_ref().is_none_or(|s| &span.service == s)
                && name.as_ref().is_none_or(|n| &span.name == n)
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
    Ok(Json(SpanStatsList { items, next_cursor }))
}

/// Every span of `org`, decoded one at a time (nothing but the durations is kept).
fn for_each_span(
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
