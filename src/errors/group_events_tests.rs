//! Tests of `group_events.rs` and `group_runs.rs`: the four tables read as one, folding and
//! applying gone rows at their bounds, forgetting, and the runs against a model under random
//! folds and removals.

use super::*;
use crate::store::migrations::scratch_database;

const ORG: &str = "org_a";

/// Event ids that sort in time order, like stored ones.
fn event(n: usize) -> String {
    format!("evt_{n:08}")
}

fn record_all(txn: &WriteTransaction, group: &str, events: impl Iterator<Item = usize>) {
    let mut unfolded = UNFOLDED.writer(txn).unwrap();
    for n in events {
        record(&mut unfolded, ORG, group, &event(n)).unwrap();
    }
}

/// Unfolded rows, and event ids held in runs.
fn rows(txn: &WriteTransaction) -> (u64, u64) {
    let runs = group_runs::GROUP_EVENT_RUNS
        .scan(txn, crate::store::Scan::all())
        .unwrap();
    let ids = runs.iter().map(|(_, run)| run.split(' ').count() as u64);
    (UNFOLDED.row_count(txn).unwrap(), ids.sum())
}

/// Every run: (key's id, its ids), in key order; checks each run's invariants.
fn runs_of(txn: &WriteTransaction, group: &str) -> Vec<(String, Vec<String>)> {
    let prefix = format!("{ORG}/{group}/");
    let runs = group_runs::GROUP_EVENT_RUNS
        .scan(txn, crate::store::Scan::prefix(&prefix))
        .unwrap();
    let runs: Vec<(String, Vec<String>)> = runs
        .into_iter()
        .map(|(key, run)| {
            let ids: Vec<String> = run.split(' ').map(str::to_string).collect();
            (key[prefix.len()..].to_string(), ids)
        })
        .collect();
    for (at, (key, ids)) in runs.iter().enumerate() {
        assert!(
            !ids.is_empty() && ids.len() <= group_runs::RUN_EVENTS,
            "{runs:?}"
        );
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{runs:?}");
        assert!(key <= &ids[0], "{runs:?}");
        if let Some((next, _)) = runs.get(at + 1) {
            assert!(ids.last().unwrap() < next, "{runs:?}");
        }
    }
    runs
}

/// Every id of `group`, page by page through `newest`'s cursor.
fn all_pages(txn: &WriteTransaction, group: &str, limit: usize) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let page = newest(txn, ORG, group, seen.last().map(String::as_str), limit).unwrap();
        let done = page.len() < limit;
        seen.extend(page);
        if done {
            return seen;
        }
    }
}

#[test]
fn folded_and_unfolded_rows_read_as_one_list() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    // Odd events folded, even ones waiting, in two groups, and another org's row.
    record_all(&txn, "grp_a", (0..40).filter(|n| n % 2 == 1));
    record_all(&txn, "grp_b", 100..103);
    assert_eq!(fold(&txn).unwrap(), 23);
    record_all(&txn, "grp_a", (0..40).filter(|n| n % 2 == 0));
    let mut other = UNFOLDED.writer(&txn).unwrap();
    record(&mut other, "org_b", "grp_a", &event(1000)).unwrap();
    drop(other);
    assert_eq!(rows(&txn), (21, 23));
    runs_of(&txn, "grp_a");

    let expected: Vec<String> = (0..40).rev().map(event).collect();
    assert_eq!(newest(&txn, ORG, "grp_a", None, 100).unwrap(), expected);
    assert_eq!(newest(&txn, ORG, "grp_a", None, 3).unwrap(), expected[..3]);
    let cursor = event(10);
    assert_eq!(
        newest(&txn, ORG, "grp_a", Some(&cursor), 4).unwrap(),
        expected[30..34]
    );
    assert_eq!(all_pages(&txn, "grp_a", 7), expected);
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(40));
    assert_eq!(count(&txn, ORG, "grp_a", 40).unwrap(), Some(40));
    assert_eq!(count(&txn, ORG, "grp_a", 39).unwrap(), None);
    assert_eq!(
        count(&txn, ORG, "grp_a", 15).unwrap(),
        None,
        "more waiting than the bound"
    );
    assert_eq!(count(&txn, ORG, "grp_b", 100).unwrap(), Some(3));

    // Folding changes no answer.
    fold(&txn).unwrap();
    assert_eq!(rows(&txn), (0, 44));
    assert_eq!(all_pages(&txn, "grp_a", 7), expected);
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(40));
    assert_eq!(
        newest(&txn, "org_b", "grp_a", None, 10).unwrap(),
        [event(1000)]
    );
}

#[test]
fn the_write_that_finds_fold_at_rows_folds_them_all() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    let below = FOLD_AT as usize - 1;
    record_all(&txn, "grp_a", 0..below);
    fold_if_due(&txn).unwrap();
    assert_eq!(
        rows(&txn),
        (FOLD_AT - 1, 0),
        "one short of the bound: nothing moves"
    );
    record_all(&txn, "grp_a", below..below + 1);
    fold_if_due(&txn).unwrap();
    assert_eq!(rows(&txn), (0, FOLD_AT));
    assert_eq!(
        count(&txn, ORG, "grp_a", 10_000).unwrap(),
        Some(FOLD_AT as usize)
    );
}

