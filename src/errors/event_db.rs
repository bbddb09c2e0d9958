//! The error events in redb: the event records and the client-id index that makes a retried
//! upload a no-op; storing a batch (with its groups, rollups and services in the same
//! transaction) and removing an event (retention). A session's events are found through the
//! search index (`session_events.rs`).
//!
//! Invariants: an item whose `event_id` (or `id`) was stored before is acknowledged and not
//! stored again. `store_events` may run more than once for one batch (the group-commit writer
//! retries a batch without a failed write): each run assigns groups afresh from what is
//! committed, and everything it writes commits with the events or not at all.

use std::ops::Bound;
use std::sync::Arc;

use redb::{ReadTransaction, WriteTransaction};
use tokio::sync::oneshot;

use super::db::{self as groups, Grouping};
use super::event::{ErrorEvent, EventRows};
use super::fingerprint::Fingerprint;
use crate::accounts::model::OrgId;
use crate::alerting::{Activity, Metric, RollupBatch, record_activity};
use crate::store::ages::{self, Kind};
use crate::store::codec::{Encoded, decode};
use crate::store::{IndexTable, ReadTxn, RecordTable, StoreError, dictionaries, tables};

/// The age index tag of a error event (in stored keys: never changes).
pub const EVENT_AGE: Kind = Kind::new("evt");
pub const EVENTS: RecordTable<ErrorEvent> = RecordTable::new(tables::EVENTS);
const EVENT_CLIENT_IDS: IndexTable = IndexTable::new(tables::EVENT_CLIENT_IDS);

/// The events of one request, ready for their write transaction: each with its fingerprint,
/// computed when the batch is made (CPU work better done on the request's thread than on the
/// store's one writer thread). `store_events` sets each stored event's group in place.
///
/// A batch made with `returning` sends its events home when it is dropped: the write closure
/// owns the batch (the writer may run it more than once), the writer drops the closure before
/// it answers, and the request receives the events whole, so the writer thread neither copies
/// nor frees them (profiling found both costly there).
pub struct EventBatch {
    events: Vec<ErrorEvent>,
    fingerprints: Vec<Arc<Fingerprint>>,
    /// Each event's record, encoded (JSON, zstd) without its group, which the write adds as
    /// the record's tag: the encoding is done here, not on the store's writer thread.
    encoded: Vec<Option<Encoded<ErrorEvent>>>,
    home: Option<oneshot::Sender<Vec<ErrorEvent>>>,
}

/// Where the events of a batch made with `EventBatch::returning` arrive once it is dropped.
pub struct ReturnedEvents(oneshot::Receiver<Vec<ErrorEvent>>);

impl EventBatch {
    /// A batch of `org`'s events, dropped with it.
    pub fn new(org: &OrgId, events: Vec<ErrorEvent>) -> EventBatch {
        let fingerprints = super::shapes::fingerprints(&events);
        // An event without a group yet (as every new one is) is encoded now, with the org's
        // dictionary when it has one (`dictionary.rs`); one that has a group (a test's) or
        // cannot be encoded is encoded whole by the write.
        let dictionary = dictionaries::current(org.as_str());
        let encoded = events
            .iter()
            .map(|event| {
                event
                    .group_id
                    .is_none()
                    .then(|| Encoded::with_dictionary(event, dictionary).ok())
                    .flatten()
            })
            .collect();
        EventBatch {
            events,
            fingerprints,
            encoded,
            home: None,
        }
    }

    /// A batch whose events are sent to the returned receiver when it is dropped.
    pub fn returning(org: &OrgId, events: Vec<ErrorEvent>) -> (EventBatch, ReturnedEvents) {
        let (home, arrival) = oneshot::channel();
        let mut batch = EventBatch::new(org, events);
        batch.home = Some(home);
        (batch, ReturnedEvents(arrival))
    }

    pub fn events(&self) -> &[ErrorEvent] {
        &self.events
    }
}

impl Drop for EventBatch {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // A request that gave up waiting no longer wants them; they are freed with it.
            let _ = home.send(std::mem::take(&mut self.events));
        }
    }
}

impl ReturnedEvents {
    /// The events, once their batch was dropped (before `Store::write` answers, for a batch
    /// its write closure owned).
    pub(super) async fn arrive(self) -> Result<Vec<ErrorEvent>, oneshot::error::RecvError> {
        self.0.await
    }
}

