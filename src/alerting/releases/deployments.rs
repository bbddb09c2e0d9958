//! Deployments: `POST /api/v1/deployments/webhook` (any CI system, with a `deployments`
//! inbound token) and `GET /api/v1/deployments` (optionally only those started between
//! `from` and `to`).
//!
//! Invariants: a report, its `deployment.started` / `deployment.finished` deliveries and the
//! services registry update commit in one write transaction, so a receiver never hears of a
//! deployment the store does not hold, and the store never holds one its receivers miss; the
//! same `external_id` always names the same deployment (looked up inside that transaction,
//! so two concurrent reports cannot create two).

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::model::{Deployment, DeploymentId, DeploymentReport, DeploymentStatus, apply_report};
use crate::alerting::inbound::api::{DeploymentsKind, Inbound};
use crate::alerting::services::{Activity, record_activity};
use crate::alerting::{Alerting, AlertingError};
use crate::auth::{Auth, Viewer};
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, newest_first, time_filter};
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::notify::{self, Event, EventExtra};
use crate::store::Store;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
    Store: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(deployment_webhook))
        .routes(routes!(list_deployments))
        .routes(routes!(get_deployment))
}

/// The generic CI body. Unknown fields are ignored: CI templates often carry extra context.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DeploymentWebhookRequest {
    pub service: String,
    pub environment: String,
    pub version: String,
    /// `started`, `succeeded` or `failed`.
    pub status: String,
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// The CI system's id for this deployment: a later report with it updates the same one.
    #[serde(default)]
    pub external_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeploymentResponse {
    pub id: String,
    pub service: String,
    pub environment: String,
    pub version: String,
    pub commit: Option<String>,
    /// `started`, `succeeded` or `failed`.
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub url: Option<String>,
    pub external_id: Option<String>,
}

pub(crate) fn deployment_view(deployment: &Deployment) -> DeploymentResponse {
    DeploymentResponse {
        id: deployment.id.to_string(),
        service: deployment.service.clone(),
        environment: deployment.environment.clone(),
        version: deployment.version.clone(),
        commit: deployment.commit.clone(),
        status: deployment.status.as_str().to_string(),
        started_at: deployment.started_at.to_rfc3339(),
        finished_at: deployment.finished_at.map(|at| at.to_rfc3339()),
        url: deployment.url.clone(),
        external_id: deployment.external_id.clone(),
    }
}

/// A required text field: trimmed, 1 to `max` characters.
pub(crate) fn required(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(ApiError::new(
            ErrorCode::InvalidPayload,
            format!("{field}: 1 to {max} characters"),
        ));
    }
    Ok(value.to_string())
}

/// An optional text field: absent or blank is `None`, else at most `max` characters.
pub(crate) fn optional(
    field: &str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) => required(field, value, max).map(Some),
    }
}

fn validated(request: &DeploymentWebhookRequest) -> Result<DeploymentReport, ApiError> {
    let status = DeploymentStatus::parse(request.status.trim()).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidPayload,
            "status: one of started, succeeded, failed",
        )
    })?;
    Ok(DeploymentReport {
        service: required("service", &request.service, 200)?,
        environment: required("environment", &request.environment, 100)?,
        version: required("version", &request.version, 200)?,
        status,
        commit: optional("commit", request.commit.as_deref(), 200)?,
        url: optional("url", request.url.as_deref(), 2000)?,
        external_id: optional("external_id", request.external_id.as_deref(), 200)?,
    })
}

/// The outbound event for a deployment that started or finished.
fn deployment_event(name: &'static str, deployment: &Deployment, base_url: &str) -> Event {
    let verb = match deployment.status {
        DeploymentStatus::Started => "started",
        DeploymentStatus::Succeeded => "succeeded",
        DeploymentStatus::Failed => "failed",
    };
    let title = format!(
        "Deployment of {} {} to {} {verb}",
        deployment.service, deployment.version, deployment.environment
    );
    let mut body = title.clone();
    if let Some(commit) = &deployment.commit {
        body.push_str(&format!(" (commit {commit})"));
    }
    let severity = match deployment.status {
        DeploymentStatus::Failed => "warning",
        DeploymentStatus::Started | DeploymentStatus::Succeeded => "info",
    };
    Event {
        name,
        org_id: deployment.org_id.clone(),
        alert_id: None,
        title,
        body,
        severity: severity.to_string(),
        service: deployment.service.clone(),
        environment: deployment.environment.clone(),
        url: format!("{base_url}/deployments/{}", deployment.id),
        timestamp: deployment.finished_at.unwrap_or(deployment.started_at),
        extra: EventExtra::Deployment {
            deployment_id: deployment.id.to_string(),
            version: deployment.version.clone(),
            status: deployment.status.as_str().to_string(),
        },
    }
}

