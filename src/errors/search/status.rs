//! What the index writer and the request paths tell each other: whether the index is still
//! catching up after a start (for `/healthz` and the metrics), and whether every event
//! committed to redb was handed to the writer, which a clean stop needs to know before it
//! marks the index complete (`checkpoint.rs`).
//!
//! A request takes an `IndexTicket` before the write transaction that stores events and
//! spends it on `submit` once they are durable. A ticket dropped unspent (an error, a request
//! abandoned mid-way after the grace period) may stand for events in redb the index never got,
//! so the stop that follows is not clean. Once the search is closing no ticket is handed out,
//! so nothing can be written that the last commit does not account for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{Search, inbox};
use crate::errors::ErrorEvent;

#[derive(Default)]
pub struct Status {
    tickets: Mutex<Tickets>,
    catching_up: AtomicBool,
}

#[derive(Default)]
struct Tickets {
    /// Taken and neither spent nor dropped yet.
    outstanding: usize,
    /// A ticket was dropped unspent, or spent after the writer stopped.
    missed: bool,
    /// `Search::close` began: no more tickets.
    closed: bool,
}

impl Status {
    fn tickets(&self) -> MutexGuard<'_, Tickets> {
        self.tickets.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn catching_up(&self) -> bool {
        self.catching_up.load(Ordering::Acquire)
    }

    pub(super) fn set_catching_up(&self, catching_up: bool) {
        self.catching_up.store(catching_up, Ordering::Release);
        metrics::gauge!("lookout_search_catching_up").set(if catching_up { 1.0 } else { 0.0 });
    }

    /// Stops handing out tickets (the start of `Search::close`).
    pub(super) fn close(&self) {
        self.tickets().closed = true;
    }

    /// Whether the server began to stop.
    pub(super) fn closing(&self) -> bool {
        self.tickets().closed
    }

    /// Whether the index holds every event committed so far and none can follow: closed,
    /// with no ticket outstanding or missed.
    pub(super) fn nothing_missed(&self) -> bool {
        let tickets = self.tickets();
        tickets.closed && tickets.outstanding == 0 && !tickets.missed
    }

    fn settle(&self, missed: bool) {
        let mut tickets = self.tickets();
        tickets.outstanding = tickets.outstanding.saturating_sub(1);
        tickets.missed |= missed;
    }
}

/// No ticket: the server is stopping and takes no more events for indexing.
#[derive(Debug, thiserror::Error)]
#[error("the server is stopping")]
pub struct Stopping;

/// The promise to hand the events of one write to the index once they are durable.
pub struct IndexTicket {
    search: Search,
    spent: bool,
}

impl Search {
    /// A ticket for one write of events; refused once the search is closing (the server is
    /// stopping), so that no write goes unaccounted for.
    pub fn ticket(&self) -> Result<IndexTicket, Stopping> {
        let mut tickets = self.inner.status.tickets();
        if tickets.closed {
            return Err(Stopping);
        }
        tickets.outstanding += 1;
        Ok(IndexTicket {
            search: self.clone(),
            spent: false,
        })
    }
}

impl IndexTicket {
    /// Hands durable events to the writer once its inbox has room for them: waits at most
    /// `inbox::ROOM_WAIT` while the inbox is past half its bound (`inbox.rs`). Abandoned
    /// while waiting, it hands them over at once, unpaced.
    pub async fn submit(self, org: &str, events: Vec<ErrorEvent>) {
        let bytes = inbox::events_bytes(&events);
        let inbox = self.search.inner.inbox.clone();
        let catching_up = self.search.inner.status.catching_up();
        let mut unsent = Unsent {
            ticket: Some(self),
            org,
            events,
            bytes,
        };
        let queued = inbox.admit_paced(bytes, catching_up).await;
        unsent.send(Some(queued));
    }

    /// Hands durable events that were indexed before (moved to another group) to the writer,
    /// which replaces their documents; queued whatever the inbox holds.
    pub fn submit_moved(self, org: &str, events: Vec<ErrorEvent>) {
        let bytes = inbox::events_bytes(&events);
        let queued = self.search.inner.inbox.admit(bytes, true);
        self.send(org, events, true, queued.then_some(bytes));
    }

    /// `queued`: the bytes the inbox admitted for them, or `None` when they are left out.
    fn send(mut self, org: &str, events: Vec<ErrorEvent>, replace: bool, queued: Option<usize>) {
        self.spent = true;
        let sent = self.search.send_events(org, events, replace, queued);
        self.search.inner.status.settle(!sent);
    }
}

/// Events waiting for room in the inbox, handed over when dropped before they were.
struct Unsent<'a> {
    ticket: Option<IndexTicket>,
    org: &'a str,
    events: Vec<ErrorEvent>,
    bytes: usize,
}

impl Unsent<'_> {
    /// `queued`: whether the inbox admitted them; `None` to ask it now, unpaced.
    fn send(&mut self, queued: Option<bool>) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let queued = queued.unwrap_or_else(|| ticket.search.inner.inbox.admit(self.bytes, false));
        let events = std::mem::take(&mut self.events);
        ticket.send(self.org, events, false, queued.then_some(self.bytes));
    }
}

impl Drop for Unsent<'_> {
    fn drop(&mut self) {
        self.send(None);
    }
}

impl Drop for IndexTicket {
    fn drop(&mut self) {
        if !self.spent {
            self.search.inner.status.settle(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, StoreOptions};

    fn event(id: &str) -> ErrorEvent {
        serde_json::from_value(serde_json::json!({
            "id": id, "level": "error", "message": "m", "url": "u", "session_id": "s-1",
            "timestamp": 0, "received_at": 0}))
        .unwrap()
    }

    #[tokio::test]
    async fn a_request_abandoned_while_it_waits_for_room_still_hands_its_events_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db.redb"), StoreOptions::default()).unwrap();
        let search = Search::start(&dir.path().join("search"), &store, 100_000).unwrap();
        // Past half, with nothing the writer could release: a submit waits.
        assert!(search.inner.inbox.admit(60_000, false));
        let ticket = search.ticket().unwrap();
        let id = "evt_01JGZ000000000000000000001";
        let waiting = ticket.submit("org_a", vec![event(id)]);
        let abandoned = tokio::time::timeout(std::time::Duration::from_millis(20), waiting).await;
        assert!(abandoned.is_err(), "it waited for room");
        // Dropped with the request, its events were handed over (queued: they fit the bound)
        // and the ticket spent, so a stop still finds the index complete.
        assert_eq!(search.inner.inbox.unsearched.len(), 1);
        tokio::task::spawn_blocking(move || {
            search.close();
            assert!(search.inner.status.nothing_missed());
        })
        .await
        .unwrap();
    }
}
