//! The events of each error group, written in two steps so that a commit does not rewrite a
//! B-tree leaf (and its branch pages) of `GROUP_EVENTS` for every group it touches.
//!
//! An ingest write records `{org}/{event}` -> group in `UNFOLDED`. Event ids grow with time,
//! so these rows land on the table's last leaves, whatever the number of groups. Once
//! `FOLD_AT` rows wait, the write that finds them moves every one into the group's runs
//! (`group_runs.rs`: many ids to a row), where one row per group then takes many at once.
//! `GROUP_EVENTS` (`{org}/{group}/{event}`, one row per event) is what folds wrote before
//! schema 19: read and removed from, never written.
//!
//! Deleting events (retention) takes their ids out of the runs in the same two steps: each
//! deleted id a run still holds gets a `GONE` row (`{org}/{event}` -> group, on the table's
//! first leaves: retention deletes the oldest), and once `APPLY_GONE_AT` wait, the deletion
//! that finds them rewrites each run once for all of them. Readers leave gone ids out.
//!
//! Invariants:
//! - An event's group row is in exactly one of the three tables, written in the transaction
//!   that stores the event (or moves it to another group), so it commits with the event.
//! - A `GONE` row names an event that is deleted and an id its group's runs hold; an id is
//!   never in a run and in `UNFOLDED` at once.
//! - Every reader of a group's events (`newest`, `count`, `has_events`) reads the four tables
//!   in one transaction, so neither a fold nor applying the gone rows changes an answer.
//! - `UNFOLDED` holds fewer than `FOLD_AT` rows after any commit of `Grouping::finish`, plus
//!   the rows of that one write (at most `writes::MAX_EVENTS_PER_WRITE`); `GONE` fewer than
//!   `APPLY_GONE_AT` after any deletion, plus that deletion's.

use redb::{ReadableTable, WriteTransaction};

use super::db::group_event_key;
use super::group_runs;
use crate::store::{IndexTable, IndexWriter, ReadTxn, StoreError, WalkBounds, tables};

/// `{org}/{group}/{event}` -> "": the events of each group folded before schema 19.
pub const GROUP_EVENTS: IndexTable = IndexTable::new(tables::GROUP_EVENTS);
/// `{org}/{event}` -> group id: the events of each group not folded yet.
pub const UNFOLDED: IndexTable = IndexTable::new(tables::GROUP_EVENTS_UNFOLDED);
/// `{org}/{event}` -> group id: deleted events whose ids their group's runs still hold.
pub const GONE: IndexTable = IndexTable::new(tables::GROUP_EVENTS_GONE);

/// How many unfolded rows make the next write fold them all. A read of a group's events scans
/// the unfolded rows of its organisation, so this bounds that scan too.
pub const FOLD_AT: u64 = 4096;

/// How many gone rows make the next deletion take them out of the runs. A read of a group's
/// events scans the gone rows of its organisation too.
pub const APPLY_GONE_AT: u64 = 4096;

/// Records `event` under `group` (in `UNFOLDED`, held open by the caller for its batch).
pub fn record(
    unfolded: &mut IndexWriter<'_>,
    org: &str,
    group: &str,
    event: &str,
) -> Result<(), StoreError> {
    unfolded.insert(&tables::composite_key(org, event), group)
}

/// Folds the unfolded rows once there are `FOLD_AT` of them.
pub fn fold_if_due(txn: &WriteTransaction) -> Result<(), StoreError> {
    if UNFOLDED.row_count(txn)? >= FOLD_AT {
        fold(txn)?;
    }
    Ok(())
}

/// Moves every unfolded row into its group's runs, one group after another.
pub fn fold(txn: &WriteTransaction) -> Result<usize, StoreError> {
    let rows = take_rows(txn, UNFOLDED)?;
    let mut runs = group_runs::open(txn)?;
    for group in rows.chunk_by(|a, b| (&a.0, &a.1) == (&b.0, &b.1)) {
        let ids: Vec<String> = group.iter().map(|(_, _, event)| event.clone()).collect();
        group_runs::add(&mut runs, &group[0].0, &group[0].1, &ids)?;
    }
    drop(runs);
    keep_folded_ids(txn, &rows)?;
    metrics::counter!("lookout_group_event_folds_total").increment(1);
    Ok(rows.len())
}

