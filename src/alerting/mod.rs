//! Alerting (CONTRACT.md section 4): alert rules and their evaluator, browser-error spike
//! alerts, inbound events from build servers, CI systems and monitors, deployments, builds,
//! incidents and alerts raised by external monitoring.
//!
//! Rooms: `model.rs` (records and the pure rules over them), `db.rs` (typed tables),
//! `inbound.rs` (inbound tokens and the `Inbound<K>` extractor), `deployments.rs`,
//! `builds.rs` (Jenkins), `incidents_model.rs` + `incidents_wire.rs` + `incidents.rs`,
//! `alerts_model.rs` + `alerts.rs` (alerts; external ones), `rollup.rs` (counters written by
//! ingest), `rules_model.rs` + `rules.rs` (rules), `evaluator.rs` + `transitions.rs` (the tick),
//! `readings.rs` (each rule's last measured value, in memory),
//! `stats.rs` (error events per interval, read from the rollups), `services.rs` (the services
//! registry).
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
pub mod alerts_model;
pub mod builds;
pub mod db;
pub mod deployments;
pub mod evaluator;
pub mod external_alerts;
pub mod inbound;
pub mod incidents;
pub mod incidents_model;
pub mod incidents_wire;
pub mod model;
pub mod readings;
pub mod rollup;
mod rule_request;
pub mod rules;
pub mod rules_model;
pub mod services;
pub mod stats;
pub mod transitions;

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
    readings: readings::RuleReadings,
}

impl Alerting {
    pub fn new(
        store: Store,
        clock: Clock,
        base_url: &url::Url,
        notify: Notify,
        readings: readings::RuleReadings,
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

    pub fn readings(&self) -> &readings::RuleReadings {
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
    readings::RuleReadings: FromRef<S>,
{
    OpenApiRouter::new()
        .merge(inbound::routes())
        .merge(deployments::routes())
        .merge(builds::routes())
        .merge(incidents::routes())
        .merge(alerts::routes())
        .merge(rules::routes())
        .merge(stats::routes())
}
