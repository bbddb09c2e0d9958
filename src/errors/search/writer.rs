//! The one index writer, on its own thread: it takes committed events from a channel, adds
//! their documents (and a group's document the first time the group is seen), and commits on
//! an interval with the last indexed event id as the commit's payload. It also runs `lookout
//! reindex` while the server serves (`rebuild.rs`), between live batches.
//!
//! Invariants: only this thread holds an `IndexWriter` of the live index (and of an index
//! being rebuilt); a batch is visible to searches within `COMMIT_INTERVAL` plus one commit
//! (well under 1 s), during a rebuild too. Unless the index was complete (a clean stop,
//! `checkpoint.rs`), it first catches up from redb, before it takes live events (they wait in
//! its inbox): every event after the checkpoint minus `CATCH_UP_MARGIN_MS` is indexed again,
//! replacing any document it already had (its millisecond deleted, then added: `replace.rs`),
//! so events committed to redb but not to the index before a crash — also out of id order, as
//! concurrent requests commit — are found again, and none is indexed twice; a catch-up (or a
//! read-back) commits
//! on its way every `ADDED_PER_COMMIT` documents, so its progress is searchable and tantivy's
//! pending deletes stay bounded, with the checkpoint held at where it began, so one
//! interrupted by a stop or a crash is done again from there on the next start. Its last
//! commit, when the server stops, marks the index complete if no ticket was missed (`status.rs`). Indexing failures are
//! logged, never surfaced to ingest: the index is derived and `lookout reindex` rebuilds it.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::checkpoint::{earlier_id, margin_id};
use super::inbox::Inbox;
use super::rebuild::{Rebuild, RebuildReport};
use super::replace::Sweep;
use super::schema::Fields;
use super::status::Status;
pub use super::target::Target;
use super::target::stored_batches;
use super::{Opened, SearchError};
use crate::errors::ErrorEvent;
use crate::store::Store;

/// How long an added document may wait for its commit.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(250);
/// Live messages handled between two steps of a rebuild: live events keep their second, and
/// the rebuild still moves on under sustained ingest.
const LIVE_MESSAGES_PER_STEP: usize = 16;

pub enum Message {
    /// Events of one organisation, durable in redb.
    Events {
        org: String,
        events: Vec<ErrorEvent>,
        /// The events were indexed before (moved to another group): their documents are
        /// replaced.
        replace: bool,
        /// What they count in the inbox's bound.
        bytes: usize,
        /// Their handing-over (`sessions.rs`).
        seq: u64,
    },
    /// Events were left out of the inbox: read them back from redb.
    LeftOut,
    /// Commit now and answer (tests wait on it).
    Flush(Sender<()>),
    /// Rebuild the index from redb while serving (`lookout reindex`); reports go to the sender,
    /// and the rebuild is abandoned when it is gone.
    Rebuild(Sender<RebuildReport>),
}

/// The writer thread's state.
pub struct Writer {
    fields: Fields,
    live: Target,
    /// The index directory, and where searches find the live index.
    dir: PathBuf,
    current: Arc<RwLock<Arc<Opened>>>,
    store: Store,
    rebuild: Option<Rebuild>,
    status: Arc<Status>,
    inbox: Arc<Inbox>,
    /// The oldest id left out of the inbox whose read-back has not completed.
    reading_back: Option<String>,
    /// The handing-over of the last live message handled (`sessions.rs`).
    handled: u64,
}

impl Writer {
    pub fn new(
        fields: Fields,
        live: Target,
        dir: PathBuf,
        current: Arc<RwLock<Arc<Opened>>>,
        store: Store,
        status: Arc<Status>,
        inbox: Arc<Inbox>,
    ) -> Writer {
        Writer {
            fields,
            live,
            dir,
            current,
            store,
            rebuild: None,
            status,
            inbox,
            reading_back: None,
            handled: 0,
        }
    }

