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

use super::Search;
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
    /// Hands durable events to the writer; never blocks on indexing.
    pub fn submit(self, org: &str, events: Vec<ErrorEvent>) {
        self.send(org, events, false);
    }

    /// Hands durable events that were indexed before (moved to another group) to the writer,
    /// which replaces their documents.
    pub fn submit_moved(self, org: &str, events: Vec<ErrorEvent>) {
        self.send(org, events, true);
    }

    fn send(mut self, org: &str, events: Vec<ErrorEvent>, replace: bool) {
        self.spent = true;
        let sent = self.search.send_events(org, events, replace);
        self.search.inner.status.settle(!sent);
    }
}

impl Drop for IndexTicket {
    fn drop(&mut self) {
        if !self.spent {
            self.search.inner.status.settle(true);
        }
    }
}
