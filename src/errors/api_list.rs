//! `GET /api/v1/error-groups`: the error group list with its filters (`status`, `new_since`,
//! and the event filters `q`, `release`, `environment`, `service`, `from`, `to`), its sorts
//! (`last_seen`, `first_seen`, `count`), its `total` and each group's 24-hour sparkline.
//!
//! Invariants: a caller sees only its own organisation's groups. The cursor is
//! `{sort value, 20 digits}/{group id}` whatever the sort, and pages are strictly below it in
//! (value, id) order, so pages never overlap. Work per request is bounded: the default list
//! walks the last-seen index from the cursor (`MAX_SCANNED` rows a page) and counts at most
//! `EXACT_TOTAL_UP_TO` rows for its total; other sorts and event filters gather at most
//! `EXACT_TOTAL_UP_TO` candidate groups (from the last-seen index, or from the groups of the
//! newest matching events in the search index), sort them and cut the page; when more could
//! exist the total is a lower bound, or scaled by the share of matching events read, and
//! `total_is_estimate` is true.

use axum::Json;
use axum::extract::{RawQuery, State};
use redb::ReadTransaction;
use serde::Serialize;
use utoipa::ToSchema;

use super::api::{ErrorGroupView, parameter};
use super::api_events::{count_keys, search_problem};
use super::db::{self, GROUP_LAST_SEEN};
use super::failure::ErrorsError;
use super::model::{ErrorGroup, GroupId, GroupStatus};
use super::search::query::{MatchedGroups, SearchRequest};
use super::search::{EXACT_TOTAL_UP_TO, Search};
use crate::accounts::model::OrgId;
use crate::auth::Viewer;
use crate::clock::{Clock, Timestamp};
use crate::http::ApiError;
use crate::http::page::PageRequest;
use crate::http::problems;
use crate::http::query::{filters, time_filter};
use crate::store::tables::time_key;
use crate::store::{Store, StoreError, WalkBounds, tables, walk_backwards};

/// Most index rows one page of a filtered list reads before it answers with what it found.
const MAX_SCANNED: usize = 20_000;
/// Hours of a list item's sparkline.
pub const SPARKLINE_HOURS: usize = 24;
const HOUR_MS: i64 = 3_600_000;
/// Parameters of the list besides `limit` and `cursor`.
const PARAMETERS: [&str; 9] = [
    "status",
    "q",
    "release",
    "environment",
    "service",
    "from",
    "to",
    "new_since",
    "sort",
];

