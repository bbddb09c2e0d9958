//! HTTP face of deliveries: a channel's delivery log, one delivery, the dead-letter queue, and
//! redriving dead letters one by one or all of a channel at once.
//!
//! Invariants: a caller sees only deliveries of its own organisation (others are 404); only a
//! dead delivery can be retried (409 `delivery_not_dead` otherwise), and a redrive keeps its
//! delivery id, so receivers that drop duplicates by `X-Lookout-Delivery` stay correct.

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api::parse_channel_id;
use super::model::{ChannelId, Delivery, DeliveryId, DeliveryState};
use super::{Notify, NotifyError, db};
use crate::accounts::model::OrgId;
use crate::auth::{Admin, Auth, Viewer, audit};
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::http::error::Problem;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, newest_first, parameter_error};
use crate::store::{ReadTxn, Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Notify: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(channel_deliveries))
        .routes(routes!(dead_deliveries))
        .routes(routes!(get_delivery))
        .routes(routes!(retry_delivery))
        .routes(routes!(retry_channel_dead))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptResponse {
    pub at: String,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
    pub response_snippet: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryResponse {
    pub id: String,
    pub channel_id: String,
    pub event: String,
    /// `pending`, `delivered`, `dead` or `cancelled`.
    pub state: String,
    pub attempts: Vec<AttemptResponse>,
    /// When the next attempt is due, while pending.
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RedriveResponse {
    /// How many dead deliveries were queued again.
    pub retried: usize,
}

fn state_name(state: DeliveryState) -> &'static str {
    match state {
        DeliveryState::Pending => "pending",
        DeliveryState::Delivered => "delivered",
        DeliveryState::Dead => "dead",
        DeliveryState::Cancelled => "cancelled",
    }
}

fn delivery_view(delivery: &Delivery) -> DeliveryResponse {
    let attempts = delivery.attempts.iter().map(|attempt| AttemptResponse {
        at: attempt.at.to_rfc3339(),
        status_code: attempt.status_code,
        error: attempt.error.clone(),
        duration_ms: attempt.duration_ms,
        response_snippet: attempt.response_snippet.clone(),
    });
    DeliveryResponse {
        id: delivery.id.to_string(),
        channel_id: delivery.channel_id.to_string(),
        event: delivery.event.clone(),
        state: state_name(delivery.state).to_string(),
        attempts: attempts.collect(),
        next_attempt_at: delivery.due_at.map(Timestamp::to_rfc3339),
        created_at: delivery.created_at.to_rfc3339(),
        updated_at: delivery.updated_at.to_rfc3339(),
    }
}

/// Turns one more row than asked for into `next_cursor`.
fn paged(page: &PageRequest, deliveries: Vec<Delivery>) -> Page<DeliveryResponse> {
    page.answer(deliveries, |last| last.id.to_string(), delivery_view)
}

fn cursor_of(page: &PageRequest) -> Result<Option<String>, ApiError> {
    match &page.cursor {
        None => Ok(None),
        Some(text) => DeliveryId::parse(text)
            .map(|id| Some(id.to_string()))
            .map_err(|_| PageRequest::bad_cursor()),
    }
}

/// The delivery log of a channel, oldest first (`order=newest`: newest first): every attempt
/// with time, status, error, duration and the start of the answer.
#[utoipa::path(get, path = "/api/v1/channels/{id}/deliveries", tag = "deliveries",
    params(("id" = String, Path, description = "channel id"),
        ("limit" = Option<usize>, Query, description = "page size, 1-500"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
        ("order" = Option<String>, Query, description = "oldest (the default) or newest first")),
    responses((status = 200, body = Page<DeliveryResponse>),
        problems::Invalid,
        problems::NotFound))]
async fn channel_deliveries(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<DeliveryResponse>>, ApiError> {
    let id = parse_channel_id(&id)?;
    let after = cursor_of(&page)?;
    let newest = newest_first(&filters(query.as_deref(), &["order"])?)?;
    let (org, limit) = (caller.org_id, page.limit);
    let found = store
        .read(move |txn| {
            if db::channel_of_org(txn, &org, &id)?.is_none() {
                return Ok::<_, StoreError>(None);
            }
            let (cursor, want) = (after.as_deref(), limit + 1);
            let rows = match newest {
                false => db::deliveries_of_channel(txn, &id, cursor, want)?,
                true => db::deliveries_of_channel_newest_first(txn, &id, cursor, want)?,
            };
            Ok(Some(rows))
        })
        .await?;
    let rows = found.ok_or_else(|| ApiError::not_found("channel"))?;
    Ok(Json(paged(&page, rows)))
}

/// Up to `limit` dead letters of `org` after the delivery `after`, channel by channel, oldest
/// first: the walk resumes in the cursor's channel, after it, then goes on to later channels.
fn dead_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Delivery>, StoreError> {
    let resume = match after {
        Some(id) => DeliveryId::parse(id)
            .ok()
            .map(|id| db::get_delivery(txn, &id))
            .transpose()?
            .flatten()
            .map(|d| d.channel_id),
        None => None,
    };
    let mut rows = Vec::new();
    let mut started = resume.is_none();
    for channel in db::channels_of_org(txn, org)? {
        let after_here = match &resume {
            Some(channel_id) if *channel_id == channel.id => {
                started = true;
                after
            }
            _ => None,
        };
        if !started {
            continue;
        }
        let want = limit - rows.len();
        rows.extend(db::dead_of_channel(txn, &channel.id, after_here, want)?);
        if rows.len() >= limit {
            break;
        }
    }
    Ok(rows)
}

/// The dead-letter queue of the organisation, channel by channel, oldest first; `channel`
/// keeps one channel's.
#[utoipa::path(get, path = "/api/v1/deliveries/dead", tag = "deliveries",
    params(("channel" = Option<String>, Query, description = "only this channel's dead letters"),
        ("limit" = Option<usize>, Query, description = "page size, 1-500"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = Page<DeliveryResponse>),
        problems::Invalid,
        problems::NotFound))]
