//! Alert rules API (CONTRACT section 4): `GET|POST /api/v1/alert-rules`,
//! `GET|PUT|PATCH|DELETE /api/v1/alert-rules/{id}`. Viewers read; admins manage rules (they
//! are settings). Every change is audited.
//!
//! Invariants: a rule names only channels of its own organisation; deleting or disabling a
//! rule ends its alert in the same transaction (a firing one resolves with `alert.resolved`, a
//! pending one goes silently), so no alert is left firing without a rule to resolve it. Editing
//! a rule keeps its state: the next tick measures with the new settings.

use axum::Json;
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::model::{AlertRule, RuleId, RuleState};
use super::readings::RuleReadings;
use super::request::*;
use crate::alerting::evaluator::transitions::end_rule_alert;
use crate::alerting::{Alerting, AlertingError};
use crate::auth::{Admin, Auth, Viewer, audit};
use crate::clock::Timestamp;
use crate::http::error::Problem;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson};
use crate::store::Store;

/// The most rules one organisation may have.
pub const MAX_RULES_PER_ORG: usize = 1000;
/// The longest For or Recovery period.
pub const MAX_PERIOD_SECONDS: i64 = 86_400;
pub(super) const DEFAULT_WINDOW_SECONDS: i64 = 300;
pub(super) const MAX_CHANNELS: usize = 20;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
    Store: FromRef<S>,
    RuleReadings: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(list_rules, create_rule))
        .routes(routes!(get_rule, replace_rule, update_rule, delete_rule))
}

/// Lists the organisation's alert rules, oldest first, each with its state.
#[utoipa::path(get, path = "/api/v1/alert-rules", tag = "alerts",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<RuleResponse>), problems::Invalid))]
async fn list_rules(
    State(alerting): State<Alerting>,
    State(readings): State<RuleReadings>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<RuleResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let after = page.cursor_as(RuleId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    // One row more than asked tells whether another page follows.
    let rows = alerting
        .store()
        .read(move |txn| {
            let rules = db::rules_of_org(txn, &org, after.as_ref(), limit + 1)?;
            let mut rows = Vec::with_capacity(rules.len());
            for rule in rules {
                let state = db::rule_state(txn, &rule)?;
                rows.push((rule, state));
            }
            Ok::<_, AlertingError>(rows)
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |(rule, _)| rule.id.to_string(),
        |(rule, state)| rule_view(rule, state, readings.get(&rule.id)),
    )))
}

/// Creates an alert rule; the evaluator picks it up at its next tick.
#[utoipa::path(post, path = "/api/v1/alert-rules", tag = "alerts", request_body = RuleRequest,
    responses((status = 201, body = RuleResponse),
        problems::Invalid,
        (status = 409, description = "the organisation has the most rules it may have", body = Problem, content_type = "application/problem+json")))]
async fn create_rule(
    State(alerting): State<Alerting>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<RuleRequest>,
) -> Result<(StatusCode, Json<RuleResponse>), ApiError> {
    let now = alerting.clock().now();
    let rule = complete(blank_rule(&caller.org_id, now), request)?;
    let actor = caller.actor();
    let stored = rule.clone();
    alerting
        .store()
        .write(move |txn| {
            check_channels(txn, &stored)?;
            if db::rule_count(txn, &stored.org_id)? >= MAX_RULES_PER_ORG {
                return Err(AlertingError::RuleLimit(MAX_RULES_PER_ORG));
            }
            db::put_rule(txn, &stored)?;
            audit::record(
                txn,
                Some(&stored.org_id),
                &actor,
                "alert_rule.created",
                Some(stored.id.as_str()),
                json!({"name": stored.name, "kind": stored.kind.as_str()}),
                now,
            )?;
            Ok(())
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(rule_view(&rule, &RuleState::default(), None)),
    ))
}

/// One alert rule with its state.
#[utoipa::path(get, path = "/api/v1/alert-rules/{id}", tag = "alerts",
    params(("id" = String, Path, description = "alert rule id")),
    responses((status = 200, body = RuleResponse), problems::NotFound))]