/// A group of the list, with its events per hour over the last 24 hours.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupListItem {
    #[serde(flatten)]
    pub group: ErrorGroupView,
    /// Events per hour for the 24 hours ending with the current hour, oldest first.
    pub sparkline: Vec<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupList {
    pub items: Vec<ErrorGroupListItem>,
    pub next_cursor: Option<String>,
    /// Groups matching the filters: exact up to 10,000, then an estimate.
    pub total: u64,
    pub total_is_estimate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortOrder {
    LastSeen,
    FirstSeen,
    Count,
}

impl SortOrder {
    fn parse(text: &str) -> Option<SortOrder> {
        match text {
            "last_seen" => Some(SortOrder::LastSeen),
            "first_seen" => Some(SortOrder::FirstSeen),
            "count" => Some(SortOrder::Count),
            _ => None,
        }
    }

    /// The position of `group` in this order: pages run from the highest key down.
    fn key(self, group: &ErrorGroup) -> String {
        let value = match self {
            SortOrder::LastSeen => group.last_seen.0.max(0) as u64,
            SortOrder::FirstSeen => group.first_seen.0.max(0) as u64,
            SortOrder::Count => group.count,
        };
        format!("{value:020}/{}", group.id)
    }
}

/// The filters of one list request.
struct ListRequest {
    status: Option<GroupStatus>,
    new_since: Option<Timestamp>,
    sort: SortOrder,
    /// Event filters, answered through the search index.
    events: Option<SearchRequest>,
}

impl ListRequest {
    fn parse(query: Option<&str>, org: &OrgId) -> Result<ListRequest, ApiError> {
        let found = filters(query, &PARAMETERS)?;
        let status = match found.get("status") {
            Some(text) => Some(
                GroupStatus::parse(text)
                    .ok_or_else(|| parameter("status: expected unresolved, resolved or ignored"))?,
            ),
            None => None,
        };
        let sort = match found.get("sort") {
            Some(text) => SortOrder::parse(text)
                .ok_or_else(|| parameter("sort: expected last_seen, first_seen or count"))?,
            None => SortOrder::LastSeen,
        };
        let new_since = time_filter(&found, "new_since")?;
        let text = |name: &str| found.get(name).filter(|value| !value.is_empty()).cloned();
        let (from, to) = (time_filter(&found, "from")?, time_filter(&found, "to")?);
        let request = SearchRequest {
            q: text("q"),
            release: text("release"),
            environment: text("environment"),
            service: text("service"),
            from: from.map(|at| at.0),
            to: to.map(|at| at.0),
            ..SearchRequest::of_org(org.to_string())
        };
        let filtered = request.q.is_some()
            || request.release.is_some()
            || request.environment.is_some()
            || request.service.is_some()
            || from.is_some()
            || to.is_some();
        Ok(ListRequest {
            status,
            new_since,
            sort,
            events: filtered.then_some(request),
        })
    }

    fn keeps(&self, group: &ErrorGroup) -> bool {
        self.status.is_none_or(|status| group.status == status)
            && self.new_since.is_none_or(|since| group.first_seen >= since)
    }
}

/// Checks a cursor's shape: `{20 digits}/{group id}`.
fn checked_cursor(page: &PageRequest) -> Result<Option<String>, ApiError> {
    let Some(cursor) = &page.cursor else {
        return Ok(None);
    };
    let well_formed = cursor.split_once('/').is_some_and(|(value, id)| {
        value.len() == 20 && value.bytes().all(|b| b.is_ascii_digit()) && GroupId::parse(id).is_ok()
    });
    match well_formed {
        true => Ok(Some(cursor.clone())),
        false => Err(PageRequest::bad_cursor()),
    }
}

/// Error groups, latest activity first unless `sort` says otherwise, with filters.
#[utoipa::path(get, path = "/api/v1/error-groups", tag = "errors",
    params(("status" = Option<String>, Query, description = "unresolved, resolved or ignored"),
        ("q" = Option<String>, Query, description = "groups with at least one event matching this query (the language of /api/v1/errors)"),
        ("release" = Option<String>, Query, description = "groups with events of this release"),
        ("environment" = Option<String>, Query, description = "groups with events of this environment"),
        ("service" = Option<String>, Query, description = "groups with events of this service"),
        ("from" = Option<String>, Query, description = "groups with events at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "groups with events before"),
        ("new_since" = Option<String>, Query, description = "groups first seen at or after (RFC 3339)"),
        ("sort" = Option<String>, Query, description = "last_seen (default), first_seen or count; newest or most first"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = ErrorGroupList), problems::Invalid))]
