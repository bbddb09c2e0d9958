//! Each group's folded events, many to a row: `{org}/{group}/{first id}` -> up to
//! `RUN_EVENTS` event ids, ascending, separated by spaces (a run). One row per event
//! (`{org}/{group}/{event}` -> "", 92 bytes of key for 30 of id) left half of its pages empty
//! on a large store: rows land at the end of each group's key range, in the middle of the
//! table, and every leaf split there leaves a half-full leaf behind. Runs are filled before the
//! next is started, so a stored event costs its id and a space.
//!
//! Invariants: every id of a run sorts at or after the run's key's id and before the next
//! run's key's id (a key is a lower bound of its run: removing a run's first id keeps the key);
//! an id is in at most one run of a group; no run is empty.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use crate::store::{IndexTable, ReadTxn, StoreError, WalkBounds, tables};

/// `{org}/{group}/{first event}` -> the group's event ids from there, ascending.
pub const GROUP_EVENT_RUNS: IndexTable = IndexTable::new(tables::GROUP_EVENT_RUNS);
/// The most ids in one run: about 3 KB of value.
pub const RUN_EVENTS: usize = 100;

/// The runs table, open for one fold or removal.
pub type Runs<'t> = Table<'t, &'static str, &'static str>;

pub fn open(txn: &WriteTransaction) -> Result<Runs<'_>, StoreError> {
    Ok(txn.open_table(GROUP_EVENT_RUNS.definition())?)
}

fn prefix(org: &str, group: &str) -> String {
    format!("{org}/{group}/")
}

/// The key of the run that holds `id` if any does: the greatest key at or before it.
fn run_key_at(runs: &Runs<'_>, prefix: &str, id: &str) -> Result<Option<String>, StoreError> {
    let upto = format!("{prefix}{id}");
    match runs.range::<&str>(prefix..=upto.as_str())?.next_back() {
        Some(entry) => Ok(Some(entry?.0.value().to_string())),
        None => Ok(None),
    }
}

/// The run that holds `id` if any does, with its ids.
fn run_at(runs: &Runs<'_>, prefix: &str, id: &str) -> Result<Option<(String, String)>, StoreError> {
    let Some(key) = run_key_at(runs, prefix, id)? else {
        return Ok(None);
    };
    let run = runs.get(key.as_str())?.map(|run| run.value().to_string());
    Ok(run.map(|run| (key, run)))
}

/// The group's first or last run.
fn end_run(
    runs: &Runs<'_>,
    prefix: &str,
    last: bool,
) -> Result<Option<(String, String)>, StoreError> {
    let end = format!("{}0", prefix.trim_end_matches('/'));
    let mut range = runs.range::<&str>(prefix..end.as_str())?;
    let found = if last {
        range.next_back()
    } else {
        range.next()
    };
    Ok(match found {
        Some(entry) => {
            let (key, value) = entry?;
            Some((key.value().to_string(), value.value().to_string()))
        }
        None => None,
    })
}

/// Writes `ids` (ascending, none already in a run of the group) as runs of `RUN_EVENTS`,
/// each under its first id.
fn write_runs(runs: &mut Runs<'_>, prefix: &str, ids: &[&str]) -> Result<(), StoreError> {
    for run in ids.chunks(RUN_EVENTS) {
        let key = format!("{prefix}{}", run[0]);
        runs.insert(key.as_str(), run.join(" ").as_str())?;
    }
    Ok(())
}

/// Adds `ids` (ascending, one group's) to the group's runs. Ids after the last run's key (as
/// nearly all are: ids grow with time) fill the last run and then new ones; an older id
/// (an event moved into the group) goes into the run its place falls in.
pub fn add(runs: &mut Runs<'_>, org: &str, group: &str, ids: &[String]) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    let prefix = prefix(org, group);
    let last = end_run(runs, &prefix, true)?;
    let (tail, older): (Vec<&str>, Vec<&str>) = match &last {
        Some((key, _)) => {
            let from = &key[prefix.len()..];
            ids.iter().map(String::as_str).partition(|id| *id >= from)
        }
        None => (ids.iter().map(String::as_str).collect(), Vec::new()),
    };
    for id in older {
        add_one(runs, &prefix, id)?;
    }
    if tail.is_empty() {
        return Ok(());
    }
    let mut merged: Vec<&str> = Vec::new();
    let last = end_run(runs, &prefix, true)?;
    if let Some((key, run)) = &last {
        runs.remove(key.as_str())?;
        merged.extend(run.split(' '));
    }
    merged.extend(tail);
    merged.sort_unstable();
    merged.dedup();
    if let Some((key, _)) = &last {
        // The run keeps its key (a lower bound of its ids), the rest go under their first id.
        let (head, rest) = merged.split_at(RUN_EVENTS.min(merged.len()));
        runs.insert(key.as_str(), head.join(" ").as_str())?;
        write_runs(runs, &prefix, rest)
    } else {
        write_runs(runs, &prefix, &merged)
    }
}

