//! The one index writer, on its own thread: it takes committed events from a channel, adds
//! their documents (and a group's document the first time the group is seen), and commits on
//! an interval with the last indexed event id as the commit's payload.
//!
//! Invariants: only this thread holds the `IndexWriter`; a batch is visible to searches
//! within `COMMIT_INTERVAL` plus one commit (well under 1 s). On start it catches up from
//! redb: every event after the checkpoint minus `CATCH_UP_MARGIN` is indexed again, replacing
//! any document it already had (delete by id, then add), so events committed to redb but not
//! to the index before a crash — also out of id order, as concurrent requests commit — are
//! found again, and none is indexed twice. Indexing failures are logged, never surfaced to
//! ingest: the index is derived and `lookout reindex` rebuilds it.

use std::collections::HashSet;
use std::ops::Bound;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, Term};

use super::schema::{self, Fields, KIND_GROUP};
use crate::ingest::errors::{EVENTS, ErrorEvent};
use crate::store::codec::decode;
use crate::store::{Store, StoreError, tables};

/// How long an added document may wait for its commit.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(250);
/// Events this much older than the checkpoint are indexed again on start.
const CATCH_UP_MARGIN_MS: u64 = 60_000;
/// Memory of the writer: tantivy needs at least 15 MB per indexing thread.
const WRITER_HEAP_BYTES: usize = 32 * 1024 * 1024;
/// Group ids remembered as indexed before the set is cleared (then the index is asked).
const KNOWN_GROUPS: usize = 100_000;
/// Events indexed per catch-up read transaction.
const CATCH_UP_BATCH: usize = 5_000;

pub enum Message {
    /// Events of one organisation, durable in redb.
    Events {
        org: String,
        events: Vec<ErrorEvent>,
    },
    /// Commit now and answer (tests and `reindex` wait on it).
    Flush(std::sync::mpsc::Sender<()>),
}

pub struct Writer {
    pub index: Index,
    pub reader: IndexReader,
    pub fields: Fields,
    writer: IndexWriter,
    /// Greatest event id added since start (the next checkpoint).
    checkpoint: Option<String>,
    /// Events added back by catch-up up to this id: live events up to it replace, not add.
    caught_up_to: Option<String>,
    known_groups: HashSet<String>,
    dirty: bool,
}

impl Writer {
    pub fn new(index: Index, reader: IndexReader, fields: Fields) -> tantivy::Result<Writer> {
        let writer = index.writer_with_num_threads(1, WRITER_HEAP_BYTES)?;
        let checkpoint = index.load_metas()?.payload;
        Ok(Writer {
            index,
            reader,
            fields,
            writer,
            checkpoint,
            caught_up_to: None,
            known_groups: HashSet::new(),
            dirty: false,
        })
    }

    /// The last committed checkpoint (an event id), if any.
    pub fn checkpoint(&self) -> Option<&str> {
        self.checkpoint.as_deref()
    }

