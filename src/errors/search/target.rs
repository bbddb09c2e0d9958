//! One index and its writer (`Target`): the live index, or the one a rebuild is building.
//! It adds event and group documents, replaces those of events indexed before (by their
//! millisecond: `replace.rs`), remembers the greatest event id added (the checkpoint) and
//! commits with the payload of `checkpoint.rs`.
//!
//! Invariants: a group's document is added once, the first time one of its events is indexed
//! (remembered, or looked up in the committed index). No event is found twice: a live event
//! replaces when its document may be in the index already, that is when it was moved, or when
//! it was minted in a millisecond up to `replaced_to` (the last one a scan or a replacement
//! read back from redb); any other live event arrives for the first time.

use std::collections::{BTreeSet, HashSet};

use tantivy::query::{BooleanQuery, Occur};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy};

use super::SearchError;
use super::checkpoint::{Payload, margin_id};
use super::query::term;
use super::replace::{Sweep, id_ms, minted_between, ms_bounds};
use super::schema::{self, Fields, KIND_GROUP};
use crate::errors::ErrorEvent;
use crate::store::{Store, StoreError};

/// Memory of the writer: tantivy needs at least 15 MB per indexing thread.
const WRITER_HEAP_BYTES: usize = 32 * 1024 * 1024;
/// Group ids remembered as indexed before the set is cleared (then the index is asked).
const KNOWN_GROUPS: usize = 100_000;
/// Events indexed per catch-up read transaction.
const CATCH_UP_BATCH: usize = 5_000;
/// Documents added before a long catch-up or read-back commits on its way: what it indexed
/// becomes searchable as it goes, and the deletes of the documents it replaces stay bounded
/// (tantivy keeps every delete in memory until the next commit, about a kilobyte each; a
/// read-back under sustained ingest once replaced millions in one go).
const ADDED_PER_COMMIT: usize = 20_000;

/// One index and its writer: the live index, or the one a rebuild is building.
pub struct Target {
    pub index: Index,
    pub reader: IndexReader,
    writer: IndexWriter,
    /// Greatest event id added (the next checkpoint).
    checkpoint: Option<String>,
    /// While set, commits record at most this checkpoint: events from it on may be missing
    /// (left out of the writer's inbox and not read back yet).
    held_at: Option<String>,
    /// The last commit marked the index complete.
    complete: bool,
    known_groups: HashSet<String>,
    dirty: bool,
    /// Documents added since the last commit (`ADDED_PER_COMMIT`).
    added: usize,
    /// The last millisecond whose events may have been read back from redb into this index
    /// (see the invariants).
    replaced_to: Option<u64>,
}

