//! Alerts and the pure rules over them: the report shape every source (rules, the generic
//! body, Alertmanager; `external_alerts.rs` reads those bodies) is turned into, and how a
//! report moves an alert between `firing` and `resolved`.
//!
//! Invariants: one dedup key names at most one live (firing) alert per organisation, so a
//! repeated firing updates it instead of raising another; a firing after a resolution raises a
//! new alert (the old one keeps its history); `acknowledged_at` is set once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

/// The allowed severities, shared with alert rules (CONTRACT.md section 4).
pub const SEVERITIES: &[&str] = &["critical", "high", "warning", "info"];

crate::typed_id!(
    /// An alert (`alr_…`).
    AlertId,
    "alr_"
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    /// A rule's condition is true but its For period has not elapsed (rule alerts only).
    Pending,
    Firing,
    Resolved,
}

impl AlertState {
    pub fn parse(text: &str) -> Option<AlertState> {
        match text {
            "pending" => Some(AlertState::Pending),
            "firing" => Some(AlertState::Firing),
            "resolved" => Some(AlertState::Resolved),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
        }
    }
}

/// One step of an alert's life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertHistoryEntry {
    pub at: Timestamp,
    /// `fired`, `updated`, `resolved` or `acknowledged`.
    pub kind: String,
    pub actor_id: Option<UserId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub id: AlertId,
    pub org_id: OrgId,
    /// `webhook` or `alertmanager` (external), `rule` (an alert rule) or `spike` (browser
    /// error spikes).
    pub source: String,
    pub dedup_key: String,
    pub title: String,
    pub body: String,
    pub severity: String,
    pub service: Option<String>,
    pub environment: Option<String>,
    pub state: AlertState,
    pub fired_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub acknowledged_by: Option<UserId>,
    pub acknowledged_at: Option<Timestamp>,
    /// Alertmanager labels, or empty.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub url: Option<String>,
    pub history: Vec<AlertHistoryEntry>,
    /// The rule that raised it (`rul_…`), for rule alerts.
    #[serde(default)]
    pub rule_id: Option<String>,
    /// The channels its events go to; `None` is every channel whose filter matches.
    #[serde(default)]
    pub channels: Option<Vec<String>>,
    /// The incident its rule opened with it, if any.
    #[serde(default)]
    pub incident_id: Option<String>,
}

/// The most history entries one alert keeps; past it, the oldest after the first (how the
/// alert began) give way, so a monitor repeating a changing alert cannot grow it without end.
pub const MAX_ALERT_HISTORY: usize = 100;

impl Alert {
    /// Adds one step to the alert's history, keeping it within `MAX_ALERT_HISTORY`.
    pub fn record(&mut self, entry: AlertHistoryEntry) {
        if self.history.len() >= MAX_ALERT_HISTORY {
            self.history.remove(1.min(self.history.len() - 1));
        }
        self.history.push(entry);
    }

    /// Raised by external monitoring through the alerts webhook (and so found by dedup key).
    pub fn is_external(&self) -> bool {
        self.source == "webhook" || self.source == "alertmanager"
    }
}

impl Record for Alert {
    const KIND: &'static str = "alert";
}

/// One alert as reported, whatever the body's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertReport {
    pub source: &'static str,
    pub dedup_key: String,
    pub title: String,
    pub body: String,
    pub severity: String,
    pub service: Option<String>,
    pub environment: Option<String>,
    pub state: AlertState,
    pub labels: BTreeMap<String, String>,
    pub url: Option<String>,
}

/// The dedup key of a generic report that gave none: the same title, service and environment
/// are the same alert.
pub fn default_dedup_key(title: &str, service: Option<&str>, environment: Option<&str>) -> String {
    use sha2::Digest;
    let joined = format!(
        "{title}\u{0}{}\u{0}{}",
        service.unwrap_or(""),
        environment.unwrap_or("")
    );
    hex::encode(&sha2::Sha256::digest(joined.as_bytes())[..16])
}

/// Maps the severities monitoring tools use onto the four of the contract; an unknown one is
/// `warning`, so an alert is never dropped for its label.
pub fn severity_from_label(label: Option<&str>) -> String {
    let label = label.unwrap_or("").trim().to_ascii_lowercase();
    let mapped = match label.as_str() {
        "critical" | "crit" | "fatal" | "emergency" | "page" | "p1" => "critical",
        "high" | "error" | "err" | "major" | "p2" => "high",
        "info" | "informational" | "notice" | "none" | "low" | "p4" | "p5" => "info",
        _ => "warning",
    };
    debug_assert!(SEVERITIES.contains(&mapped));
    mapped.to_string()
}

/// What a report does to the live alert of its dedup key.
#[derive(Debug, Clone, PartialEq)]
pub enum AlertChange {
    /// A new firing alert: emit `alert.fired`.
    Fired(Alert),
    /// The live alert again, fields refreshed: no event.
    Updated(Alert),
    /// The live alert resolved: emit `alert.resolved`.
    Resolved(Alert),
    /// A resolution for nothing live (already resolved, or never seen): nothing to do.
    Ignored,
}

