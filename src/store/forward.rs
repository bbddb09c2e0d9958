//! The one filtered forward page: oldest-first lists read their rows in batches after a cursor
//! and keep those a filter wants, so a page holds `limit` matching rows however sparse they are.
//!
//! Invariants: a page returns at most `limit + 1` rows (the extra one tells that another page
//! follows); each batch starts strictly after the last row of the previous one, so no row is read
//! twice; an empty batch ends the walk.

/// Rows read per batch.
const BATCH: usize = 500;

/// Collects up to `limit + 1` rows, in `fetch`'s order, that `keep` accepts. `fetch(after, n)`
/// answers at most `n` rows strictly after the key `after` (from the start when `None`);
/// `key_of` names a row's key.
pub fn keep_forward<T, K, E>(
    mut after: Option<K>,
    limit: usize,
    mut fetch: impl FnMut(Option<&K>, usize) -> Result<Vec<T>, E>,
    key_of: impl Fn(&T) -> K,
    keep: impl Fn(&T) -> bool,
) -> Result<Vec<T>, E> {
    let mut kept = Vec::new();
    loop {
        let batch = fetch(after.as_ref(), BATCH)?;
        let Some(last) = batch.last() else {
            return Ok(kept);
        };
        after = Some(key_of(last));
        for row in batch {
            if !keep(&row) {
                continue;
            }
            kept.push(row);
            if kept.len() > limit {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows `0..total` read from `after`, `n` at a time.
    fn numbers(total: u32) -> impl FnMut(Option<&u32>, usize) -> Result<Vec<u32>, ()> {
        move |after, n| {
            let from = after.map_or(0, |last| last + 1);
            Ok((from..total).take(n).collect())
        }
    }

    #[test]
    fn keeps_limit_plus_one_matching_rows_across_batches() {
        let odd_multiples_of_7 = |n: &u32| n.is_multiple_of(7) && !n.is_multiple_of(2);
        let page = keep_forward(None, 100, numbers(5_000), |n| *n, odd_multiples_of_7).unwrap();
        assert_eq!(page.len(), 101);
        assert_eq!(page[0], 7);
        assert_eq!(page[100], 1_407);
    }

    #[test]
    fn starts_after_the_cursor_and_ends_with_the_rows() {
        let page = keep_forward(Some(4_990), 100, numbers(5_000), |n| *n, |_| true).unwrap();
        assert_eq!(page, (4_991..5_000).collect::<Vec<_>>());
        let none = keep_forward(None, 10, numbers(0), |n| *n, |_| true).unwrap();
        assert!(none.is_empty());
    }
}
