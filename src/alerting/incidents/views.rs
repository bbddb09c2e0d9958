//! Wire types of the incidents API: request bodies, the incident as answered, and the
//! rendering of a stored incident (records and wire types are different types).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::model::{Incident, IncidentStatus, TimelineEntry};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenIncidentRequest {
    pub title: String,
    /// critical, high, warning or info; `high` when omitted.
    #[serde(default)]
    pub severity: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    /// Alerts this incident is about.
    #[serde(default)]
    pub alert_ids: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateIncidentRequest {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub severity: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    /// `resolved` resolves (as `POST …/resolve`); `open` reopens a resolved incident.
    #[serde(default)]
    pub status: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteRequest {
    pub text: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// Written to the timeline with the resolution.
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FieldChangeResponse {
    pub field: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineEntryResponse {
    pub at: String,
    /// opened, updated, note, resolved or reopened.
    pub kind: String,
    pub actor_id: Option<String>,
    pub text: String,
    pub changes: Vec<FieldChangeResponse>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentResponse {
    pub id: String,
    pub title: String,
    pub severity: String,
    pub description: Option<String>,
    pub service: Option<String>,
    pub environment: Option<String>,
    /// open or resolved.
    pub status: String,
    pub opened_at: String,
    pub resolved_at: Option<String>,
    pub alert_ids: Vec<String>,
    pub timeline: Vec<TimelineEntryResponse>,
}

pub(crate) fn incident_view(incident: &Incident) -> IncidentResponse {
    let entry_view = |entry: &TimelineEntry| TimelineEntryResponse {
        at: entry.at.to_rfc3339(),
        kind: entry.kind.clone(),
        actor_id: entry.actor_id.as_ref().map(ToString::to_string),
        text: entry.text.clone(),
        changes: entry
            .changes
            .iter()
            .map(|change| FieldChangeResponse {
                field: change.field.clone(),
                from: change.from.clone(),
                to: change.to.clone(),
            })
            .collect(),
    };
    IncidentResponse {
        id: incident.id.to_string(),
        title: incident.title.clone(),
        severity: incident.severity.clone(),
        description: incident.description.clone(),
        service: incident.service.clone(),
        environment: incident.environment.clone(),
        status: match incident.status {
            IncidentStatus::Open => "open",
            IncidentStatus::Resolved => "resolved",
        }
        .to_string(),
        opened_at: incident.opened_at.to_rfc3339(),
        resolved_at: incident.resolved_at.map(|at| at.to_rfc3339()),
        alert_ids: incident.alert_ids.clone(),
        timeline: incident.timeline.iter().map(entry_view).collect(),
    }
}
