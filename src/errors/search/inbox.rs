//! The bound on what waits for the index writer: the bytes of the events queued for it. A
//! batch of new events that would take the queue past its bound is not queued; its oldest
//! event id is remembered instead, and the writer reads those events back from redb (where they
//! are durable) once it gets to them.
//!
//! Invariants: the queue never holds more than its bound of live events (events moved to
//! another group and batches during a rebuild are queued regardless: they are few, and a
//! rebuild reads redb in its own order). Until the writer has read back what was left out,
//! every commit's checkpoint stays at the oldest event left out, and no stop marks the index
//! complete, so a restart catches up from there.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;

use super::sessions::Unsearched;
use crate::errors::ErrorEvent;

pub struct Inbox {
    /// The bytes of queued events beyond which a batch is left out (`SEARCH_INBOX_MAX_BYTES`).
    limit: usize,
    queued: AtomicUsize,
    /// The smallest id of an event left out since the writer last took it, and the newest
    /// handing-over of those (`sessions.rs`).
    left_out: Mutex<Option<(String, u64)>>,
    any_left_out: AtomicBool,
    /// Set by the writer while a rebuild runs: everything is queued then.
    rebuilding: AtomicBool,
    /// The events handed over and not yet searchable, by session.
    pub unsearched: Unsearched,
}

impl Inbox {
    pub fn new(limit: usize) -> Inbox {
        metrics::counter!("lookout_search_left_out_events_total").increment(0);
        metrics::counter!("lookout_search_read_back_events_total").increment(0);
        metrics::gauge!("lookout_search_inbox_bytes").set(0.0);
        Inbox {
            limit,
            queued: AtomicUsize::new(0),
            left_out: Mutex::new(None),
            any_left_out: AtomicBool::new(false),
            rebuilding: AtomicBool::new(false),
            unsearched: Unsearched::default(),
        }
    }

