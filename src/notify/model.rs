//! Stored records of notification channels and deliveries, and the pure rules over them:
//! which events a channel's filter selects, and what follows an attempt (retry, dead letter,
//! done, channel disabled).
//!
//! Invariants: a delivery's `body` is fixed when the event is emitted, so every attempt sends
//! the same bytes (and the same signature); its id is stable across retries and redrives; a
//! delivery is in exactly one state, and only a `Pending` one has a row in the due index.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// A notification channel (`chn_…`).
    ChannelId,
    "chn_"
);
crate::typed_id!(
    /// One event on its way to one channel (`dlv_…`), the same across retries.
    DeliveryId,
    "dlv_"
);

/// The event names of SPEC.md section 6.
pub const EVENT_NAMES: &[&str] = &[
    "alert.fired",
    "alert.resolved",
    "alert.acknowledged",
    "incident.opened",
    "incident.updated",
    "incident.resolved",
    "deployment.started",
    "deployment.finished",
    "test",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Channel {
    pub id: ChannelId,
    pub org_id: OrgId,
    pub name: String,
    /// Always `webhook` for now; other kinds share the queue when they come.
    pub kind: String,
    pub url: String,
    /// Kept in the clear: signing needs it. Never returned by the API.
    pub signing_secret: Option<String>,
    pub events: Vec<String>,
    pub enabled: bool,
    /// Why the service disabled the channel (a 410 from the receiver); cleared on re-enable.
    #[serde(default)]
    pub disabled_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Record for Channel {
    const KIND: &'static str = "channel";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its due time (has a row in the due index).
    Pending,
    Delivered,
    /// Out of retries, or refused for good: kept in the dead-letter queue until redriven.
    Dead,
    /// Its channel was deleted before it could be sent.
    Cancelled,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attempt {
    pub at: Timestamp,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
    /// The first bytes of the receiver's answer, lossily decoded, for the delivery log.
    pub response_snippet: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Delivery {
    pub id: DeliveryId,
    pub org_id: OrgId,
    pub channel_id: ChannelId,
    pub event: String,
    /// The exact JSON bytes sent (UTF-8).
    pub body: String,
    pub state: DeliveryState,
    /// Every attempt ever made, redrives included.
    pub attempts: Vec<Attempt>,
    /// Attempts since the delivery was created or last redriven: picks the next retry delay.
    pub round_attempts: u32,
    /// When the next attempt is due; `Some` exactly while `Pending`.
    pub due_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Record for Delivery {
    const KIND: &'static str = "delivery";
}

/// Whether an event filter entry is well formed: `*`, an event name, or `prefix.*`.
pub fn valid_filter(entry: &str) -> bool {
    if entry == "*" || EVENT_NAMES.contains(&entry) {
        return true;
    }
    match entry.strip_suffix(".*") {
        Some(prefix) => EVENT_NAMES.iter().any(|name| {
            name.strip_prefix(prefix)
                .is_some_and(|r| r.starts_with('.'))
        }),
        None => false,
    }
}

/// Whether a channel with `filters` receives `event`.
pub fn filter_matches(filters: &[String], event: &str) -> bool {
    filters.iter().any(|entry| {
        entry == "*"
            || entry == event
            || entry
                .strip_suffix('*')
                .is_some_and(|prefix| prefix.ends_with('.') && event.starts_with(prefix))
    })
}

/// What an attempt's outcome means for its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx within the timeout.
    Success,
    /// 410 Gone: the receiver asks us to stop; the channel is disabled.
    Gone,
    /// Anything else: a status, a timeout, a refused destination, a connection error.
    Failure,
}

/// The state a delivery moves to after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    Done,
    RetryAt(Timestamp),
    DeadLetter,
    /// Dead-lettered, and the channel is disabled.
    DisableChannel,
}

/// Retries after each delay of `delays` in turn (SPEC: 1, 5 and 30 minutes), then dead letter.
/// `round_attempts` counts the attempt that just ended.
pub fn next_step(
    outcome: Outcome,
    round_attempts: u32,
    delays: &[Duration],
    now: Timestamp,
) -> NextStep {
    match outcome {
        Outcome::Success => NextStep::Done,
        Outcome::Gone => NextStep::DisableChannel,
        Outcome::Failure => {
            let index = usize::try_from(round_attempts.saturating_sub(1)).unwrap_or(usize::MAX);
            match delays.get(index) {
                Some(delay) => NextStep::RetryAt(now.plus(*delay)),
                None => NextStep::DeadLetter,
            }
        }
    }
}

/// The outcome a response status stands for.
pub fn outcome_of_status(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Success,
        410 => Outcome::Gone,
        _ => Outcome::Failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn filters_select_events() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["*"], "alert.fired", true),
            (&["*"], "test", true),
            (&["alert.*"], "alert.resolved", true),
            (&["alert.*"], "incident.opened", false),
            (&["alert.*"], "alerting.x", false),
            (&["incident.resolved"], "incident.resolved", true),
            (&["incident.resolved"], "incident.opened", false),
            (&["deployment.*", "alert.fired"], "alert.fired", true),
            (&[], "alert.fired", false),
        ];
        for (entries, event, expected) in cases {
            assert_eq!(
                filter_matches(&filters(entries), event),
                *expected,
                "{entries:?} {event}"
            );
        }
    }

    #[test]
    fn filter_entries_are_validated() {
        for good in [
            "*",
            "alert.*",
            "incident.*",
            "deployment.*",
            "alert.fired",
            "test",
        ] {
            assert!(valid_filter(good), "{good}");
        }
        for bad in [
            "",
            "alert",
            "alerts.*",
            "*.fired",
            "alert.*.x",
            "nope",
            "al*",
            ".*",
        ] {
            assert!(!valid_filter(bad), "{bad}");
        }
    }

    #[test]
    fn schedule_retries_then_dead_letters() {
        let delays = [60, 300, 1800].map(Duration::from_secs);
        let now = Timestamp(1_000_000);
        let at = |secs: i64| NextStep::RetryAt(Timestamp(1_000_000 + secs * 1000));
        assert_eq!(next_step(Outcome::Failure, 1, &delays, now), at(60));
        assert_eq!(next_step(Outcome::Failure, 2, &delays, now), at(300));
        assert_eq!(next_step(Outcome::Failure, 3, &delays, now), at(1800));
        assert_eq!(
            next_step(Outcome::Failure, 4, &delays, now),
            NextStep::DeadLetter
        );
        assert_eq!(next_step(Outcome::Success, 4, &delays, now), NextStep::Done);
        assert_eq!(
            next_step(Outcome::Gone, 1, &delays, now),
            NextStep::DisableChannel
        );
    }

    #[test]
    fn statuses_map_to_outcomes() {
        assert_eq!(outcome_of_status(200), Outcome::Success);
        assert_eq!(outcome_of_status(204), Outcome::Success);
        assert_eq!(outcome_of_status(299), Outcome::Success);
        assert_eq!(outcome_of_status(301), Outcome::Failure);
        assert_eq!(outcome_of_status(410), Outcome::Gone);
        assert_eq!(outcome_of_status(500), Outcome::Failure);
    }
}
