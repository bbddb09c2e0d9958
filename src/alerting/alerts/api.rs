//! Alerts from external monitoring: `POST /api/v1/alerts/webhook` (an `alerts` inbound token;
//! the generic body or the Prometheus Alertmanager payload, version 4), `GET /api/v1/alerts`,
//! `GET /api/v1/alerts/{id}` and `POST /api/v1/alerts/{id}/acknowledge`.
//!
//! Invariants: every report of one request, its alert changes and their `alert.fired` /
//! `alert.resolved` deliveries commit in one write transaction; a dedup key (the generic
//! `dedup_key`, or Alertmanager's fingerprint) names at most one firing alert, found inside
//! that transaction; `alert.acknowledged` is emitted once per alert.

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::external::{AlertmanagerPayload, GenericAlert, alertmanager_reports, generic_report};
use super::model::{Alert, AlertChange, AlertId, AlertReport, AlertState, apply_alert_report};
use crate::alerting::inbound::api::{AlertsKind, Inbound};
use crate::alerting::{Alerting, AlertingError};
use crate::auth::{Auth, Member, Viewer};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::notify::{self, Event, EventExtra};
use crate::store::{Store, keep_forward};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(alert_webhook))
        .routes(routes!(list_alerts))
        .routes(routes!(get_alert))
        .routes(routes!(acknowledge_alert))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertHistoryResponse {
    pub at: String,
    /// fired, updated, resolved or acknowledged.
    pub kind: String,
    pub actor_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AlertResponse {
    pub id: String,
    /// webhook or alertmanager (external monitoring), rule (an alert rule) or spike (browser
    /// error spikes).
    pub source: String,
    pub dedup_key: String,
    pub title: String,
    pub body: String,
    pub severity: String,
    pub service: Option<String>,
    pub environment: Option<String>,
    /// pending, firing or resolved.
    pub state: String,
    pub fired_at: String,
    pub resolved_at: Option<String>,
    pub acknowledged_by: Option<String>,
    pub acknowledged_at: Option<String>,
    pub labels: std::collections::BTreeMap<String, String>,
    pub url: Option<String>,
    pub history: Vec<AlertHistoryResponse>,
    /// The rule that raised it (rule alerts).
    pub rule_id: Option<String>,
    /// The incident its rule opened with it.
    pub incident_id: Option<String>,
}

/// What one webhook request did.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct AlertWebhookResponse {
    pub fired: usize,
    pub updated: usize,
    pub resolved: usize,
    /// Resolutions of alerts that were not firing.
    pub ignored: usize,
    /// The alerts fired, updated or resolved, in the order of the request.
    pub items: Vec<AlertResponse>,
}

pub(super) fn alert_view(alert: &Alert) -> AlertResponse {
    AlertResponse {
        id: alert.id.to_string(),
        source: alert.source.clone(),
        dedup_key: alert.dedup_key.clone(),
        title: alert.title.clone(),
        body: alert.body.clone(),
        severity: alert.severity.clone(),
        service: alert.service.clone(),
        environment: alert.environment.clone(),
        state: alert.state.as_str().to_string(),
        fired_at: alert.fired_at.to_rfc3339(),
        resolved_at: alert.resolved_at.map(|at| at.to_rfc3339()),
        acknowledged_by: alert.acknowledged_by.as_ref().map(ToString::to_string),
        acknowledged_at: alert.acknowledged_at.map(|at| at.to_rfc3339()),
        labels: alert.labels.clone(),
        url: alert.url.clone(),
        history: alert
            .history
            .iter()
            .map(|entry| AlertHistoryResponse {
                at: entry.at.to_rfc3339(),
                kind: entry.kind.clone(),
                actor_id: entry.actor_id.as_ref().map(ToString::to_string),
            })
            .collect(),
        rule_id: alert.rule_id.clone(),
        incident_id: alert.incident_id.clone(),
    }
}

pub(crate) fn alert_event(name: &'static str, alert: &Alert, base_url: &str) -> Event {
    let timestamp = alert
        .history
        .last()
        .map(|entry| entry.at)
        .unwrap_or(alert.fired_at);
    Event {
        name,
        org_id: alert.org_id.clone(),
        alert_id: Some(alert.id.to_string()),
        title: alert.title.clone(),
        body: alert.body.clone(),
        severity: alert.severity.clone(),
        service: alert.service.clone().unwrap_or_default(),
        environment: alert.environment.clone().unwrap_or_default(),
        url: format!("{base_url}/alerts/{}", alert.id),
        timestamp,
        extra: EventExtra::None,
    }
}

fn invalid(detail: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload, detail)
}

/// Reads either body shape: an object with `alerts` and `version` is Alertmanager's.
fn reports_of(value: Value) -> Result<Vec<AlertReport>, ApiError> {
    let is_alertmanager = value.get("alerts").is_some() && value.get("version").is_some();
    let result = if is_alertmanager {
        let payload: AlertmanagerPayload = serde_json::from_value(value)
            .map_err(|err| invalid(format!("not an Alertmanager payload: {err}")))?;
        alertmanager_reports(&payload)
    } else {
        let alert: GenericAlert = serde_json::from_value(value)
            .map_err(|err| invalid(format!("not an alert body: {err}")))?;
        generic_report(&alert).map(|report| vec![report])
    };
    result.map_err(|err| invalid(err.0))
}