/// Records a deployment reported by a CI system (201 when new, 200 when `external_id` named an
/// existing one).
#[utoipa::path(post, path = "/api/v1/deployments/webhook", tag = "deployments",
    request_body = DeploymentWebhookRequest,
    params(("X-Lookout-Token" = Option<String>, Header, description = "inbound token"),
        ("token" = Option<String>, Query, description = "inbound token, when X-Lookout-Token cannot be sent")),
    responses((status = 201, body = DeploymentResponse), (status = 200, body = DeploymentResponse),
        problems::Unauthenticated, problems::Forbidden))]
async fn deployment_webhook(
    State(alerting): State<Alerting>,
    inbound: Inbound<DeploymentsKind>,
    ApiJson(request): ApiJson<DeploymentWebhookRequest>,
) -> Result<(StatusCode, Json<DeploymentResponse>), ApiError> {
    let report = validated(&request)?;
    let org = inbound.token.org_id.clone();
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let (deployment, created) = alerting
        .store()
        .write(move |txn| {
            let existing = match &report.external_id {
                Some(external) => db::deployment_by_external_id(txn, &org, external)?,
                None => None,
            };
            let (deployment, events) = apply_report(
                existing.as_ref(),
                &report,
                DeploymentId::generate(),
                &org,
                now,
            );
            db::put_deployment(txn, existing.as_ref(), &deployment)?;
            let seen = Activity {
                service: deployment.service.clone(),
                environment: Some(deployment.environment.clone()),
                at: now,
                errors: 0,
            };
            record_activity(txn, &org, &[seen])?;
            if events.started {
                notify::emit(
                    txn,
                    &deployment_event("deployment.started", &deployment, &base_url),
                )?;
            }
            if events.finished {
                notify::emit(
                    txn,
                    &deployment_event("deployment.finished", &deployment, &base_url),
                )?;
            }
            Ok::<_, AlertingError>((deployment, existing.is_none()))
        })
        .await?;
    alerting.wake_deliveries();
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(deployment_view(&deployment))))
}

/// Lists the organisation's deployments, oldest first (`order=newest`: newest first);
/// `from`/`to` keep those started in that range (the overview's markers), `service` and
/// `environment` those of one service or environment (the deployments page's filters).
#[utoipa::path(get, path = "/api/v1/deployments", tag = "deployments",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "started at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "started before"),
        ("service" = Option<String>, Query, description = "only this service's deployments"),
        ("environment" = Option<String>, Query, description = "only deployments to this environment"),
        ("order" = Option<String>, Query, description = "oldest (the default) or newest first")),
    responses((status = 200, body = Page<DeploymentResponse>), problems::Invalid))]
async fn list_deployments(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<DeploymentResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let after = page.cursor_as(DeploymentId::parse)?;
    let filters = filters(
        query.as_deref(),
        &["from", "to", "service", "environment", "order"],
    )?;
    let filter = db::DeploymentFilter {
        from: time_filter(&filters, "from")?,
        to: time_filter(&filters, "to")?,
        service: filters.get("service").filter(|s| !s.is_empty()).cloned(),
        environment: filters
            .get("environment")
            .filter(|e| !e.is_empty())
            .cloned(),
    };
    let newest = newest_first(&filters)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    // One row more than asked tells whether another page follows.
    let rows = alerting
        .store()
        .read(move |txn| {
            db::deployments_of_org_matching(txn, &org, after.as_ref(), limit + 1, &filter, newest)
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |deployment| deployment.id.to_string(),
        deployment_view,
    )))
}

/// One deployment (the page a webhook payload's `url` opens).
#[utoipa::path(get, path = "/api/v1/deployments/{id}", tag = "deployments",
    params(("id" = String, Path, description = "dep_…")),
    responses((status = 200, body = DeploymentResponse),
        problems::NotFound))]
async fn get_deployment(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<DeploymentResponse>, ApiError> {
    // A malformed id names no deployment: the same 404 as an unknown one.
    let id = DeploymentId::parse(&id).map_err(|_| ApiError::not_found("deployment"))?;
    let org = caller.org_id.clone();
    let deployment = alerting
        .store()
        .read(move |txn| db::deployment_of_org(txn, &org, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("deployment"))?;
    Ok(Json(deployment_view(&deployment)))
}