#[test]
fn forgetting_finds_the_row_in_either_table() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    record_all(&txn, "grp_a", 0..2);
    fold(&txn).unwrap();
    record_all(&txn, "grp_a", 2..4);
    forget(&txn, ORG, "grp_a", &event(0)).unwrap();
    forget(&txn, ORG, "grp_a", &event(2)).unwrap();
    assert_eq!(
        newest(&txn, ORG, "grp_a", None, 10).unwrap(),
        [event(3), event(1)]
    );
    // Event 3 moved to another group (recorded again): forgetting it in its old group keeps
    // its new row.
    record_all(&txn, "grp_b", 3..4);
    forget(&txn, ORG, "grp_a", &event(3)).unwrap();
    assert_eq!(newest(&txn, ORG, "grp_b", None, 10).unwrap(), [event(3)]);
    assert!(has_events(&txn, ORG, "grp_a").unwrap(), "event 1 is folded");
    forget(&txn, ORG, "grp_a", &event(1)).unwrap();
    assert!(!has_events(&txn, ORG, "grp_a").unwrap());
    assert!(
        has_events(&txn, ORG, "grp_b").unwrap(),
        "event 3 waits unfolded"
    );
}

#[test]
fn runs_are_filled_before_the_next_is_started() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    record_all(&txn, "grp_a", 0..250);
    fold(&txn).unwrap();
    let sizes = |txn| -> Vec<usize> { runs_of(txn, "grp_a").iter().map(|r| r.1.len()).collect() };
    assert_eq!(sizes(&txn), [100, 100, 50]);
    record_all(&txn, "grp_a", 250..310);
    fold(&txn).unwrap();
    assert_eq!(sizes(&txn), [100, 100, 100, 10]);
    assert_eq!(count(&txn, ORG, "grp_a", 10_000).unwrap(), Some(310));
    let expected: Vec<String> = (0..310).rev().map(event).collect();
    assert_eq!(all_pages(&txn, "grp_a", 37), expected);
}

#[test]
fn rows_folded_before_runs_are_still_read_counted_and_forgotten() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    for n in 0..5 {
        GROUP_EVENTS
            .insert(&txn, &group_event_key(ORG, "grp_a", &event(n)), "")
            .unwrap();
    }
    record_all(&txn, "grp_a", 5..8);
    fold(&txn).unwrap();
    record_all(&txn, "grp_a", 8..9);
    let expected: Vec<String> = (0..9).rev().map(event).collect();
    assert_eq!(all_pages(&txn, "grp_a", 2), expected);
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(9));
    for n in [0, 6, 8] {
        forget(&txn, ORG, "grp_a", &event(n)).unwrap();
    }
    let left: Vec<String> = [7, 5, 4, 3, 2, 1].map(event).to_vec();
    assert_eq!(newest(&txn, ORG, "grp_a", None, 100).unwrap(), left);
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(6));
}

/// Random folds (ids in any order, older ones included: events moved into the group) and
/// removals (one by one, and together), checked after each step against a set: pages, counts and each run's invariants.
#[test]
fn runs_hold_exactly_the_groups_ids_under_random_folds_and_removals() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    let mut model = std::collections::BTreeSet::new();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below) as usize
    };
    for step in 0..60 {
        let newest_id = 100 * step + 100;
        for _ in 0..next(150) {
            // Mostly new ids, some older ones.
            let n = if next(5) == 0 {
                next(newest_id as u64)
            } else {
                newest_id - next(100)
            };
            if model.insert(n) {
                record_all(&txn, "grp_a", n..n + 1);
            }
        }
        fold(&txn).unwrap();
        // Removals one by one on even steps, as deleted events together (as retention does)
        // on odd ones.
        let gone: Vec<String> = (0..next(60))
            .map(|_| event(next(newest_id as u64 + 1)))
            .collect();
        if step % 2 == 0 {
            gone.iter()
                .for_each(|id| forget(&txn, ORG, "grp_a", id).unwrap());
        } else {
            // A drawn id may repeat, or be no longer held: a deletion of an event already gone.
            let items: Vec<(&str, &str, &str)> =
                gone.iter().map(|id| (ORG, "grp_a", id.as_str())).collect();
            forget_deleted(&txn, &items).unwrap();
        }
        for id in &gone {
            model.remove(&id[4..].parse::<usize>().unwrap());
        }
        if step % 10 == 9 {
            apply_gone(&txn).unwrap();
            assert_eq!(GONE.row_count(&txn).unwrap(), 0);
        }
        let waiting: Vec<String> = GONE
            .scan(&txn, crate::store::Scan::all())
            .unwrap()
            .into_iter()
            .map(|(key, _)| key[ORG.len() + 1..].to_string())
            .collect();
        let runs = runs_of(&txn, "grp_a");
        let all_held: Vec<String> = runs.into_iter().flat_map(|(_, ids)| ids).collect();
        assert!(
            waiting.iter().all(|id| all_held.contains(id)),
            "a gone row names an id no run holds, step {step}"
        );
        let held: Vec<String> = all_held
            .into_iter()
            .filter(|id| !waiting.contains(id))
            .collect();
        let expected: Vec<String> = model.iter().map(|n| event(*n)).collect();
        assert_eq!(held, expected, "step {step}");
        let newest_first: Vec<String> = expected.iter().rev().cloned().collect();
        assert_eq!(all_pages(&txn, "grp_a", 1 + next(120)), newest_first);
        assert_eq!(
            count(&txn, ORG, "grp_a", 100_000).unwrap(),
            Some(model.len())
        );
    }
}