    /// Queues `bytes` if they fit (or `always`, or while a rebuild runs); `false` when the
    /// events are to be left out.
    pub fn admit(&self, bytes: usize, always: bool) -> bool {
        let always = always || self.rebuilding.load(Ordering::Acquire);
        let admitted = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                let after = queued.saturating_add(bytes);
                (always || after <= self.limit).then_some(after)
            })
            .is_ok();
        if admitted {
            self.report();
        }
        admitted
    }

    /// The writer handled a message of `bytes`.
    pub fn release(&self, bytes: usize) {
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                Some(queued.saturating_sub(bytes))
            });
        self.report();
    }

    fn report(&self) {
        let queued = self.queued.load(Ordering::Acquire);
        metrics::gauge!("lookout_search_inbox_bytes").set(queued as f64);
    }

    /// Remembers that `events` (durable, handed over as `seq`) were not queued; `true` when
    /// none were left out since the writer last took them (so it needs waking, once).
    pub fn leave_out(&self, events: &[ErrorEvent], seq: u64) -> bool {
        let Some(oldest) = events.iter().map(|event| event.id.as_str()).min() else {
            return false;
        };
        let mut left_out = self.lock();
        let oldest = match left_out.take() {
            Some((known, _)) if known.as_str() <= oldest => known,
            _ => oldest.to_string(),
        };
        *left_out = Some((oldest, seq));
        metrics::counter!("lookout_search_left_out_events_total").increment(events.len() as u64);
        !self.any_left_out.swap(true, Ordering::AcqRel)
    }

    /// Whether events were left out since the writer last took them (one atomic read).
    pub fn any_left_out(&self) -> bool {
        self.any_left_out.load(Ordering::Acquire)
    }

    /// The oldest id left out and the newest handing-over left out, forgotten here: the
    /// writer reads back from that id.
    pub fn take_left_out(&self) -> Option<(String, u64)> {
        let mut left_out = self.lock();
        self.any_left_out.store(false, Ordering::Release);
        left_out.take()
    }

    /// The oldest id left out and not yet taken.
    pub fn oldest_left_out(&self) -> Option<String> {
        self.lock().as_ref().map(|(oldest, _)| oldest.clone())
    }

    pub fn set_rebuilding(&self, rebuilding: bool) {
        self.rebuilding.store(rebuilding, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, u64)>> {
        self.left_out.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// About how many bytes of memory `event` holds: its text, and its frames, breadcrumbs, tags
/// and fingerprint walked, with a fixed cost per value.
pub fn event_bytes(event: &ErrorEvent) -> usize {
    const PER_VALUE: usize = 32;
    let texts = [
        Some(&event.level),
        Some(&event.message),
        event.name.as_ref(),
        event.stack.as_ref(),
        Some(&event.url),
        event.release.as_ref(),
        event.environment.as_ref(),
        event.service.as_ref(),
        event.session_id.as_ref(),
        event.user_id.as_ref(),
        event.user_agent.as_ref(),
        event.event_id.as_ref(),
        event.client_ip.as_ref(),
        event.group_id.as_ref(),
    ];
    let text: usize = texts.iter().flatten().map(|text| text.len()).sum();
    let lists = [&event.frames, &event.breadcrumbs, &event.fingerprint];
    let listed: usize = lists
        .iter()
        .filter_map(|list| list.as_ref())
        .flatten()
        .map(value_bytes)
        .sum();
    let tags: usize = event
        .tags
        .iter()
        .map(|(key, value)| key.len() + value_bytes(value))
        .sum();
    std::mem::size_of::<ErrorEvent>() + text + listed + tags + PER_VALUE
}

fn value_bytes(value: &Value) -> usize {
    const PER_VALUE: usize = 32;
    PER_VALUE
        + match value {
            Value::String(text) => text.len(),
            Value::Array(items) => items.iter().map(value_bytes).sum(),
            Value::Object(fields) => fields
                .iter()
                .map(|(key, value)| key.len() + value_bytes(value))
                .sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_takes_what_fits_and_remembers_the_oldest_left_out() {
        let inbox = Inbox::new(100);
        assert!(inbox.admit(60, false));
        assert!(!inbox.admit(41, false), "past the bound");
        assert!(inbox.admit(40, false), "exactly at the bound");
        assert!(inbox.admit(500, true), "moved events are queued regardless");
        inbox.release(600);
        assert!(inbox.admit(100, false));
        inbox.release(100);
        inbox.set_rebuilding(true);
        assert!(inbox.admit(1_000, false), "a rebuild takes everything");
        inbox.set_rebuilding(false);
        assert!(!inbox.admit(1, false));
        inbox.release(1_000);

        assert!(!inbox.any_left_out());
        let event = |id: &str| {
            let mut event: ErrorEvent = serde_json::from_value(serde_json::json!({
                "id": id, "level": "error", "message": "m", "url": "u",
                "timestamp": 0, "received_at": 0}))
            .unwrap();
            event.stack = Some("x".repeat(1_000));
            event
        };
        let (newer, older) = (
            event("evt_01JGZ000000000000000000002"),
            event("evt_01JGZ000000000000000000001"),
        );
        assert!(event_bytes(&newer) > 1_000);
        assert!(
            inbox.leave_out(std::slice::from_ref(&newer), 1),
            "the first wakes the writer"
        );
        assert!(!inbox.leave_out(&[newer.clone(), older], 2));
        assert!(!inbox.leave_out(std::slice::from_ref(&newer), 3));
        assert!(inbox.any_left_out());
        let oldest = Some("evt_01JGZ000000000000000000001".to_string());
        assert_eq!(inbox.oldest_left_out(), oldest);
        assert_eq!(
            inbox.take_left_out(),
            oldest.map(|id| (id, 3)),
            "the oldest id, and the newest handing-over"
        );
        assert!(!inbox.any_left_out());
        assert_eq!(inbox.take_left_out(), None);
        assert!(
            inbox.leave_out(&[newer], 4),
            "after a take, the next wakes it again"
        );
    }
}
