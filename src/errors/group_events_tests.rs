//! Tests of `group_events.rs`: the two tables read as one, folding at its bound, forgetting.

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

fn rows(txn: &WriteTransaction) -> (u64, u64) {
    (
        UNFOLDED.row_count(txn).unwrap(),
        GROUP_EVENTS.row_count(txn).unwrap(),
    )
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
