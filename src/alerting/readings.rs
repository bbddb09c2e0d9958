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

use super::rules_model::{AlertRule, Phase, RuleId, RuleState};
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