    /// Indexes every stored event after the checkpoint (minus the margin); `progress` is
    /// called with the events indexed so far. Returns how many were indexed.
    pub fn catch_up(
        &mut self,
        store: &Store,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, StoreError> {
        let from = self.checkpoint.as_deref().map(margin_id);
        let replace = from.is_some();
        let orgs = store.read_blocking(crate::accounts::db::list_orgs)?;
        let mut total = 0u64;
        for org in orgs {
            let org = org.id.to_string();
            let mut after = from.clone();
            loop {
                let batch = read_events(store, &org, after.as_deref())?;
                let Some(last) = batch.last() else { break };
                after = Some(last.id.to_string());
                for event in &batch {
                    self.add_event(&org, event, replace);
                }
                total += batch.len() as u64;
                progress(total);
                if batch.len() < CATCH_UP_BATCH {
                    break;
                }
            }
        }
        self.caught_up_to = self.checkpoint.clone();
        self.commit();
        Ok(total)
    }

    fn add_event(&mut self, org: &str, event: &ErrorEvent, replace: bool) {
        let id = event.id.as_str();
        if replace {
            self.writer
                .delete_term(Term::from_field_text(self.fields.id, id));
        }
        if let Some(group) = &event.group_id
            && let Some(stack) = &event.stack
            && !self.group_is_indexed(group)
        {
            let document = schema::group_document(&self.fields, org, group, stack);
            self.log(self.writer.add_document(document).map(drop));
        }
        let document = schema::event_document(&self.fields, org, event);
        self.log(self.writer.add_document(document).map(drop));
        if self.checkpoint.as_deref().is_none_or(|seen| seen < id) {
            self.checkpoint = Some(id.to_string());
        }
        self.dirty = true;
    }

    /// Whether the group has its document (remembered, or found in the committed index);
    /// marks it as having one, since the caller adds it when it had none.
    fn group_is_indexed(&mut self, group: &str) -> bool {
        if self.known_groups.contains(group) {
            return true;
        }
        if self.known_groups.len() >= KNOWN_GROUPS {
            self.known_groups.clear();
        }
        self.known_groups.insert(group.to_string());
        let query = BooleanQuery::new(vec![
            (Occur::Must, term(self.fields.kind, KIND_GROUP)),
            (Occur::Must, term(self.fields.id, group)),
        ]);
        let searcher = self.reader.searcher();
        searcher
            .search(&query, &tantivy::collector::Count)
            .unwrap_or(0)
            > 0
    }

    fn commit(&mut self) {
        if !self.dirty {
            return;
        }
        let checkpoint = self.checkpoint.clone().unwrap_or_default();
        let committed = self.writer.prepare_commit().and_then(|mut prepared| {
            prepared.set_payload(&checkpoint);
            prepared.commit()
        });
        match committed {
            Ok(_) => {
                self.dirty = false;
                self.log(self.reader.reload());
            }
            Err(error) => tracing::error!(%error, "search index commit failed"),
        }
    }

    fn log<T>(&self, result: tantivy::Result<T>) {
        if let Err(error) = result {
            tracing::error!(%error, "search indexing failed");
        }
    }

    /// The loop: add what arrives, commit once `COMMIT_INTERVAL` passed since the first
    /// uncommitted document, and a last time when every sender is gone.
    pub fn run(mut self, messages: Receiver<Message>) {
        let mut due: Option<Instant> = None;
        loop {
            let wait = due.map_or(Duration::from_secs(3600), |due| {
                due.saturating_duration_since(Instant::now())
            });
            match messages.recv_timeout(wait) {
                Ok(Message::Events { org, events }) => {
                    for event in &events {
                        let replace = self
                            .caught_up_to
                            .as_deref()
                            .is_some_and(|caught| event.id.as_str() <= caught);
                        self.add_event(&org, event, replace);
                    }
                    due.get_or_insert_with(|| Instant::now() + COMMIT_INTERVAL);
                }
                Ok(Message::Flush(done)) => {
                    self.commit();
                    due = None;
                    let _ = done.send(());
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.commit();
                    due = None;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.commit();
                    return;
                }
            }
        }
    }
}

fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}

/// The id `CATCH_UP_MARGIN_MS` before `checkpoint` (ids are ULIDs: time first).
fn margin_id(checkpoint: &str) -> String {
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

/// Up to `CATCH_UP_BATCH` events of `org` with ids at or after `from` (exclusive of a
/// previous batch's last id when continuing).
fn read_events(
    store: &Store,
    org: &str,
    after: Option<&str>,
) -> Result<Vec<ErrorEvent>, StoreError> {
    let start = match after {
        Some(id) => tables::composite_key(org, id),
        None => tables::owner_prefix(org),
    };
    let end = format!("{org}0");
    store.read_blocking(|txn| {
        let table = txn.open_table(EVENTS.definition())?;
        let mut events = Vec::new();
        for entry in table.range::<&str>((
            Bound::Excluded(start.as_str()),
            Bound::Excluded(end.as_str()),
        ))? {
            let (_, value) = entry?;
            events.push(decode::<ErrorEvent>(value.value())?);
            if events.len() >= CATCH_UP_BATCH {
                break;
            }
        }
        Ok(events)
    })
}
