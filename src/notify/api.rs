//! HTTP face of notification channels: create, list, read, change, delete, and the test button.
//!
//! Invariants: the signing secret is write-only (reads show `has_signing_secret`); a URL is
//! checked by `http::destination::check_url` before it is stored, so a refused destination never reaches
//! the queue; admins manage channels, every member reads them; each change is audited in the
//! transaction that makes it.

use axum::Json;
use axum::extract::{FromRef, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{Channel, ChannelId, valid_filter};
use super::payload::{Event, EventExtra, render};
use super::{Notify, NotifyError, db};
use crate::auth::{Admin, Auth, Viewer, audit};
use crate::http::destination as guard;
use crate::http::error::Problem;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
    Notify: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_channel, list_channels))
        .routes(routes!(get_channel, update_channel, delete_channel))
        .routes(routes!(test_channel))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateChannelRequest {
    /// Defaults to the URL's host.
    #[serde(default)]
    pub name: Option<String>,
    /// Only `webhook` for now.
    #[serde(default)]
    pub kind: Option<String>,
    pub url: String,
    #[serde(default)]
    pub signing_secret: Option<String>,
    /// `["*"]` when omitted; entries are `*`, an event name or `prefix.*`.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateChannelRequest {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// A string sets the secret, `null` removes it, absent keeps it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub signing_secret: Option<Value>,
    #[serde(default)]
    pub events: Option<Vec<String>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A field that is present, `null` included: serde reads a bare `null` into `None` for an
/// `Option`, which would make "remove the secret" look like "keep it".
fn present<'de, D: serde::Deserializer<'de>>(input: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(input).map(Some)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChannelResponse {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub url: String,
    pub has_signing_secret: bool,
    pub events: Vec<String>,
    pub enabled: bool,
    /// Why the service disabled the channel (a 410 Gone from the receiver), if it did.
    pub disabled_reason: Option<String>,
    /// Deliveries in the dead-letter queue, waiting for a redrive.
    pub dead_letters: usize,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TestResponse {
    pub delivery_id: String,
}

pub(crate) fn channel_view(channel: &Channel, dead_letters: usize) -> ChannelResponse {
    ChannelResponse {
        id: channel.id.to_string(),
        name: channel.name.clone(),
        kind: channel.kind.clone(),
        url: channel.url.clone(),
        has_signing_secret: channel.signing_secret.is_some(),
        events: channel.events.clone(),
        enabled: channel.enabled,
        disabled_reason: channel.disabled_reason.clone(),
        dead_letters,
        created_at: channel.created_at.to_rfc3339(),
        updated_at: channel.updated_at.to_rfc3339(),
    }
}

impl From<NotifyError> for ApiError {
    fn from(error: NotifyError) -> Self {
        let detail = error.to_string();
        match error {
            NotifyError::ChannelNotFound | NotifyError::DeliveryNotFound => {
                ApiError::new(ErrorCode::NotFound, detail)
            }
            NotifyError::ChannelDisabled => ApiError::new(ErrorCode::ChannelDisabled, detail),
            NotifyError::DeliveryNotDead => ApiError::new(ErrorCode::DeliveryNotDead, detail),
        }
    }
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload, detail)
}

fn checked_url(notify: &Notify, text: &str) -> Result<String, ApiError> {
    guard::check_url(text, notify.settings().allow_private)
        .map(String::from)
        .map_err(|err| match err {
            guard::DestinationError::Address(..) | guard::DestinationError::InternalName(_) => {
                ApiError::new(ErrorCode::DestinationRefused, err.to_string())
            }
            guard::DestinationError::Malformed
            | guard::DestinationError::Scheme(_)
            | guard::DestinationError::Credentials => invalid(err.to_string()),
        })
}

fn checked_events(events: Vec<String>) -> Result<Vec<String>, ApiError> {
    if events.is_empty() || events.len() > 50 {
        return Err(invalid("events: 1 to 50 entries"));
    }
    match events.iter().find(|entry| !valid_filter(entry)) {
        Some(bad) => Err(invalid(format!(
            "events: {bad:?} is not *, an event name or prefix.*"
        ))),
        None => Ok(events),
    }
}

fn checked_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(invalid("name: 1 to 100 characters"));
    }
    Ok(name.to_string())
}

