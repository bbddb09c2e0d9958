//! Incidents by hand: open, change, add notes, resolve, read with their timeline.
//! `POST /api/v1/incidents` emits `incident.opened`; `PATCH …/{id}` and `POST …/notes` emit
//! `incident.updated`; `POST …/resolve` emits `incident.resolved`.
//!
//! Invariants: every change appends to the timeline and enqueues its event in the write
//! transaction that makes it, so the timeline and what receivers heard agree; a change that
//! changes nothing (a PATCH with the current values, resolving a resolved incident) appends
//! nothing and emits nothing; members and above change incidents, viewers read them.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db;
use super::model::IncidentId;
use super::model::{
    FieldChange, Incident, IncidentStatus, MAX_TIMELINE, TimelineEntry, field_changes,
};
use super::views::{
    IncidentResponse, NoteRequest, OpenIncidentRequest, ResolveRequest, UpdateIncidentRequest,
    incident_view,
};
use crate::accounts::model::UserId;
use crate::alerting::alerts::model::SEVERITIES;
use crate::alerting::releases::deployments::{optional, required};
use crate::alerting::{Alerting, AlertingError};
use crate::auth::{Auth, Member, Viewer};
use crate::clock::Timestamp;
use crate::http::extract::parse_json;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::{ApiError, ApiJson, ErrorCode};
use crate::notify::{self, Event, EventExtra};
use crate::store::keep_forward;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(open_incident, list_incidents))
        .routes(routes!(get_incident, update_incident))
        .routes(routes!(add_note))
        .routes(routes!(resolve_incident))
}

fn checked_severity(severity: &str) -> Result<String, ApiError> {
    match SEVERITIES.contains(&severity) {
        true => Ok(severity.to_string()),
        false => Err(ApiError::new(
            ErrorCode::InvalidPayload,
            "severity: one of critical, high, warning, info",
        )),
    }
}

pub(crate) fn incident_event(
    name: &'static str,
    incident: &Incident,
    text: &str,
    base_url: &str,
) -> Event {
    Event {
        name,
        org_id: incident.org_id.clone(),
        alert_id: incident.alert_ids.first().cloned(),
        title: incident.title.clone(),
        body: text.to_string(),
        severity: incident.severity.clone(),
        service: incident.service.clone().unwrap_or_default(),
        environment: incident.environment.clone().unwrap_or_default(),
        url: format!("{base_url}/incidents/{}", incident.id),
        timestamp: incident
            .timeline
            .last()
            .map(|entry| entry.at)
            .unwrap_or(incident.opened_at),
        extra: EventExtra::Incident {
            incident_id: incident.id.to_string(),
        },
    }
}

fn entry(at: Timestamp, kind: &str, actor: &UserId, text: String) -> TimelineEntry {
    TimelineEntry {
        at,
        kind: kind.to_string(),
        actor_id: Some(actor.clone()),
        text,
        changes: Vec::new(),
    }
}

fn parse_incident_id(id: &str) -> Result<IncidentId, ApiError> {
    IncidentId::parse(id).map_err(|_| ApiError::not_found("incident"))
}

/// Opens an incident by hand.
#[utoipa::path(post, path = "/api/v1/incidents", tag = "incidents", request_body = OpenIncidentRequest,
    responses((status = 201, body = IncidentResponse),
        problems::Invalid))]
async fn open_incident(
    State(alerting): State<Alerting>,
    Member(caller): Member,
    ApiJson(request): ApiJson<OpenIncidentRequest>,
) -> Result<(StatusCode, Json<IncidentResponse>), ApiError> {
    let severity = checked_severity(request.severity.as_deref().unwrap_or("high"))?;
    if request.alert_ids.len() > 100 {
        return Err(ApiError::new(
            ErrorCode::InvalidPayload,
            "alert_ids: at most 100",
        ));
    }
    let now = alerting.clock().now();
    let title = required("title", &request.title, 300)?;
    let mut incident = Incident {
        id: IncidentId::generate(),
        org_id: caller.org_id.clone(),
        title,
        severity,
        description: optional("description", request.description.as_deref(), 10_000)?,
        service: optional("service", request.service.as_deref(), 200)?,
        environment: optional("environment", request.environment.as_deref(), 100)?,
        status: IncidentStatus::Open,
        opened_at: now,
        resolved_at: None,
        alert_ids: request.alert_ids,
        timeline: Vec::new(),
    };
    let opened = format!("Opened: {}", incident.title);
    incident
        .timeline
        .push(entry(now, "opened", &caller.user_id, opened.clone()));
    let (stored, base_url) = (incident.clone(), alerting.base_url().to_string());
    alerting
        .store()
        .write(move |txn| {
            db::put_incident(txn, &stored)?;
            notify::emit(
                txn,
                &incident_event("incident.opened", &stored, &opened, &base_url),
            )?;
            Ok::<_, AlertingError>(())
        })
        .await?;
    alerting.wake_deliveries();
    Ok((StatusCode::CREATED, Json(incident_view(&incident))))
}

