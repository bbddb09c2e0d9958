//! A session's error events, found through the index: the event documents carry the event's
//! `session`, and the events handed to the writer but not yet searchable are kept in a small
//! list (`Unsearched`), so a session's errors are listed from the moment their request is
//! answered, without a row per event in redb.
//!
//! Invariants: an event with a session is entered in the list when it is handed to the writer
//! (`Search::send_events`), under the lock that orders the writer's channel, so entries are in
//! the order of the writer's messages; each handing-over has a sequence number. The writer
//! forgets the queued entries up to the last message it handled once a commit after that
//! message is searchable (the reader reloaded), and the entries of events left out of its
//! inbox once the read-back that took them has committed (`inbox.rs` hands it their
//! sequence number with their oldest id). A lookup reads the list before it takes a searcher,
//! so an event forgotten meanwhile is in that searcher. The list holds at most `MAX_ENTRIES`
//! entries of 48 bytes (the id, a hash of organisation and session, the sequence number);
//! beyond, an event is found once indexed, as every event is while the index catches up
//! after a start. Entries name candidates: the caller reads each event from redb and keeps
//! those of the session.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur};
use tantivy::schema::Value;
use tantivy::{Order, TantivyDocument};

use super::query::term;
use super::schema::KIND_EVENT;
use super::{Search, SearchError};
use crate::errors::ErrorEvent;

/// Most events listed as handed over and not yet searchable: 6 MiB of entries, a few seconds
/// of the writer's work at full speed.
pub const MAX_ENTRIES: usize = 131_072;

#[derive(Clone, Copy)]
struct Entry {
    seq: u64,
    /// Of the organisation and session.
    key: u64,
    /// The event id's ULID.
    id: u128,
    left_out: bool,
}

/// The events handed to the writer and not yet searchable, by session.
pub struct Unsearched {
    state: Mutex<State>,
    hasher: RandomState,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    /// The sequence number of the last handing-over.
    seq: u64,
    /// Entries not kept for want of room, since the list last had room.
    dropped: u64,
}

impl Default for Unsearched {
    fn default() -> Self {
        metrics::counter!("lookout_search_unsearched_dropped_total").increment(0);
        Unsearched {
            state: Mutex::new(State::default()),
            hasher: RandomState::new(),
        }
    }
}

/// The ULID of an `evt_` id.
fn ulid_of(id: &str) -> Option<u128> {
    let text = id.strip_prefix("evt_")?;
    ulid::Ulid::from_string(text).ok().map(u128::from)
}