    /// Indexes every stored event after the checkpoint (minus the margin) again, replacing
    /// what the index had, and commits. Returns how many were indexed, or `None` when the
    /// server began to stop first (nothing of it is committed then).
    pub fn catch_up(&mut self) -> Result<Option<u64>, SearchError> {
        let from = self.live.checkpoint().map(margin_id);
        let status = self.status.clone();
        let indexed = self
            .live
            .index_stored(&self.fields, &self.store, from.as_deref(), |_| {
                !status.closing()
            })?;
        if indexed.is_some() {
            self.live.replace_through_checkpoint();
            self.hold();
            self.live.commit()?;
        }
        Ok(indexed)
    }

    /// The catch-up at start, while the server serves; `false` when the server is stopping.
    fn catch_up_at_start(&mut self) -> bool {
        let started = Instant::now();
        let go_on = match self.catch_up() {
            Ok(Some(events)) => {
                metrics::counter!("lookout_search_catch_up_events_total").increment(events);
                tracing::info!(
                    events,
                    seconds = started.elapsed().as_secs_f64(),
                    "search index caught up with the store"
                );
                true
            }
            Ok(None) => {
                tracing::info!(
                    "search index catch-up interrupted by the stop; it resumes on the next start"
                );
                false
            }
            Err(error) => {
                tracing::error!(%error, "search index catch-up failed: `lookout reindex` rebuilds the index");
                true
            }
        };
        self.status.set_catching_up(false);
        go_on
    }

