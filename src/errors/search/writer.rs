//! The one index writer, on its own thread: it takes committed events from a channel, adds
//! their documents (and a group's document the first time the group is seen), and commits on
//! an interval with the last indexed event id as the commit's payload. It also runs `lookout
//! reindex` while the server serves (`rebuild.rs`), between live batches.
//!
//! Invariants: only this thread holds an `IndexWriter` of the live index (and of an index
//! being rebuilt); a batch is visible to searches within `COMMIT_INTERVAL` plus one commit
//! (well under 1 s), during a rebuild too. On start it catches up from redb: every event after
//! the checkpoint minus `CATCH_UP_MARGIN` is indexed again, replacing any document it already
//! had (delete by id, then add), so events committed to redb but not to the index before a
//! crash — also out of id order, as concurrent requests commit — are found again, and none is
//! indexed twice. Indexing failures are logged, never surfaced to ingest: the index is derived
//! and `lookout reindex` rebuilds it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Term};

use super::rebuild::{Rebuild, RebuildReport};
use super::schema::{self, Fields, KIND_GROUP};
use super::{Opened, SearchError};
use crate::errors::ErrorEvent;
use crate::store::{Store, StoreError};

/// How long an added document may wait for its commit.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(250);
/// Events this much older than the checkpoint are indexed again on start.
pub(super) const CATCH_UP_MARGIN_MS: u64 = 60_000;
/// Memory of the writer: tantivy needs at least 15 MB per indexing thread.
const WRITER_HEAP_BYTES: usize = 32 * 1024 * 1024;
/// Group ids remembered as indexed before the set is cleared (then the index is asked).
const KNOWN_GROUPS: usize = 100_000;
/// Events indexed per catch-up read transaction.
const CATCH_UP_BATCH: usize = 5_000;
/// Live messages handled between two steps of a rebuild: live events keep their second, and
/// the rebuild still moves on under sustained ingest.
const LIVE_MESSAGES_PER_STEP: usize = 16;

pub enum Message {
    /// Events of one organisation, durable in redb.
    Events {
        org: String,
        events: Vec<ErrorEvent>,
    },
    /// Commit now and answer (tests wait on it).
    Flush(Sender<()>),
    /// Rebuild the index from redb while serving (`lookout reindex`); reports go to the sender,
    /// and the rebuild is abandoned when it is gone.
    Rebuild(Sender<RebuildReport>),
}

/// One index and its writer: the live index, or the one a rebuild is building.
pub struct Target {
    pub index: Index,
    pub reader: IndexReader,
    writer: IndexWriter,
    /// Greatest event id added (the next checkpoint).
    checkpoint: Option<String>,
    known_groups: HashSet<String>,
    dirty: bool,
}

