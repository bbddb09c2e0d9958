//! The alert rules API's wire side: the request (every field optional, `null` clears), the
//! answer with the rule's status, and turning a request into a valid rule (on create, every
//! required field; on PUT, a whole replacement; on PATCH, the fields sent), with the checks
//! and their `validation_failed` details.

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use super::model::{AlertRule, RULE_KINDS, RuleId, RuleKind, RuleState};
use super::readings::{Reading, RuleStatus, rule_status};
use crate::accounts::model::OrgId;
use crate::alerting::AlertingError;
use crate::alerting::alerts::model::SEVERITIES;
use crate::alerting::rollup::MAX_WINDOW_SECONDS;
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::store::ReadTxn;

use super::api::{DEFAULT_WINDOW_SECONDS, MAX_CHANNELS, MAX_PERIOD_SECONDS};

/// `null` and absent differ: `Some(None)` clears a field, `None` leaves it.
pub(super) fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A rule as sent. On create and `PUT`, `name` and `kind` are required (and `threshold`
/// except for `new_error_group` and `agent_offline`, which default to 1); on `PATCH` every
/// field is optional and `null` clears `service` or `environment`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct RuleRequest {
    #[serde(default)]
    pub name: Option<String>,
    /// error_count, new_error_group, span_p95_ms or agent_offline.
    #[serde(default)]
    pub kind: Option<String>,
    /// Only telemetry of this service (agent_offline: an agent's name or hostname).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub service: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub environment: Option<Option<String>>,
    /// The condition is `value >= threshold`; greater than 0.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// 1 to 86400; 300 when omitted. For agent_offline: how long an agent must be gone.
    #[serde(default)]
    pub window_seconds: Option<i64>,
    /// 0 to 86400; 0 when omitted (fire at the first true evaluation).
    #[serde(default)]
    pub for_seconds: Option<i64>,
    /// 0 to 86400; 0 when omitted (resolve at the first false evaluation).
    #[serde(default)]
    pub recovery_seconds: Option<i64>,
    /// critical, high, warning or info; warning when omitted.
    #[serde(default)]
    pub severity: Option<String>,
    /// Channel ids of this organisation; empty or omitted: every channel whose filter matches.
    #[serde(default)]
    pub channels: Option<Vec<String>>,
    #[serde(default)]
    pub open_incident: Option<bool>,
    /// true when omitted; a disabled rule is not evaluated and has no alert.
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RuleResponse {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub service: Option<String>,
    pub environment: Option<String>,
    pub threshold: f64,
    pub window_seconds: i64,
    pub for_seconds: i64,
    pub recovery_seconds: i64,
    pub severity: String,
    pub channels: Vec<String>,
    pub open_incident: bool,
    pub enabled: bool,
    /// inactive, pending or firing.
    pub state: String,
    /// The rule's pending or firing alert.
    pub alert_id: Option<String>,
    /// The value measured at the last change of state.
    pub last_value: Option<f64>,
    /// The value measured at the last evaluation and the state it left the rule in.
    pub status: RuleStatus,
    pub created_at: String,
    pub updated_at: String,
}

pub(super) fn rule_view(
    rule: &AlertRule,
    state: &RuleState,
    reading: Option<Reading>,
) -> RuleResponse {
    RuleResponse {
        id: rule.id.to_string(),
        name: rule.name.clone(),
        kind: rule.kind.as_str().to_string(),
        service: rule.service.clone(),
        environment: rule.environment.clone(),
        threshold: rule.threshold,
        window_seconds: rule.window_seconds,
        for_seconds: rule.for_seconds,
        recovery_seconds: rule.recovery_seconds,
        severity: rule.severity.clone(),
        channels: rule.channels.clone(),
        open_incident: rule.open_incident,
        enabled: rule.enabled,
        state: state.phase.name().to_string(),
        alert_id: state.phase.alert_id().map(ToString::to_string),
        last_value: state.value,
        status: rule_status(rule, state, reading),
        created_at: rule.created_at.to_rfc3339(),
        updated_at: rule.updated_at.to_rfc3339(),
    }
}

pub(super) fn invalid(detail: impl Into<String>) -> AlertingError {
    AlertingError::InvalidRule(detail.into())
}

pub(super) fn text(field: &str, value: &str, max: usize) -> Result<String, AlertingError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(invalid(format!("{field}: 1 to {max} characters")));
    }
    Ok(value.to_string())
}

