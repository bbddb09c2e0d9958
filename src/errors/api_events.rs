//! `GET /api/v1/errors`: stored error events, newest first, read from redb (the event table,
//! or one group's event index) or, with `q`, `from` or `to`, found through the search index;
//! each answer carries the list's `total`.
//!
//! Invariants: a caller sees only its own organisation's events; cursors are positions (an
//! event id in redb, an offset in the search order), so redb pages never overlap; a total is
//! counted one row at a time up to `EXACT_TOTAL_UP_TO` rows at most, and past that the search
//! index's count stands in as an estimate; reads run in one read transaction on a blocking
//! thread.

use std::collections::HashMap;
use std::ops::Bound;

use axum::Json;
use axum::extract::{RawQuery, State};
use redb::ReadTransaction;

use super::event::{ErrorEvent, EventId};
use super::event_db::{EVENTS, get_event};
use super::group_events;
use super::resolve;
use super::search::query::SearchRequest;
use super::search::{EXACT_TOTAL_UP_TO, Search, SearchError};
use super::views::{ErrorEventList, ErrorEventView};
use crate::accounts::model::OrgId;
use crate::auth::Viewer;
use crate::http::ApiError;
use crate::http::page::PageRequest;
use crate::http::problems;
use crate::http::query::{filters, parameter_error as parameter, time_filter};
use crate::store::{Store, StoreError, WalkBounds, tables, walk_backwards};

/// Stored browser errors and warnings, newest first. With `q`, `from` or `to` the search
/// index answers (newest event time first); `group` lists one error group's events. Frames
/// are resolved on read through source maps uploaded after the event arrived.
#[utoipa::path(get, path = "/api/v1/errors", tag = "ingest",
    params(("q" = Option<String>, Query, description = "tantivy query language over message, name, stack, url, release, service, environment, level, tag.KEY"),
        ("from" = Option<String>, Query, description = "event time at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "event time before"),
        ("group" = Option<String>, Query, description = "grp_…: only this error group's events"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = ErrorEventList), problems::Invalid))]
pub async fn list_errors(
    State(store): State<Store>,
    State(search): State<Search>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<ErrorEventList>, ApiError> {
    let mut filters = filters(query.as_deref(), &["group", "q", "from", "to"])?;
    if let Some(group) = filters.get("group").cloned() {
        let answering = super::api::answering_group(&store, &caller.org_id, group).await?;
        filters.insert("group".to_string(), answering);
    }
    if ["q", "from", "to"]
        .iter()
        .any(|name| filters.contains_key(*name))
    {
        return search_errors(store, search, caller.org_id, page, filters).await;
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
    let (items, counted) = store
        .read(move |txn| {
            // Newest first, from the cursor (the last event id of the page before) down.
            let before = cursor.as_ref().map(|id| id.as_str());
            let (ids, counted) = match &group {
                Some(group) => {
                    let ids = group_events::newest(txn, org.as_str(), group, before, limit)?;
                    let counted = group_events::count(txn, org.as_str(), group, EXACT_TOTAL_UP_TO)?;
                    (ids, counted)
                }
                None => {
                    let start = tables::owner_prefix(org.as_str());
                    // `0` follows `/`, so `{org}0` is past every key of the organisation.
                    let whole_end = format!("{}0", org.as_str());
                    let end = match before {
                        Some(id) => tables::composite_key(org.as_str(), id),
                        None => whole_end.clone(),
                    };
                    let mut ids = Vec::new();
                    let (table, bounds) = (EVENTS.definition(), WalkBounds::rows(limit));
                    walk_backwards(txn, table, (&start, &end), bounds, |key, _| {
                        ids.push(key[start.len()..].to_string());
                        Ok::<_, StoreError>(true)
                    })?;
                    // The total counts the whole list, not what follows the cursor.
                    (
                        ids,
                        count_keys(txn, EVENTS.definition(), &start, &whole_end)?,
                    )
                }
            };
            Ok::<_, StoreError>((events_of(txn, &org, ids)?, counted))
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
) -> Result<Vec<ErrorEvent>, StoreError> {
    let mut events = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut event) = get_event(txn, org.as_str(), &id)? else {
            continue;
        };
        resolve::resolve_for_reading(txn, org, &mut event)?;
        events.push(event);
    }
    Ok(events)
}

/// How deep a search pages: its cursors reach the newest this many matches, so that no request
/// keeps more than this many matches in memory to find its page.
pub const MAX_SEARCH_DEPTH: usize = 100_000;

/// `GET /api/v1/errors` answered by the search index. The cursor is `o{offset}`, below
/// `MAX_SEARCH_DEPTH`.
async fn search_errors(
    store: Store,
    search: Search,
    org: OrgId,
    page: PageRequest,
    filters: HashMap<String, String>,
) -> Result<Json<ErrorEventList>, ApiError> {
    let offset = match &page.cursor {
        Some(cursor) => cursor
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|offset| *offset < MAX_SEARCH_DEPTH)
            .ok_or_else(PageRequest::bad_cursor)?,
        None => 0,
    };
    let request = SearchRequest {
        q: filters.get("q").cloned(),
        from: time_filter(&filters, "from")?.map(|at| at.0),
        to: time_filter(&filters, "to")?.map(|at| at.0),
        group: filters.get("group").cloned(),
        limit: page.limit.min(MAX_SEARCH_DEPTH - offset),
        offset,
        ..SearchRequest::of_org(org.to_string())
    };
    // The index finds the page and counts the matches in one newest-first visit: exact up to
    // EXACT_TOTAL_UP_TO, an estimate past it.
    let found = tokio::task::spawn_blocking(move || search.query(&request))
        .await
        .map_err(ApiError::internal)?
        .map_err(search_problem)?;
    let (ids, total, total_is_estimate) = (found.ids, found.total, found.total_is_estimate);
    let found = ids.len();
    let items = store.read(move |txn| events_of(txn, &org, ids)).await?;
    let next = offset + found;
    let next_cursor = (found == page.limit && next < MAX_SEARCH_DEPTH).then(|| format!("o{next}"));
    let items = items.into_iter().map(ErrorEventView::from).collect();
    Ok(Json(ErrorEventList {
        items,
        next_cursor,
        total: total as u64,
        total_is_estimate,
    }))
}

/// A search failure as a problem: an invalid `q` is the caller's, anything else is ours.
pub fn search_problem(error: SearchError) -> ApiError {
    match error {
        SearchError::InvalidQuery(detail) => parameter(format!("q: {detail}")),
        error @ (SearchError::Index(_) | SearchError::Directory { .. } | SearchError::Store(_)) => {
            ApiError::internal(error)
        }
    }
}
