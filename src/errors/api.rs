//! The error group API (viewer reads, member changes status): `GET /api/v1/error-groups/{id}`
//! (with per-release counts, the per-hour histogram and the latest event, its frames resolved
//! on read), `PATCH /api/v1/error-groups/{id}` `{"status"}` and `PATCH /api/v1/error-groups`
//! `{"ids","status"}` (many groups in one write transaction). The list is `api_list.rs`, the
//! tag distribution `api_tags.rs`.
//!
//! Invariants: a caller sees and changes only its own organisation's groups; a bulk change
//! names at most `MAX_BULK_IDS` groups and changes all of them or, when one is unknown to the
//! caller's organisation, none; reads run in one read transaction on a blocking thread.

use axum::Json;
use axum::extract::{FromRef, Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::event::ErrorEvent;
use super::event_db::get_event;
use super::failure::ErrorsError;
use super::model::{ErrorGroup, GroupId, GroupStatus};
use super::search::Search;
use super::views::ErrorEventView;
use super::{api_events, api_list, api_tags, resolve};
use crate::accounts::model::OrgId;
use crate::auth::{Auth, Member, Viewer};
use crate::clock::{Clock, Timestamp};
use crate::http::extract::ApiJson;
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};
use crate::store::{Store, StoreError};

/// Most groups one bulk status change names.
pub const MAX_BULK_IDS: usize = 100;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Clock: FromRef<S>,
    Search: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(api_list::list_groups, patch_groups))
        .routes(routes!(get_group, patch_group))
        .routes(routes!(api_tags::group_tags))
        .routes(routes!(api_events::list_errors))
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

impl From<ErrorsError> for ApiError {
    fn from(error: ErrorsError) -> ApiError {
        match error {
            ErrorsError::Store(store) => ApiError::from(store),
            ErrorsError::Stopping(_) => ApiError::new(
                ErrorCode::StoreUnavailable,
                "the server is stopping; send it again",
            ),
            ErrorsError::StoredGroupId(_) | ErrorsError::EventsLost(_) => ApiError::internal(error),
        }
    }
}

pub(super) fn parameter(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParameter, detail)
}

/// The id of the group that answers for `id`: a merged group's survivor (`regroup.rs`), else
/// `id` as given (an unknown or malformed id is the caller's filter to get wrong).
pub(super) async fn answering_group(
    store: &Store,
    org: &OrgId,
    id: String,
) -> Result<String, ApiError> {
    let Ok(parsed) = GroupId::parse(&id) else {
        return Ok(id);
    };
    let org = org.clone();
    let found = store
        .read(move |txn| db::get_group(txn, &org, &parsed))
        .await?;
    Ok(found.map_or(id, |group| group.id.to_string()))
}

pub(super) fn group_id(text: &str) -> Result<GroupId, ApiError> {
    GroupId::parse(text).map_err(|_| ApiError::not_found("error group"))
}

/// One error group with its releases, histogram and latest event. The id of a group merged
/// into another (its events regrouped when their source map arrived) answers with that group,
/// whose `id` is then not the one asked for.
#[utoipa::path(get, path = "/api/v1/error-groups/{id}", tag = "errors",
    params(("id" = String, Path, description = "grp_…")),
    responses((status = 200, body = ErrorGroupDetail), problems::NotFound))]
async fn get_group(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<ErrorGroupDetail>, ApiError> {
    let id = group_id(&id)?;
    let org = caller.org_id;
    let found = store
        .read(move |txn| {
            let Some(group) = db::get_group(txn, &org, &id)? else {
                return Ok::<_, StoreError>(None);
            };
            let mut latest: Option<ErrorEvent> = match &group.latest_event {
                Some(event) => get_event(txn, org.as_str(), event)?,
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
    responses((status = 200, body = ErrorGroupView), problems::Invalid, problems::Forbidden,
        problems::NotFound))]
async fn patch_group(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Member(caller): Member,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<PatchGroupRequest>,
) -> Result<Json<ErrorGroupView>, ApiError> {
    let id = group_id(&id)?;
    let status = status_of(&request.status)?;
    let (_, groups) = change_status((&store, clock.now()), caller.org_id, vec![id], status).await?;
    let group = groups
        .first()
        .ok_or_else(|| ApiError::not_found("error group"))?;
    Ok(Json(ErrorGroupView::from(group)))
}

/// Sets the status of `ids` (distinct) in one write transaction: all of them, or none and
/// 404 when one is not a group of `org`. Returns how many changed and the groups as they are.
async fn change_status(
    (store, now): (&Store, Timestamp),
    org: OrgId,
    ids: Vec<GroupId>,
    status: GroupStatus,
) -> Result<(u64, Vec<ErrorGroup>), ApiError> {
    let changed = store
        .write(move |txn| {
            // Every group is read before any is written: an unknown one leaves all unchanged.
            let mut groups: Vec<ErrorGroup> = Vec::with_capacity(ids.len());
            for id in &ids {
                match db::get_group(txn, &org, id)? {
                    // A merged group's id and its survivor's name one group, changed once.
                    Some(group) if groups.iter().any(|seen| seen.id == group.id) => {}
                    Some(group) => groups.push(group),
                    None => return Ok(None),
                }
            }
            let mut updated = 0;
            for group in &mut groups {
                if group.set_status(status, now) {
                    db::put_group(txn, &org, group)?;
                    updated += 1;
                }
            }
            Ok::<_, StoreError>(Some((updated, groups)))
        })
        .await?;
    changed.ok_or_else(|| ApiError::not_found("error group"))
}

fn status_of(text: &str) -> Result<GroupStatus, ApiError> {
    GroupStatus::parse(text).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPayload,
            "status: expected unresolved, resolved or ignored",
        )
    })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkPatchRequest {
    /// 1 to 100 group ids (`grp_…`); repeated ids count once.
    pub ids: Vec<String>,
    /// `unresolved`, `resolved` or `ignored`.
    pub status: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BulkPatchResponse {
    /// Groups whose status changed (a group that already had the status is not counted).
    pub updated: u64,
    /// Every named group as it is now, in the order of `ids`.
    pub items: Vec<ErrorGroupView>,
}

/// Sets the status of many groups at once (member or above): all of them, or none when one
/// id is not a group of the caller's organisation (404).
#[utoipa::path(patch, path = "/api/v1/error-groups", tag = "errors",
    request_body = BulkPatchRequest,
    responses((status = 200, body = BulkPatchResponse), problems::Invalid, problems::Forbidden,
        problems::NotFound))]
async fn patch_groups(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Member(caller): Member,
    ApiJson(request): ApiJson<BulkPatchRequest>,
) -> Result<Json<BulkPatchResponse>, ApiError> {
    if request.ids.is_empty() || request.ids.len() > MAX_BULK_IDS {
        return Err(parameter(format!(
            "ids: expected 1 to {MAX_BULK_IDS} error group ids, got {}",
            request.ids.len()
        )));
    }
    let status = status_of(&request.status)?;
    let mut ids: Vec<GroupId> = Vec::with_capacity(request.ids.len());
    for text in &request.ids {
        let id = group_id(text)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let (updated, groups) =
        change_status((&store, clock.now()), caller.org_id, ids, status).await?;
    Ok(Json(BulkPatchResponse {
        updated,
        items: groups.iter().map(ErrorGroupView::from).collect(),
    }))
}
