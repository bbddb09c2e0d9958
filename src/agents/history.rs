//! `GET /api/v1/agents/{id}/metrics?from=&to=`: an agent's host metric history, one point per
//! minute (the last heartbeat of that minute), for the agent page's charts.
//!
//! Invariants: every member reads it, like the agent itself; another organisation's agent is
//! 404; the history reaches back `model::METRIC_HISTORY` (24 hours) and no further, since each
//! heartbeat's write prunes what is older; a window wider than that is cut to it, never refused.

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{self, MetricPoint};
use super::protocol::HostMetrics;
use super::{Agents, db};
use crate::auth::{Auth, Viewer};
use crate::http::ApiError;
use crate::http::problems;
use crate::http::query::{filters, parameter_error, time_filter};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Agents: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(metric_history))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricPointResponse {
    /// When the heartbeat carrying these figures arrived.
    pub at: String,
    #[serde(flatten)]
    pub metrics: HostMetrics,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MetricHistory {
    /// Oldest first, at most one per minute (1,440 in 24 hours, so never paged); minutes
    /// without a heartbeat have no point.
    pub points: Vec<MetricPointResponse>,
    pub from: String,
    pub to: String,
    /// The history's resolution: 60.
    pub step_seconds: u64,
}

fn point_view(point: MetricPoint) -> MetricPointResponse {
    MetricPointResponse {
        at: point.at.to_rfc3339(),
        metrics: point.metrics,
    }
}

/// An agent's host metrics over time (default: the last 24 hours, which is all that is kept).
#[utoipa::path(get, path = "/api/v1/agents/{id}/metrics", tag = "agents",
    params(("id" = String, Path, description = "agent id"),
        ("from" = Option<String>, Query, description = "RFC 3339 or epoch ms; default 24 hours ago"),
        ("to" = Option<String>, Query, description = "RFC 3339 or epoch ms, exclusive; default now")),
    responses((status = 200, body = MetricHistory),
        problems::Invalid,
        problems::NotFound))]
async fn metric_history(
    State(agents): State<Agents>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<MetricHistory>, ApiError> {
    let filters = filters(query.as_deref(), &["from", "to"])?;
    let now = agents.clock().now();
    let oldest = model::metric_history_start(now);
    let asked_from = time_filter(&filters, "from")?.unwrap_or(oldest);
    let to = time_filter(&filters, "to")?.unwrap_or(now.plus(model::METRIC_STEP));
    if to < asked_from {
        return Err(parameter_error("to: must not be before from"));
    }
    // Nothing older is kept: a window reaching further back starts where the history does.
    let from = asked_from.max(oldest);
    let agent = super::api::find_agent(&agents, &caller.org_id, &id).await?;
    let points = agents
        .store()
        .read(move |txn| db::metric_points(txn, &agent.org_id, &agent.id, from, to))
        .await?;
    Ok(Json(MetricHistory {
        points: points.into_iter().map(point_view).collect(),
        from: from.to_rfc3339(),
        to: to.to_rfc3339(),
        step_seconds: model::METRIC_STEP.as_secs(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::model::OrgId;
    use crate::agents::AgentId;
    use crate::clock::Timestamp;
    use redb::ReadableDatabase;

    #[test]
    fn a_point_per_minute_is_kept_and_older_than_the_history_is_pruned() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let (org, agent) = (OrgId::generate(), AgentId::generate());
        let other = AgentId::generate();
        let minute = model::METRIC_STEP.as_millis() as i64;
        let day = model::METRIC_HISTORY.as_millis() as i64;
        let point = |at: i64, load: f64| MetricPoint {
            at: Timestamp(at),
            metrics: HostMetrics {
                load1: Some(load),
                ..HostMetrics::default()
            },
        };
        let write = |agent: &AgentId, point: MetricPoint| {
            let txn = database.begin_write().unwrap();
            let keep_from = model::metric_history_start(point.at);
            db::record_metric_point(&txn, &org, agent, &point, keep_from).unwrap();
            txn.commit().unwrap();
        };
        write(&other, point(10, 9.0));
        write(&agent, point(10, 1.0));
        write(&agent, point(20_000, 2.0));
        write(&agent, point(minute + 5, 3.0));
        let read = |agent: &AgentId| {
            let txn = database.begin_read().unwrap();
            db::metric_points(&txn, &org, agent, Timestamp(0), Timestamp(i64::MAX / 2)).unwrap()
        };
        let loads: Vec<_> = read(&agent).iter().map(|p| p.metrics.load1).collect();
        assert_eq!(loads, [Some(2.0), Some(3.0)]);
        // A day and a minute later, only the new point is left; the other agent keeps its own.
        write(&agent, point(day + 2 * minute, 4.0));
        let loads: Vec<_> = read(&agent).iter().map(|p| p.metrics.load1).collect();
        assert_eq!(loads, [Some(4.0)]);
        assert_eq!(read(&other).len(), 1);
    }
}