/// What one batch's write stored: every event of the batch is accepted (stored now, or
/// acknowledged again when its client id was stored before); those stored now are listed by
/// their index in the batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredEvents {
    accepted: usize,
    stored: Vec<usize>,
}

impl StoredEvents {
    /// Events accepted: stored, or acknowledged again.
    pub fn accepted(&self) -> usize {
        self.accepted
    }

    /// The batch indexes of the events stored now, in batch order.
    pub fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.stored.iter().copied()
    }

    /// The events stored now, out of the batch's events as the committed run of
    /// `store_events` left them (each carrying its group).
    pub(super) fn take_from(self, events: Vec<ErrorEvent>) -> Vec<ErrorEvent> {
        let mut wanted = self.stored.into_iter().peekable();
        events
            .into_iter()
            .enumerate()
            .filter_map(|(index, event)| wanted.next_if_eq(&index).map(|_| event))
            .collect()
    }
}

/// Stores the events of `batch` not stored before, assigns each to its error group (the
/// event's `group_id` is set in place), counts them for alert rules (`alerting` rollups), updates
/// the services registry and writes their age rows, all in `txn`.
pub fn store_events(
    txn: &WriteTransaction,
    org: &OrgId,
    batch: &mut EventBatch,
) -> Result<StoredEvents, StoreError> {
    let mut stored = store_batches(txn, org, std::slice::from_mut(batch))?;
    Ok(stored.pop().unwrap_or_default())
}

/// `store_events` for several batches of one organisation (concurrent requests written
/// together, `writes.rs`), in batch order: each group is loaded and written back, each rollup
/// row and service record updated, and each table opened once for all of them.
pub fn store_batches(
    txn: &WriteTransaction,
    org: &OrgId,
    batches: &mut [EventBatch],
) -> Result<Vec<StoredEvents>, StoreError> {
    // One pass per table, each held open for every batch (`IndexWriter`). First the client
    // ids: an id stored before (or earlier in these batches) means a retry, not stored again.
    let mut stored: Vec<Vec<usize>> = Vec::with_capacity(batches.len());
    let mut client_ids = EVENT_CLIENT_IDS.writer(txn)?;
    for batch in batches.iter() {
        let mut kept = Vec::with_capacity(batch.events.len());
        for (index, event) in batch.events.iter().enumerate() {
            if let Some(client_id) = &event.event_id {
                let index_key = tables::composite_key(org.as_str(), client_id);
                if client_ids.contains(&index_key)? {
                    continue;
                }
                client_ids.insert(&index_key, event.id.as_str())?;
            }
            kept.push(index);
        }
        stored.push(kept);
    }
    drop(client_ids);

    let mut grouping = Grouping::new(txn, org)?;
    let mut rollups = RollupBatch::new();
    for (batch, kept) in batches.iter_mut().zip(&stored) {
        let (events, fingerprints) = (&mut batch.events, &batch.fingerprints);
        for &index in kept {
            let (event, fingerprint) = (&mut events[index], &fingerprints[index]);
            let (group, opened) = grouping.assign(txn, event, fingerprint)?;
            event.group_id = Some(group.to_string());
            let (service, environment) = (event.service.as_deref(), event.environment.as_deref());
            rollups.count(org, Metric::Errors, service, environment, event.received_at);
            if opened {
                rollups.count(
                    org,
                    Metric::NewGroups,
                    service,
                    environment,
                    event.received_at,
                );
            }
        }
    }
    grouping.finish(txn)?;
    rollups.flush(txn)?;

    let mut records = EVENTS.writer(txn)?;
    let mut age_rows = ages::TELEMETRY_AGES.writer(txn)?;
    let mut activity = Vec::new();
    let mut aged = Vec::new();
    for (batch, kept) in batches.iter().zip(&stored) {
        for &index in kept {
            let event = &batch.events[index];
            let key = event.key(org);
            match (&batch.encoded[index], &event.group_id) {
                (Some(encoded), Some(group)) => records.insert_tagged(&key, encoded, group)?,
                _ => records.insert(&key, event)?,
            }
            aged.push((event.age(), key));
            if let Some(service) = &event.service {
                activity.push(Activity {
                    service: service.clone(),
                    environment: event.environment.clone(),
                    at: event.received_at,
                    errors: u64::from(event.level == "error"),
                });
            }
        }
    }
    ages::put_ages_bundled(&mut age_rows, EVENT_AGE, &aged)?;
    drop((records, age_rows));
    record_activity(txn, org, &activity)?;
    Ok(batches
        .iter()
        .zip(stored)
        .map(|(batch, stored)| StoredEvents {
            accepted: batch.events.len(),
            stored,
        })
        .collect())
}