/// Drops the gone rows of ids a fold just put in their group's runs (event ids are not
/// reused, so there are none; kept true all the same). Folded ids are the newest and gone
/// ones the oldest, so the range between the fold's first and last key is empty.
fn keep_folded_ids(
    txn: &WriteTransaction,
    rows: &[(String, String, String)],
) -> Result<(), StoreError> {
    let keys = || {
        rows.iter()
            .map(|(org, _, event)| tables::composite_key(org, event))
    };
    let (Some(first), Some(last)) = (keys().min(), keys().max()) else {
        return Ok(());
    };
    let mut gone = txn.open_table(GONE.definition())?;
    let mut found = Vec::new();
    for entry in gone.range::<&str>(first.as_str()..=last.as_str())? {
        let (key, group) = entry?;
        found.push((key.value().to_string(), group.value().to_string()));
    }
    if found.is_empty() {
        return Ok(());
    }
    let folded: std::collections::HashSet<(String, &str)> = rows
        .iter()
        .map(|(org, group, event)| (tables::composite_key(org, event), group.as_str()))
        .collect();
    for (key, group) in found {
        if folded.contains(&(key.clone(), group.as_str())) {
            gone.remove(key.as_str())?;
        }
    }
    Ok(())
}

/// Removes `event` from `group` (the event moved to another group). A row naming another
/// group is left alone: the event was recorded under that group since.
pub fn forget(
    txn: &WriteTransaction,
    org: &str,
    group: &str,
    event: &str,
) -> Result<(), StoreError> {
    let in_runs = forget_outside_runs(txn, &[(org, group, event)])?;
    let key = tables::composite_key(org, event);
    if GONE.get(txn, &key)?.as_deref() == Some(group) {
        GONE.remove(txn, &key)?;
    }
    let mut runs = group_runs::open(txn)?;
    for &(org, group, event) in &in_runs {
        group_runs::remove_all(&mut runs, (org, group), &[event])?;
    }
    Ok(())
}

/// Removes deleted events (`(org, group, event)`, a retention transaction's) from their
/// groups: ids in runs get a gone row, and once `APPLY_GONE_AT` rows wait, every run that
/// holds gone ids is rewritten once without them.
pub fn forget_deleted(
    txn: &WriteTransaction,
    items: &[(&str, &str, &str)],
) -> Result<(), StoreError> {
    let in_runs = forget_outside_runs(txn, items)?;
    let held = {
        let runs = group_runs::open(txn)?;
        let mut held = Vec::with_capacity(in_runs.len());
        for same in in_runs.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let ids: Vec<&str> = same.iter().map(|item| item.2).collect();
            let found = group_runs::held(&runs, (same[0].0, same[0].1), &ids)?;
            held.extend(found.into_iter().map(|id| (same[0].0, same[0].1, id)));
        }
        held
    };
    let mut gone = GONE.writer(txn)?;
    for (org, group, event) in held {
        gone.insert(&tables::composite_key(org, event), group)?;
    }
    drop(gone);
    if GONE.row_count(txn)? >= APPLY_GONE_AT {
        apply_gone(txn)?;
    }
    Ok(())
}

/// Takes every gone id out of its group's runs, each run rewritten once; how many there were.
pub fn apply_gone(txn: &WriteTransaction) -> Result<usize, StoreError> {
    let rows = take_rows(txn, GONE)?;
    let mut runs = group_runs::open(txn)?;
    for same in rows.chunk_by(|a, b| (&a.0, &a.1) == (&b.0, &b.1)) {
        let ids: Vec<&str> = same.iter().map(|(_, _, event)| event.as_str()).collect();
        group_runs::remove_all(&mut runs, (&same[0].0, &same[0].1), &ids)?;
    }
    metrics::counter!("lookout_group_event_gone_applied_total").increment(1);
    Ok(rows.len())
}

/// Empties `table` (`{org}/{event}` -> group); its rows as `(org, group, event)`, sorted.
fn take_rows(
    txn: &WriteTransaction,
    table: IndexTable,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut rows: Vec<(String, String, String)> = table
        .scan(txn, crate::store::Scan::all())?
        .into_iter()
        .filter_map(|(key, group)| {
            let (org, event) = tables::split_composite_key(&key)?;
            Some((org.to_string(), group, event.to_string()))
        })
        .collect();
    txn.open_table(table.definition())?.retain(|_, _| false)?;
    rows.sort_unstable();
    Ok(rows)
}