/// Lists the organisation's incidents, oldest first, each with its timeline.
#[utoipa::path(get, path = "/api/v1/incidents", tag = "incidents",
    params(("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query),
        ("status" = Option<String>, Query, description = "open or resolved")),
    responses((status = 200, body = Page<IncidentResponse>), problems::Invalid))]
async fn list_incidents(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<IncidentResponse>>, ApiError> {
    let page = PageRequest::from_query(query.as_deref())?;
    let status = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .find(|(name, _)| name == "status")
        .map(|(_, value)| match value.as_ref() {
            "open" => Ok(IncidentStatus::Open),
            "resolved" => Ok(IncidentStatus::Resolved),
            _ => Err(ApiError::new(
                ErrorCode::InvalidParameter,
                "status: open or resolved",
            )),
        })
        .transpose()?;
    let after = page.cursor_as(IncidentId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let rows = alerting
        .store()
        .read(move |txn| {
            keep_forward(
                after,
                limit,
                |after, n| db::incidents_of_org(txn, &org, after, n),
                |incident: &Incident| incident.id.clone(),
                |incident| status.is_none_or(|wanted| wanted == incident.status),
            )
        })
        .await?;
    Ok(Json(page.answer(
        rows,
        |incident: &Incident| incident.id.to_string(),
        incident_view,
    )))
}

/// One incident with its timeline.
#[utoipa::path(get, path = "/api/v1/incidents/{id}", tag = "incidents",
    params(("id" = String, Path, description = "incident id")),
    responses((status = 200, body = IncidentResponse), problems::NotFound))]