/// Deleting events leaves their ids in the runs with a gone row each, read as absent; the
/// deletion that finds `APPLY_GONE_AT` rows rewrites the runs without them all.
#[test]
fn deleted_events_leave_the_runs_many_at_once() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    let total = APPLY_GONE_AT as usize + 300;
    record_all(&txn, "grp_a", (0..total).filter(|n| n % 2 == 0));
    record_all(&txn, "grp_b", (0..total).filter(|n| n % 2 == 1));
    fold(&txn).unwrap();
    record_all(&txn, "grp_a", total..total + 1);
    record_all(&txn, "grp_b", total + 1..total + 2);
    let deleted = |from: usize, to: usize| -> Vec<(String, &'static str, String)> {
        (from..to)
            .map(|n| (ORG.to_string(), ["grp_a", "grp_b"][n % 2], event(n)))
            .collect()
    };
    let delete = |items: &[(String, &'static str, String)]| {
        let items: Vec<(&str, &str, &str)> = items
            .iter()
            .map(|(o, g, e)| (o.as_str(), *g, e.as_str()))
            .collect();
        forget_deleted(&txn, &items).unwrap();
    };
    // The oldest, both unfolded events, and an event no group holds.
    let mut first = deleted(0, 100);
    first.extend(deleted(total, total + 2));
    first.push((ORG.to_string(), "grp_a", event(total + 50)));
    delete(&first);
    assert_eq!(rows(&txn), (0, total as u64), "ids stay in the runs");
    assert_eq!(
        GONE.row_count(&txn).unwrap(),
        100,
        "one gone row per id held"
    );
    let left_a: Vec<String> = (100..total)
        .rev()
        .filter(|n| n % 2 == 0)
        .map(event)
        .collect();
    assert_eq!(all_pages(&txn, "grp_a", 33), left_a);
    assert_eq!(newest(&txn, ORG, "grp_a", None, 5).unwrap(), left_a[..5]);
    let exact = left_a.len();
    assert_eq!(count(&txn, ORG, "grp_a", exact).unwrap(), Some(exact));
    assert_eq!(count(&txn, ORG, "grp_a", exact - 1).unwrap(), None);
    assert_eq!(count(&txn, ORG, "grp_a", 10_000).unwrap(), Some(exact));

    // One short of the bound: nothing applied; the deletion that reaches it applies them all.
    let short = APPLY_GONE_AT as usize - 1;
    delete(&deleted(100, short));
    assert_eq!(GONE.row_count(&txn).unwrap(), APPLY_GONE_AT - 1);
    assert_eq!(rows(&txn).1, total as u64);
    delete(&deleted(short, short + 1));
    assert_eq!(GONE.row_count(&txn).unwrap(), 0);
    assert_eq!(rows(&txn).1, (total - APPLY_GONE_AT as usize) as u64);
    let left_b: Vec<String> = (short + 1..total)
        .rev()
        .filter(|n| n % 2 == 1)
        .map(event)
        .collect();
    assert_eq!(all_pages(&txn, "grp_b", 50), left_b);
    assert_eq!(
        count(&txn, ORG, "grp_b", 10_000).unwrap(),
        Some(left_b.len())
    );
    runs_of(&txn, "grp_a");
    runs_of(&txn, "grp_b");
}

/// An id with a gone row that is forgotten directly, or folded into its group again, loses
/// its gone row: no answer ever leaves out an id its group holds.
#[test]
fn a_gone_row_never_hides_an_id_held_again() {
    let (_dir, database) = scratch_database();
    let txn = database.begin_write().unwrap();
    record_all(&txn, "grp_a", 0..10);
    fold(&txn).unwrap();
    let (e2, e3) = (event(2), event(3));
    forget_deleted(
        &txn,
        &[(ORG, "grp_a", e2.as_str()), (ORG, "grp_a", e3.as_str())],
    )
    .unwrap();
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(8));
    forget(&txn, ORG, "grp_a", &e2).unwrap();
    assert!(
        GONE.get(&txn, &tables::composite_key(ORG, &e2))
            .unwrap()
            .is_none()
    );
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(8));
    record_all(&txn, "grp_a", 3..4);
    fold(&txn).unwrap();
    assert_eq!(GONE.row_count(&txn).unwrap(), 0);
    assert_eq!(count(&txn, ORG, "grp_a", 100).unwrap(), Some(9));
    let expected: Vec<String> = [9, 8, 7, 6, 5, 4, 3, 1, 0].map(event).to_vec();
    assert_eq!(all_pages(&txn, "grp_a", 4), expected);
}