pub(super) fn optional_text(
    field: &str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, AlertingError> {
    match value.map(str::trim).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) => text(field, value, max).map(Some),
    }
}

pub(super) fn seconds(field: &str, value: i64, min: i64, max: i64) -> Result<i64, AlertingError> {
    if !(min..=max).contains(&value) {
        return Err(invalid(format!("{field}: {min} to {max}")));
    }
    Ok(value)
}

/// A rule made wholly from `request` on top of `base`'s defaults (create and `PUT`): `name`
/// and `kind` are required, and `threshold` unless the kind has a default.
pub(super) fn complete(base: AlertRule, request: RuleRequest) -> Result<AlertRule, AlertingError> {
    if request.name.is_none() || request.kind.is_none() {
        return Err(invalid("name and kind are required"));
    }
    let threshold_given = request.threshold.is_some();
    let mut rule = patched(base, request)?;
    if !threshold_given {
        rule.threshold = default_threshold(rule.kind)?;
    }
    Ok(rule)
}

pub(super) fn default_threshold(kind: RuleKind) -> Result<f64, AlertingError> {
    kind.default_threshold()
        .ok_or_else(|| invalid(format!("threshold: required for {}", kind.as_str())))
}

/// `rule` with the fields `request` carries (`PATCH`), checked. A new kind without a threshold
/// takes the kind's default, or is refused when it has none.
pub(super) fn patched(
    mut rule: AlertRule,
    request: RuleRequest,
) -> Result<AlertRule, AlertingError> {
    if let Some(name) = &request.name {
        rule.name = text("name", name, 200)?;
    }
    let kind_changed = match &request.kind {
        Some(kind) => {
            let parsed = RuleKind::parse(kind.trim())
                .ok_or_else(|| invalid(format!("kind: one of {}", RULE_KINDS.join(", "))))?;
            let changed = parsed != rule.kind;
            rule.kind = parsed;
            changed
        }
        None => false,
    };
    if let Some(service) = request.service {
        rule.service = optional_text("service", service.as_deref(), 200)?;
    }
    if let Some(environment) = request.environment {
        rule.environment = optional_text("environment", environment.as_deref(), 100)?;
    }
    match request.threshold {
        Some(threshold) => rule.threshold = threshold,
        None if kind_changed => rule.threshold = default_threshold(rule.kind)?,
        None => {}
    }
    if !rule.threshold.is_finite() || rule.threshold <= 0.0 || rule.threshold > 1e12 {
        return Err(invalid("threshold: a number greater than 0"));
    }
    if let Some(window) = request.window_seconds {
        rule.window_seconds = seconds("window_seconds", window, 1, MAX_WINDOW_SECONDS)?;
    }
    if let Some(value) = request.for_seconds {
        rule.for_seconds = seconds("for_seconds", value, 0, MAX_PERIOD_SECONDS)?;
    }
    if let Some(value) = request.recovery_seconds {
        rule.recovery_seconds = seconds("recovery_seconds", value, 0, MAX_PERIOD_SECONDS)?;
    }
    if let Some(severity) = &request.severity {
        let severity = severity.trim();
        if !SEVERITIES.contains(&severity) {
            return Err(invalid("severity: one of critical, high, warning, info"));
        }
        rule.severity = severity.to_string();
    }
    if let Some(channels) = request.channels {
        if channels.len() > MAX_CHANNELS {
            return Err(invalid(format!("channels: at most {MAX_CHANNELS}")));
        }
        let mut unique = Vec::with_capacity(channels.len());
        for channel in channels {
            if !unique.contains(&channel) {
                unique.push(channel);
            }
        }
        rule.channels = unique;
    }
    if let Some(open) = request.open_incident {
        rule.open_incident = open;
    }
    if let Some(enabled) = request.enabled {
        rule.enabled = enabled;
    }
    Ok(rule)
}

