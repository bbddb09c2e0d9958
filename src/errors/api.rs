//! The error group API (viewer reads, member changes status): `GET /api/v1/error-groups`
//! (latest activity first, `status` filter), `GET /api/v1/error-groups/{id}` (with per-release
//! counts, the per-hour histogram and the latest event, its frames resolved on read), and
//! `PATCH /api/v1/error-groups/{id}` `{"status"}`.
//!
//! Invariants: a caller sees only its own organisation's groups; list scans are bounded
//! (`MAX_SCANNED` index rows per page); reads run in one read transaction on a blocking thread.

use std::ops::Bound;

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db::{self, GROUP_LAST_SEEN};
use super::model::{ErrorGroup, GroupId, GroupStatus};
use super::resolve;
use crate::auth::{Auth, Member, Viewer};
use crate::http::error::Problem;
use crate::http::extract::ApiJson;
use crate::http::page::PageRequest;
use crate::http::{ApiError, ErrorCode};
use crate::ingest::errors::{EVENTS, ErrorEvent};
use crate::ingest::views::ErrorEventView;
use crate::store::{StoreError, tables};

/// Most index rows one page of a filtered list reads before it answers with what it found.
const MAX_SCANNED: usize = 20_000;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_groups))
        .routes(routes!(get_group, patch_group))
}

/// An error group.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupView {
    pub id: String,
    /// `name: message` of the first event.
    pub title: String,
    pub name: Option<String>,
    pub message: String,
    pub level: String,
    pub culprit: Option<String>,
    pub service: Option<String>,
    pub status: GroupStatus,
    pub fingerprint: String,
    /// `client`, `stack` or `message`: what the fingerprint was made of.
    pub fingerprint_basis: String,
    pub first_seen: String,
    pub last_seen: String,
    pub count: u64,
    pub users: u64,
    pub regressions: u64,
    pub status_changed_at: Option<String>,
}

