//! Regrouping over a scratch database, one worker step at a time: events move to their
//! source-mapped group, an emptied group merges into it, a step run twice moves nothing twice,
//! and the cursor stored with each step is where the next one starts.

use redb::{Database, ReadableDatabase};
use serde_json::{Value, json};

use super::*;
use crate::clock::Timestamp;
use crate::errors::event_db::{EventBatch, store_events};
use crate::errors::model::ErrorGroup;
use crate::errors::sourcemaps::{self, SourceMap, SourceMapId};
// Marked so the arrow check (tests/integration/tidy.rs) reads it as test-only, as it is.
#[cfg(test)]
use crate::ingest::web_errors::parse_event;

const NOW: Timestamp = Timestamp(1_795_348_800_000);
/// The bundle and stacks of tests/fixtures/stacks/capture/capture.sh.
const MAP: &str = include_str!("../../tests/fixtures/stacks/real-engines.min.js.map");
const CAPTURED: &str = include_str!("../../tests/fixtures/stacks/real-engines.json");
const FILE: &str = "http://127.0.0.1:8765/assets/app.min.js";

fn event(engine: &str, release: &str) -> ErrorEvent {
    let captured: Value = serde_json::from_str(CAPTURED).unwrap();
    let report = &captured["engines"][engine];
    let item = json!({"level": "error", "name": report["name"], "message": report["message"],
        "stack": report["stack"], "url": "u", "release": release});
    parse_event(&item.clone().into(), NOW, None).unwrap()
}

fn store(database: &Database, org: &OrgId, events: Vec<ErrorEvent>) -> Vec<ErrorEvent> {
    let txn = database.begin_write().unwrap();
    let mut batch = EventBatch::new(org, events);
    store_events(&txn, org, &mut batch).unwrap();
    txn.commit().unwrap();
    batch.events().to_vec()
}

/// Stores the map of `release` (which queues its job).
fn put_map(database: &Database, org: &OrgId, release: &str) {
    put_map_of(database, org, release, FILE);
}

/// Stores the map of `release` as the map of `file`.
fn put_map_of(database: &Database, org: &OrgId, release: &str, file: &str) {
    let record = SourceMap {
        id: SourceMapId::generate(),
        release: release.to_string(),
        file: file.to_string(),
        size: MAP.len() as u64,
        uploaded_at: NOW,
        debug_id: None,
    };
    let compressed = zstd::stream::encode_all(MAP.as_bytes(), 3).unwrap();
    let txn = database.begin_write().unwrap();
    sourcemaps::put(&txn, org, &record, &compressed).unwrap();
    txn.commit().unwrap();
}

/// What the worker's step reads: the first job and what it scans.
fn read_step(database: &Database) -> Option<(String, Vec<u8>, OrgId, Scanned)> {
    let txn = database.begin_read().unwrap();
    let (key, stored, job) = first_job(&txn).unwrap()?;
    let org = OrgId::parse(&job.org).unwrap();
    let scanned = scan_step(&txn, &org, &job).unwrap();
    Some((key, stored, org, scanned))
}

fn apply(database: &Database, read: &(String, Vec<u8>, OrgId, Scanned)) -> Vec<ErrorEvent> {
    let (key, stored, org, scanned) = read;
    let txn = database.begin_write().unwrap();
    let moved = apply_step(&txn, org, scanned, (key, stored)).unwrap();
    txn.commit().unwrap();
    moved
}

/// One step as the worker runs it; `None` when no job is queued.
fn step(database: &Database) -> Option<Vec<ErrorEvent>> {
    read_step(database).map(|read| apply(database, &read))
}

fn group(database: &Database, org: &OrgId, id: &str) -> ErrorGroup {
    let txn = database.begin_read().unwrap();
    db::get_group(&txn, org, &GroupId::parse(id).unwrap())
        .unwrap()
        .unwrap()
}

