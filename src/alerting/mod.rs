//! Alerting: inbound events from build servers, CI systems and monitors, deployments, builds
//! incidents and alerts raised by external monitoring (CONTRACT.md section 4). Alert rules and
//! their evaluator join this folder as they are built.
//!
//! Rooms: `model.rs` (records and the pure rules over them), `db.rs` (typed tables),
//! `inbound.rs` (inbound tokens and the `Inbound<K>` extractor), `deployments.rs`,
//! `builds.rs` (Jenkins), `incidents_model.rs` + `incidents_wire.rs` + `incidents.rs`,
//! `alerts_model.rs` + `alerts.rs` (external alerts).
//!
//! Invariants: every state change that notifies (a deployment starting or finishing, an
//! incident opened, changed or resolved) enqueues its outbound event with `notify::emit` in
//! the same write transaction as the change; handlers call `Notify::wake` after it commits.

pub mod alerts;
pub mod alerts_model;
pub mod builds;
pub mod db;
pub mod deployments;
pub mod inbound;
pub mod incidents;
pub mod incidents_model;
pub mod incidents_wire;
pub mod model;

use axum::extract::FromRef;
use utoipa_axum::router::OpenApiRouter;

use crate::auth::Auth;
use crate::notify::Notify;
use crate::store::Store;

/// Every route of this capability.
pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Notify: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .merge(inbound::routes())
        .merge(deployments::routes())
        .merge(builds::routes())
        .merge(incidents::routes())
        .merge(alerts::routes())
}