pub(super) fn blank_rule(org: &OrgId, now: Timestamp) -> AlertRule {
    AlertRule {
        id: RuleId::generate(),
        org_id: org.clone(),
        name: String::new(),
        kind: RuleKind::ErrorCount,
        service: None,
        environment: None,
        threshold: 1.0,
        window_seconds: DEFAULT_WINDOW_SECONDS,
        for_seconds: 0,
        recovery_seconds: 0,
        severity: "warning".to_string(),
        channels: Vec::new(),
        open_incident: false,
        enabled: true,
        created_at: now,
        updated_at: now,
    }
}

/// Every channel a rule names must be one of its organisation's.
pub(super) fn check_channels(txn: &impl ReadTxn, rule: &AlertRule) -> Result<(), AlertingError> {
    if rule.channels.is_empty() {
        return Ok(());
    }
    let known = crate::notify::channels_of_org(txn, &rule.org_id)?;
    for wanted in &rule.channels {
        if !known.iter().any(|channel| channel.id.as_str() == wanted) {
            return Err(AlertingError::UnknownChannel(wanted.clone()));
        }
    }
    Ok(())
}

pub(super) fn parse_rule_id(id: &str) -> Result<RuleId, ApiError> {
    RuleId::parse(id).map_err(|_| ApiError::not_found("alert rule"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> RuleRequest {
        serde_json::from_value(json).unwrap()
    }

    fn base() -> AlertRule {
        blank_rule(&OrgId::generate(), Timestamp(0))
    }

    #[test]
    fn create_needs_name_kind_and_a_threshold_where_there_is_no_default() {
        assert!(complete(base(), request(serde_json::json!({"kind": "error_count"}))).is_err());
        assert!(
            complete(
                base(),
                request(serde_json::json!({"name": "n", "kind": "error_count"}))
            )
            .is_err()
        );
        let rule = complete(
            base(),
            request(serde_json::json!({"name": "n", "kind": "new_error_group"})),
        )
        .unwrap();
        assert_eq!(rule.threshold, 1.0);
        assert_eq!(rule.window_seconds, 300);
        assert_eq!(rule.severity, "warning");
        assert!(rule.enabled);
    }

    #[test]
    fn limits_are_enforced_at_their_edges() {
        let with = |field: &str, value: serde_json::Value| {
            let mut body = serde_json::json!({"name": "n", "kind": "error_count", "threshold": 5});
            body[field] = value;
            complete(base(), request(body))
        };
        assert!(with("window_seconds", 1.into()).is_ok());
        assert!(with("window_seconds", 0.into()).is_err());
        assert!(with("window_seconds", 86_400.into()).is_ok());
        assert!(with("window_seconds", 86_401.into()).is_err());
        assert!(with("for_seconds", 0.into()).is_ok());
        assert!(with("for_seconds", (-1).into()).is_err());
        assert!(with("recovery_seconds", 86_401.into()).is_err());
        assert!(with("threshold", 0.into()).is_err());
        assert!(with("severity", "urgent".into()).is_err());
        assert!(with("kind", "cpu".into()).is_err());
        assert!(with("name", "x".repeat(201).into()).is_err());
        assert!(with("name", "x".repeat(200).into()).is_ok());
    }

    #[test]
    fn patch_changes_only_what_it_sends_and_null_clears() {
        let rule = complete(
            base(),
            request(
                serde_json::json!({"name": "n", "kind": "error_count", "threshold": 5,
                "service": "web", "environment": "prod"}),
            ),
        )
        .unwrap();
        let changed = patched(
            rule.clone(),
            request(serde_json::json!({"threshold": 9, "service": null})),
        )
        .unwrap();
        assert_eq!(changed.threshold, 9.0);
        assert_eq!(changed.service, None);
        assert_eq!(changed.environment.as_deref(), Some("prod"));
        assert_eq!(changed.name, "n");
    }

    #[test]
    fn a_new_kind_without_a_threshold_takes_its_default_or_is_refused() {
        let count = complete(
            base(),
            request(serde_json::json!({"name": "n", "kind": "error_count", "threshold": 5})),
        )
        .unwrap();
        let offline =
            patched(count, request(serde_json::json!({"kind": "agent_offline"}))).unwrap();
        assert_eq!(offline.threshold, 1.0);
        assert!(patched(offline, request(serde_json::json!({"kind": "span_p95_ms"}))).is_err());
    }
}
