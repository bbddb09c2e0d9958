//! Regrouping when a source map arrives (CONTRACT section 3: "events that arrived before their
//! source map are regrouped when it arrives"). Storing a map for release R queues a job
//! (`enqueue`, in the upload's own transaction), one per release whatever file the map is of; the worker (`run`) walks the
//! organisation's events with a cursor, `STEP_EVENTS` a step, resolves those of release R
//! whose frames the stored maps now resolve, and moves each to the group of its source-mapped
//! fingerprint (`fingerprint.rs`, version 3): the event record's `group_id`, its group-events
//! and group-users rows and both groups' counts change in one write transaction per step, and
//! the moved events are indexed again through an `IndexTicket`. A group left without events is
//! merged into the group that received them: it keeps its id as an alias
//! (`ErrorGroup::merged_into`, followed by `db::get_group`), its remaining counts (events
//! retention already removed) are added to the survivor, and it leaves the group list.
//!
//! Invariants: a job is stored in the `meta` table under `JOB_PREFIX` with its cursor, and the
//! cursor moves in the same transaction as the step's changes, so a restart resumes where the
//! last committed step ended and a step that runs twice changes nothing twice (an event is
//! moved only when it is still in the group it was read in). Resolution and fingerprints are
//! computed in a read transaction on a blocking thread, never on the store's writer thread;
//! no transaction is held across an `.await`. Another map for the same release restarts its
//! job from the beginning (a step resolves through every stored map of the release, so the
//! events already walked may resolve further): a deploy uploading twenty maps walks the events
//! about once, not twenty times.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use redb::{ReadTransaction, WriteTransaction};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

use super::db::{self, GROUP_LAST_SEEN, Grouping};
use super::event::ErrorEvent;
use super::event_db::{self, EVENTS};
use super::fingerprint::Fingerprint;
use super::group_events;
use super::model::GroupId;
use super::resolve;
use super::search::Search;
use crate::accounts::model::OrgId;
use crate::store::tables::{self, META, escape_key_part};
use crate::store::{ReadTxn, Scan, Store, StoreError, meta_put, meta_remove};

/// Events read per step (and at most moved per write transaction).
const STEP_EVENTS: usize = 500;
/// Keys of queued jobs in the `meta` table: `{prefix}{org}/{escaped release}` (jobs queued
/// before jobs were per release carry `/{file}` too, and run as they are).
const JOB_PREFIX: &str = "errors.regroup/";
/// How long the worker sleeps when nothing woke it: a job queued by a transaction that had not
/// committed yet when the worker looked is found by then.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// A queued regrouping: the release, the file of the map that queued it last (for the
/// record), and the key of the last event looked at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Job {
    org: String,
    release: String,
    file: String,
    after: Option<String>,
}

/// Wakes the worker when a job is queued (the worker and the upload route share no handle;
/// the store is where the job itself lives).
fn wake() -> &'static Notify {
    static WAKE: OnceLock<Notify> = OnceLock::new();
    WAKE.get_or_init(Notify::new)
}

fn job_key(org: &str, release: &str) -> String {
    format!("{JOB_PREFIX}{org}/{}", escape_key_part(release))
}

/// Queues the regrouping of release `release`'s events for a map of `file`, in the
/// transaction that stores the map (a job queued again starts from the beginning).
pub fn enqueue(
    txn: &WriteTransaction,
    org: &OrgId,
    release: &str,
    file: &str,
) -> Result<(), StoreError> {
    let job = Job {
        org: org.to_string(),
        release: release.to_string(),
        file: file.to_string(),
        after: None,
    };
    meta_put(txn, &job_key(org.as_str(), release), &encode(&job)?)?;
    wake().notify_one();
    Ok(())
}

fn encode(job: &Job) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(job).map_err(|error| corrupt(&error.to_string()))
}

fn corrupt(detail: &str) -> StoreError {
    StoreError::Corrupt {
        what: "regroup job",
        detail: detail.to_string(),
    }
}