async fn get_incident(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Result<Json<IncidentResponse>, ApiError> {
    let id = parse_incident_id(&id)?;
    let org = caller.org_id.clone();
    let incident = alerting
        .store()
        .read(move |txn| db::incident_of_org(txn, &org, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("incident"))?;
    Ok(Json(incident_view(&incident)))
}

/// What a change did: the event it emits and the sentence it sends, or nothing at all.
type Change = Option<(&'static str, String)>;

/// Loads the incident, applies `change` and, when it changed something, stores it with its
/// event in one transaction. `change` may run twice (the store may retry the batch), so it
/// works only on the incident it is given.
async fn change_incident(
    alerting: &Alerting,
    caller: &crate::auth::Caller,
    id: &str,
    change: impl Fn(&mut Incident, Timestamp) -> Result<Change, AlertingError> + Send + 'static,
) -> Result<Json<IncidentResponse>, ApiError> {
    let id = parse_incident_id(id)?;
    let org = caller.org_id.clone();
    let now = alerting.clock().now();
    let base_url = alerting.base_url().to_string();
    let incident = alerting
        .store()
        .write(move |txn| {
            let mut incident =
                db::incident_of_org(txn, &org, &id)?.ok_or(AlertingError::NotFound("incident"))?;
            let Some((event, text)) = change(&mut incident, now)? else {
                return Ok::<_, AlertingError>(incident);
            };
            if incident.timeline.len() > MAX_TIMELINE {
                return Err(AlertingError::TimelineFull(MAX_TIMELINE));
            }
            db::put_incident(txn, &incident)?;
            notify::emit(txn, &incident_event(event, &incident, &text, &base_url))?;
            Ok(incident)
        })
        .await?;
    alerting.wake_deliveries();
    Ok(Json(incident_view(&incident)))
}

fn resolve(incident: &mut Incident, actor: &UserId, note: Option<&str>, now: Timestamp) -> Change {
    if incident.status == IncidentStatus::Resolved {
        return None;
    }
    incident.status = IncidentStatus::Resolved;
    incident.resolved_at = Some(now);
    let text = match note {
        Some(note) => format!("Resolved: {note}"),
        None => "Resolved".to_string(),
    };
    incident
        .timeline
        .push(entry(now, "resolved", actor, text.clone()));
    Some(("incident.resolved", text))
}

/// Changes an incident's fields (`incident.updated`); `status` resolves or reopens it.
#[utoipa::path(patch, path = "/api/v1/incidents/{id}", tag = "incidents", request_body = UpdateIncidentRequest,
    params(("id" = String, Path, description = "incident id")),
    responses((status = 200, body = IncidentResponse), problems::NotFound))]
async fn update_incident(
    State(alerting): State<Alerting>,
    Member(caller): Member,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<UpdateIncidentRequest>,
) -> Result<Json<IncidentResponse>, ApiError> {
    let title = request
        .title
        .as_deref()
        .map(|title| required("title", title, 300))
        .transpose()?;
    let severity = request
        .severity
        .as_deref()
        .map(checked_severity)
        .transpose()?;
    // An empty string clears an optional field; absent keeps it.
    let description = request
        .description
        .as_deref()
        .map(|text| optional("description", Some(text), 10_000))
        .transpose()?;
    let service = request
        .service
        .as_deref()
        .map(|text| optional("service", Some(text), 200))
        .transpose()?;
    let environment = request
        .environment
        .as_deref()
        .map(|text| optional("environment", Some(text), 100))
        .transpose()?;
    let status = match request.status.as_deref() {
        None => None,
        Some("open") => Some(IncidentStatus::Open),
        Some("resolved") => Some(IncidentStatus::Resolved),
        Some(_) => {
            return Err(ApiError::new(
                ErrorCode::InvalidPayload,
                "status: open or resolved",
            ));
        }
    };
    let actor = caller.user_id.clone();
    change_incident(&alerting, &caller, &id, move |incident, now| {
        let before = incident.clone();
        if let Some(title) = &title {
            incident.title = title.clone();
        }
        if let Some(severity) = &severity {
            incident.severity = severity.clone();
        }
        if let Some(description) = &description {
            incident.description = description.clone();
        }
        if let Some(service) = &service {
            incident.service = service.clone();
        }
        if let Some(environment) = &environment {
            incident.environment = environment.clone();
        }
        let changes: Vec<FieldChange> = field_changes(&before, incident);
        let reopened =
            status == Some(IncidentStatus::Open) && before.status != IncidentStatus::Open;
        if reopened {
            incident.status = IncidentStatus::Open;
            incident.resolved_at = None;
        }
        let mut outcome = None;
        if !changes.is_empty() || reopened {
            let fields: Vec<&str> = changes.iter().map(|c| c.field.as_str()).collect();
            let text = match (reopened, fields.is_empty()) {
                (true, true) => "Reopened".to_string(),
                (true, false) => format!("Reopened; changed {}", fields.join(", ")),
                (false, _) => format!("Changed {}", fields.join(", ")),
            };
            let kind = if reopened { "reopened" } else { "updated" };
            let mut updated = entry(now, kind, &actor, text.clone());
            updated.changes = changes;
            incident.timeline.push(updated);
            outcome = Some(("incident.updated", text));
        }
        // One request, one event: resolving in the same PATCH sends `incident.resolved`, and
        // the field changes stay visible in the timeline.
        if status == Some(IncidentStatus::Resolved)
            && let Some(resolved) = resolve(incident, &actor, None, now)
        {
            outcome = Some(resolved);
        }
        Ok(outcome)
    })
    .await
}

/// Adds a note to the timeline (`incident.updated`).
#[utoipa::path(post, path = "/api/v1/incidents/{id}/notes", tag = "incidents", request_body = NoteRequest,
    params(("id" = String, Path, description = "incident id")),
    responses((status = 201, body = IncidentResponse), problems::NotFound))]
async fn add_note(
    State(alerting): State<Alerting>,
    Member(caller): Member,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<NoteRequest>,
) -> Result<(StatusCode, Json<IncidentResponse>), ApiError> {
    let text = required("text", &request.text, 10_000)?;
    let actor = caller.user_id.clone();
    let view = change_incident(&alerting, &caller, &id, move |incident, now| {
        incident
            .timeline
            .push(entry(now, "note", &actor, text.clone()));
        Ok(Some(("incident.updated", text.clone())))
    })
    .await?;
    Ok((StatusCode::CREATED, view))
}

/// Resolves an incident (`incident.resolved`); resolving a resolved one changes nothing.
#[utoipa::path(post, path = "/api/v1/incidents/{id}/resolve", tag = "incidents", request_body = Option<ResolveRequest>,
    params(("id" = String, Path, description = "incident id")),
    responses((status = 200, body = IncidentResponse), problems::NotFound))]
async fn resolve_incident(
    State(alerting): State<Alerting>,
    Member(caller): Member,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<IncidentResponse>, ApiError> {
    // The body is optional: `curl -X POST …/resolve` with nothing is the common case.
    let request: ResolveRequest = match body.iter().all(u8::is_ascii_whitespace) {
        true => ResolveRequest::default(),
        false => parse_json(&body)?,
    };
    let note = optional("note", request.note.as_deref(), 10_000)?;
    let actor = caller.user_id.clone();
    change_incident(&alerting, &caller, &id, move |incident, now| {
        Ok(resolve(incident, &actor, note.as_deref(), now))
    })
    .await
}
