//! Browser errors and warnings (`POST /ingest/web-errors`): the stored event, reading one item
//! into it, and storing a batch.
//!
//! Invariants: an event keeps the ingest field names; `frames`, `tags`, `fingerprint` and
//! `breadcrumbs` are kept as sent (already scrubbed; breadcrumbs cut to the newest 100). Frames that are only a parse of `stack` are not stored
//! (`frames` is `None`): every reader goes through `frames_or_derived` or `frames_mut`, which
//! parse them again, so a stored event is about half the size; frames a source map resolved
//! at ingest are stored. Event ids are `evt_` ULIDs minted on arrival, so the
//! events of an organisation re-read in key order come back in arrival order. An item whose
//! `event_id` (or `id`) was stored before is acknowledged and not stored again.
//!
//! The seam for grouping, stack parsing, source map resolution and search: `store_events` runs
//! inside the write transaction (grouping that must commit with the event goes there), and
//! `events_committed` is called with every batch once it is durable (indexing goes there).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use redb::WriteTransaction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::db::{self, Kind};
use super::fields::Fields;
use super::services::{self, Activity};
use crate::accounts::model::OrgId;
use crate::alerting::rollup::{Metric, RollupBatch};
use crate::clock::Timestamp;
use crate::errors::fingerprint::Fingerprint;
use crate::store::codec::Record;
use crate::store::{IndexTable, RecordTable, StoreError, tables};

crate::typed_id!(
    /// `evt_…`
    EventId,
    "evt_"
);

/// The most breadcrumbs one event keeps (the newest).
pub const MAX_BREADCRUMBS: usize = 100;

pub const EVENTS: RecordTable<ErrorEvent> = RecordTable::new(tables::EVENTS);
const EVENT_CLIENT_IDS: IndexTable = IndexTable::new(tables::EVENT_CLIENT_IDS);
pub const SESSION_EVENTS: IndexTable = IndexTable::new(tables::SESSION_EVENTS);

/// A stored browser error or warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    pub id: EventId,
    /// The client's `event_id` (or `id`), when it sent one.
    #[serde(default)]
    pub event_id: Option<String>,
    pub level: String,
    pub message: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub stack: Option<String>,
    #[serde(default)]
    pub frames: Option<Vec<Value>>,
    pub url: String,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    /// The client's time of the error, else the arrival time.
    pub timestamp: Timestamp,
    pub received_at: Timestamp,
    #[serde(default)]
    pub tags: Map<String, Value>,
    #[serde(default)]
    pub fingerprint: Option<Vec<Value>>,
    /// The client's trail before the error (clicks, navigations, failed requests), oldest
    /// first, at most `MAX_BREADCRUMBS` (the newest kept), as sent (already scrubbed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breadcrumbs: Option<Vec<Value>>,
    /// Only when `WEB_INGEST_SCRUB_IP=false`.
    #[serde(default)]
    pub client_ip: Option<String>,
    /// The error group (`grp_…`), assigned in the transaction that stores the event.
    #[serde(default)]
    pub group_id: Option<String>,
}

impl Record for ErrorEvent {
    const KIND: &'static str = "error event";
}

impl ErrorEvent {
    pub fn key(&self, org: &OrgId) -> String {
        tables::composite_key(org.as_str(), self.id.as_str())
    }

    fn age(&self) -> Timestamp {
        db::age_of(self.timestamp, self.received_at)
    }

    /// The event's frames: those stored (sent by the client, or resolved through a source map
    /// at ingest), else those parsed from `stack` (none without one).
    pub fn frames_or_derived(&self) -> Cow<'_, [Value]> {
        match &self.frames {
            Some(frames) => Cow::Borrowed(frames),
            None => Cow::Owned(derive_frames(self.stack.as_deref())),
        }
    }

    /// Fills `frames` from the stack when none are stored, for a reader that changes or hands
    /// them on; the frames, when the event has any.
    pub fn frames_mut(&mut self) -> Option<&mut Vec<Value>> {
        if self.frames.is_none() {
            let derived = derive_frames(self.stack.as_deref());
            if !derived.is_empty() {
                self.frames = Some(derived);
            }
        }
        self.frames.as_mut()
    }
}