impl From<&ErrorGroup> for ErrorGroupView {
    fn from(group: &ErrorGroup) -> Self {
        let title = match &group.name {
            Some(name) if !group.message.starts_with(name.as_str()) => {
                format!("{name}: {}", group.message)
            }
            _ => group.message.clone(),
        };
        ErrorGroupView {
            id: group.id.to_string(),
            title,
            name: group.name.clone(),
            message: group.message.clone(),
            level: group.level.clone(),
            culprit: group.culprit.clone(),
            service: group.service.clone(),
            status: group.status,
            fingerprint: group.fingerprint.clone(),
            fingerprint_basis: group.basis.clone(),
            first_seen: group.first_seen.to_rfc3339(),
            last_seen: group.last_seen.to_rfc3339(),
            count: group.count,
            users: group.users,
            regressions: group.regressions,
            status_changed_at: group.status_changed_at.map(|at| at.to_rfc3339()),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupList {
    pub items: Vec<ErrorGroupView>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReleaseCountView {
    pub release: String,
    pub count: u64,
    pub last_seen: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HourCount {
    /// Start of the hour, RFC 3339.
    pub hour: String,
    pub count: u64,
}

/// A group with its releases, hourly histogram (last 30 days) and latest event.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupDetail {
    #[serde(flatten)]
    pub group: ErrorGroupView,
    pub releases: Vec<ReleaseCountView>,
    pub histogram: Vec<HourCount>,
    pub latest_event: Option<ErrorEventView>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchGroupRequest {
    /// `unresolved`, `resolved` or `ignored`.
    pub status: String,
}

fn parameter(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParameter, detail)
}

/// Error groups, latest activity first; filter `status`.
#[utoipa::path(get, path = "/api/v1/error-groups", tag = "errors",
    params(("status" = Option<String>, Query, description = "unresolved, resolved or ignored"),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = ErrorGroupList),
        (status = 400, body = Problem, content_type = "application/problem+json")))]
async fn list_groups(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<ErrorGroupList>, ApiError> {
    let mut status = None;
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if name == "status" {
            let parsed = GroupStatus::parse(&value)
                .ok_or_else(|| parameter("status: expected unresolved, resolved or ignored"))?;
            if status.replace(parsed).is_some() {
                return Err(parameter("status: given more than once"));
            }
        }
    }
    let org = caller.org_id;
    let prefix = tables::owner_prefix(org.as_str());
    let owner = prefix.clone();
    let end = match &page.cursor {
        Some(cursor) if cursor.contains('/') => format!("{prefix}{cursor}"),
        Some(_) => return Err(PageRequest::bad_cursor()),
        None => format!("{}0", org.as_str()),
    };
    let limit = page.limit;
    let (groups, last_key) = auth
        .store()
        .read(move |txn| {
            let table = txn
                .open_table(GROUP_LAST_SEEN.definition())
                .map_err(StoreError::from)?;
            let range = table
                .range::<&str>((
                    Bound::Included(prefix.as_str()),
                    Bound::Excluded(end.as_str()),
                ))
                .map_err(StoreError::from)?;
            let (mut found, mut last, mut scanned) = (Vec::new(), None, 0);
            for entry in range.rev() {
                if found.len() >= limit || scanned >= MAX_SCANNED {
                    return Ok::<_, ApiError>((found, last));
                }
                scanned += 1;
                let (key, id) = entry.map_err(StoreError::from)?;
                let id = GroupId::parse(id.value()).map_err(ApiError::internal)?;
                if let Some(group) = db::get_group(txn, &org, &id)?
                    && status.is_none_or(|status| group.status == status)
                {
                    found.push(group);
                }
                last = Some(key.value().to_string());
            }
            Ok((found, None))
        })
        .await?;
    let next_cursor = last_key.map(|key| key.strip_prefix(&owner).unwrap_or(&key).to_string());
    let items = groups.iter().map(ErrorGroupView::from).collect();
    Ok(Json(ErrorGroupList { items, next_cursor }))
}

fn group_id(text: &str) -> Result<GroupId, ApiError> {
    GroupId::parse(text).map_err(|_| ApiError::not_found("error group"))
}

/// One error group with its releases, histogram and latest event.
#[utoipa::path(get, path = "/api/v1/error-groups/{id}", tag = "errors",
    params(("id" = String, Path, description = "grp_…")),
    responses((status = 200, body = ErrorGroupDetail),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
async fn get_group(
    State(auth): State<Auth>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<ErrorGroupDetail>, ApiError> {
    let id = group_id(&id)?;
    let org = caller.org_id;
    let found = auth
        .store()
        .read(move |txn| {
            let Some(group) = db::get_group(txn, &org, &id)? else {
                return Ok::<_, ApiError>(None);
            };
            let mut latest: Option<ErrorEvent> = match &group.latest_event {
                Some(event) => EVENTS.get(txn, &tables::composite_key(org.as_str(), event))?,
                None => None,
            };
            if let Some(event) = latest.as_mut() {
                resolve::resolve_for_reading(txn, &org, event)?;
            }
            Ok(Some((group, latest)))
        })
        .await?;
    let (group, latest) = found.ok_or_else(|| ApiError::not_found("error group"))?;
    let mut releases: Vec<ReleaseCountView> = group
        .releases
        .iter()
        .map(|(release, figures)| ReleaseCountView {
            release: release.clone(),
            count: figures.count,
            last_seen: figures.last_seen.to_rfc3339(),
        })
        .collect();
    releases.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
    let histogram = group
        .hours
        .iter()
        .map(|(hour, count)| HourCount {
            hour: crate::clock::Timestamp(*hour).to_rfc3339(),
            count: *count,
        })
        .collect();
    Ok(Json(ErrorGroupDetail {
        group: ErrorGroupView::from(&group),
        releases,
        histogram,
        latest_event: latest.map(ErrorEventView::from),
    }))
}

/// Sets a group's status (member or above). Resolving a group that gets a new event later
/// reopens it (a regression).
#[utoipa::path(patch, path = "/api/v1/error-groups/{id}", tag = "errors",
    params(("id" = String, Path, description = "grp_…")),
    request_body = PatchGroupRequest,
    responses((status = 200, body = ErrorGroupView),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
async fn patch_group(
    State(auth): State<Auth>,
    Member(caller): Member,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<PatchGroupRequest>,
) -> Result<Json<ErrorGroupView>, ApiError> {
    let id = group_id(&id)?;
    let status = GroupStatus::parse(&request.status).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPayload,
            "status: expected unresolved, resolved or ignored",
        )
    })?;
    let org = caller.org_id;
    let now = auth.clock().now();
    let changed = auth
        .store()
        .write(move |txn| {
            let Some(mut group) = db::get_group(txn, &org, &id)? else {
                return Ok(None);
            };
            if group.set_status(status, now) {
                db::put_group(txn, &org, &group)?;
            }
            Ok::<_, StoreError>(Some(group))
        })
        .await?;
    let group = changed.ok_or_else(|| ApiError::not_found("error group"))?;
    Ok(Json(ErrorGroupView::from(&group)))
}