/// Runs queued jobs, one step at a time, until `shutdown` turns true.
pub async fn run(store: Store, search: Search, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        match run_one_step(&store, &search).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "regrouping stopped; retried later"),
        }
        tokio::select! {
            _ = wake().notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(IDLE_POLL) => {}
        }
    }
}

/// One step of the first queued job; `false` when no job is queued.
async fn run_one_step(store: &Store, search: &Search) -> anyhow::Result<bool> {
    let Some((key, stored, job)) = store.read(first_job).await? else {
        return Ok(false);
    };
    let org = OrgId::parse(&job.org)?;
    let read_org = org.clone();
    let scanned = store
        .read(move |txn| scan_step(txn, &read_org, &job))
        .await?;
    // The ticket is taken before the write, so the index accounts for what it commits.
    let ticket = search.ticket()?;
    let write_org = org.clone();
    let moved = store
        .write(move |txn| apply_step(txn, &write_org, &scanned, (&key, &stored)))
        .await?;
    if !moved.is_empty() {
        tracing::info!(org = %org, moved = moved.len(), "events regrouped through a source map");
    }
    ticket.submit_moved(org.as_str(), moved);
    Ok(true)
}

/// The first queued job: its key, its stored bytes and the job.
fn first_job(txn: &ReadTransaction) -> Result<Option<(String, Vec<u8>, Job)>, StoreError> {
    let scan = Scan {
        prefix: JOB_PREFIX,
        after: None,
        limit: 1,
    };
    let found = txn
        .open(META)?
        .scan_with(scan, |key, value| Ok((key.to_string(), value.to_vec())))?;
    let Some((key, bytes)) = found.into_iter().next() else {
        return Ok(None);
    };
    let job: Job = serde_json::from_slice(&bytes).map_err(|error| corrupt(&error.to_string()))?;
    Ok(Some((key, bytes, job)))
}

/// What a step read: the events to move (resolved, with their new fingerprints) and where the
/// next step starts (`None`: the walk is done).
struct Scanned {
    job: Job,
    candidates: Vec<(ErrorEvent, Fingerprint)>,
    next: Option<String>,
}

/// Reads the next `STEP_EVENTS` events of the organisation; keeps those of the job's release
/// that the stored maps now resolve further, resolved and fingerprinted.
fn scan_step(txn: &ReadTransaction, org: &OrgId, job: &Job) -> Result<Scanned, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    let scan = Scan {
        prefix: &prefix,
        after: job.after.as_deref(),
        limit: STEP_EVENTS,
    };
    let rows = EVENTS.scan(txn, scan)?;
    let next = match rows.len() < STEP_EVENTS {
        true => None,
        false => rows.last().map(|(key, _)| key.clone()),
    };
    let mut candidates = Vec::new();
    let mut releases = resolve::ReleasesWithMaps::default();
    for (_, mut event) in rows {
        if event.release.as_deref() != Some(job.release.as_str()) || event.group_id.is_none() {
            continue;
        }
        if resolve::resolve_for_storing(txn, org, &mut event, &mut releases)? {
            let fingerprint = db::fingerprint_of(&event);
            candidates.push((event, fingerprint));
        }
    }
    Ok(Scanned {
        job: job.clone(),
        candidates,
        next,
    })
}

