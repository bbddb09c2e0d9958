//! Incident records and the pure rule over them: which fields an update changed, for the
//! timeline.
//!
//! Invariants: an incident's timeline only grows, oldest first, and holds at most
//! `MAX_TIMELINE` entries; `resolved_at` is set exactly while the incident is resolved.

use serde::{Deserialize, Serialize};

use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// An incident (`inc_…`).
    IncidentId,
    "inc_"
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentStatus {
    Open,
    Resolved,
}

/// One entry of an incident's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub at: Timestamp,
    /// `opened`, `updated`, `note`, `resolved` or `reopened`.
    pub kind: String,
    pub actor_id: Option<UserId>,
    /// The note's text, or a sentence describing the change.
    pub text: String,
    /// For `updated`: each changed field with its old and new value.
    #[serde(default)]
    pub changes: Vec<FieldChange>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    pub id: IncidentId,
    pub org_id: OrgId,
    pub title: String,
    pub severity: String,
    pub description: Option<String>,
    pub service: Option<String>,
    pub environment: Option<String>,
    pub status: IncidentStatus,
    pub opened_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub alert_ids: Vec<String>,
    pub timeline: Vec<TimelineEntry>,
}

impl Record for Incident {
    const KIND: &'static str = "incident";
}

/// The most timeline entries an incident keeps; beyond it, changes are refused (a runaway
/// script must not grow one record without bound).
pub const MAX_TIMELINE: usize = 1000;

/// The changes an update would make to the descriptive fields, in a fixed order.
pub fn field_changes(before: &Incident, after: &Incident) -> Vec<FieldChange> {
    let pairs = [
        ("title", Some(&before.title), Some(&after.title)),
        ("severity", Some(&before.severity), Some(&after.severity)),
        (
            "description",
            before.description.as_ref(),
            after.description.as_ref(),
        ),
        ("service", before.service.as_ref(), after.service.as_ref()),
        (
            "environment",
            before.environment.as_ref(),
            after.environment.as_ref(),
        ),
    ];
    pairs
        .into_iter()
        .filter(|(_, from, to)| from != to)
        .map(|(field, from, to)| FieldChange {
            field: field.to_string(),
            from: from.cloned(),
            to: to.cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_changes_list_only_what_changed() {
        let before = Incident {
            id: IncidentId::generate(),
            org_id: OrgId::generate(),
            title: "Checkout down".into(),
            severity: "high".into(),
            description: None,
            service: None,
            environment: None,
            status: IncidentStatus::Open,
            opened_at: Timestamp(0),
            resolved_at: None,
            alert_ids: vec![],
            timeline: vec![],
        };
        let mut after = before.clone();
        after.severity = "critical".into();
        after.service = Some("checkout".into());
        let changes = field_changes(&before, &after);
        let fields: Vec<&str> = changes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["severity", "service"]);
        assert_eq!(changes[0].from.as_deref(), Some("high"));
        assert!(field_changes(&before, &before).is_empty());
    }
}