    /// The loop: catch up first when `catch_up`, then add what arrives, commit once
    /// `COMMIT_INTERVAL` passed since the first uncommitted document, step a rebuild between
    /// live messages, and commit a last time when every sender is gone.
    pub fn run(mut self, catch_up: bool, messages: Receiver<Message>) {
        // Ingest's acknowledgements come first; the threads tantivy starts from here inherit it.
        super::background::lower_this_thread();
        if !catch_up {
            metrics::counter!("lookout_search_catch_up_events_total").increment(0);
        } else if !self.catch_up_at_start() {
            return;
        }
        let mut due: Option<Instant> = None;
        loop {
            self.inbox.set_rebuilding(self.rebuild.is_some());
            if self.inbox.any_left_out() {
                self.read_back();
            }
            if self.rebuild.is_some() {
                for _ in 0..LIVE_MESSAGES_PER_STEP {
                    match messages.try_recv() {
                        Ok(message) => self.handle(message, &mut due),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            self.abandon_rebuild("the server is stopping");
                            self.commit_last();
                            return;
                        }
                    }
                }
                if due.is_some_and(|due| Instant::now() >= due) {
                    self.commit_live();
                    due = None;
                }
                match self.step_rebuild() {
                    Some(writer) => self = writer,
                    // The index could not be reopened: nothing is left to write to.
                    None => return,
                }
                continue;
            }
            let wait = due.map_or(Duration::from_secs(3600), |due| {
                due.saturating_duration_since(Instant::now())
            });
            match messages.recv_timeout(wait) {
                Ok(message) => self.handle(message, &mut due),
                Err(RecvTimeoutError::Timeout) => {
                    self.commit_live();
                    due = None;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.commit_last();
                    return;
                }
            }
        }
    }

    fn handle(&mut self, message: Message, due: &mut Option<Instant>) {
        match message {
            Message::Events {
                org,
                events,
                replace: moved,
                bytes,
                seq,
            } => {
                let (fields, store) = (&self.fields, &self.store);
                log_store(self.live.add_live(fields, store, &org, &events, moved));
                if let Some(rebuild) = self.rebuild.as_mut() {
                    log_store(
                        rebuild
                            .target()
                            .add_live(fields, store, &org, &events, moved),
                    );
                }
                self.inbox.release(bytes);
                self.handled = seq;
                due.get_or_insert_with(|| Instant::now() + COMMIT_INTERVAL);
            }
            // The loop reads them back before its next message.
            Message::LeftOut => {}
            Message::Flush(done) => {
                self.commit_live();
                *due = None;
                let _ = done.send(());
            }
            Message::Rebuild(reports) => {
                if self.rebuild.is_some() {
                    let refused = "a reindex is already running on this server".to_string();
                    let _ = reports.send(RebuildReport::Finished(Err(refused)));
                    return;
                }
                match Rebuild::begin(&self.dir, &self.store, Some(reports.clone())) {
                    Ok(rebuild) => {
                        self.rebuild = Some(rebuild);
                        self.inbox.set_rebuilding(true);
                    }
                    Err(error) => {
                        tracing::error!(%error, "search index rebuild could not start");
                        let _ = reports.send(RebuildReport::Finished(Err(error.to_string())));
                    }
                }
            }
        }
    }

    /// Indexes again, from redb, the events left out of the inbox (and any stored since the
    /// oldest of them), into the live index and a running rebuild, replacing what either
    /// had; commits after. Until that commit, commits hold the checkpoint at the oldest.
    fn read_back(&mut self) {
        let Some((from, left_out_seq)) = self.inbox.take_left_out() else {
            return;
        };
        // Nothing is taken from the queue until the read-back ends: no request waits for it.
        self.inbox.set_reading_back(true);
        let oldest = match self.reading_back.take() {
            Some(earlier) if earlier < from => earlier,
            _ => from,
        };
        self.reading_back = Some(oldest.clone());
        let started = Instant::now();
        let Writer {
            fields,
            live,
            store,
            rebuild,
            status,
            inbox,
            ..
        } = self;
        let after = earlier_id(&oldest, 1);
        // Everything read replaces what either index held from there on.
        let (mut sweep, mut rebuild_sweep) = (Sweep::from_id(&after), Sweep::from_id(&after));
        let read = stored_batches(
            store,
            Some(&after),
            |_| !status.closing(),
            |org, batch| {
                live.add_stored(fields, org, batch, &mut sweep);
                if let Some(rebuild) = rebuild.as_mut() {
                    rebuild
                        .target()
                        .add_stored(fields, org, batch, &mut rebuild_sweep);
                }
                // Counted before any commit makes them searchable: a reader of the metrics
                // never finds events searchable and not yet counted.
                metrics::counter!("lookout_search_read_back_events_total")
                    .increment(batch.len() as u64);
                // Held at the oldest left out, this one or one left out meanwhile.
                let held = held_checkpoint(inbox, Some(&oldest));
                live.commit_on_the_way(held.as_deref());
            },
        );
        match read {
            Ok(Some(events)) => {
                self.live.replace_through_checkpoint();
                self.reading_back = None;
                if self.commit_live() {
                    self.inbox.unsearched.forget_left_out(left_out_seq);
                }
                tracing::info!(
                    events,
                    seconds = started.elapsed().as_secs_f64(),
                    "search index read back events its inbox had no room for"
                );
            }
            // Stopping: the last commit holds the checkpoint, so the next start catches up.
            Ok(None) => {}
            Err(error) => {
                tracing::error!(%error, "search index read-back failed: the next start catches up");
            }
        }
        self.inbox.set_reading_back(false);
    }

    /// The checkpoint commits may record: held at the oldest event left out of the inbox
    /// and not read back yet.
    fn hold(&mut self) {
        let held = held_checkpoint(&self.inbox, self.reading_back.as_deref());
        self.live.hold_checkpoint(held);
    }

    /// Commits the live index; `true` when everything added is searchable.
    fn commit_live(&mut self) -> bool {
        self.hold();
        match self.live.commit() {
            Ok(()) => {
                self.inbox.unsearched.forget_queued(self.handled);
                true
            }
            Err(error) => {
                tracing::error!(%error, "search index commit failed");
                false
            }
        }
    }

    /// The commit of a stop: complete when every event written was handed over.
    fn commit_last(&mut self) {
        self.hold();
        let left_out = self.reading_back.is_some() || self.inbox.oldest_left_out().is_some();
        let result = if self.status.nothing_missed() && !left_out {
            self.live.commit_complete()
        } else {
            tracing::info!(
                "events written at the stop may have missed the search index: the next start catches up"
            );
            self.live.commit()
        };
        if let Err(error) = result {
            tracing::error!(%error, "search index commit failed");
        }
    }

    /// One step of the rebuild; when it has read every event, the swap. `None` when the
    /// swap left no index to write to.
    fn step_rebuild(mut self) -> Option<Writer> {
        let Some(mut rebuild) = self.rebuild.take() else {
            return Some(self);
        };
        match rebuild.step(&self.fields, &self.store) {
            Ok(false) if rebuild.report_progress() => {
                self.rebuild = Some(rebuild);
                Some(self)
            }
            Ok(false) => {
                tracing::info!("search index rebuild cancelled: its client went away");
                rebuild.abandon();
                Some(self)
            }
            Ok(true) => self.swap_in(rebuild),
            Err(error) => {
                tracing::error!(%error, "search index rebuild failed");
                rebuild.finished(Err(error.to_string()));
                rebuild.abandon();
                Some(self)
            }
        }
    }

    fn abandon_rebuild(&mut self, reason: &str) {
        if let Some(rebuild) = self.rebuild.take() {
            rebuild.finished(Err(reason.to_string()));
            rebuild.abandon();
        }
    }

    /// Puts the rebuilt index in place of the live one: the live index is committed and its
    /// writer closed (so reopening it after a failed swap loses nothing), the directories are
    /// swapped, the new index is opened and searches move to it. Live events the rebuild may
    /// also have read from redb (up to its checkpoint) replace their documents from then on.
    fn swap_in(self, rebuild: Rebuild) -> Option<Writer> {
        let Writer {
            fields,
            live,
            dir,
            current,
            store,
            status,
            inbox,
            reading_back,
            handled,
            ..
        } = self;
        let (indexed, reports) = (rebuild.done(), rebuild.reports());
        let swapped = live.close().and_then(|()| rebuild.finish_into(&dir));
        let (reopened, result) = match swapped {
            Ok(checkpoint) => (open_rebuilt(&dir, checkpoint), Ok(indexed)),
            Err(error) => {
                tracing::error!(%error, "search index rebuild could not be swapped in");
                // The live index is where it was: reopen it as a restart would.
                (
                    reopen_caught_up(&fields, &dir, &store),
                    Err(error.to_string()),
                )
            }
        };
        let live = match reopened {
            Ok(reopened) => reopened,
            Err(error) => {
                tracing::error!(%error, "search index cannot be reopened: indexing stops until restart");
                reports.finished(Err(error.to_string()));
                return None;
            }
        };
        let opened = Arc::new(Opened::new(live.index.clone(), live.reader.clone()));
        *current.write().unwrap_or_else(|p| p.into_inner()) = opened;
        reports.finished(result);
        Some(Writer {
            fields,
            live,
            dir,
            current,
            store,
            rebuild: None,
            status,
            inbox,
            reading_back,
            handled,
        })
    }
}