async fn dead_deliveries(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<DeliveryResponse>>, ApiError> {
    let after = cursor_of(&page)?;
    let channel = match filters(query.as_deref(), &["channel"])?.get("channel") {
        Some(text) => {
            Some(ChannelId::parse(text).map_err(|_| parameter_error("channel: not a channel id"))?)
        }
        None => None,
    };
    let (org, limit) = (caller.org_id, page.limit);
    // One row more than asked tells whether another page follows.
    let rows = store
        .read(move |txn| match &channel {
            None => dead_of_org(txn, &org, after.as_deref(), limit + 1).map(Some),
            Some(id) => match db::channel_of_org(txn, &org, id)? {
                None => Ok(None),
                Some(_) => db::dead_of_channel(txn, id, after.as_deref(), limit + 1).map(Some),
            },
        })
        .await?
        .ok_or_else(|| ApiError::not_found("channel"))?;
    Ok(Json(paged(&page, rows)))
}

async fn load_delivery(notify: &Notify, caller_org: OrgId, id: &str) -> Result<Delivery, ApiError> {
    let id = DeliveryId::parse(id).map_err(|_| ApiError::not_found("delivery"))?;
    let found = notify
        .store()
        .read(move |txn| db::get_delivery(txn, &id))
        .await?;
    found
        .filter(|delivery| delivery.org_id == caller_org)
        .ok_or_else(|| ApiError::not_found("delivery"))
}

/// One delivery with all its attempts.
#[utoipa::path(get, path = "/api/v1/deliveries/{id}", tag = "deliveries",
    params(("id" = String, Path, description = "delivery id")),
    responses((status = 200, body = DeliveryResponse), problems::NotFound))]
async fn get_delivery(
    State(notify): State<Notify>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<DeliveryResponse>, ApiError> {
    let delivery = load_delivery(&notify, caller.org_id, &id).await?;
    Ok(Json(delivery_view(&delivery)))
}

/// Queues a dead delivery again, due at once, with a fresh round of retries.
#[utoipa::path(post, path = "/api/v1/deliveries/{id}/retry", tag = "deliveries",
    params(("id" = String, Path, description = "delivery id")),
    responses((status = 202, body = DeliveryResponse),
        (status = 409, description = "not in the dead-letter queue", body = Problem, content_type = "application/problem+json")))]
async fn retry_delivery(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<DeliveryResponse>), ApiError> {
    let delivery = load_delivery(&notify, caller.org_id.clone(), &id).await?;
    let (actor, now, id) = (caller.actor(), notify.clock().now(), delivery.id);
    let revived = notify
        .store()
        .write(move |txn| {
            let Some(current) = db::get_delivery(txn, &id)? else {
                return Ok::<_, StoreError>(Err(NotifyError::DeliveryNotFound));
            };
            if current.state != DeliveryState::Dead {
                return Ok(Err(NotifyError::DeliveryNotDead));
            }
            super::redrive(txn, &current, now)?;
            let target = Some(current.id.as_str());
            let detail = serde_json::json!({"channel_id": current.channel_id});
            audit::record(
                txn,
                Some(&current.org_id),
                &actor,
                "delivery.retried",
                target,
                detail,
                now,
            )?;
            Ok(Ok(db::get_delivery(txn, &id)?))
        })
        .await??;
    notify.wake();
    let revived = revived.ok_or_else(|| ApiError::not_found("delivery"))?;
    Ok((StatusCode::ACCEPTED, Json(delivery_view(&revived))))
}

/// Queues every dead delivery of a channel again.
#[utoipa::path(post, path = "/api/v1/channels/{id}/deliveries/dead/retry", tag = "deliveries",
    params(("id" = String, Path, description = "channel id")),
    responses((status = 202, body = RedriveResponse), problems::NotFound))]
async fn retry_channel_dead(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<RedriveResponse>), ApiError> {
    let id = parse_channel_id(&id)?;
    let (org, actor, now) = (caller.org_id.clone(), caller.actor(), notify.clock().now());
    let retried = notify
        .store()
        .write(move |txn| {
            if db::channel_of_org(txn, &org, &id)?.is_none() {
                return Ok::<_, StoreError>(None);
            }
            let dead = db::dead_of_channel(txn, &id, None, usize::MAX)?;
            for delivery in &dead {
                super::redrive(txn, delivery, now)?;
            }
            let detail = serde_json::json!({"retried": dead.len()});
            audit::record(
                txn,
                Some(&org),
                &actor,
                "channel.dead_letters_retried",
                Some(id.as_str()),
                detail,
                now,
            )?;
            Ok(Some(dead.len()))
        })
        .await?;
    notify.wake();
    let retried = retried.ok_or_else(|| ApiError::not_found("channel"))?;
    Ok((StatusCode::ACCEPTED, Json(RedriveResponse { retried })))
}