/// Adds one id where its place falls: into the run with the greatest key at or before it (or
/// the group's first run, which then takes it as its key), split when it is over-full.
fn add_one(runs: &mut Runs<'_>, prefix: &str, id: &str) -> Result<(), StoreError> {
    let (key, run) = match run_at(runs, prefix, id)? {
        Some(found) => found,
        None => match end_run(runs, prefix, false)? {
            Some(found) => found,
            None => return write_runs(runs, prefix, &[id]),
        },
    };
    let mut ids: Vec<&str> = run.split(' ').collect();
    let Err(at) = ids.binary_search(&id) else {
        return Ok(()); // already there
    };
    ids.insert(at, id);
    runs.remove(key.as_str())?;
    // Under the lower of its old key and its first id; an over-full run is split.
    let key_id = &key[prefix.len()..];
    let kept_key = if id < key_id {
        format!("{prefix}{id}")
    } else {
        key
    };
    let (head, rest) = ids.split_at(RUN_EVENTS.min(ids.len()));
    runs.insert(kept_key.as_str(), head.join(" ").as_str())?;
    write_runs(runs, prefix, rest)
}

/// Removes `ids` from the group's runs, each run rewritten once however many of them it
/// held; how many were there.
pub fn remove_all(
    runs: &mut Runs<'_>,
    (org, group): (&str, &str),
    ids: &[&str],
) -> Result<usize, StoreError> {
    let mut removed = 0;
    for (key, gone) in by_run(runs, &prefix(org, group), ids)? {
        let Some(run) = runs.get(key.as_str())?.map(|run| run.value().to_string()) else {
            continue;
        };
        let held = run.split(' ').count();
        let kept: Vec<&str> = run.split(' ').filter(|id| !gone.contains(id)).collect();
        removed += held - kept.len();
        if kept.is_empty() {
            runs.remove(key.as_str())?;
        } else if kept.len() < held {
            runs.insert(key.as_str(), kept.join(" ").as_str())?;
        }
    }
    Ok(removed)
}

/// Which of `ids` the group's runs hold, each run read once.
pub fn held<'a>(
    runs: &Runs<'_>,
    (org, group): (&str, &str),
    ids: &[&'a str],
) -> Result<Vec<&'a str>, StoreError> {
    let mut held = Vec::new();
    for (key, wanted) in by_run(runs, &prefix(org, group), ids)? {
        if let Some(run) = runs.get(key.as_str())? {
            let run: Vec<&str> = run.value().split(' ').collect();
            held.extend(
                wanted
                    .into_iter()
                    .filter(|id| run.binary_search(id).is_ok()),
            );
        }
    }
    Ok(held)
}

/// `ids` by the key of the run each would be in, those before the group's first run left out.
fn by_run<'a>(
    runs: &Runs<'_>,
    prefix: &str,
    ids: &[&'a str],
) -> Result<BTreeMap<String, Vec<&'a str>>, StoreError> {
    let mut by_run: BTreeMap<String, Vec<&'a str>> = BTreeMap::new();
    for id in ids {
        if let Some(key) = run_key_at(runs, prefix, id)? {
            by_run.entry(key).or_default().push(id);
        }
    }
    Ok(by_run)
}

/// Walks the group's runs last first, those with keys before `before` when given, until
/// `visit` (given each run's ids, space-separated) says it has seen enough.
fn walk_runs(
    txn: &impl ReadTxn,
    (org, group): (&str, &str),
    before: Option<&str>,
    mut visit: impl FnMut(&str) -> bool,
) -> Result<(), StoreError> {
    let prefix = prefix(org, group);
    // `0` follows `/`: `{org}/{group}0` is past every run of the group.
    let end = before.map_or_else(|| format!("{org}/{group}0"), |id| format!("{prefix}{id}"));
    let until_enough = WalkBounds {
        kept: 1,
        rows: usize::MAX,
    };
    let runs = GROUP_EVENT_RUNS.definition();
    crate::store::walk_backwards(txn, runs, (&prefix, &end), until_enough, |_, run| {
        Ok::<_, StoreError>(visit(run))
    })?;
    Ok(())
}

/// Up to `limit` ids of the group's runs before `before` (when given), newest first.
pub fn newest_in_runs(
    txn: &impl ReadTxn,
    (org, group): (&str, &str),
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let mut ids = Vec::new();
    if limit > 0 {
        walk_runs(txn, (org, group), before, |run| {
            let wanted = run.rsplit(' ').filter(|id| before.is_none_or(|b| *id < b));
            ids.extend(wanted.take(limit - ids.len()).map(str::to_string));
            ids.len() >= limit
        })?;
    }
    Ok(ids)
}

/// How many ids the group's runs hold, counting no further than past `up_to`.
pub fn count(
    txn: &impl ReadTxn,
    org: &str,
    group: &str,
    up_to: usize,
) -> Result<usize, StoreError> {
    let mut total = 0;
    walk_runs(txn, (org, group), None, |run| {
        total += run.split(' ').count();
        total > up_to
    })?;
    Ok(total)
}
