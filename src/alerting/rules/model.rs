//! Alert rules and the pure state machine the evaluator runs for each (CONTRACT section 4).
//!
//! A rule's phase moves `inactive` → `pending` (condition true, For not yet elapsed) →
//! `firing` (emits `alert.fired`) → back to `inactive` once the condition has been false for
//! the whole Recovery period (emits `alert.resolved`). A condition that turns false while
//! pending ends it silently; one that turns true again during Recovery keeps it firing with no
//! new event.
//!
//! Invariants: the phase is stored (`RULE_STATES`) and changed only in the transaction that
//! writes the alert it names and enqueues that alert's events, so a restart neither loses a
//! firing alert nor fires it again. `step` is pure: time comes in as an argument.

use serde::{Deserialize, Serialize};

use crate::accounts::model::OrgId;
use crate::alerting::alerts::model::AlertId;
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// An alert rule (`rul_…`).
    RuleId,
    "rul_"
);

/// What a rule measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Error events in the window ≥ threshold.
    ErrorCount,
    /// Error groups opened in the window ≥ threshold (default 1).
    NewErrorGroup,
    /// The 95th percentile of span durations in the window, in ms, ≥ threshold.
    SpanP95Ms,
    /// Agents gone for at least the window ≥ threshold (default 1).
    AgentOffline,
}

pub const RULE_KINDS: [&str; 4] = [
    "error_count",
    "new_error_group",
    "span_p95_ms",
    "agent_offline",
];

impl RuleKind {
    pub fn parse(text: &str) -> Option<RuleKind> {
        match text {
            "error_count" => Some(RuleKind::ErrorCount),
            "new_error_group" => Some(RuleKind::NewErrorGroup),
            "span_p95_ms" => Some(RuleKind::SpanP95Ms),
            "agent_offline" => Some(RuleKind::AgentOffline),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::ErrorCount => "error_count",
            RuleKind::NewErrorGroup => "new_error_group",
            RuleKind::SpanP95Ms => "span_p95_ms",
            RuleKind::AgentOffline => "agent_offline",
        }
    }

    /// The threshold a rule of this kind gets when none is given, if it has one.
    pub fn default_threshold(self) -> Option<f64> {
        match self {
            RuleKind::NewErrorGroup | RuleKind::AgentOffline => Some(1.0),
            RuleKind::ErrorCount | RuleKind::SpanP95Ms => None,
        }
    }

    /// How a measured value reads in an alert's body.
    pub fn describe(self, value: f64, threshold: f64, window_seconds: i64) -> String {
        match self {
            RuleKind::ErrorCount => format!(
                "{value} error events in the last {window_seconds} s (threshold {threshold})"
            ),
            RuleKind::NewErrorGroup => format!(
                "{value} new error groups in the last {window_seconds} s (threshold {threshold})"
            ),
            RuleKind::SpanP95Ms => format!(
                "span p95 {value:.1} ms over the last {window_seconds} s (threshold {threshold} ms)"
            ),
            RuleKind::AgentOffline => format!(
                "{value} agents offline for at least {window_seconds} s (threshold {threshold})"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertRule {
    pub id: RuleId,
    pub org_id: OrgId,
    pub name: String,
    pub kind: RuleKind,
    pub service: Option<String>,
    pub environment: Option<String>,
    pub threshold: f64,
    pub window_seconds: i64,
    pub for_seconds: i64,
    pub recovery_seconds: i64,
    pub severity: String,
    /// Channel ids; empty means every channel whose filter matches.
    pub channels: Vec<String>,
    pub open_incident: bool,
    pub enabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Record for AlertRule {
    const KIND: &'static str = "alert rule";
}

impl AlertRule {
    /// The channels the rule's alerts go to, as an alert stores them.
    pub fn alert_channels(&self) -> Option<Vec<String>> {
        (!self.channels.is_empty()).then(|| self.channels.clone())
    }

    pub fn dedup_key(&self) -> String {
        format!("rule:{}", self.id)
    }
}

/// Where a rule is in its life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    Inactive,
    Pending {
        alert_id: AlertId,
        since: Timestamp,
    },
    Firing {
        alert_id: AlertId,
        since: Timestamp,
        /// When the condition was first seen false again (Recovery running), if it is.
        false_since: Option<Timestamp>,
    },
}

impl Phase {
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Inactive => "inactive",
            Phase::Pending { .. } => "pending",
            Phase::Firing { .. } => "firing",
        }
    }

    pub fn alert_id(&self) -> Option<&AlertId> {
        match self {
            Phase::Inactive => None,
            Phase::Pending { alert_id, .. } | Phase::Firing { alert_id, .. } => Some(alert_id),
        }
    }
}

/// A rule's stored evaluation state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleState {
    pub phase: Phase,
    /// The value measured at the last change of phase.
    #[serde(default)]
    pub value: Option<f64>,
}

impl Record for RuleState {
    const KIND: &'static str = "rule state";
}

impl Default for RuleState {
    fn default() -> Self {
        RuleState {
            phase: Phase::Inactive,
            value: None,
        }
    }
}

/// What one evaluation does to the rule's alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Nothing to write.
    None,
    /// The phase moved without touching the alert (Recovery started or was cut short).
    Quiet,
    /// A new alert, pending.
    Pend,
    /// The pending alert ended before For elapsed: removed, no event.
    Cancel,
    /// A new alert, firing at once (For is zero): `alert.fired`.
    FireNew,
    /// The pending alert fires: `alert.fired`.
    Fire,
    /// The firing alert resolves: `alert.resolved`.
    Resolve,
}