fn checked_secret(secret: &str) -> Result<String, ApiError> {
    if secret.is_empty() || secret.len() > 512 {
        return Err(invalid("signing_secret: 1 to 512 bytes"));
    }
    Ok(secret.to_string())
}

/// Creates a webhook channel.
#[utoipa::path(post, path = "/api/v1/channels", tag = "channels", request_body = CreateChannelRequest,
    responses((status = 201, body = ChannelResponse),
        (status = 400, description = "invalid field or refused destination", body = Problem, content_type = "application/problem+json")))]
async fn create_channel(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateChannelRequest>,
) -> Result<(StatusCode, Json<ChannelResponse>), ApiError> {
    let kind = request.kind.unwrap_or_else(|| "webhook".to_string());
    if kind != "webhook" {
        return Err(invalid("kind: only webhook is supported"));
    }
    let url = checked_url(&notify, &request.url)?;
    let name = match request.name {
        Some(name) => checked_name(&name)?,
        None => url::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "webhook".to_string()),
    };
    let events = checked_events(request.events.unwrap_or_else(|| vec!["*".to_string()]))?;
    let signing_secret = request
        .signing_secret
        .as_deref()
        .map(checked_secret)
        .transpose()?;
    let now = notify.clock().now();
    let channel = Channel {
        id: ChannelId::generate(),
        org_id: caller.org_id.clone(),
        name,
        kind,
        url,
        signing_secret,
        events,
        enabled: request.enabled.unwrap_or(true),
        disabled_reason: None,
        created_at: now,
        updated_at: now,
    };
    let (stored, actor) = (channel.clone(), caller.actor());
    notify
        .store()
        .write(move |txn| {
            db::put_channel(txn, &stored)?;
            let detail = json!({"name": stored.name, "url": stored.url});
            let target = Some(stored.id.as_str());
            audit::record(
                txn,
                Some(&stored.org_id),
                &actor,
                "channel.created",
                target,
                detail,
                now,
            )
        })
        .await?;
    Ok((StatusCode::CREATED, Json(channel_view(&channel, 0))))
}

/// Lists the organisation's channels.
#[utoipa::path(get, path = "/api/v1/channels", tag = "channels",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<ChannelResponse>)))]
async fn list_channels(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
) -> Result<Json<Page<ChannelResponse>>, ApiError> {
    let after = page.cursor_as(ChannelId::parse)?;
    let (org, limit) = (caller.org_id, page.limit);
    let rows = store
        .read(move |txn| {
            // One more row than asked for tells whether a next page exists.
            let mut rows = Vec::new();
            for channel in db::channels_page_of_org(txn, &org, after.as_ref(), limit + 1)? {
                let dead_letters = db::dead_count(txn, &channel.id)?;
                rows.push((channel, dead_letters));
            }
            Ok::<_, StoreError>(rows)
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |(channel, _)| channel.id.to_string(),
        |(channel, dead_letters)| channel_view(channel, *dead_letters),
    )))
}

pub(crate) fn parse_channel_id(id: &str) -> Result<ChannelId, ApiError> {
    ChannelId::parse(id).map_err(|_| ApiError::not_found("channel"))
}

/// One channel.
#[utoipa::path(get, path = "/api/v1/channels/{id}", tag = "channels",
    params(("id" = String, Path, description = "channel id")),
    responses((status = 200, body = ChannelResponse), problems::NotFound))]
async fn get_channel(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<ChannelResponse>, ApiError> {
    let id = parse_channel_id(&id)?;
    let org = caller.org_id;
    let view = store
        .read(move |txn| {
            let Some(channel) = db::channel_of_org(txn, &org, &id)? else {
                return Ok::<_, StoreError>(None);
            };
            Ok(Some(channel_view(
                &channel,
                db::dead_count(txn, &channel.id)?,
            )))
        })
        .await?;
    view.map(Json).ok_or_else(|| ApiError::not_found("channel"))
}

/// Changes a channel; enabling it again clears `disabled_reason`.
#[utoipa::path(patch, path = "/api/v1/channels/{id}", tag = "channels", request_body = UpdateChannelRequest,
    params(("id" = String, Path, description = "channel id")),
    responses((status = 200, body = ChannelResponse), problems::NotFound))]