/// Moves the step's events, merges the groups it empties and moves the job's cursor (unless
/// the job was queued again meanwhile); returns the moved events, each with its new group.
fn apply_step(
    txn: &WriteTransaction,
    org: &OrgId,
    scanned: &Scanned,
    (key, stored): (&str, &[u8]),
) -> Result<Vec<ErrorEvent>, StoreError> {
    let mut grouping = Grouping::new(txn, org)?;
    let mut moved = Vec::new();
    // Old group id -> (the events that left it, the group that received the last of them).
    let mut left: BTreeMap<GroupId, (Vec<ErrorEvent>, GroupId)> = BTreeMap::new();
    for (read, fingerprint) in &scanned.candidates {
        let event_key = read.key(org);
        let Some(current) = EVENTS.get(txn, &event_key)? else {
            continue; // removed by retention meanwhile
        };
        let Some(old_id) = current.group_id.as_deref() else {
            continue;
        };
        if current.group_id != read.group_id {
            continue; // moved by an earlier run of this step
        }
        let old_id = GroupId::parse(old_id).map_err(|error| corrupt(&error.to_string()))?;
        let mut event = read.clone();
        if target_group(txn, org, fingerprint)? == Some(old_id.clone()) {
            // Resolved, but its group does not change: the record keeps the resolution.
            event_db::rewrite_event(txn, org, &event_key, &event)?;
            continue;
        }
        let (new_id, _) = grouping.assign(txn, &event, fingerprint)?;
        event.group_id = Some(new_id.to_string());
        event_db::rewrite_event(txn, org, &event_key, &event)?;
        let entry = left
            .entry(old_id)
            .or_insert_with(|| (Vec::new(), new_id.clone()));
        entry.0.push(event.clone());
        entry.1 = new_id;
        moved.push(event);
    }
    grouping.finish(txn)?;
    for (old_id, (events, survivor)) in &left {
        leave_group(txn, org, old_id, events, survivor)?;
    }
    if txn.open(META)?.get_with(key, <[u8]>::to_vec)?.as_deref() == Some(stored) {
        match &scanned.next {
            Some(after) => {
                let job = Job {
                    after: Some(after.clone()),
                    ..scanned.job.clone()
                };
                meta_put(txn, key, &encode(&job)?)?;
            }
            None => {
                meta_remove(txn, key)?;
            }
        }
    }
    Ok(moved)
}

/// The id of the group that answers for `fingerprint` now, if one does.
fn target_group(
    txn: &WriteTransaction,
    org: &OrgId,
    fingerprint: &Fingerprint,
) -> Result<Option<GroupId>, StoreError> {
    let index_key = tables::composite_key(org.as_str(), &fingerprint.hash);
    let Some(id) = db::find_group_id(txn, org, fingerprint, &index_key)? else {
        return Ok(None);
    };
    let id = GroupId::parse(&id).map_err(|error| corrupt(&error.to_string()))?;
    Ok(db::get_group(txn, org, &id)?.map(|group| group.id))
}

/// Takes `events` out of group `old_id`; merges it into `survivor` when no event is left in it.
fn leave_group(
    txn: &WriteTransaction,
    org: &OrgId,
    old_id: &GroupId,
    events: &[ErrorEvent],
    survivor: &GroupId,
) -> Result<(), StoreError> {
    let Some(mut old) = db::get_group_record(txn, org, old_id)? else {
        return Err(corrupt("an event names a missing group"));
    };
    for event in events {
        old.unfold(event);
        db::forget_event(txn, org.as_str(), old_id.as_str(), event.id.as_str())?;
    }
    let empty = !group_events::has_events(txn, org.as_str(), old_id.as_str())?;
    if !empty || old.merged_into.is_some() {
        return db::put_group(txn, org, &old);
    }
    let Some(mut into) = db::get_group(txn, org, survivor)? else {
        return Err(corrupt("a regrouped event's group is missing"));
    };
    let row_before = db::last_seen_key(org, &into);
    into.absorb(&old);
    let row_after = db::last_seen_key(org, &into);
    if row_before != row_after {
        GROUP_LAST_SEEN.remove(txn, &row_before)?;
        GROUP_LAST_SEEN.insert(txn, &row_after, into.id.as_str())?;
    }
    GROUP_LAST_SEEN.remove(txn, &db::last_seen_key(org, &old))?;
    old.merged_into = Some(into.id.clone());
    db::put_group(txn, org, &old)?;
    db::put_group(txn, org, &into)
}

#[cfg(test)]
#[path = "regroup_tests.rs"]
mod tests;
