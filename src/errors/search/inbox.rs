//! The bound on what waits for the index writer: the bytes of the events queued for it. A
//! batch of new events that would take the queue past its bound is not queued; its oldest
//! event id is remembered instead, and the writer reads those events back from redb (where they
//! are durable) once it gets to them.
//!
//! Ingest is paced by the queue: once it holds more than half its bound, a request whose
//! events are durable waits (`admit_paced`, at most `ROOM_WAIT`) until the writer brings it
//! back to half before its events are queued, so that ingest, for long, runs no faster than
//! the index takes events, and a batch is left out only when the writer stalled for that long
//! (`lookout_search_inbox_wait_timeouts_total`). No request waits while the writer catches up
//! after a start, reads back or rebuilds (each can take minutes, and takes nothing from the
//! queue meanwhile), and no request fails because of the index.
//!
//! Invariants: the queue never holds more than its bound of live events (events moved to
//! another group and batches during a rebuild are queued regardless: they are few, and a
//! rebuild reads redb in its own order). Until the writer has read back what was left out,
//! every commit's checkpoint stays at the oldest event left out, and no stop marks the index
//! complete, so a restart catches up from there.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::sessions::Unsearched;
use crate::errors::ErrorEvent;

/// The longest a request waits for the queue to come back to half its bound.
pub const ROOM_WAIT: Duration = Duration::from_secs(1);

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
    /// Set by the writer while it reads left-out events back from redb: it takes nothing from
    /// the queue meanwhile, so no request waits for room then.
    reading_back: AtomicBool,
    /// The events handed over and not yet searchable, by session.
    pub unsearched: Unsearched,
    /// Woken whenever the writer brings the queue to half its bound or below.
    room: tokio::sync::Notify,
}

impl Inbox {
    pub fn new(limit: usize) -> Inbox {
        metrics::counter!("lookout_search_left_out_events_total").increment(0);
        metrics::counter!("lookout_search_read_back_events_total").increment(0);
        metrics::gauge!("lookout_search_inbox_bytes").set(0.0);
        metrics::counter!("lookout_search_inbox_wait_timeouts_total").increment(0);
        Inbox {
            limit,
            queued: AtomicUsize::new(0),
            left_out: Mutex::new(None),
            any_left_out: AtomicBool::new(false),
            rebuilding: AtomicBool::new(false),
            reading_back: AtomicBool::new(false),
            unsearched: Unsearched::default(),
            room: tokio::sync::Notify::new(),
        }
    }