#[test]
fn events_move_to_their_source_mapped_group_and_an_emptied_group_merges_into_it() {
    let (_dir, database) = crate::store::migrations::scratch_database();
    let org = OrgId::generate();
    let mut events: Vec<ErrorEvent> = ["chromium", "firefox", "webkit"]
        .iter()
        .map(|engine| event(engine, "1.0"))
        .collect();
    events.push(event("webkit", "2.0"));
    let stored = store(&database, &org, events);
    let old = stored[0].group_id.clone().unwrap();
    assert!(
        stored
            .iter()
            .all(|e| e.group_id.as_deref() == Some(old.as_str()))
    );

    // Release 1.0's map moves its three events; the release 2.0 event keeps the old group.
    put_map(&database, &org, "1.0");
    let moved = step(&database).expect("a queued job");
    assert_eq!(moved.len(), 3);
    let new = moved[0].group_id.clone().unwrap();
    assert_ne!(new, old);
    assert!(
        moved
            .iter()
            .all(|e| e.group_id.as_deref() == Some(new.as_str()))
    );
    assert!(step(&database).is_none(), "the job is done");
    let (kept, mapped) = (group(&database, &org, &old), group(&database, &org, &new));
    assert_eq!((kept.id.as_str(), kept.count), (old.as_str(), 1));
    assert_eq!(mapped.count, 3);
    assert_eq!(
        mapped.culprit.as_deref(),
        Some("lineTotal (../src/cart.js)")
    );

    // Release 2.0's map moves the last one: the old group merges and answers for the new one.
    put_map(&database, &org, "2.0");
    assert_eq!(step(&database).expect("a queued job").len(), 1);
    let answered = group(&database, &org, &old);
    assert_eq!((answered.id.as_str(), answered.count), (new.as_str(), 4));
    let txn = database.begin_read().unwrap();
    let record = db::get_group_record(&txn, &org, &GroupId::parse(&old).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        record.merged_into.as_ref().map(GroupId::as_str),
        Some(new.as_str())
    );
    let listed = GROUP_LAST_SEEN.scan(&txn, Scan::prefix(&tables::owner_prefix(org.as_str())));
    assert_eq!(
        listed.unwrap().len(),
        1,
        "only the surviving group is listed"
    );
}

#[test]
fn a_step_applied_twice_moves_nothing_twice_and_the_next_starts_at_its_cursor() {
    let (_dir, database) = crate::store::migrations::scratch_database();
    let org = OrgId::generate();
    let events = (0..=STEP_EVENTS)
        .map(|_| event("chromium", "1.0"))
        .collect();
    let stored = store(&database, &org, events);
    put_map(&database, &org, "1.0");

    let first = read_step(&database).unwrap();
    assert_eq!(apply(&database, &first).len(), STEP_EVENTS);
    // The write closure may run again (group commit): nothing moves twice.
    assert!(apply(&database, &first).is_empty());
    let txn = database.begin_read().unwrap();
    let (_, _, job) = first_job(&txn).unwrap().expect("the job with its cursor");
    drop(txn);
    let mut keys: Vec<String> = stored.iter().map(|e| e.key(&org)).collect();
    keys.sort();
    assert_eq!(job.after.as_deref(), Some(keys[STEP_EVENTS - 1].as_str()));

    // The next step (after a restart, say) starts at the cursor and finishes the job.
    assert_eq!(step(&database).unwrap().len(), 1);
    assert!(step(&database).is_none());
    let new = group(&database, &org, stored[0].group_id.as_deref().unwrap());
    assert_eq!(new.count, STEP_EVENTS as u64 + 1);
}

#[test]
fn the_maps_of_one_release_queue_one_walk_restarted_by_each() {
    let (_dir, database) = crate::store::migrations::scratch_database();
    let org = OrgId::generate();
    let events = (0..=STEP_EVENTS)
        .map(|_| event("chromium", "1.0"))
        .collect();
    store(&database, &org, events);
    put_map_of(
        &database,
        &org,
        "1.0",
        "https://shop.example.com/assets/vendor.min.js",
    );
    // The first step of the walk, then another map of the release: the walk starts again.
    let first = read_step(&database).unwrap();
    apply(&database, &first);
    put_map(&database, &org, "1.0");
    put_map_of(&database, &org, "2.0", FILE);
    let txn = database.begin_read().unwrap();
    let jobs = txn
        .open(META)
        .unwrap()
        .scan_with(
            Scan {
                prefix: JOB_PREFIX,
                after: None,
                limit: 10,
            },
            |key, value| {
                Ok((
                    key.to_string(),
                    serde_json::from_slice::<Job>(value).unwrap(),
                ))
            },
        )
        .unwrap();
    drop(txn);
    let releases: Vec<&str> = jobs.iter().map(|(_, job)| job.release.as_str()).collect();
    assert_eq!(releases.len(), 2, "{jobs:?}");
    assert!(releases.contains(&"1.0") && releases.contains(&"2.0"));
    let again = jobs.iter().find(|(_, job)| job.release == "1.0").unwrap();
    assert_eq!(again.1.after, None, "the walk starts again");
    assert_eq!(again.1.file, FILE);
}