/// Applies `report` to `live`, the firing alert with the same dedup key if any.
pub fn apply_alert_report(
    live: Option<&Alert>,
    report: &AlertReport,
    new_id: AlertId,
    org: &OrgId,
    now: Timestamp,
) -> AlertChange {
    let history = |kind: &str| AlertHistoryEntry {
        at: now,
        kind: kind.to_string(),
        actor_id: None,
    };
    match (live, report.state) {
        (None, AlertState::Resolved | AlertState::Pending) => AlertChange::Ignored,
        (None, AlertState::Firing) => AlertChange::Fired(Alert {
            id: new_id,
            org_id: org.clone(),
            source: report.source.to_string(),
            dedup_key: report.dedup_key.clone(),
            title: report.title.clone(),
            body: report.body.clone(),
            severity: report.severity.clone(),
            service: report.service.clone(),
            environment: report.environment.clone(),
            state: AlertState::Firing,
            fired_at: now,
            resolved_at: None,
            acknowledged_by: None,
            acknowledged_at: None,
            labels: report.labels.clone(),
            url: report.url.clone(),
            history: vec![history("fired")],
            rule_id: None,
            channels: None,
            incident_id: None,
        }),
        (Some(alert), state) => {
            let mut next = alert.clone();
            next.title = report.title.clone();
            next.body = report.body.clone();
            next.severity = report.severity.clone();
            next.service = report.service.clone().or(next.service);
            next.environment = report.environment.clone().or(next.environment);
            next.labels = report.labels.clone();
            next.url = report.url.clone().or(next.url);
            if state == AlertState::Resolved {
                next.state = AlertState::Resolved;
                next.resolved_at = Some(now);
                next.record(history("resolved"));
                return AlertChange::Resolved(next);
            }
            // Alertmanager repeats a firing alert every `repeat_interval`: record no history
            // entry for an unchanged repeat, so the history stays readable.
            if next != *alert {
                next.record(history("updated"));
            }
            AlertChange::Updated(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(state: AlertState) -> AlertReport {
        AlertReport {
            source: "webhook",
            dedup_key: "k".into(),
            title: "t".into(),
            body: String::new(),
            severity: "high".into(),
            service: None,
            environment: None,
            state,
            labels: BTreeMap::new(),
            url: None,
        }
    }

    #[test]
    fn firing_repeats_update_one_alert_and_resolution_ends_it() {
        let org = OrgId::generate();
        let fired = match apply_alert_report(
            None,
            &report(AlertState::Firing),
            AlertId::generate(),
            &org,
            Timestamp(1),
        ) {
            AlertChange::Fired(alert) => alert,
            other => panic!("{other:?}"),
        };
        let again = apply_alert_report(
            Some(&fired),
            &report(AlertState::Firing),
            AlertId::generate(),
            &org,
            Timestamp(2),
        );
        assert_eq!(
            again,
            AlertChange::Updated(fired.clone()),
            "unchanged repeat"
        );
        match apply_alert_report(
            Some(&fired),
            &report(AlertState::Resolved),
            AlertId::generate(),
            &org,
            Timestamp(3),
        ) {
            AlertChange::Resolved(alert) => {
                assert_eq!(alert.id, fired.id);
                assert_eq!(alert.resolved_at, Some(Timestamp(3)));
            }
            other => panic!("{other:?}"),
        }
        let nothing = apply_alert_report(
            None,
            &report(AlertState::Resolved),
            AlertId::generate(),
            &org,
            Timestamp(4),
        );
        assert_eq!(nothing, AlertChange::Ignored);
    }

    #[test]
    fn history_keeps_its_first_entry_and_the_latest_within_the_bound() {
        let org = OrgId::generate();
        let AlertChange::Fired(mut alert) = apply_alert_report(
            None,
            &report(AlertState::Firing),
            AlertId::generate(),
            &org,
            Timestamp(1),
        ) else {
            panic!("a first firing raises an alert");
        };
        for at in 2..300 {
            alert.record(AlertHistoryEntry {
                at: Timestamp(at),
                kind: "updated".into(),
                actor_id: None,
            });
        }
        assert_eq!(alert.history.len(), MAX_ALERT_HISTORY);
        assert_eq!(alert.history[0].kind, "fired");
        assert_eq!(
            alert.history.last().map(|entry| entry.at),
            Some(Timestamp(299))
        );
    }

    #[test]
    fn severities_and_default_keys() {
        assert_eq!(severity_from_label(Some("ERROR")), "high");
        assert_eq!(severity_from_label(None), "warning");
        assert_eq!(
            default_dedup_key("a", Some("b"), None),
            default_dedup_key("a", Some("b"), None)
        );
        assert_ne!(
            default_dedup_key("a", Some("b"), None),
            default_dedup_key("a", None, Some("b"))
        );
    }
}