/// Raises, refreshes or resolves alerts reported by external monitoring.
#[utoipa::path(post, path = "/api/v1/alerts/webhook", tag = "alerts",
    request_body(content = Object, description = "the generic alert body, or an Alertmanager webhook payload (version 4)"),
    params(("X-Lookout-Token" = Option<String>, Header, description = "inbound token"),
        ("token" = Option<String>, Query, description = "inbound token, when X-Lookout-Token cannot be sent")),
    responses((status = 200, body = AlertWebhookResponse),
        problems::Unauthenticated,
        problems::Forbidden))]
async fn alert_webhook(
    State(alerting): State<Alerting>,
    inbound: Inbound<AlertsKind>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<AlertWebhookResponse>, ApiError> {
    let reports = reports_of(body)?;
    let org = inbound.token.org_id.clone();
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let answer = alerting
        .store()
        .write(move |txn| {
            let mut answer = AlertWebhookResponse::default();
            for report in &reports {
                let live = db::live_alert(txn, &org, &report.dedup_key)?;
                let change =
                    apply_alert_report(live.as_ref(), report, AlertId::generate(), &org, now);
                let (alert, event) = match change {
                    AlertChange::Ignored => {
                        answer.ignored += 1;
                        continue;
                    }
                    AlertChange::Fired(alert) => {
                        answer.fired += 1;
                        (alert, Some("alert.fired"))
                    }
                    AlertChange::Updated(alert) => {
                        answer.updated += 1;
                        (alert, None)
                    }
                    AlertChange::Resolved(alert) => {
                        answer.resolved += 1;
                        (alert, Some("alert.resolved"))
                    }
                };
                db::put_alert(txn, &alert)?;
                if let Some(name) = event {
                    notify::emit(txn, &alert_event(name, &alert, &base_url))?;
                }
                answer.items.push(alert_view(&alert));
            }
            Ok::<_, AlertingError>(answer)
        })
        .await?;
    alerting.wake_deliveries();
    Ok(Json(answer))
}

/// Lists the organisation's alerts, oldest first; `state` filters.
#[utoipa::path(get, path = "/api/v1/alerts", tag = "alerts",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query),
        ("state" = Option<String>, Query, description = "pending, firing or resolved")),
    responses((status = 200, body = Page<AlertResponse>), problems::Invalid))]
async fn list_alerts(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<AlertResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let state = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .find(|(name, _)| name == "state")
        .map(|(_, value)| {
            AlertState::parse(value.as_ref()).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidParameter,
                    "state: pending, firing or resolved",
                )
            })
        })
        .transpose()?;
    let after = page.cursor_as(AlertId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let rows = alerting
        .store()
        .read(move |txn| {
            keep_forward(
                after,
                limit,
                |after, n| db::alerts_of_org(txn, &org, after, n),
                |alert: &Alert| alert.id.clone(),
                |alert| state.is_none_or(|wanted| wanted == alert.state),
            )
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |alert: &Alert| alert.id.to_string(),
        alert_view,
    )))
}

fn parse_alert_id(id: &str) -> Result<AlertId, ApiError> {
    AlertId::parse(id).map_err(|_| ApiError::not_found("alert"))
}

/// One alert with its history.
#[utoipa::path(get, path = "/api/v1/alerts/{id}", tag = "alerts",
    params(("id" = String, Path, description = "alert id")),
    responses((status = 200, body = AlertResponse), problems::NotFound))]
async fn get_alert(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<AlertResponse>, ApiError> {
    let id = parse_alert_id(&id)?;
    let org = caller.org_id.clone();
    let alert = alerting
        .store()
        .read(move |txn| db::alert_of_org(txn, &org, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("alert"))?;
    Ok(Json(alert_view(&alert)))
}

/// Claims an alert (`alert.acknowledged`, once); acknowledging again changes nothing.
#[utoipa::path(post, path = "/api/v1/alerts/{id}/acknowledge", tag = "alerts",
    params(("id" = String, Path, description = "alert id")),
    responses((status = 200, body = AlertResponse), problems::NotFound))]
async fn acknowledge_alert(
    State(alerting): State<Alerting>,
    Member(caller): Member,
    Path(id): Path<String>,
) -> Result<Json<AlertResponse>, ApiError> {
    let id = parse_alert_id(&id)?;
    let (org, user) = (caller.org_id.clone(), caller.user_id.clone());
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let alert = alerting
        .store()
        .write(move |txn| {
            let mut alert =
                db::alert_of_org(txn, &org, &id)?.ok_or(AlertingError::NotFound("alert"))?;
            if alert.acknowledged_at.is_some() {
                return Ok::<_, AlertingError>(alert);
            }
            alert.acknowledged_by = Some(user.clone());
            alert.acknowledged_at = Some(now);
            alert.record(super::model::AlertHistoryEntry {
                at: now,
                kind: "acknowledged".to_string(),
                actor_id: Some(user.clone()),
            });
            db::put_alert(txn, &alert)?;
            notify::emit_to(
                txn,
                &alert_event("alert.acknowledged", &alert, &base_url),
                alert.channels.as_deref(),
            )?;
            Ok(alert)
        })
        .await?;
    alerting.wake_deliveries();
    Ok(Json(alert_view(&alert)))
}