pub(super) async fn list_groups(
    State(store): State<Store>,
    State(clock): State<Clock>,
    State(search): State<Search>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<ErrorGroupList>, ApiError> {
    let org = caller.org_id;
    let request = ListRequest::parse(query.as_deref(), &org)?;
    let cursor = checked_cursor(&page)?;
    let matched = match &request.events {
        Some(events) => {
            let (search, events) = (search.clone(), events.clone());
            let found = tokio::task::spawn_blocking(move || {
                search.groups_of_matches(&events, EXACT_TOTAL_UP_TO)
            })
            .await
            .map_err(ApiError::internal)?
            .map_err(search_problem)?;
            Some(found)
        }
        None => None,
    };
    let limit = page.limit;
    let now = clock.now();
    let (groups, next_cursor, total, total_is_estimate) = store
        .read(move |txn| {
            if matched.is_none() && request.sort == SortOrder::LastSeen {
                return newest_first(txn, &org, &request, cursor, limit);
            }
            let (candidates, total, estimate) = match matched {
                Some(matched) => {
                    let groups = groups_named(txn, &org, &matched.groups, &request)?;
                    let (total, estimate) = extrapolated(groups.len(), &matched);
                    (groups, total, estimate)
                }
                None => {
                    let start = walk_start(&org, &request);
                    let end = format!("{}0", org.as_str());
                    let walk = walk_last_seen(txn, &org, &start, &end, &request, usize::MAX)?;
                    let total = walk.groups.len();
                    (walk.groups, total, !walk.complete)
                }
            };
            let (page, next) = sorted_page(candidates, request.sort, cursor, limit);
            Ok::<_, ErrorsError>((page, next, total, estimate))
        })
        .await?;
    let items = groups
        .iter()
        .map(|group| ErrorGroupListItem {
            group: ErrorGroupView::from(group),
            sparkline: sparkline(group, now),
        })
        .collect();
    Ok(Json(ErrorGroupList {
        items,
        next_cursor,
        total: total as u64,
        total_is_estimate,
    }))
}

type Page = (Vec<ErrorGroup>, Option<String>, usize, bool);

/// The default list: a page walked down the last-seen index from the cursor, and the total
/// counted (index keys alone when nothing needs the group records).
fn newest_first(
    txn: &ReadTransaction,
    org: &OrgId,
    request: &ListRequest,
    cursor: Option<String>,
    limit: usize,
) -> Result<Page, ErrorsError> {
    let prefix = tables::owner_prefix(org.as_str());
    let start = walk_start(org, request);
    let whole_end = format!("{}0", org.as_str());
    let end = match &cursor {
        Some(cursor) => format!("{prefix}{cursor}"),
        None => whole_end.clone(),
    };
    let walk = walk_last_seen(txn, org, &start, &end, request, limit)?;
    let next = match walk.complete {
        true => None,
        false => walk.last_key.map(|key| key[prefix.len()..].to_string()),
    };
    let (total, estimate) = if request.status.is_none() && request.new_since.is_none() {
        match count_keys(txn, GROUP_LAST_SEEN.definition(), &start, &whole_end)? {
            Some(exact) => (exact, false),
            None => (EXACT_TOTAL_UP_TO + 1, true),
        }
    } else {
        let counted = walk_last_seen(txn, org, &start, &whole_end, request, usize::MAX)?;
        (counted.groups.len(), !counted.complete)
    };
    Ok((walk.groups, next, total, estimate))
}

/// Where a walk down the last-seen index may stop: a group first seen at or after
/// `new_since` was last seen at or after it too.
fn walk_start(org: &OrgId, request: &ListRequest) -> String {
    let prefix = tables::owner_prefix(org.as_str());
    match request.new_since {
        Some(since) => format!("{prefix}{}", time_key(since)),
        None => prefix,
    }
}

struct Walk {
    groups: Vec<ErrorGroup>,
    last_key: Option<String>,
    /// Every row of the range was read.
    complete: bool,
}

/// Groups of the last-seen rows `[start, end)`, newest first, that the request keeps: stops
/// with `limit` groups, or after `MAX_SCANNED` rows (`EXACT_TOTAL_UP_TO` when gathering
/// candidates, `limit == usize::MAX`).
fn walk_last_seen(
    txn: &ReadTransaction,
    org: &OrgId,
    start: &str,
    end: &str,
    request: &ListRequest,
    limit: usize,
) -> Result<Walk, ErrorsError> {
    let max_rows = match limit {
        usize::MAX => EXACT_TOTAL_UP_TO,
        _ => MAX_SCANNED,
    };
    let mut groups = Vec::new();
    let bounds = WalkBounds {
        kept: limit,
        rows: max_rows,
    };
    let table = GROUP_LAST_SEEN.definition();
    let ended = walk_backwards(txn, table, (start, end), bounds, |_, id| {
        let id = GroupId::parse(id)?;
        let kept = match db::get_group(txn, org, &id)? {
            Some(group) if request.keeps(&group) => {
                groups.push(group);
                true
            }
            _ => false,
        };
        Ok::<_, ErrorsError>(kept)
    })?;
    Ok(Walk {
        groups,
        complete: ended.complete(),
        last_key: ended.last_key,
    })
}

/// The groups of `ids` the request keeps; an id of a merged group names the group it was
/// merged into, listed once.
fn groups_named(
    txn: &ReadTransaction,
    org: &OrgId,
    ids: &std::collections::BTreeSet<String>,
    request: &ListRequest,
) -> Result<Vec<ErrorGroup>, StoreError> {
    let mut groups = Vec::new();
    let mut listed = std::collections::BTreeSet::new();
    for id in ids {
        let Ok(id) = GroupId::parse(id) else {
            continue;
        };
        if let Some(group) = db::get_group(txn, org, &id)?
            && request.keeps(&group)
            && listed.insert(group.id.clone())
        {
            groups.push(group);
        }
    }
    Ok(groups)
}

/// The total of `found` groups kept from the groups of the events read: exact when every
/// matching event was read, else scaled by the share of matching events read (an estimate).
fn extrapolated(found: usize, matched: &MatchedGroups) -> (usize, bool) {
    if matched.read_events >= matched.matched_events || matched.read_events == 0 {
        return (found, false);
    }
    let share = matched.matched_events as f64 / matched.read_events as f64;
    ((found as f64 * share).round() as usize, true)
}

/// The page below `cursor` of `candidates` in `sort` order, and the next cursor.
fn sorted_page(
    candidates: Vec<ErrorGroup>,
    sort: SortOrder,
    cursor: Option<String>,
    limit: usize,
) -> (Vec<ErrorGroup>, Option<String>) {
    let mut keyed: Vec<(String, ErrorGroup)> = candidates
        .into_iter()
        .map(|group| (sort.key(&group), group))
        .filter(|(key, _)| cursor.as_ref().is_none_or(|cursor| key < cursor))
        .collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0));
    let more = keyed.len() > limit;
    keyed.truncate(limit);
    let next = more
        .then(|| keyed.last().map(|(key, _)| key.clone()))
        .flatten();
    (keyed.into_iter().map(|(_, group)| group).collect(), next)
}

