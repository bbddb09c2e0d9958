//! What the evaluator measured for each rule at its last tick, kept in memory for the rules
//! API (`status` on `GET /api/v1/alert-rules` and `/{id}`): the value the rule's condition was
//! checked against and when, whether or not its phase changed.
//!
//! Invariants: each tick replaces the whole map with what it measured, so a deleted or
//! disabled rule drops out at the next tick and the map never holds more than one reading per
//! enabled rule. Nothing here is stored: after a restart a rule reads "not measured yet"
//! until the first tick.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use utoipa::ToSchema;

use super::model::{AlertRule, Phase, RuleId, RuleState};
use crate::clock::Timestamp;

/// One rule's last measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// `None` when there was nothing to measure (a span rule without spans in its window).
    pub value: Option<f64>,
    pub measured_at: Timestamp,
}

/// The readings of the last tick, shared between the evaluator and the rules API.
#[derive(Clone, Default)]
pub struct RuleReadings(Arc<RwLock<HashMap<RuleId, Reading>>>);

impl RuleReadings {
    /// Puts one tick's measurements in place of the previous tick's.
    pub fn replace(&self, readings: HashMap<RuleId, Reading>) {
        // A poisoned lock only means a reader panicked; the map itself is always whole.
        let mut map = self
            .0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *map = readings;
    }

    pub fn get(&self, rule: &RuleId) -> Option<Reading> {
        let map = self
            .0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        map.get(rule).copied()
    }
}

/// A rule's current value and state, as the rules API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RuleStatus {
    /// ok, pending or firing; disabled for a rule that is not evaluated.
    pub state: String,
    /// The value measured at the last evaluation; null before the first one (or with nothing
    /// to measure).
    pub value: Option<f64>,
    /// When that value was measured.
    pub measured_at: Option<String>,
    /// The rule's pending or firing alert.
    pub alert_id: Option<String>,
}

/// The status of `rule` from its stored phase and its last reading.
pub fn rule_status(rule: &AlertRule, state: &RuleState, reading: Option<Reading>) -> RuleStatus {
    let name = match (&state.phase, rule.enabled) {
        (_, false) => "disabled",
        (Phase::Inactive, true) => "ok",
        (Phase::Pending { .. }, true) => "pending",
        (Phase::Firing { .. }, true) => "firing",
    };
    let reading = reading.filter(|_| rule.enabled);
    RuleStatus {
        state: name.to_string(),
        value: reading.and_then(|reading| reading.value),
        measured_at: reading.map(|reading| reading.measured_at.to_rfc3339()),
        alert_id: state.phase.alert_id().map(ToString::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::model::OrgId;
    use crate::alerting::alerts::model::AlertId;
    use crate::alerting::rules::model::RuleKind;

    fn rule(enabled: bool) -> AlertRule {
        AlertRule {
            id: RuleId::generate(),
            org_id: OrgId::generate(),
            name: "r".into(),
            kind: RuleKind::ErrorCount,
            service: None,
            environment: None,
            threshold: 3.0,
            window_seconds: 60,
            for_seconds: 0,
            recovery_seconds: 0,
            severity: "warning".into(),
            channels: Vec::new(),
            open_incident: false,
            enabled,
            created_at: Timestamp(0),
            updated_at: Timestamp(0),
        }
    }

    #[test]
    fn status_names_the_phase_and_the_last_reading() {
        let reading = Reading {
            value: Some(5.0),
            measured_at: Timestamp(1_000),
        };
        let alert_id = AlertId::generate();
        let firing = RuleState {
            phase: Phase::Firing {
                alert_id: alert_id.clone(),
                since: Timestamp(0),
                false_since: None,
            },
            value: Some(4.0),
        };
        let status = rule_status(&rule(true), &firing, Some(reading));
        assert_eq!(status.state, "firing");
        assert_eq!(status.value, Some(5.0), "the reading, not the stored value");
        assert_eq!(status.alert_id, Some(alert_id.to_string()));
        assert!(status.measured_at.is_some());

        let quiet = rule_status(&rule(true), &RuleState::default(), None);
        assert_eq!((quiet.state.as_str(), quiet.value), ("ok", None));
        let off = rule_status(&rule(false), &RuleState::default(), Some(reading));
        assert_eq!((off.state.as_str(), off.value), ("disabled", None));
        assert_eq!(off.measured_at, None);
    }

    #[test]
    fn a_tick_replaces_every_reading() {
        let readings = RuleReadings::default();
        let (kept, dropped) = (RuleId::generate(), RuleId::generate());
        let reading = Reading {
            value: Some(1.0),
            measured_at: Timestamp(1),
        };
        readings.replace(HashMap::from([
            (kept.clone(), reading),
            (dropped.clone(), reading),
        ]));
        readings.replace(HashMap::from([(kept.clone(), reading)]));
        assert_eq!(readings.get(&kept), Some(reading));
        assert_eq!(readings.get(&dropped), None, "a deleted rule drops out");
    }
}
