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
//! Invariants:
//! - An event's group row is in exactly one of the three tables, written in the transaction
//!   that stores the event (or moves it to another group), so it commits with the event.
//! - Every reader of a group's events (`newest`, `count`, `has_events`) reads the three tables
//!   in one transaction, so a fold changes no answer.
//! - `UNFOLDED` holds fewer than `FOLD_AT` rows after any commit of `Grouping::finish`, plus
//!   the rows of that one write (at most `writes::MAX_EVENTS_PER_WRITE`).

use redb::WriteTransaction;

use super::db::group_event_key;
use super::group_runs;
use crate::store::{IndexTable, IndexWriter, ReadTxn, StoreError, WalkBounds, tables};

/// `{org}/{group}/{event}` -> "": the events of each group folded before schema 19.
pub const GROUP_EVENTS: IndexTable = IndexTable::new(tables::GROUP_EVENTS);
/// `{org}/{event}` -> group id: the events of each group not folded yet.
pub const UNFOLDED: IndexTable = IndexTable::new(tables::GROUP_EVENTS_UNFOLDED);

/// How many unfolded rows make the next write fold them all. A read of a group's events scans
/// the unfolded rows of its organisation, so this bounds that scan too.
pub const FOLD_AT: u64 = 4096;

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
    let mut rows: Vec<(String, String, String)> = UNFOLDED
        .scan(txn, crate::store::Scan::all())?
        .into_iter()
        .filter_map(|(key, group)| {
            let (org, event) = tables::split_composite_key(&key)?;
            Some((org.to_string(), group, event.to_string()))
        })
        .collect();
    {
        let mut unfolded = txn.open_table(UNFOLDED.definition())?;
        unfolded.retain(|_, _| false)?;
    }
    rows.sort_unstable();
    let mut runs = group_runs::open(txn)?;
    for group in rows.chunk_by(|a, b| (&a.0, &a.1) == (&b.0, &b.1)) {
        let ids: Vec<String> = group.iter().map(|(_, _, event)| event.clone()).collect();
        group_runs::add(&mut runs, &group[0].0, &group[0].1, &ids)?;
    }
    metrics::counter!("lookout_group_event_folds_total").increment(1);
    Ok(rows.len())
}

/// Removes `event` from `group` (retention, or the event moved to another group). A row
/// naming another group is left alone: the event was recorded under that group since.
pub fn forget(
    txn: &WriteTransaction,
    org: &str,
    group: &str,
    event: &str,
) -> Result<(), StoreError> {
    forget_all(txn, &[(org, group, event)])
}

/// `forget` for many `(org, group, event)`: each table opened once, each run rewritten once.
pub fn forget_all(txn: &WriteTransaction, items: &[(&str, &str, &str)]) -> Result<(), StoreError> {
    let mut items = items.to_vec();
    items.sort_unstable();
    let mut before_runs = GROUP_EVENTS.writer(txn)?;
    let mut unfolded = UNFOLDED.writer(txn)?;
    for &(org, group, event) in &items {
        before_runs.remove(&group_event_key(org, group, event))?;
        let key = tables::composite_key(org, event);
        if unfolded.get(&key)?.as_deref() == Some(group) {
            unfolded.remove(&key)?;
        }
    }
    drop((before_runs, unfolded));
    let mut runs = group_runs::open(txn)?;
    for same in items.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let ids: Vec<&str> = same.iter().map(|item| item.2).collect();
        group_runs::remove_all(&mut runs, (same[0].0, same[0].1), &ids)?;
    }
    Ok(())
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
    let mut ids = unfolded(txn, org, group)?;
    ids.retain(|id| before.is_none_or(|before| id.as_str() < before));
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
    ids.extend(group_runs::newest_in_runs(
        txn,
        (org, group),
        before,
        limit,
    )?);
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
    let waiting = unfolded(txn, org, group)?.len();
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
        total += group_runs::count(txn, org, group, exact_up_to - total)?;
    }
    Ok((total <= exact_up_to).then_some(total))
}

/// Whether `group` holds any event.
pub fn has_events(txn: &impl ReadTxn, org: &str, group: &str) -> Result<bool, StoreError> {
    Ok(count(txn, org, group, 0)? != Some(0))
}

/// The ids of the unfolded events of `group`, oldest first.
fn unfolded(txn: &impl ReadTxn, org: &str, group: &str) -> Result<Vec<String>, StoreError> {
    let start = tables::owner_prefix(org);
    let end = format!("{org}0");
    let mut ids = Vec::new();
    let bounds = WalkBounds::rows(usize::MAX);
    crate::store::walk_backwards(
        txn,
        UNFOLDED.definition(),
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
