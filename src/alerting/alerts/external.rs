//! Alerts raised by external monitoring: reading the generic alert body (CONTRACT.md section 4)
//! and the Prometheus Alertmanager webhook payload (version 4) into `AlertReport`s, with the
//! field that is wrong named in the error.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::model::SEVERITIES;
use super::model::{AlertReport, AlertState, default_dedup_key, severity_from_label};

/// The generic alert body (CONTRACT.md section 4).
#[derive(Debug, Deserialize)]
pub struct GenericAlert {
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub severity: String,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    pub status: String,
    #[serde(default)]
    pub dedup_key: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
}

/// The Prometheus Alertmanager webhook payload, version 4: the fields Lookout reads.
#[derive(Debug, Deserialize)]
pub struct AlertmanagerPayload {
    pub version: String,
    pub alerts: Vec<AlertmanagerAlert>,
    #[serde(default, rename = "externalURL")]
    pub external_url: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct AlertmanagerAlert {
    pub status: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, rename = "generatorURL")]
    pub generator_url: Option<String>,
    #[serde(default)]
    pub fingerprint: Option<String>,
}

fn state_of(status: &str) -> Option<AlertState> {
    match status {
        "firing" => Some(AlertState::Firing),
        "resolved" => Some(AlertState::Resolved),
        _ => None,
    }
}

/// Why a body could not be read as alerts; the text names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertBodyError(pub String);

fn trimmed(value: Option<&str>, field: &str, max: usize) -> Result<Option<String>, AlertBodyError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) if value.chars().count() > max => {
            Err(AlertBodyError(format!("{field}: at most {max} characters")))
        }
        Some(value) => Ok(Some(value.to_string())),
    }
}

pub fn generic_report(alert: &GenericAlert) -> Result<AlertReport, AlertBodyError> {
    let title = trimmed(Some(&alert.title), "title", 300)?
        .ok_or_else(|| AlertBodyError("title: 1 to 300 characters".into()))?;
    let severity = alert.severity.trim();
    if !SEVERITIES.contains(&severity) {
        return Err(AlertBodyError(
            "severity: one of critical, high, warning, info".into(),
        ));
    }
    let state = state_of(alert.status.trim())
        .ok_or_else(|| AlertBodyError("status: firing or resolved".into()))?;
    let service = trimmed(alert.service.as_deref(), "service", 200)?;
    let environment = trimmed(alert.environment.as_deref(), "environment", 100)?;
    let dedup_key = match trimmed(alert.dedup_key.as_deref(), "dedup_key", 200)? {
        Some(key) => key,
        None => default_dedup_key(&title, service.as_deref(), environment.as_deref()),
    };
    Ok(AlertReport {
        source: "webhook",
        dedup_key,
        body: trimmed(alert.body.as_deref(), "body", 10_000)?.unwrap_or_default(),
        title,
        severity: severity.to_string(),
        service,
        environment,
        state,
        labels: BTreeMap::new(),
        url: trimmed(alert.url.as_deref(), "url", 2000)?,
    })
}

/// The most alerts one Alertmanager notification may carry.
pub const MAX_ALERTMANAGER_ALERTS: usize = 500;

pub fn alertmanager_reports(
    payload: &AlertmanagerPayload,
) -> Result<Vec<AlertReport>, AlertBodyError> {
    if payload.version != "4" {
        return Err(AlertBodyError(
            "version: only Alertmanager payload version 4 is understood".into(),
        ));
    }
    if payload.alerts.len() > MAX_ALERTMANAGER_ALERTS {
        return Err(AlertBodyError(format!(
            "alerts: at most {MAX_ALERTMANAGER_ALERTS}"
        )));
    }
    let mut reports = Vec::new();
    for (index, alert) in payload.alerts.iter().enumerate() {
        let field = |name: &str| format!("alerts[{index}].{name}");
        let state = state_of(&alert.status)
            .ok_or_else(|| AlertBodyError(format!("{}: firing or resolved", field("status"))))?;
        let label = |name: &str| alert.labels.get(name).map(String::as_str);
        let note = |name: &str| alert.annotations.get(name).map(String::as_str);
        let title = note("summary")
            .or(label("alertname"))
            .unwrap_or("Alertmanager alert");
        let dedup_key = match &alert.fingerprint {
            Some(fingerprint) if !fingerprint.is_empty() => format!("am:{fingerprint}"),
            // Alertmanager always sends a fingerprint; without one, the label set is the identity.
            _ => format!(
                "am:{}",
                default_dedup_key(&format!("{:?}", alert.labels), None, None)
            ),
        };
        reports.push(AlertReport {
            source: "alertmanager",
            dedup_key,
            title: trimmed(Some(title), &field("title"), 300)?.unwrap_or_default(),
            body: note("description")
                .or(note("message"))
                .or(note("summary"))
                .unwrap_or("")
                .chars()
                .take(10_000)
                .collect(),
            severity: severity_from_label(label("severity")),
            service: trimmed(label("service").or(label("job")), &field("service"), 200)?,
            environment: trimmed(
                label("environment").or(label("env")),
                &field("environment"),
                100,
            )?,
            state,
            labels: alert.labels.clone(),
            url: alert.generator_url.clone().or(payload.external_url.clone()),
        });
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alertmanager(json: serde_json::Value) -> Vec<AlertReport> {
        let payload: AlertmanagerPayload = serde_json::from_value(json).unwrap();
        alertmanager_reports(&payload).unwrap()
    }

    #[test]
    fn alertmanager_alerts_map_labels_and_annotations() {
        let reports = alertmanager(serde_json::json!({
            "version": "4", "status": "firing", "externalURL": "http://am:9093",
            "alerts": [{"status": "firing",
                "labels": {"alertname": "HighLatency", "severity": "page", "job": "checkout"},
                "annotations": {"summary": "p95 over 2s", "description": "checkout is slow"},
                "startsAt": "2026-11-22T12:00:00Z", "generatorURL": "http://prom/graph",
                "fingerprint": "c0ffee"},
              {"status": "resolved", "labels": {"alertname": "DiskFull"}, "annotations": {}}]
        }));
        assert_eq!(reports.len(), 2);
        let first = &reports[0];
        assert_eq!(first.title, "p95 over 2s");
        assert_eq!(first.body, "checkout is slow");
        assert_eq!(first.severity, "critical");
        assert_eq!(first.service.as_deref(), Some("checkout"));
        assert_eq!(first.dedup_key, "am:c0ffee");
        assert_eq!(first.url.as_deref(), Some("http://prom/graph"));
        assert_eq!(reports[1].title, "DiskFull");
        assert_eq!(reports[1].severity, "warning");
        assert_eq!(reports[1].state, AlertState::Resolved);
        assert_eq!(reports[1].url.as_deref(), Some("http://am:9093"));
    }

    #[test]
    fn other_versions_are_refused() {
        let payload: AlertmanagerPayload =
            serde_json::from_value(serde_json::json!({"version": "3", "alerts": []})).unwrap();
        assert!(alertmanager_reports(&payload).is_err());
    }
}
