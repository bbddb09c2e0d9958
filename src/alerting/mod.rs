//! Alerting (CONTRACT.md section 4): alert rules and their evaluator, browser-error spike
//! alerts, inbound events from build servers, CI systems and monitors, deployments, builds,
//! incidents and alerts raised by external monitoring.
//!
//! Rooms, each with the files it needs (`api.rs` handlers and wire types, `model.rs` records
//! and pure rules, `db.rs` typed tables): `inbound/` (inbound tokens and the `Inbound<K>`
//! extractor), `releases/` (deployments and Jenkins builds), `incidents/`, `alerts/` (alerts;
//! external ones in `external.rs`), `rules/` (rules, the request checks, each rule's last
//! reading in memory), `evaluator/` (the tick, `transitions.rs` applying it, the spike state),
//! `rollup/` (counters written by ingest; `api.rs` serves error events per interval from them),
//! `services/` (the services registry). `db.rs` here holds the key helpers the rooms share;
//! `error.rs` the `AlertingError` that transactions and db code return, mapped to problem
//! answers in `api.rs` alone.
//!
//! Ingest and errors feed alerting and never the reverse: they count telemetry into rollups
//! (`RollupBatch`) and the services registry (`record_activity`) inside the transaction that
//! stores it, and wake the spike check (`SpikeWake`) after it commits, through the items
//! re-exported here.
//!
//! Invariants: every state change that notifies (a deployment starting or finishing, an
//! incident opened, changed or resolved, an alert firing, resolving or acknowledged) enqueues
//! its outbound event with `notify::emit` in the same write transaction as the change; handlers
//! call `Alerting::wake_deliveries` after it commits.

pub mod alerts;
mod api;
mod db;
mod error;
pub mod evaluator;
pub mod inbound;
pub mod incidents;
pub mod releases;
pub mod rollup;
pub mod rules;
pub mod services;

pub use error::AlertingError;
pub use evaluator::SpikeWake;
pub use rollup::{Metric, RollupBatch};
pub use services::{Activity, record_activity};

use std::sync::Arc;

use axum::extract::FromRef;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::Auth;
use crate::clock::Clock;
use crate::notify::Notify;
use crate::store::Store;

/// The alerting handle: what alerting's handlers use. Cloning shares it; the server holds one
/// in `AppState` and handlers reach it with `State<Alerting>`.
#[derive(Clone)]
pub struct Alerting {
    shared: Arc<Shared>,
}

struct Shared {
    store: Store,
    clock: Clock,
    /// `BASE_URL`, without a trailing slash, for links in outbound events.
    base_url: String,
    /// The delivery queue's face: handlers wake it after committing outbound events.
    notify: Notify,
    /// Each enabled rule's last measurement, written by the evaluator.
    readings: rules::readings::RuleReadings,
}

impl Alerting {
    pub fn new(
        store: Store,
        clock: Clock,
        base_url: &url::Url,
        notify: Notify,
        readings: rules::readings::RuleReadings,
    ) -> Alerting {
        Alerting {
            shared: Arc::new(Shared {
                store,
                clock,
                base_url: base_url.as_str().trim_end_matches('/').to_string(),
                notify,
                readings,
            }),
        }
    }

    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    pub fn readings(&self) -> &rules::readings::RuleReadings {
        &self.shared.readings
    }

    /// Tells the delivery queue that outbound events were committed; harmless when none were.
    pub fn wake_deliveries(&self) {
        self.shared.notify.wake();
    }
}

/// Every route of this capability.
pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
    Store: FromRef<S>,
    rules::readings::RuleReadings: FromRef<S>,
{
    OpenApiRouter::new()
        .merge(inbound::api::routes())
        .merge(releases::deployments::routes())
        .merge(releases::builds::routes())
        .merge(incidents::api::routes())
        .merge(alerts::api::routes())
        .merge(rules::api::routes())
        .merge(rollup::api::routes())
}