impl Unsearched {
    fn key(&self, org: &str, session: &str) -> u64 {
        self.hasher.hash_one((org, session))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enters the events of `org` that name a session, handed over now (`left_out`: not
    /// queued, to be read back); answers the handing-over's sequence number.
    pub fn enter(&self, org: &str, events: &[ErrorEvent], left_out: bool) -> u64 {
        let keyed: Vec<(u64, u128)> = events
            .iter()
            .filter_map(|event| {
                let session = event.session_id.as_deref()?;
                Some((self.key(org, session), ulid_of(event.id.as_str())?))
            })
            .collect();
        let mut state = self.lock();
        state.seq += 1;
        let seq = state.seq;
        for (key, id) in keyed {
            if state.entries.len() >= MAX_ENTRIES {
                if state.dropped == 0 {
                    tracing::warn!(
                        "the search index is far behind: a session's newest errors are listed once indexed"
                    );
                }
                state.dropped += 1;
                metrics::counter!("lookout_search_unsearched_dropped_total").increment(1);
                continue;
            }
            state.entries.push(Entry {
                seq,
                key,
                id,
                left_out,
            });
        }
        seq
    }

    /// A commit made searchable every queued handing-over up to `seq`.
    pub fn forget_queued(&self, seq: u64) {
        self.forget(|entry| !entry.left_out && entry.seq <= seq);
    }

    /// A read-back made searchable every left-out handing-over up to `seq`.
    pub fn forget_left_out(&self, seq: u64) {
        self.forget(|entry| entry.left_out && entry.seq <= seq);
    }

    fn forget(&self, searchable: impl Fn(&Entry) -> bool) {
        let mut state = self.lock();
        state.entries.retain(|entry| !searchable(entry));
        if state.entries.len() < MAX_ENTRIES {
            state.dropped = 0;
        }
    }

    /// The ids of events entered for `session` of `org` (and, rarely, of another whose key
    /// is the same).
    pub fn of_session(&self, org: &str, session: &str) -> Vec<String> {
        let key = self.key(org, session);
        self.lock()
            .entries
            .iter()
            .filter(|entry| entry.key == key)
            .map(|entry| format!("evt_{}", ulid::Ulid::from(entry.id)))
            .collect()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

impl Search {
    /// Ids of events of `session` of `org`: those handed over and not yet searchable, then
    /// the indexed ones from the `offset`th on, earliest event time first, at most `limit`;
    /// the second part is how many indexed ones were read (fewer than `limit`: no more).
    /// Blocking: call it from a blocking thread.
    pub fn session_event_ids(
        &self,
        org: &str,
        session: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<String>, usize), SearchError> {
        let mut ids = if offset == 0 {
            self.inner.inbox.unsearched.of_session(org, session)
        } else {
            Vec::new()
        };
        let fields = &self.inner.fields;
        // After the list: what it forgot since is in this searcher.
        let opened = self.opened();
        let searcher = opened.reader.searcher();
        let query = BooleanQuery::new(vec![
            (Occur::Must, term(fields.org, org)),
            (Occur::Must, term(fields.kind, KIND_EVENT)),
            (Occur::Must, term(fields.session, session)),
        ]);
        let collector = TopDocs::with_limit(limit.max(1))
            .and_offset(offset)
            .order_by_fast_field::<i64>("timestamp", Order::Asc);
        let found = searcher.search(&query, &collector)?;
        let indexed = found.len();
        for (_, address) in found {
            let document: TantivyDocument = searcher.doc(address)?;
            if let Some(id) = document.get_first(fields.id).and_then(|v| v.as_str()) {
                ids.push(id.to_string());
            }
        }
        Ok((ids, indexed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u128, session: Option<&str>) -> ErrorEvent {
        let item = serde_json::json!({"level": "error", "message": "boom", "url": "u",
            "session_id": session});
        let now = crate::clock::Timestamp(1_795_348_800_000);
        let mut event =
            crate::ingest::web_errors::parse_event(&item.clone().into(), now, None).unwrap();
        event.id = crate::errors::EventId::parse(&format!("evt_{}", ulid::Ulid::from(id))).unwrap();
        event
    }

    fn ids(list: &Unsearched, session: &str) -> Vec<String> {
        let mut ids = list.of_session("org_a", session);
        ids.sort();
        ids
    }

    #[test]
    fn queued_and_left_out_entries_are_forgotten_by_their_own_commits() {
        let list = Unsearched::default();
        let queued = list.enter("org_a", &[event(1, Some("s")), event(2, None)], false);
        let left_out = list.enter("org_a", &[event(3, Some("s"))], true);
        let later = list.enter("org_a", &[event(4, Some("s")), event(5, Some("t"))], false);
        assert_eq!((queued, left_out, later), (1, 2, 3));
        assert_eq!(list.len(), 4, "only events naming a session are entered");
        assert_eq!(ids(&list, "s").len(), 3);
        assert_eq!(list.of_session("org_b", "s"), Vec::<String>::new());

        // A commit after the first message: the left-out and the later message stay.
        list.forget_queued(queued);
        assert_eq!(
            ids(&list, "s"),
            [3, 4].map(|n| format!("evt_{}", ulid::Ulid::from(n as u128)))
        );
        // A read-back that took the left-out handing-over.
        list.forget_left_out(left_out);
        assert_eq!(ids(&list, "s").len(), 1);
        list.forget_queued(later);
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn the_list_keeps_at_most_its_bound_and_takes_entries_again_once_it_has_room() {
        let list = Unsearched::default();
        let many: Vec<ErrorEvent> = (0..MAX_ENTRIES as u128 + 1)
            .map(|n| event(n + 1, Some("s")))
            .collect();
        let seq = list.enter("org_a", &many, false);
        assert_eq!(list.len(), MAX_ENTRIES);
        assert_eq!(list.lock().dropped, 1);
        list.forget_queued(seq);
        list.enter("org_a", &[event(u128::MAX >> 8, Some("s"))], false);
        assert_eq!((list.len(), list.lock().dropped), (1, 0));
    }
}