/// Removes the items' rows from `GROUP_EVENTS` and `UNFOLDED` (a row naming another group is
/// left alone); the items found in neither, sorted: those the groups' runs may hold.
fn forget_outside_runs<'a>(
    txn: &WriteTransaction,
    items: &[(&'a str, &'a str, &'a str)],
) -> Result<Vec<(&'a str, &'a str, &'a str)>, StoreError> {
    let mut items = items.to_vec();
    items.sort_unstable();
    let mut before_runs = GROUP_EVENTS.writer(txn)?;
    let mut unfolded = UNFOLDED.writer(txn)?;
    let mut rest = Vec::with_capacity(items.len());
    for (org, group, event) in items {
        if before_runs.remove(&group_event_key(org, group, event))? {
            continue;
        }
        let key = tables::composite_key(org, event);
        if unfolded.get(&key)?.as_deref() == Some(group) {
            unfolded.remove(&key)?;
        } else {
            rest.push((org, group, event));
        }
    }
    Ok(rest)
}

/// The ids of up to `limit` events of `group`, newest first, before the event id `before`
/// when given (a page's cursor).
pub fn newest(
    txn: &impl ReadTxn,
    org: &str,
    group: &str,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let start = group_event_key(org, group, "");
    // `0` follows `/`, so `{org}/{group}0` is past every key of the group.
    let end = match before {
        Some(id) => group_event_key(org, group, id),
        None => format!("{org}/{group}0"),
    };
    let mut ids = rows_naming(txn, UNFOLDED, org, group)?;
    ids.retain(|id| before.is_none_or(|before| id.as_str() < before));
    let gone = rows_naming(txn, GONE, org, group)?;
    let bounds = WalkBounds::rows(limit);
    crate::store::walk_backwards(
        txn,
        GROUP_EVENTS.definition(),
        (&start, &end),
        bounds,
        |key, _| {
            ids.push(key[start.len()..].to_string());
            Ok::<_, StoreError>(true)
        },
    )?;
    let in_runs = group_runs::newest_in_runs(txn, (org, group), before, limit + gone.len())?;
    ids.extend(
        in_runs
            .into_iter()
            .filter(|id| gone.binary_search(id).is_err()),
    );
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids.truncate(limit);
    Ok(ids)
}

/// How many events `group` holds, when at most `exact_up_to`; else `None`.
pub fn count(
    txn: &impl ReadTxn,
    org: &str,
    group: &str,
    exact_up_to: usize,
) -> Result<Option<usize>, StoreError> {
    let waiting = rows_naming(txn, UNFOLDED, org, group)?.len();
    if waiting > exact_up_to {
        return Ok(None);
    }
    let start = group_event_key(org, group, "");
    let end = format!("{org}/{group}0");
    let bounds = WalkBounds::rows(exact_up_to - waiting + 1);
    let mut folded = 0;
    crate::store::walk_backwards(
        txn,
        GROUP_EVENTS.definition(),
        (&start, &end),
        bounds,
        |_, _| {
            folded += 1;
            Ok::<_, StoreError>(true)
        },
    )?;
    let mut total = waiting + folded;
    if total <= exact_up_to {
        // Every gone id is in the runs: counting `gone` further leaves the bound where it was.
        let gone = rows_naming(txn, GONE, org, group)?.len();
        let in_runs = group_runs::count(txn, org, group, exact_up_to - total + gone)?;
        total += in_runs.saturating_sub(gone);
    }
    Ok((total <= exact_up_to).then_some(total))
}

/// Whether `group` holds any event.
pub fn has_events(txn: &impl ReadTxn, org: &str, group: &str) -> Result<bool, StoreError> {
    Ok(count(txn, org, group, 0)? != Some(0))
}

/// The event ids of the rows of `table` (`{org}/{event}` -> group) naming `group`, ascending.
fn rows_naming(
    txn: &impl ReadTxn,
    table: IndexTable,
    org: &str,
    group: &str,
) -> Result<Vec<String>, StoreError> {
    let start = tables::owner_prefix(org);
    let end = format!("{org}0");
    let mut ids = Vec::new();
    let bounds = WalkBounds::rows(usize::MAX);
    crate::store::walk_backwards(
        txn,
        table.definition(),
        (&start, &end),
        bounds,
        |key, row| {
            let wanted = row == group;
            if wanted {
                ids.push(key[start.len()..].to_string());
            }
            Ok::<_, StoreError>(wanted)
        },
    )?;
    ids.reverse();
    Ok(ids)
}

#[cfg(test)]
#[path = "group_events_tests.rs"]
mod tests;
