//! Notifications: channels, payloads, signing, the destination guard, the durable delivery
//! queue and its workers, dead letters. The one pipeline every channel kind shares.
//!
//! The public face for other capabilities is `emit(txn, &event)`: called inside the caller's
//! own write transaction, it enqueues one delivery per enabled channel whose filter matches, so
//! the state change and its deliveries commit together or not at all. After that write
//! returns, the caller calls `Notify::wake()` so the worker sends at once instead of at its
//! next poll.
//!
//! Invariants: the queue lives in redb (`dueat_deliveryid`), so due times survive a restart or
//! a `kill -9`; a delivery leaves the due index only in the transaction that records its
//! attempt, so a crash mid-attempt means it is sent again (at-least-once, same delivery id).

pub mod api;
pub mod api_deliveries;
pub mod db;
pub mod model;
pub mod payload;
pub mod send;
pub mod worker;

use std::sync::Arc;

use redb::WriteTransaction;

pub use model::{ChannelId, DeliveryId};

/// The channels of an org, in a caller's transaction (alert rules check the channels they name).
pub use db::channels_of_org;
pub use payload::{Event, EventExtra};

use crate::clock::{Clock, Timestamp};
use crate::config::WebhookSettings;
use crate::store::{Store, StoreError};
use model::{Channel, Delivery, DeliveryState};

/// Why a channel or delivery operation refused; `api.rs` maps it to a problem. Write closures
/// hand these back inside `Ok` (an `Err` would abort the writer's whole batch), so their own
/// error stays the store's.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("channel not found")]
    ChannelNotFound,
    /// A disabled channel is not tested (409 `channel_disabled`).
    #[error("enable the channel before testing it")]
    ChannelDisabled,
    #[error("delivery not found")]
    DeliveryNotFound,
    /// Only a dead delivery is retried (409 `delivery_not_dead`).
    #[error("only a delivery in the dead-letter queue can be retried")]
    DeliveryNotDead,
}

/// A cheap, cloneable handle to the notification pipeline.
#[derive(Clone)]
pub struct Notify {
    shared: Arc<Shared>,
}

struct Shared {
    store: Store,
    clock: Clock,
    settings: WebhookSettings,
    /// `BASE_URL`, without a trailing slash, for links in payloads.
    base_url: String,
    /// Wakes the dispatcher: new work was committed.
    wake: tokio::sync::Notify,
}

impl Notify {
    pub fn new(store: Store, clock: Clock, settings: WebhookSettings, base_url: &url::Url) -> Self {
        Notify {
            shared: Arc::new(Shared {
                store,
                clock,
                settings,
                base_url: base_url.as_str().trim_end_matches('/').to_string(),
                wake: tokio::sync::Notify::new(),
            }),
        }
    }

    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    pub fn settings(&self) -> &WebhookSettings {
        &self.shared.settings
    }

    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// Tells the dispatcher that deliveries were committed; harmless when nothing was.
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    async fn woken(&self) {
        self.shared.wake.notified().await;
    }
}

/// Enqueues `event` for every enabled channel of its org whose filter selects it, inside
/// `txn`. Returns the new delivery ids. Free of side effects outside `txn` (it may run twice).
pub fn emit(txn: &WriteTransaction, event: &Event) -> Result<Vec<DeliveryId>, StoreError> {
    emit_to(txn, event, None)
}

/// As `emit`, limited to the channels named in `only` (ids) when it is given: an alert rule's
/// or the spike alerts' own channels. Each named channel still applies its enabled flag and
/// its event filter.
pub fn emit_to(
    txn: &WriteTransaction,
    event: &Event,
    only: Option<&[String]>,
) -> Result<Vec<DeliveryId>, StoreError> {
    let channels = db::channels_of_org(txn, &event.org_id)?;
    let body = payload::render(event);
    let mut ids = Vec::new();
    for channel in channels {
        let chosen = only.is_none_or(|only| only.iter().any(|id| id == channel.id.as_str()));
        if chosen && channel.enabled && model::filter_matches(&channel.events, event.name) {
            ids.push(enqueue(txn, &channel, event.name, &body, event.timestamp)?);
        }
    }
    Ok(ids)
}

/// Enqueues one delivery of `body` to `channel`, due at once.
pub(crate) fn enqueue(
    txn: &WriteTransaction,
    channel: &Channel,
    event: &str,
    body: &str,
    now: Timestamp,
) -> Result<DeliveryId, StoreError> {
    let delivery = Delivery {
        id: DeliveryId::generate(),
        org_id: channel.org_id.clone(),
        channel_id: channel.id.clone(),
        event: event.to_string(),
        body: body.to_string(),
        state: DeliveryState::Pending,
        attempts: Vec::new(),
        round_attempts: 0,
        due_at: Some(now),
        created_at: now,
        updated_at: now,
    };
    db::put_delivery(txn, None, &delivery)?;
    Ok(delivery.id)
}

/// Puts a dead delivery back in the queue, due at once, with a fresh round of retries.
pub(crate) fn redrive(
    txn: &WriteTransaction,
    dead: &Delivery,
    now: Timestamp,
) -> Result<(), StoreError> {
    let mut revived = dead.clone();
    revived.state = DeliveryState::Pending;
    revived.round_attempts = 0;
    revived.due_at = Some(now);
    revived.updated_at = now;
    db::put_delivery(txn, Some(dead), &revived)
}