    /// Queues `bytes` once the queue is at or below half its bound and they fit, waiting at
    /// most `ROOM_WAIT` for that; past it, or at once while the writer is `catching_up`,
    /// reads back or rebuilds, as `admit` does. `false` when the events are to be left out.
    pub async fn admit_paced(&self, bytes: usize, catching_up: bool) -> bool {
        let unpaced = catching_up || bytes == 0 || bytes > self.limit;
        if unpaced || self.writer_elsewhere() {
            return self.admit(bytes, false);
        }
        let started = Instant::now();
        let deadline = tokio::time::Instant::from_std(started + ROOM_WAIT);
        let mut waited = false;
        let admitted = loop {
            let woken = self.room.notified();
            let mut woken = std::pin::pin!(woken);
            // Registered before the look, so a release between the two is not missed.
            woken.as_mut().enable();
            if self.writer_elsewhere() {
                break self.admit(bytes, false);
            }
            if self.reserve(bytes) {
                break true;
            }
            waited = true;
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                metrics::counter!("lookout_search_inbox_wait_timeouts_total").increment(1);
                break self.admit(bytes, false);
            }
        };
        if waited {
            metrics::histogram!("lookout_search_inbox_wait_seconds")
                .record(started.elapsed().as_secs_f64());
        }
        admitted
    }

    /// Queues `bytes` when the queue is at or below half its bound and they fit.
    fn reserve(&self, bytes: usize) -> bool {
        let admitted = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                let after = queued.saturating_add(bytes);
                (queued <= self.limit / 2 && after <= self.limit).then_some(after)
            })
            .is_ok();
        if admitted {
            self.report();
        }
        admitted
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
        if self.queued.load(Ordering::Acquire) <= self.limit / 2 {
            self.room.notify_waiters();
        }
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

    /// A rebuild takes everything: requests already waiting for room stop waiting.
    pub fn set_rebuilding(&self, rebuilding: bool) {
        if !self.rebuilding.swap(rebuilding, Ordering::AcqRel) && rebuilding {
            self.room.notify_waiters();
        }
    }

    /// A read-back takes nothing from the queue until it ends: requests already waiting for
    /// room stop waiting, and none waits until it ends.
    pub fn set_reading_back(&self, reading_back: bool) {
        if !self.reading_back.swap(reading_back, Ordering::AcqRel) && reading_back {
            self.room.notify_waiters();
        }
    }

    /// Whether the writer is busy elsewhere than the queue (a rebuild, a read-back), so
    /// waiting for it to make room would only cost the request its second.
    fn writer_elsewhere(&self) -> bool {
        self.rebuilding.load(Ordering::Acquire) || self.reading_back.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, u64)>> {
        self.left_out.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// About how many bytes of memory `events` hold (`event_bytes`).
pub fn events_bytes(events: &[ErrorEvent]) -> usize {
    events.iter().map(event_bytes).sum()
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

    /// Whether `paced` is still waiting after the runtime had a chance to run it.
    async fn waiting(paced: &tokio::task::JoinHandle<bool>) -> bool {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        !paced.is_finished()
    }

    #[tokio::test]
    async fn a_request_waits_while_the_queue_is_past_half_and_takes_its_room_alone() {
        let inbox = std::sync::Arc::new(Inbox::new(100));
        assert!(
            inbox.admit_paced(50, false).await,
            "at half, it fits: at once"
        );
        assert!(inbox.admit(10, false));
        let paced = |bytes| {
            let inbox = inbox.clone();
            tokio::spawn(async move { inbox.admit_paced(bytes, false).await })
        };
        let (first, second) = (paced(45), paced(45));
        assert!(
            waiting(&first).await && waiting(&second).await,
            "60 of 100 queued"
        );
        inbox.release(20);
        // Both are woken; the first to look takes the room, and the queue (85) is past half
        // again for the other.
        let mut done = Vec::new();
        for _ in 0..100 {
            tokio::task::yield_now().await;
            done = [&first, &second].map(|task| task.is_finished()).to_vec();
            if done.contains(&true) {
                break;
            }
        }
        assert_eq!(done.iter().filter(|done| **done).count(), 1, "{done:?}");
        assert_eq!(inbox.queued.load(Ordering::Acquire), 85);
        inbox.release(45);
        assert!(first.await.unwrap() && second.await.unwrap());
        assert_eq!(inbox.queued.load(Ordering::Acquire), 85);
    }

    #[tokio::test]
    async fn no_request_waits_while_catching_up_or_rebuilding_or_for_what_never_fits() {
        let inbox = Inbox::new(100);
        assert!(inbox.admit(90, false));
        assert!(
            inbox.admit_paced(10, true).await,
            "catching up: as admit, at once"
        );
        assert!(
            !inbox.admit_paced(1, true).await,
            "catching up and full: left out"
        );
        assert!(
            !inbox.admit_paced(101, false).await,
            "past the bound: left out at once"
        );
        assert!(inbox.admit_paced(0, false).await, "nothing to queue");
        inbox.set_rebuilding(true);
        assert!(
            inbox.admit_paced(500, false).await,
            "a rebuild takes everything"
        );
    }

    /// With 90 of 100 queued, a request of 50 waits; `flip` happens. What the request got, if
    /// `flip` woke it (`None` while it still waits for its second).
    async fn waiter_after(flip: impl FnOnce(&Inbox)) -> (std::sync::Arc<Inbox>, Option<bool>) {
        let inbox = std::sync::Arc::new(Inbox::new(100));
        assert!(inbox.admit(90, false));
        let paced = {
            let inbox = inbox.clone();
            tokio::spawn(async move { inbox.admit_paced(50, false).await })
        };
        assert!(waiting(&paced).await);
        flip(&inbox);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        let admitted = match paced.is_finished() {
            true => Some(paced.await.unwrap()),
            false => None,
        };
        (inbox, admitted)
    }

    #[tokio::test]
    async fn a_rebuild_that_begins_ends_the_waits() {
        let (_, admitted) = waiter_after(|inbox| inbox.set_rebuilding(true)).await;
        assert_eq!(
            admitted,
            Some(true),
            "woken by the rebuild, not by its second"
        );
    }

    #[tokio::test]
    async fn a_read_back_ends_the_waits_and_keeps_the_bound() {
        let (inbox, admitted) = waiter_after(|inbox| inbox.set_reading_back(true)).await;
        assert_eq!(
            admitted,
            Some(false),
            "woken by the read-back; no room: left out, to be read back"
        );
        assert!(
            inbox.admit_paced(10, false).await,
            "what fits is queued, at once"
        );
        assert!(!inbox.admit_paced(1, false).await, "full: left out at once");
        inbox.set_reading_back(false);
        inbox.release(60);
        assert!(inbox.admit_paced(10, false).await);
    }

    #[tokio::test]
    async fn a_writer_that_stalls_holds_a_request_a_second_at_most() {
        let inbox = Inbox::new(100);
        assert!(inbox.admit(60, false));
        // Nothing is released: past ROOM_WAIT, it fits the bound and is queued as `admit`
        // would; the next finds no room and is left out.
        assert!(inbox.admit_paced(40, false).await);
        assert!(!inbox.admit_paced(1, false).await);
        assert_eq!(inbox.queued.load(Ordering::Acquire), 100);
    }
}