fn derive_frames(stack: Option<&str>) -> Vec<Value> {
    let Some(stack) = stack else {
        return Vec::new();
    };
    crate::errors::stack::parse(stack)
        .iter()
        .map(crate::errors::stack::Frame::to_json)
        .collect()
}

/// Reads one (already scrubbed) item. `client_ip` is the sender's address when it may be kept.
pub fn parse_event(
    item: &Value,
    received_at: Timestamp,
    client_ip: Option<&str>,
) -> Result<ErrorEvent, String> {
    let fields = Fields::of(item)?;
    let level = fields.required_text("level")?;
    if level != "error" && level != "warning" {
        return Err("level must be \"error\" or \"warning\"".into());
    }
    let event_id = match fields.id("event_id")? {
        Some(id) => Some(id),
        None => fields.id("id")?,
    };
    let frames = fields.array("frames")?;
    if frames
        .as_ref()
        .is_some_and(|frames| frames.iter().any(|frame| !frame.is_object()))
    {
        return Err("frames must be an array of objects".into());
    }
    // Frames are derived from the stack when the client sent none (CONTRACT section 3), when
    // they are read (`ErrorEvent::frames_or_derived`).
    let stack = fields.text("stack")?;
    let fingerprint = fields.array("fingerprint")?;
    if fingerprint
        .as_ref()
        .is_some_and(|parts| parts.iter().any(|part| !part.is_string()))
    {
        return Err("fingerprint must be an array of strings".into());
    }
    let breadcrumbs = fields.array("breadcrumbs")?;
    if breadcrumbs
        .as_ref()
        .is_some_and(|crumbs| crumbs.iter().any(|crumb| !crumb.is_object()))
    {
        return Err("breadcrumbs must be an array of objects".into());
    }
    // The newest are the ones that explain the error; older ones are dropped, not refused.
    let breadcrumbs = breadcrumbs.map(|mut crumbs| {
        let excess = crumbs.len().saturating_sub(MAX_BREADCRUMBS);
        crumbs.drain(..excess);
        crumbs
    });
    Ok(ErrorEvent {
        id: EventId::generate(),
        event_id,
        level,
        message: fields.required_text("message")?,
        name: fields.text("name")?,
        stack,
        frames,
        url: fields.required_text("url")?,
        release: fields.name("release")?,
        environment: fields.name("environment")?,
        service: fields.name("service")?,
        session_id: fields.id("session_id")?,
        user_id: fields.text("user_id")?,
        user_agent: fields.text("user_agent")?,
        timestamp: fields.timestamp("timestamp")?.unwrap_or(received_at),
        received_at,
        tags: fields.object("tags")?.unwrap_or_default(),
        fingerprint,
        breadcrumbs,
        client_ip: client_ip.map(str::to_string),
        group_id: None,
    })
}

/// Stores the events not stored before, assigns each to its error group (same transaction;
/// the event's `group_id` is set in place), counts them for alert rules (`alerting::rollup`) and
/// updates the services registry; returns the indexes of the events it stored. May run more
/// than once (the group-commit writer retries batches): each run assigns groups afresh.
pub fn store_events(
    txn: &WriteTransaction,
    org: &OrgId,
    events: &mut [ErrorEvent],
) -> Result<Vec<usize>, StoreError> {
    let fingerprints = fingerprints_of(events);
    store_fingerprinted_events(txn, org, events, &fingerprints)
}

/// The fingerprint of each event, for `store_fingerprinted_events`: CPU work (stack frames,
/// masking) better done on the request's thread than on the store's one writer thread.
pub fn fingerprints_of(events: &[ErrorEvent]) -> Vec<Fingerprint> {
    events
        .iter()
        .map(crate::errors::db::fingerprint_of)
        .collect()
}