/// Writes `event` (of `org`, stored before) again under `key`: encoded as a new event is,
/// with the org's dictionary and the group as the record's tag (regrouping).
pub fn rewrite_event(
    txn: &WriteTransaction,
    org: &OrgId,
    key: &str,
    event: &ErrorEvent,
) -> Result<(), StoreError> {
    let mut records = EVENTS.writer(txn)?;
    let Some(group) = &event.group_id else {
        return records.insert(key, event);
    };
    let ungrouped = ErrorEvent {
        group_id: None,
        ..event.clone()
    };
    let encoded = Encoded::with_dictionary(&ungrouped, dictionaries::current(org.as_str()))?;
    records.insert_tagged(key, &encoded, group)
}

/// Removes an event and its index rows (retention). `false` when it was already gone.
pub fn remove_event(txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
    Ok(remove_events(txn, &[key])? == 1)
}

/// Removes the events of `keys` and their index rows (a retention transaction's), their
/// groups' event lists updated together; how many were there.
pub fn remove_events(txn: &WriteTransaction, keys: &[&str]) -> Result<usize, StoreError> {
    let mut removed = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(event) = EVENTS.get_part::<EventRows>(txn, key)? else {
            continue;
        };
        let (org, _) = tables::split_composite_key(key).unwrap_or((key, ""));
        if let Some(client_id) = &event.event_id {
            let index_key = tables::composite_key(org, client_id);
            if EVENT_CLIENT_IDS.get(txn, &index_key)?.as_deref() == Some(event.id.as_str()) {
                EVENT_CLIENT_IDS.remove(txn, &index_key)?;
            }
        }
        if let Some(session) = &event.session_id {
            // Written for events stored before the index carried sessions.
            super::session_events::SESSION_EVENTS
                .remove(txn, &format!("{org}/{session}/{}", event.id.as_str()))?;
        }
        ages::remove_age(txn, EVENT_AGE, event.age(), key)?;
        EVENTS.remove(txn, key)?;
        removed.push((org, event));
    }
    let grouped: Vec<(&str, &str, &str)> = removed
        .iter()
        .filter_map(|(org, event)| Some((*org, event.group_id.as_deref()?, event.id.as_str())))
        .collect();
    groups::forget_events(txn, &grouped)?;
    Ok(removed.len())
}

/// The stored event `id` of `org`.
pub fn get_event(
    txn: &impl ReadTxn,
    org: &str,
    id: &str,
) -> Result<Option<ErrorEvent>, StoreError> {
    EVENTS.get(txn, &tables::composite_key(org, id))
}

