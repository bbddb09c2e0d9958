//! A session's error events (`GET /api/v1/sessions/{id}`): found through the search index,
//! which carries each event's session, and its list of events handed over and not yet
//! searchable (`search/sessions.rs`); and, for events stored before the index carried
//! sessions, through the rows `{org}/{session}/{event id}` written with each event then.
//!
//! Invariants: no row is written per event for its session (a row keyed by a random session
//! id costs the store's one writer a page write per event). Every candidate id is read from
//! redb and kept only when the event is there and names the session: the index may still name
//! an event retention removed, and the list holds hashes. The answer is the `limit` events
//! earliest by event time (then id), in that order. Bounded: at most `limit` old rows and
//! `MAX_INDEX_PAGES` pages of `limit` index documents are read. While the index catches up
//! after a start, a session lists the events it holds so far, as searches do.

use std::collections::{BTreeMap, HashSet};

use super::event_db::get_event;
use super::{ErrorEvent, Search};
use crate::accounts::model::OrgId;
use crate::store::{IndexTable, ReadTxn, Scan, StoreError, tables};

/// The rows of events stored before the index carried sessions (read, and removed with their
/// events; no longer written).
pub(super) const SESSION_EVENTS: IndexTable = IndexTable::new(tables::SESSION_EVENTS);
/// Pages of index documents read for one session: past them, documents of events removed
/// since would be skipped by the thousand.
const MAX_INDEX_PAGES: usize = 8;

/// Up to `limit` events that named `session`, earliest event time first.
pub fn events_of_session(
    txn: &impl ReadTxn,
    search: &Search,
    org: &OrgId,
    session: &str,
    limit: usize,
) -> Result<Vec<ErrorEvent>, StoreError> {
    let mut found = Found::default();
    found.keep(txn, org, session, old_rows(txn, org, session, limit)?)?;
    let mut offset = 0;
    for _ in 0..MAX_INDEX_PAGES {
        let (ids, indexed) = match search.session_event_ids(org.as_str(), session, offset, limit) {
            Ok(page) => page,
            Err(error) => {
                // Derived data: the session is shown with what redb answers.
                tracing::warn!(%error, "a session's errors could not be searched");
                break;
            }
        };
        found.keep(txn, org, session, ids)?;
        if indexed < limit || found.events.len() >= limit {
            break;
        }
        offset += indexed;
    }
    Ok(found.events.into_values().take(limit).collect())
}

/// The events kept so far, by event time and id.
#[derive(Default)]
struct Found {
    seen: HashSet<String>,
    events: BTreeMap<(i64, String), ErrorEvent>,
}

impl Found {
    /// Reads the events `ids` not seen yet and keeps those stored and naming `session`.
    fn keep(
        &mut self,
        txn: &impl ReadTxn,
        org: &OrgId,
        session: &str,
        ids: Vec<String>,
    ) -> Result<(), StoreError> {
        for id in ids {
            if !self.seen.insert(id.clone()) {
                continue;
            }
            if let Some(event) = get_event(txn, org.as_str(), &id)?
                && event.session_id.as_deref() == Some(session)
            {
                self.events.insert((event.timestamp.0, id), event);
            }
        }
        Ok(())
    }
}

/// The ids of up to `limit` events of `session` stored before the index carried sessions.
fn old_rows(
    txn: &impl ReadTxn,
    org: &OrgId,
    session: &str,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let prefix = format!("{}/{session}/", org.as_str());
    let scan = Scan {
        prefix: &prefix,
        after: None,
        limit,
    };
    Ok(SESSION_EVENTS
        .scan(txn, scan)?
        .into_iter()
        .map(|(key, _)| key[prefix.len()..].to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Timestamp;
    use crate::errors::EventBatch;

    #[test]
    fn the_rows_of_events_stored_before_are_read_and_new_events_write_none() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let item = json!({"level": "error", "message": "boom", "url": "u", "session_id": "s-1"});
        let now = Timestamp(1_795_348_800_000);
        let events: Vec<ErrorEvent> = (0..3)
            .map(|_| {
                crate::ingest::web_errors::parse_event(&item.clone().into(), now, None).unwrap()
            })
            .collect();
        let txn = database.begin_write().unwrap();
        let mut batch = EventBatch::new(&org, events.clone());
        crate::errors::event_db::store_events(&txn, &org, &mut batch).unwrap();
        assert_eq!(
            old_rows(&txn, &org, "s-1", 10).unwrap(),
            Vec::<String>::new()
        );
        for event in &events[..2] {
            let key = format!("{}/s-1/{}", org.as_str(), event.id.as_str());
            SESSION_EVENTS.insert(&txn, &key, "").unwrap();
        }
        let ids = [events[0].id.to_string(), events[1].id.to_string()];
        assert_eq!(old_rows(&txn, &org, "s-1", 10).unwrap(), ids);
        assert_eq!(old_rows(&txn, &org, "s-1", 1).unwrap(), ids[..1]);
        assert_eq!(
            old_rows(&txn, &org, "s-2", 10).unwrap(),
            Vec::<String>::new()
        );
        // Retention removes an old row with its event.
        let key = events[0].key(&org);
        assert!(crate::errors::remove_event(&txn, &key).unwrap());
        assert_eq!(old_rows(&txn, &org, "s-1", 10).unwrap(), ids[1..]);
    }
}