/// `store_events` with the events' fingerprints computed beforehand (`fingerprints_of`).
pub fn store_fingerprinted_events(
    txn: &WriteTransaction,
    org: &OrgId,
    events: &mut [ErrorEvent],
    fingerprints: &[Fingerprint],
) -> Result<Vec<usize>, StoreError> {
    if fingerprints.len() != events.len() {
        return Err(StoreError::Storage(format!(
            "{} fingerprints for {} events",
            fingerprints.len(),
            events.len()
        )));
    }
    // One pass per table, each held open for the whole batch (`IndexWriter`). First the
    // client ids: an id stored before (or earlier in this batch) means a retry, not stored again.
    let mut stored = Vec::with_capacity(events.len());
    let mut client_ids = EVENT_CLIENT_IDS.writer(txn)?;
    for (index, event) in events.iter().enumerate() {
        if let Some(client_id) = &event.event_id {
            let index_key = tables::composite_key(org.as_str(), client_id);
            if client_ids.contains(&index_key)? {
                continue;
            }
            client_ids.insert(&index_key, event.id.as_str())?;
        }
        stored.push(index);
    }
    drop(client_ids);

    let mut grouping = crate::errors::db::Grouping::new(txn, org)?;
    let mut rollups = RollupBatch::new();
    for &index in &stored {
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
    grouping.finish(txn)?;
    rollups.flush(txn)?;

    let mut records = EVENTS.writer(txn)?;
    let mut session_events = SESSION_EVENTS.writer(txn)?;
    let mut ages = db::TELEMETRY_AGES.writer(txn)?;
    let mut activity = Vec::new();
    for &index in &stored {
        let event = &events[index];
        let key = event.key(org);
        records.insert(&key, event)?;
        if let Some(session) = &event.session_id {
            let session_key = format!("{}/{session}/{}", org.as_str(), event.id.as_str());
            session_events.insert(&session_key, "")?;
        }
        db::put_age_with(&mut ages, Kind::Event, event.age(), &key)?;
        if let Some(service) = &event.service {
            activity.push(Activity {
                service: service.clone(),
                environment: event.environment.clone(),
                at: event.received_at,
                errors: u64::from(event.level == "error"),
            });
        }
    }
    drop((records, session_events, ages));
    services::record_activity(txn, org, &activity)?;
    Ok(stored)
}

/// The events of a batch that `store_events` stored (by their indexes), taken back from the
/// write closure's share. The store's writer drops a closure before it answers, so the request
/// holds the only reference by then; were it not so, the events are copied, never lost.
pub fn take_stored(events: Arc<Mutex<Vec<ErrorEvent>>>, stored: &[usize]) -> Vec<ErrorEvent> {
    let events = match Arc::try_unwrap(events) {
        Ok(only) => only.into_inner().unwrap_or_else(PoisonError::into_inner),
        Err(shared) => shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
    };
    let mut wanted = stored.iter().copied().peekable();
    events
        .into_iter()
        .enumerate()
        .filter_map(|(index, event)| wanted.next_if_eq(&index).map(|_| event))
        .collect()
}

/// Called once the events of one request are durable: the hook for work that must not run
/// inside the write transaction. Hands them to the search index writer (which never blocks
/// the request).
pub fn events_committed(search: &crate::search::Search, org: &OrgId, events: Vec<ErrorEvent>) {
    metrics::counter!("lookout_ingest_events_stored_total").increment(events.len() as u64);
    tracing::debug!(org = %org, stored = events.len(), "error events committed");
    search.submit(org.as_str(), events);
}

/// Removes an event and its index rows (retention). `false` when it was already gone.
pub fn remove_event(txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
    let Some(event) = EVENTS.get(txn, key)? else {
        return Ok(false);
    };
    let (org, _) = tables::split_composite_key(key).unwrap_or((key, ""));
    if let Some(client_id) = &event.event_id {
        let index_key = tables::composite_key(org, client_id);
        if EVENT_CLIENT_IDS.get(txn, &index_key)?.as_deref() == Some(event.id.as_str()) {
            EVENT_CLIENT_IDS.remove(txn, &index_key)?;
        }
    }
    if let Some(session) = &event.session_id {
        SESSION_EVENTS.remove(txn, &format!("{org}/{session}/{}", event.id.as_str()))?;
    }
    if let Some(group) = &event.group_id {
        crate::errors::db::forget_event(txn, org, group, event.id.as_str())?;
    }
    db::remove_age(txn, Kind::Event, event.age(), key)?;
    EVENTS.remove(txn, key)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::errors::model::GroupId;
    use crate::store::ReadTxn;

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
            parse_event(&item, NOW, None).unwrap()
        };
        let txn = database.begin_write().unwrap();
        let mut first = [
            event(Some("a"), "u1", "boom 1"),
            event(Some("a"), "u1", "boom 2"),
            event(None, "u2", "boom 3"),
            event(Some("b"), "u1", "other"),
        ];
        assert_eq!(store_events(&txn, &org, &mut first).unwrap(), [0, 2, 3]);
        let mut again = [
            event(Some("b"), "u3", "boom 4"),
            event(None, "u3", "boom 5"),
        ];
        assert_eq!(store_events(&txn, &org, &mut again).unwrap(), [1]);

        let boom = first[0].group_id.clone().unwrap();
        assert_eq!(first[2].group_id.as_deref(), Some(boom.as_str()));
        assert_eq!(again[1].group_id.as_deref(), Some(boom.as_str()));
        assert_ne!(first[3].group_id.as_deref(), Some(boom.as_str()));
        let group = crate::errors::db::get_group(&txn, &org, &GroupId::parse(&boom).unwrap())
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
        assert_eq!(rows(tables::SESSION_EVENTS), 4);
        assert_eq!(rows(tables::TELEMETRY_AGES), 4);
        assert_eq!(rows(tables::GROUP_EVENTS), 4);
        assert_eq!(rows(tables::GROUP_USERS), 4);
    }

    #[test]
    fn frames_parsed_from_the_stack_are_derived_not_stored() {
        let stack = "TypeError: x is undefined\n    at pay (https://a.test/app.js:10:5)\n    at https://a.test/vendor.js:1:2";
        let item = json!({"level": "error", "message": "m", "url": "u", "stack": stack});
        let mut event = parse_event(&item, NOW, None).unwrap();
        assert_eq!(event.frames, None, "not stored");
        let derived = event.frames_or_derived().into_owned();
        assert_eq!(derived.len(), 2);
        assert_eq!(derived[0]["function"], "pay");
        assert_eq!(derived[0]["line"], 10);
        assert_eq!(event.frames_mut().cloned(), Some(derived));

        let sent = json!({"level": "error", "message": "m", "url": "u", "stack": stack,
            "frames": [{"file": "b.js", "line": 3, "column": 4}]});
        let event = parse_event(&sent, NOW, None).unwrap();
        assert_eq!(
            event.frames_or_derived()[0]["file"],
            "b.js",
            "sent frames win"
        );
        let bare = json!({"level": "error", "message": "m", "url": "u"});
        let mut event = parse_event(&bare, NOW, None).unwrap();
        assert!(event.frames_or_derived().is_empty());
        assert_eq!(event.frames_mut(), None);
    }

    #[test]
    fn items_become_events_or_reasons() {
        let item = json!({"level": "error", "message": "boom", "url": "https://a.test/",
            "event_id": "e-1", "frames": [{"file": "a.js", "line": 1, "column": 2}],
            "tags": {"plan": "pro"}, "timestamp": "2026-11-22T11:00:00Z", "service": "web"});
        let event = parse_event(&item, NOW, None).unwrap();
        assert_eq!(event.event_id.as_deref(), Some("e-1"));
        assert_eq!(event.timestamp, Timestamp(NOW.0 - 3_600_000));
        assert_eq!(event.tags["plan"], "pro");
        assert!(event.id.as_str().starts_with("evt_"));
        let with_id = json!({"level": "warning", "message": "m", "url": "u", "id": "x"});
        assert_eq!(
            parse_event(&with_id, NOW, None)
                .unwrap()
                .event_id
                .as_deref(),
            Some("x")
        );

        let bad = [
            json!({"message": "m", "url": "u"}),
            json!({"level": "fatal", "message": "m", "url": "u"}),
            json!({"level": "error", "url": "u"}),
            json!({"level": "error", "message": 5, "url": "u"}),
            json!({"level": "error", "message": "m"}),
            json!({"level": "error", "message": "m", "url": "u", "frames": [1]}),
            json!({"level": "error", "message": "m", "url": "u", "tags": []}),
            json!({"level": "error", "message": "m", "url": "u", "timestamp": -5}),
            json!({"level": "error", "message": "m", "url": "u", "session_id": "a/b"}),
            json!({"level": "error", "message": "m", "url": "u", "fingerprint": [{}]}),
            json!("not an object"),
        ];
        for item in bad {
            assert!(parse_event(&item, NOW, None).is_err(), "{item}");
        }
    }
}