fn elapsed(since: Timestamp, now: Timestamp, seconds: i64) -> bool {
    now.unix_millis() - since.unix_millis() >= seconds.saturating_mul(1000)
}

/// The next phase of a rule, given whether its condition holds now. `new_alert` is the id a new
/// alert gets.
pub fn step(
    phase: &Phase,
    condition: bool,
    now: Timestamp,
    for_seconds: i64,
    recovery_seconds: i64,
    new_alert: AlertId,
) -> (Phase, Transition) {
    match (phase, condition) {
        (Phase::Inactive, false) => (Phase::Inactive, Transition::None),
        (Phase::Inactive, true) if for_seconds <= 0 => (
            Phase::Firing {
                alert_id: new_alert,
                since: now,
                false_since: None,
            },
            Transition::FireNew,
        ),
        (Phase::Inactive, true) => (
            Phase::Pending {
                alert_id: new_alert,
                since: now,
            },
            Transition::Pend,
        ),
        (Phase::Pending { .. }, false) => (Phase::Inactive, Transition::Cancel),
        (Phase::Pending { alert_id, since }, true) => {
            if elapsed(*since, now, for_seconds) {
                (
                    Phase::Firing {
                        alert_id: alert_id.clone(),
                        since: now,
                        false_since: None,
                    },
                    Transition::Fire,
                )
            } else {
                (phase.clone(), Transition::None)
            }
        }
        (
            Phase::Firing {
                alert_id,
                since,
                false_since,
            },
            true,
        ) => match false_since {
            None => (phase.clone(), Transition::None),
            Some(_) => (
                Phase::Firing {
                    alert_id: alert_id.clone(),
                    since: *since,
                    false_since: None,
                },
                Transition::Quiet,
            ),
        },
        (
            Phase::Firing {
                alert_id,
                since,
                false_since,
            },
            false,
        ) => {
            let started = false_since.unwrap_or(now);
            if elapsed(started, now, recovery_seconds) {
                (Phase::Inactive, Transition::Resolve)
            } else if false_since.is_none() {
                (
                    Phase::Firing {
                        alert_id: alert_id.clone(),
                        since: *since,
                        false_since: Some(now),
                    },
                    Transition::Quiet,
                )
            } else {
                (phase.clone(), Transition::None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1000;

    /// Runs `conditions` one per second from t=0 and returns the transitions.
    fn run(conditions: &[bool], for_s: i64, recovery_s: i64) -> Vec<Transition> {
        let mut phase = Phase::Inactive;
        let mut seen = Vec::new();
        for (second, &condition) in conditions.iter().enumerate() {
            let now = Timestamp(second as i64 * S);
            let (next, transition) = step(
                &phase,
                condition,
                now,
                for_s,
                recovery_s,
                AlertId::generate(),
            );
            phase = next;
            seen.push(transition);
        }
        seen
    }

    fn events(transitions: &[Transition]) -> Vec<Transition> {
        transitions
            .iter()
            .copied()
            .filter(|t| {
                matches!(
                    t,
                    Transition::Fire | Transition::FireNew | Transition::Resolve
                )
            })
            .collect()
    }

    #[test]
    fn pending_then_firing_after_for() {
        let seen = run(&[true, true, true, true], 2, 0);
        assert_eq!(
            seen,
            [
                Transition::Pend,
                Transition::None,
                Transition::Fire,
                Transition::None
            ]
        );
    }

    #[test]
    fn a_blip_shorter_than_for_never_fires() {
        let seen = run(&[true, true, false, false, true, false], 3, 0);
        assert!(events(&seen).is_empty(), "{seen:?}");
        assert_eq!(seen[2], Transition::Cancel);
    }

    #[test]
    fn zero_for_fires_at_once_and_zero_recovery_resolves_at_once() {
        let seen = run(&[true, false], 0, 0);
        assert_eq!(seen, [Transition::FireNew, Transition::Resolve]);
    }

    #[test]
    fn recovery_needs_the_whole_period_and_a_return_keeps_one_alert() {
        // Fires at 0; false at 1..=2 (recovery 3 s not reached); true at 3; false 4..=7.
        let seen = run(
            &[true, false, false, true, false, false, false, false],
            0,
            3,
        );
        assert_eq!(events(&seen), [Transition::FireNew, Transition::Resolve]);
        assert_eq!(seen[7], Transition::Resolve, "{seen:?}");
    }

    #[test]
    fn phases_round_trip_through_the_codec() {
        let state = RuleState {
            phase: Phase::Firing {
                alert_id: AlertId::generate(),
                since: Timestamp(5),
                false_since: Some(Timestamp(9)),
            },
            value: Some(3.0),
        };
        let bytes = crate::store::codec::encode(&state).unwrap();
        assert_eq!(
            crate::store::codec::decode::<RuleState>(&bytes).unwrap(),
            state
        );
    }
}