/// The oldest of the events left out of the inbox and the read-back under way, if any: the
/// checkpoint a commit may record at most.
fn held_checkpoint(inbox: &Inbox, reading_back: Option<&str>) -> Option<String> {
    match (inbox.oldest_left_out(), reading_back) {
        (Some(left_out), Some(reading)) => Some(left_out.min(reading.to_string())),
        (left_out, reading) => left_out.or(reading.map(str::to_string)),
    }
}

/// Opens the index a rebuild just put at `dir`; live events minted up to the millisecond the
/// rebuild read to replace their documents.
fn open_rebuilt(dir: &std::path::Path, replaced_to: Option<u64>) -> Result<Target, SearchError> {
    let mut live = Target::new(super::open_index(dir)?)?;
    live.replace_through_checkpoint();
    if let Some(ms) = replaced_to {
        live.replace_through(ms);
    }
    Ok(live)
}

/// Opens the index at `dir` and catches it up from redb, as on start.
fn reopen_caught_up(
    fields: &Fields,
    dir: &std::path::Path,
    store: &Store,
) -> Result<Target, SearchError> {
    let mut live = Target::new(super::open_index(dir)?)?;
    let from = live.checkpoint().map(margin_id);
    live.index_stored(fields, store, from.as_deref(), |_| true)?;
    live.replace_through_checkpoint();
    live.commit()?;
    Ok(live)
}

fn log_store(result: Result<(), crate::store::StoreError>) {
    if let Err(error) = result {
        tracing::error!(%error, "reading events back for the search index failed: `lookout reindex` rebuilds it");
    }
}