/// Up to `limit` events of `org` with ids after `after` (from the first without) and before
/// `before` (to the last without), in id order.
pub fn events_between(
    txn: &ReadTransaction,
    org: &str,
    after: Option<&str>,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<ErrorEvent>, StoreError> {
    let start = match after {
        Some(id) => tables::composite_key(org, id),
        None => tables::owner_prefix(org),
    };
    let end = match before {
        Some(id) => tables::composite_key(org, id),
        None => format!("{org}0"),
    };
    let table = txn.open_table(EVENTS.definition())?;
    let mut events = Vec::new();
    for entry in table.range::<&str>((
        Bound::Excluded(start.as_str()),
        Bound::Excluded(end.as_str()),
    ))? {
        let (_, value) = entry?;
        events.push(decode::<ErrorEvent>(value.value())?);
        if events.len() >= limit {
            break;
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Timestamp;
    use crate::errors::model::GroupId;
    use crate::store::codec;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    #[test]
    fn a_batch_stores_each_client_id_once_and_groups_every_stored_event() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let event = |id: Option<&str>, user: &str, message: &str| {
            let mut item = json!({"level": "error", "message": message, "url": "u",
                "user_id": user, "session_id": "s-1", "service": "web"});
            if let Some(id) = id {
                item["event_id"] = json!(id);
            }
            crate::ingest::web_errors::parse_event(&item.clone().into(), NOW, None).unwrap()
        };
        let txn = database.begin_write().unwrap();
        let mut first = EventBatch::new(
            &org,
            vec![
                event(Some("a"), "u1", "boom 1"),
                event(Some("a"), "u1", "boom 2"),
                event(None, "u2", "boom 3"),
                event(Some("b"), "u1", "other"),
            ],
        );
        let stored = store_events(&txn, &org, &mut first).unwrap();
        assert_eq!(stored.indexes().collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(stored.accepted(), 4);
        let mut again = EventBatch::new(
            &org,
            vec![
                event(Some("b"), "u3", "boom 4"),
                event(None, "u3", "boom 5"),
            ],
        );
        let stored_again = store_events(&txn, &org, &mut again).unwrap();
        assert_eq!(stored_again.indexes().collect::<Vec<_>>(), [1]);

        let (first, again) = (first.events(), again.events());
        let boom = first[0].group_id.clone().unwrap();
        assert_eq!(first[2].group_id.as_deref(), Some(boom.as_str()));
        assert_eq!(again[1].group_id.as_deref(), Some(boom.as_str()));
        assert_ne!(first[3].group_id.as_deref(), Some(boom.as_str()));
        let taken = stored.take_from(first.to_vec());
        assert_eq!(taken, [&first[0], &first[2], &first[3]].map(Clone::clone));
        let group = groups::get_group(&txn, &org, &GroupId::parse(&boom).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!((group.count, group.users), (3, 3));
        let rows = |name| {
            txn.open(redb::TableDefinition::<&str, &str>::new(name))
                .unwrap()
                .row_count()
                .unwrap()
        };
        assert_eq!(EVENTS.row_count(&txn).unwrap(), 4);
        assert_eq!(rows(tables::EVENT_CLIENT_IDS), 2);
        assert_eq!(
            rows(tables::SESSION_EVENTS),
            0,
            "a session's events are searched"
        );
        // Every stored event is named by the age index; those of one transaction and second
        // share a bundle row.
        let aged = ages::expired(&txn, (Timestamp(i64::MAX), &[EVENT_AGE]), 100).unwrap();
        assert_eq!(aged.len(), 4);
        assert_eq!(rows(tables::TELEMETRY_AGES), 2, "one bundle per batch here");
        assert_eq!(rows(tables::GROUP_EVENTS_UNFOLDED), 4, "folded later");
        assert_eq!(rows(tables::GROUP_EVENTS), 0);
        assert_eq!(rows(tables::GROUP_USERS), 4);
    }

    #[test]
    fn a_rewritten_event_is_encoded_with_the_orgs_dictionary_and_keeps_its_group() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let item = json!({"level": "error", "message": "boom", "url": "https://app.example.com/"});
        let event =
            crate::ingest::web_errors::parse_event(&item.clone().into(), NOW, None).unwrap();
        let txn = database.begin_write().unwrap();
        let mut batch = EventBatch::new(&org, vec![event]);
        store_events(&txn, &org, &mut batch).unwrap();
        let mut event = batch.events()[0].clone();
        let key = event.key(&org);
        let raw = |txn: &WriteTransaction| {
            let table = txn.open(EVENTS.definition()).unwrap();
            table.get_with(&key, <[u8]>::to_vec).unwrap().unwrap()
        };
        let inner = |bytes: &[u8]| bytes[2 + usize::from(bytes[1])];
        assert_ne!(inner(&raw(&txn)), codec::CODEC_VERSION_DICTIONARY);

        let dictionary = dictionaries::sample_dictionary("rewrite", 300);
        dictionaries::activate(org.as_str(), &dictionary, NOW).unwrap();
        event.group_id = Some("grp_moved".to_string());
        rewrite_event(&txn, &org, &key, &event).unwrap();
        assert_eq!(inner(&raw(&txn)), codec::CODEC_VERSION_DICTIONARY);
        assert_eq!(
            get_event(&txn, org.as_str(), event.id.as_str()).unwrap(),
            Some(event)
        );
    }

    #[test]
    fn a_returning_batch_sends_its_events_home_when_dropped() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let item = json!({"level": "error", "message": "boom", "url": "u", "event_id": "e"});
        let event =
            crate::ingest::web_errors::parse_event(&item.clone().into(), NOW, None).unwrap();
        let (mut batch, returned) = EventBatch::returning(&org, vec![event.clone(), event]);
        let txn = database.begin_write().unwrap();
        let stored = store_events(&txn, &org, &mut batch).unwrap();
        let grouped = batch.events().to_vec();
        drop(batch);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let events = runtime.block_on(returned.arrive()).unwrap();
        assert_eq!(events, grouped, "whole, with the groups set in place");
        assert_eq!(stored.accepted(), 2);
        assert_eq!(stored.take_from(events), grouped[..1]);
    }
}