impl Target {
    pub fn new(index: Index) -> Result<Target, SearchError> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let writer = index.writer_with_num_threads(1, WRITER_HEAP_BYTES)?;
        let checkpoint = index.load_metas()?.payload;
        Ok(Target {
            index,
            reader,
            writer,
            checkpoint,
            known_groups: HashSet::new(),
            dirty: false,
        })
    }

    /// The last checkpoint (an event id), if any.
    pub fn checkpoint(&self) -> Option<&str> {
        self.checkpoint.as_deref()
    }

    /// Adds the event's document (and its group's, the first time); `replace` deletes a
    /// document of the same id first, so an event indexed twice is found once.
    pub fn add_event(&mut self, fields: &Fields, org: &str, event: &ErrorEvent, replace: bool) {
        let id = event.id.as_str();
        if replace {
            self.writer
                .delete_term(Term::from_field_text(fields.id, id));
        }
        if let Some(group) = &event.group_id
            && let Some(stack) = &event.stack
            && !self.group_is_indexed(fields, group)
        {
            let document = schema::group_document(fields, org, group, stack);
            log(self.writer.add_document(document).map(drop));
        }
        let document = schema::event_document(fields, org, event);
        log(self.writer.add_document(document).map(drop));
        if self.checkpoint.as_deref().is_none_or(|seen| seen < id) {
            self.checkpoint = Some(id.to_string());
        }
        self.dirty = true;
    }

    /// Whether the group has its document (remembered, or found in the committed index);
    /// marks it as having one, since the caller adds it when it had none.
    fn group_is_indexed(&mut self, fields: &Fields, group: &str) -> bool {
        if self.known_groups.contains(group) {
            return true;
        }
        if self.known_groups.len() >= KNOWN_GROUPS {
            self.known_groups.clear();
        }
        self.known_groups.insert(group.to_string());
        let query = BooleanQuery::new(vec![
            (Occur::Must, term(fields.kind, KIND_GROUP)),
            (Occur::Must, term(fields.id, group)),
        ]);
        let searcher = self.reader.searcher();
        searcher
            .search(&query, &tantivy::collector::Count)
            .unwrap_or(0)
            > 0
    }

    /// Commits what was added, with the checkpoint as payload, and reloads the reader.
    pub fn commit(&mut self) -> Result<(), SearchError> {
        if !self.dirty {
            return Ok(());
        }
        let checkpoint = self.checkpoint.clone().unwrap_or_default();
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&checkpoint);
        prepared.commit()?;
        self.dirty = false;
        self.reader.reload()?;
        Ok(())
    }

    /// Commits, then stops the writer once its merges are done: nothing of this index is
    /// written after this returns, so its directory may be renamed or removed.
    pub fn close(mut self) -> Result<(), SearchError> {
        self.commit()?;
        self.writer.wait_merging_threads()?;
        Ok(())
    }

    /// Stops the writer without committing what was added since the last commit.
    pub fn discard(self) -> Result<(), SearchError> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }

    /// Indexes every stored event of every organisation with an id after `from`, in id order
    /// per organisation; `replace` as for `add_event`. Returns how many were indexed.
    pub fn index_stored(
        &mut self,
        fields: &Fields,
        store: &Store,
        from: Option<&str>,
        replace: bool,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, StoreError> {
        let orgs = store.read_blocking(crate::accounts::all_orgs)?;
        let mut total = 0u64;
        for org in orgs {
            let org = org.id.to_string();
            let mut after = from.map(str::to_string);
            loop {
                let batch = read_events(store, &org, after.as_deref(), None, CATCH_UP_BATCH)?;
                let Some(last) = batch.last() else { break };
                after = Some(last.id.to_string());
                for event in &batch {
                    self.add_event(fields, &org, event, replace);
                }
                total += batch.len() as u64;
                progress(total);
                if batch.len() < CATCH_UP_BATCH {
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// The writer thread's state.
pub struct Writer {
    fields: Fields,
    live: Target,
    /// Events up to this id may already be in the live index (added back by a catch-up or a
    /// rebuild): live events up to it replace, not add.
    caught_up_to: Option<String>,
    /// The index directory, and where searches find the live index.
    dir: PathBuf,
    current: Arc<RwLock<Arc<Opened>>>,
    store: Store,
    rebuild: Option<Rebuild>,
}

impl Writer {
    pub fn new(
        fields: Fields,
        live: Target,
        dir: PathBuf,
        current: Arc<RwLock<Arc<Opened>>>,
        store: Store,
    ) -> Writer {
        Writer {
            fields,
            live,
            caught_up_to: None,
            dir,
            current,
            store,
            rebuild: None,
        }
    }

    /// Indexes every stored event after the checkpoint (minus the margin) again, replacing
    /// what the index had, and commits. Returns how many were indexed.
    pub fn catch_up(&mut self) -> Result<u64, SearchError> {
        let from = self.live.checkpoint().map(margin_id);
        let replace = from.is_some();
        let count =
            self.live
                .index_stored(&self.fields, &self.store, from.as_deref(), replace, |_| {})?;
        self.caught_up_to = self.live.checkpoint.clone();
        self.live.commit()?;
        Ok(count)
    }

    /// The loop: add what arrives, commit once `COMMIT_INTERVAL` passed since the first
    /// uncommitted document, step a rebuild between live messages, and commit a last time when
    /// every sender is gone.
    pub fn run(mut self, messages: Receiver<Message>) {
        let mut due: Option<Instant> = None;
        loop {
            if self.rebuild.is_some() {
                for _ in 0..LIVE_MESSAGES_PER_STEP {
                    match messages.try_recv() {
                        Ok(message) => self.handle(message, &mut due),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            self.abandon_rebuild("the server is stopping");
                            self.commit_live();
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
                    self.commit_live();
                    return;
                }
            }
        }
    }

    fn handle(&mut self, message: Message, due: &mut Option<Instant>) {
        match message {
            Message::Events { org, events } => {
                for event in &events {
                    let replace = self
                        .caught_up_to
                        .as_deref()
                        .is_some_and(|caught| event.id.as_str() <= caught);
                    self.live.add_event(&self.fields, &org, event, replace);
                    if let Some(rebuild) = self.rebuild.as_mut() {
                        rebuild.add_live(&self.fields, &org, event);
                    }
                }
                due.get_or_insert_with(|| Instant::now() + COMMIT_INTERVAL);
            }
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
                    Ok(rebuild) => self.rebuild = Some(rebuild),
                    Err(error) => {
                        tracing::error!(%error, "search index rebuild could not start");
                        let _ = reports.send(RebuildReport::Finished(Err(error.to_string())));
                    }
                }
            }
        }
    }

    fn commit_live(&mut self) {
        if let Err(error) = self.live.commit() {
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
        let (live, caught_up_to) = match reopened {
            Ok(reopened) => reopened,
            Err(error) => {
                tracing::error!(%error, "search index cannot be reopened: indexing stops until restart");
                reports.finished(Err(error.to_string()));
                return None;
            }
        };
        let opened = Arc::new(Opened {
            index: live.index.clone(),
            reader: live.reader.clone(),
        });
        *current.write().unwrap_or_else(|p| p.into_inner()) = opened;
        reports.finished(result);
        Some(Writer {
            fields,
            live,
            caught_up_to,
            dir,
            current,
            store,
            rebuild: None,
        })
    }
}

/// Opens the index a rebuild just put at `dir`; returns it with the id up to which live events
/// replace their documents.
fn open_rebuilt(
    dir: &std::path::Path,
    checkpoint: Option<String>,
) -> Result<(Target, Option<String>), SearchError> {
    Ok((Target::new(super::open_index(dir)?)?, checkpoint))
}

/// Opens the index at `dir` and catches it up from redb, as on start.
fn reopen_caught_up(
    fields: &Fields,
    dir: &std::path::Path,
    store: &Store,
) -> Result<(Target, Option<String>), SearchError> {
    let mut live = Target::new(super::open_index(dir)?)?;
    let from = live.checkpoint().map(margin_id);
    live.index_stored(fields, store, from.as_deref(), from.is_some(), |_| {})?;
    let caught_up_to = live.checkpoint.clone();
    live.commit()?;
    Ok((live, caught_up_to))
}

fn log<T>(result: tantivy::Result<T>) {
    if let Err(error) = result {
        tracing::error!(%error, "search indexing failed");
    }
}

fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}

/// The id `CATCH_UP_MARGIN_MS` before `checkpoint` (ids are ULIDs: time first).
pub(super) fn margin_id(checkpoint: &str) -> String {
    let ulid = checkpoint
        .strip_prefix("evt_")
        .and_then(|rest| ulid::Ulid::from_string(rest).ok());
    match ulid {
        Some(ulid) => {
            let ms = ulid.timestamp_ms().saturating_sub(CATCH_UP_MARGIN_MS);
            format!("evt_{}", ulid::Ulid::from_parts(ms, 0))
        }
        // An unreadable checkpoint: index everything again.
        None => String::new(),
    }
}

/// Up to `limit` events of `org` with ids after `after` (from the first without) and before
/// `before` (to the last without), in id order.
pub(super) fn read_events(
    store: &Store,
    org: &str,
    after: Option<&str>,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<ErrorEvent>, StoreError> {
    store.read_blocking(|txn| crate::errors::events_between(txn, org, after, before, limit))
}