async fn update_channel(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<UpdateChannelRequest>,
) -> Result<Json<ChannelResponse>, ApiError> {
    let id = parse_channel_id(&id)?;
    let name = request.name.as_deref().map(checked_name).transpose()?;
    let url = request
        .url
        .as_deref()
        .map(|u| checked_url(&notify, u))
        .transpose()?;
    let events = request.events.map(checked_events).transpose()?;
    let secret = match request.signing_secret {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(secret)) => Some(Some(checked_secret(&secret)?)),
        Some(_) => return Err(invalid("signing_secret: a string or null")),
    };
    let (org, actor, now) = (caller.org_id.clone(), caller.actor(), notify.clock().now());
    let updated = notify
        .store()
        .write(move |txn| {
            let Some(mut channel) = db::channel_of_org(txn, &org, &id)? else {
                return Ok::<_, StoreError>(None);
            };
            if let Some(name) = &name {
                channel.name = name.clone();
            }
            if let Some(url) = &url {
                channel.url = url.clone();
            }
            if let Some(events) = &events {
                channel.events = events.clone();
            }
            if let Some(secret) = &secret {
                channel.signing_secret = secret.clone();
            }
            if let Some(enabled) = request.enabled {
                channel.enabled = enabled;
                if enabled {
                    channel.disabled_reason = None;
                }
            }
            channel.updated_at = now;
            db::put_channel(txn, &channel)?;
            let detail =
                json!({"name": channel.name, "url": channel.url, "enabled": channel.enabled});
            let target = Some(channel.id.as_str());
            audit::record(
                txn,
                Some(&org),
                &actor,
                "channel.updated",
                target,
                detail,
                now,
            )?;
            let dead = db::dead_count(txn, &channel.id)?;
            Ok(Some(channel_view(&channel, dead)))
        })
        .await?;
    updated
        .map(Json)
        .ok_or_else(|| ApiError::not_found("channel"))
}

/// Deletes a channel; its queued deliveries are cancelled, its log stays readable by id.
#[utoipa::path(delete, path = "/api/v1/channels/{id}", tag = "channels",
    params(("id" = String, Path, description = "channel id")),
    responses((status = 204), problems::NotFound))]
async fn delete_channel(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_channel_id(&id)?;
    let (org, actor, now) = (caller.org_id.clone(), caller.actor(), notify.clock().now());
    let removed = notify
        .store()
        .write(move |txn| {
            let Some(channel) = db::channel_of_org(txn, &org, &id)? else {
                return Ok::<_, StoreError>(false);
            };
            db::remove_channel(txn, &channel)?;
            let target = Some(channel.id.as_str());
            audit::record(
                txn,
                Some(&org),
                &actor,
                "channel.deleted",
                target,
                json!({}),
                now,
            )?;
            Ok(true)
        })
        .await?;
    notify.wake();
    match removed {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found("channel")),
    }
}

/// Sends a `test` event to this channel, whatever its filter.
#[utoipa::path(post, path = "/api/v1/channels/{id}/test", tag = "channels",
    params(("id" = String, Path, description = "channel id")),
    responses((status = 202, body = TestResponse),
        (status = 409, description = "channel disabled", body = Problem, content_type = "application/problem+json")))]
async fn test_channel(
    State(notify): State<Notify>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<TestResponse>), ApiError> {
    let id = parse_channel_id(&id)?;
    let now = notify.clock().now();
    let event = Event {
        name: "test",
        org_id: caller.org_id.clone(),
        alert_id: None,
        title: "Test notification from Lookout".to_string(),
        body: "The Test button of this channel was used; no action is needed.".to_string(),
        severity: "info".to_string(),
        service: "lookout".to_string(),
        environment: "test".to_string(),
        url: format!("{}/channels/{}", notify.base_url(), id),
        timestamp: now,
        extra: EventExtra::None,
    };
    let body = render(&event);
    let org = caller.org_id;
    let queued = notify
        .store()
        .write(move |txn| {
            let Some(channel) = db::channel_of_org(txn, &org, &id)? else {
                return Ok::<_, StoreError>(Err(NotifyError::ChannelNotFound));
            };
            if !channel.enabled {
                return Ok(Err(NotifyError::ChannelDisabled));
            }
            Ok(Ok(super::enqueue(txn, &channel, "test", &body, now)?))
        })
        .await??;
    notify.wake();
    Ok((
        StatusCode::ACCEPTED,
        Json(TestResponse {
            delivery_id: queued.to_string(),
        }),
    ))
}