async fn get_rule(
    State(alerting): State<Alerting>,
    State(readings): State<RuleReadings>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<RuleResponse>, ApiError> {
    let id = parse_rule_id(&id)?;
    let org = caller.org_id.clone();
    let view = alerting
        .store()
        .read(move |txn| {
            let rule =
                db::rule_of_org(txn, &org, &id)?.ok_or(AlertingError::NotFound("alert rule"))?;
            let state = db::rule_state(txn, &rule)?;
            let reading = readings.get(&rule.id);
            Ok::<_, AlertingError>(rule_view(&rule, &state, reading))
        })
        .await?;
    Ok(Json(view))
}

/// How a change makes the new rule from the stored one, the request and the time.
type Edit = fn(&AlertRule, RuleRequest, Timestamp) -> Result<AlertRule, AlertingError>;

/// `PUT`: the stored rule's identity, every other field from the request or its default.
fn replacement(
    stored: &AlertRule,
    request: RuleRequest,
    now: Timestamp,
) -> Result<AlertRule, AlertingError> {
    let base = AlertRule {
        id: stored.id.clone(),
        created_at: stored.created_at,
        ..blank_rule(&stored.org_id, now)
    };
    complete(base, request)
}

/// `PATCH`: the stored rule with the fields sent.
fn update(
    stored: &AlertRule,
    request: RuleRequest,
    _now: Timestamp,
) -> Result<AlertRule, AlertingError> {
    patched(stored.clone(), request)
}

/// Changes a rule as `edit` says; disabling it ends its alert.
async fn change_rule(
    alerting: &Alerting,
    readings: &RuleReadings,
    caller: &crate::auth::Caller,
    id: &str,
    request: RuleRequest,
    edit: Edit,
) -> Result<Json<RuleResponse>, ApiError> {
    let id = parse_rule_id(id)?;
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let reading = readings.get(&id);
    // The request is merged inside the transaction, onto the rule as it is there.
    let (view, events) = alerting
        .store()
        .write(move |txn| {
            let stored =
                db::rule_of_org(txn, &org, &id)?.ok_or(AlertingError::NotFound("alert rule"))?;
            let mut rule = edit(&stored, request.clone(), now)?;
            rule.updated_at = now;
            check_channels(txn, &rule)?;
            let mut state = db::rule_state(txn, &rule)?;
            let mut events = 0;
            if stored.enabled && !rule.enabled {
                events = end_rule_alert(txn, &org, &state.phase, now, &base_url)?;
                state = RuleState::default();
                db::put_rule_state(txn, &rule, &state)?;
            }
            db::put_rule(txn, &rule)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "alert_rule.updated",
                Some(rule.id.as_str()),
                json!({"name": rule.name, "enabled": rule.enabled}),
                now,
            )?;
            Ok::<_, AlertingError>((rule_view(&rule, &state, reading), events))
        })
        .await?;
    if events > 0 {
        alerting.wake_deliveries();
    }
    Ok(Json(view))
}

/// Replaces a rule: fields left out take their defaults.
#[utoipa::path(put, path = "/api/v1/alert-rules/{id}", tag = "alerts", request_body = RuleRequest,
    params(("id" = String, Path, description = "alert rule id")),
    responses((status = 200, body = RuleResponse),
        problems::Invalid,
        problems::NotFound))]
async fn replace_rule(
    State(alerting): State<Alerting>,
    State(readings): State<RuleReadings>,
    Admin(caller): Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<RuleRequest>,
) -> Result<Json<RuleResponse>, ApiError> {
    change_rule(&alerting, &readings, &caller, &id, request, replacement).await
}

/// Changes the fields sent; `null` clears `service` or `environment`.
#[utoipa::path(patch, path = "/api/v1/alert-rules/{id}", tag = "alerts", request_body = RuleRequest,
    params(("id" = String, Path, description = "alert rule id")),
    responses((status = 200, body = RuleResponse),
        problems::Invalid,
        problems::NotFound))]
async fn update_rule(
    State(alerting): State<Alerting>,
    State(readings): State<RuleReadings>,
    Admin(caller): Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<RuleRequest>,
) -> Result<Json<RuleResponse>, ApiError> {
    change_rule(&alerting, &readings, &caller, &id, request, update).await
}

/// Deletes a rule; its firing alert resolves (`alert.resolved`), a pending one goes.
#[utoipa::path(delete, path = "/api/v1/alert-rules/{id}", tag = "alerts",
    params(("id" = String, Path, description = "alert rule id")),
    responses((status = 204), problems::NotFound))]
async fn delete_rule(
    State(alerting): State<Alerting>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_rule_id(&id)?;
    let (org, actor) = (caller.org_id.clone(), caller.actor());
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let events = alerting
        .store()
        .write(move |txn| {
            let rule =
                db::rule_of_org(txn, &org, &id)?.ok_or(AlertingError::NotFound("alert rule"))?;
            let state = db::rule_state(txn, &rule)?;
            let events = end_rule_alert(txn, &org, &state.phase, now, &base_url)?;
            db::remove_rule(txn, &rule)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                "alert_rule.deleted",
                Some(rule.id.as_str()),
                json!({"name": rule.name}),
                now,
            )?;
            Ok::<_, AlertingError>(events)
        })
        .await?;
    if events > 0 {
        alerting.wake_deliveries();
    }
    Ok(StatusCode::NO_CONTENT)
}