/// Events per hour of `group` for the `SPARKLINE_HOURS` hours ending with the hour of `now`,
/// oldest first, from the group's hourly histogram.
pub fn sparkline(group: &ErrorGroup, now: Timestamp) -> Vec<u64> {
    let current = now.0.div_euclid(HOUR_MS) * HOUR_MS;
    (0..SPARKLINE_HOURS as i64)
        .rev()
        .map(|back| {
            let hour = current - back * HOUR_MS;
            group.hours.get(&hour).copied().unwrap_or(0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_order_pages_by_value_then_id() {
        let item = serde_json::json!({"level": "error", "message": "m", "url": "u"});
        let event =
            crate::ingest::web_errors::parse_event(&item.clone().into(), Timestamp(5_000), None)
                .unwrap();
        let mut group = ErrorGroup::open(&event, "f".repeat(32), "message", None);
        group.fold(&event, false);
        let key = SortOrder::Count.key(&group);
        assert!(key.starts_with("00000000000000000001/grp_"), "{key}");
        group.count = 10;
        assert!(SortOrder::Count.key(&group) > key);
        let hour = Timestamp(5_000 + 23 * HOUR_MS);
        let line = sparkline(&group, hour);
        assert_eq!(line.len(), SPARKLINE_HOURS);
        assert_eq!((line[0], line[23]), (1, 0));
    }
}