impl Target {
    pub fn new(index: Index) -> Result<Target, SearchError> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        // Opened from a lowered thread: tantivy's pools start now and inherit its priority.
        let writer = super::background::opened_lowered(|| {
            index.writer_with_num_threads(1, WRITER_HEAP_BYTES)
        })?;
        let payload = Payload::parse(index.load_metas()?.payload.as_deref());
        Ok(Target {
            index,
            reader,
            writer,
            checkpoint: payload.checkpoint,
            held_at: None,
            complete: payload.complete,
            known_groups: HashSet::new(),
            dirty: false,
            added: 0,
            replaced_to: None,
        })
    }

    /// Whether the index was complete when opened; the mark is taken off in a commit at
    /// once, so the index only says so again after a clean stop.
    pub fn take_complete_mark(&mut self) -> Result<bool, SearchError> {
        if !self.complete {
            return Ok(false);
        }
        self.commit_payload(false)?;
        Ok(true)
    }

    /// The last checkpoint (an event id), if any.
    pub fn checkpoint(&self) -> Option<&str> {
        self.checkpoint.as_deref()
    }

    /// Adds the event's document (and its group's, the first time).
    fn add_event(&mut self, fields: &Fields, org: &str, event: &ErrorEvent) {
        let id = event.id.as_str();
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
            let checkpoint = self.checkpoint.get_or_insert_default();
            checkpoint.clear();
            checkpoint.push_str(id);
        }
        self.dirty = true;
        self.added += 1;
    }

    /// Adds durable events handed over live; those whose document may be in the index already
    /// (`moved`, or see the invariants) replace it: their milliseconds are indexed again from
    /// redb.
    pub fn add_live(
        &mut self,
        fields: &Fields,
        store: &Store,
        org: &str,
        events: &[ErrorEvent],
        moved: bool,
    ) -> Result<(), StoreError> {
        let mut again = BTreeSet::new();
        for event in events {
            let ms = id_ms(event.id.as_str());
            if moved || self.replaced_to.is_some_and(|to| ms <= to) {
                again.insert(ms);
            } else {
                self.add_event(fields, org, event);
            }
        }
        for ms in again {
            self.index_again(fields, store, org, ms)?;
        }
        Ok(())
    }

    /// Deletes the documents of `org`'s events minted in `ms` and indexes those redb holds.
    fn index_again(
        &mut self,
        fields: &Fields,
        store: &Store,
        org: &str,
        ms: u64,
    ) -> Result<(), StoreError> {
        log(self
            .writer
            .delete_query(minted_between(fields, org, ms, ms)));
        self.replaced_to = self.replaced_to.max(Some(ms));
        let (mut after, before) = ms_bounds(ms);
        loop {
            let batch = read_events(store, org, Some(&after), Some(&before), CATCH_UP_BATCH)?;
            for event in &batch {
                self.add_event(fields, org, event);
            }
            match batch.last() {
                Some(last) if batch.len() == CATCH_UP_BATCH => after = last.id.to_string(),
                _ => return Ok(()),
            }
        }
    }

    /// Adds a batch of stored events of `org`, in id order, first deleting what `sweep` says
    /// they replace (`replace.rs`).
    pub fn add_stored(
        &mut self,
        fields: &Fields,
        org: &str,
        batch: &[ErrorEvent],
        sweep: &mut Sweep,
    ) {
        let Some(last) = batch.last() else { return };
        if let Some((from, to)) = sweep.deletes_before(org, id_ms(last.id.as_str())) {
            log(self
                .writer
                .delete_query(minted_between(fields, org, from, to)));
            self.replaced_to = self.replaced_to.max(Some(to));
        }
        for event in batch {
            self.add_event(fields, org, event);
        }
    }

    /// Live events minted up to the checkpoint's millisecond replace from now on: the index
    /// may hold them already (after a catch-up, a read-back or a rebuild).
    pub fn replace_through_checkpoint(&mut self) {
        let checkpoint = self.checkpoint.as_deref().map(id_ms);
        self.replaced_to = self.replaced_to.max(checkpoint);
    }

    /// The last millisecond whose events may have been read back into this index.
    pub fn replaced_to(&self) -> Option<u64> {
        self.replaced_to
    }

    /// Live events minted up to `ms` replace from now on (a rebuild's scan reads up to it).
    pub fn replace_through(&mut self, ms: u64) {
        self.replaced_to = self.replaced_to.max(Some(ms));
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
            (Occur::Must, term(fields.group, group)),
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
        self.commit_payload(false)
    }

    /// Commits what was added, marking the index complete: the last commit of a clean stop.
    pub fn commit_complete(&mut self) -> Result<(), SearchError> {
        self.commit_payload(true)
    }

    /// Commits from now on record at most `at` as their checkpoint (`None`: no hold).
    pub fn hold_checkpoint(&mut self, at: Option<String>) {
        self.held_at = at;
    }

    fn commit_payload(&mut self, complete: bool) -> Result<(), SearchError> {
        let checkpoint = match (&self.checkpoint, &self.held_at) {
            (Some(seen), Some(held)) => Some(seen.min(held).clone()),
            (seen, _) => seen.clone(),
        };
        let payload = Payload {
            checkpoint,
            complete,
        };
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&payload.render());
        prepared.commit()?;
        self.dirty = false;
        self.added = 0;
        self.complete = complete;
        self.reader.reload()?;
        Ok(())
    }

    /// Commits once `ADDED_PER_COMMIT` documents were added since the last commit, with the
    /// checkpoint held at `from` at most: the start of the catch-up or read-back under way,
    /// which a crash after this commit must still redo (replacing what this commit holds).
    /// Without `from` (a first indexing, which replaces nothing) it waits for the end.
    pub fn commit_on_the_way(&mut self, from: Option<&str>) {
        let Some(from) = from else { return };
        if self.added < ADDED_PER_COMMIT {
            return;
        }
        let held = self.held_at.clone();
        self.held_at = Some(match held.as_deref() {
            Some(held) => held.min(from).to_string(),
            None => from.to_string(),
        });
        if let Err(error) = self.commit() {
            tracing::error!(%error, "search index commit failed");
        }
        self.held_at = held;
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

    /// Whether redb holds an event a catch-up would index (one after the checkpoint minus the
    /// margin): none on a fresh data dir, for one.
    pub fn has_stored_after_checkpoint(&self, store: &Store) -> Result<bool, StoreError> {
        let from = self.checkpoint().map(margin_id);
        for org in store.read_blocking(crate::accounts::all_orgs)? {
            let org = org.id.to_string();
            if !read_events(store, &org, from.as_deref(), None, 1)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Indexes every stored event of every organisation with an id after `from`, in id order
    /// per organisation, replacing what the index held of those minted from `from`'s
    /// millisecond on (none without `from`: a first indexing). Returns how many were indexed,
    /// or `None` when `go_on` (asked between reads) said to stop.
    pub fn index_stored(
        &mut self,
        fields: &Fields,
        store: &Store,
        from: Option<&str>,
        go_on: impl FnMut(u64) -> bool,
    ) -> Result<Option<u64>, StoreError> {
        let mut sweep = from.map_or_else(Sweep::none, Sweep::from_id);
        stored_batches(store, from, go_on, |org, batch| {
            self.add_stored(fields, org, batch, &mut sweep);
            self.commit_on_the_way(from);
        })
    }
}

/// Hands `each` every stored event of every organisation with an id after `from`, in batches
/// in id order per organisation. Returns how many, or `None` when `go_on` (asked between
/// batches) said to stop.
pub(super) fn stored_batches(
    store: &Store,
    from: Option<&str>,
    mut go_on: impl FnMut(u64) -> bool,
    mut each: impl FnMut(&str, &[ErrorEvent]),
) -> Result<Option<u64>, StoreError> {
    let orgs = store.read_blocking(crate::accounts::all_orgs)?;
    let mut total = 0u64;
    for org in orgs {
        let org = org.id.to_string();
        let mut after = from.map(str::to_string);
        loop {
            let batch = read_events(store, &org, after.as_deref(), None, CATCH_UP_BATCH)?;
            let Some(last) = batch.last() else { break };
            after = Some(last.id.to_string());
            each(&org, &batch);
            total += batch.len() as u64;
            if !go_on(total) {
                return Ok(None);
            }
            if batch.len() < CATCH_UP_BATCH {
                break;
            }
        }
    }
    Ok(Some(total))
}

fn log<T>(result: tantivy::Result<T>) {
    if let Err(error) = result {
        tracing::error!(%error, "search indexing failed");
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Timestamp;

    fn committed_checkpoint(target: &Target) -> Option<String> {
        Payload::parse(target.index.load_metas().unwrap().payload.as_deref()).checkpoint
    }

    #[test]
    fn a_long_catch_up_commits_on_its_way_with_the_checkpoint_held() {
        let (schema, fields) = schema::schema();
        let mut target = Target::new(Index::create_in_ram(schema)).unwrap();
        let item = json!({"level": "error", "message": "m", "url": "u"});
        let now = Timestamp(1_795_348_800_000);
        let events: Vec<ErrorEvent> = (0..=ADDED_PER_COMMIT)
            .map(|_| {
                crate::ingest::web_errors::parse_event(&item.clone().into(), now, None).unwrap()
            })
            .collect();
        let held = events[0].id.to_string();
        let (last, before_last) = (&events[ADDED_PER_COMMIT], &events[..ADDED_PER_COMMIT]);
        let (edge, below) = before_last.split_last().unwrap();
        for event in below {
            target.add_event(&fields, "org_A", event);
        }
        target.commit_on_the_way(Some(&held));
        assert_eq!(
            target.reader.searcher().num_docs(),
            0,
            "one short of the bound"
        );
        target.add_event(&fields, "org_A", edge);
        // A first indexing (no `from`) waits for its end.
        target.commit_on_the_way(None);
        assert_eq!(target.reader.searcher().num_docs(), 0);
        target.commit_on_the_way(Some(&held));
        assert_eq!(target.reader.searcher().num_docs(), ADDED_PER_COMMIT as u64);
        assert_eq!(committed_checkpoint(&target), Some(held.clone()));
        // The hold was for that commit only.
        target.add_event(&fields, "org_A", last);
        target.commit_on_the_way(Some(&held));
        assert_eq!(target.reader.searcher().num_docs(), ADDED_PER_COMMIT as u64);
        target.commit().unwrap();
        assert_eq!(
            committed_checkpoint(&target).as_deref(),
            Some(last.id.as_str())
        );
    }
}

#[cfg(test)]
#[path = "replace_tests.rs"]
mod replace_tests;
