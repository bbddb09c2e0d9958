//! How documents are replaced without a term per event: an event document carries the
//! millisecond its id was minted (`id_ms`, the ULID's time), a term shared by every event of
//! that millisecond. To replace the documents of some events, the writer deletes every event
//! document of the organisation in their milliseconds and indexes again the events redb holds
//! in them (`Target::add_live`, `Target::add_stored`).
//!
//! Invariants: an event reaches the index only once it is durable in redb, so the events read
//! back for a millisecond include every one whose document was deleted. A scan of stored
//! events (`Sweep`: the catch-up, a read-back, a rebuild) deletes, before each batch, the
//! milliseconds from where the last batch's deletes ended up to the batch's last event, so a
//! batch and the deletes it stands for land in the same commit, and an event split from its
//! millisecond by the batch boundary is deleted once and added once.

use std::ops::Bound;

use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery};

use super::query::term;
use super::schema::{Fields, KIND_EVENT};

/// The millisecond `id` (an event id, `evt_` and a ULID) was minted; 0 for an id of another
/// form (none is stored: ids are minted and checked on arrival).
pub fn id_ms(id: &str) -> u64 {
    minted_ms(id).unwrap_or(0)
}

/// The millisecond an event id (`evt_` and a ULID) was minted in; `None` for another id.
pub fn minted_ms(id: &str) -> Option<u64> {
    id.strip_prefix("evt_")
        .and_then(|ulid| ulid::Ulid::from_string(ulid).ok())
        .map(|ulid| ulid.timestamp_ms())
}

/// The bounds, exclusive, of the ids minted in the millisecond `ms`: every id of `ms` sorts
/// after the first (its time characters alone) and before the second (those of `ms + 1`).
pub fn ms_bounds(ms: u64) -> (String, String) {
    let prefix = |ms: u64| {
        let ulid = ulid::Ulid::from_parts(ms, 0).to_string();
        format!("evt_{}", &ulid[..10])
    };
    (prefix(ms), prefix(ms.saturating_add(1)))
}

/// The query of every event document of `org` minted from `from` to `to` (milliseconds,
/// both included).
pub fn minted_between(fields: &Fields, org: &str, from: u64, to: u64) -> Box<dyn Query> {
    let bound = |ms| Bound::Included(Term::from_field_u64(fields.id_ms, ms));
    Box::new(BooleanQuery::new(vec![
        (Occur::Must, term(fields.kind, KIND_EVENT)),
        (Occur::Must, term(fields.org, org)),
        (
            Occur::Must,
            Box::new(RangeQuery::new(bound(from), bound(to))),
        ),
    ]))
}

/// Where a scan of stored events replaces what the index held (see the invariants).
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Documents minted from this millisecond on are replaced; `None`: none (a first indexing).
    from: Option<u64>,
    /// The organisation scanned, and the first millisecond not deleted yet for it.
    org: String,
    next: u64,
}

impl Sweep {
    /// A scan that adds and replaces nothing: the index is empty.
    pub fn none() -> Sweep {
        Sweep {
            from: None,
            org: String::new(),
            next: 0,
        }
    }

    /// A scan replacing the documents of events minted in `from_id`'s millisecond or later.
    pub fn from_id(from_id: &str) -> Sweep {
        Sweep::from_ms(id_ms(from_id))
    }

    pub fn from_ms(from: u64) -> Sweep {
        Sweep {
            from: Some(from),
            org: String::new(),
            next: from,
        }
    }

    /// The milliseconds to delete before adding a batch of `org` whose last event was minted in
    /// `last_ms`, if any; they count as deleted from then on.
    pub fn deletes_before(&mut self, org: &str, last_ms: u64) -> Option<(u64, u64)> {
        let from = self.from?;
        if self.org != org {
            self.org.clear();
            self.org.push_str(org);
            self.next = from;
        }
        if last_ms < self.next {
            return None;
        }
        let range = (self.next, last_ms);
        self.next = last_ms.saturating_add(1);
        Some(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_milliseconds_bounds_hold_its_ids_only() {
        let ms = 1_795_348_800_123;
        let id = |ms, random| format!("evt_{}", ulid::Ulid::from_parts(ms, random));
        let (after, before) = ms_bounds(ms);
        for random in [0, 1, u128::MAX] {
            let inside = id(ms, random);
            assert!(after < inside && inside < before, "{inside}");
            assert_eq!(id_ms(&inside), ms);
        }
        assert!(id(ms - 1, u128::MAX) < after);
        assert!(id(ms + 1, 0) > before);
        assert_eq!(id_ms("grp_01JGZ0000000000000000000000"), 0);
    }

    #[test]
    fn a_sweep_deletes_each_millisecond_once_per_organisation() {
        let mut sweep = Sweep::from_ms(100);
        // A batch ending before the sweep begins deletes nothing.
        assert_eq!(sweep.deletes_before("org_a", 99), None);
        assert_eq!(sweep.deletes_before("org_a", 120), Some((100, 120)));
        // The next batch began in the millisecond the last one ended in: not deleted twice.
        assert_eq!(sweep.deletes_before("org_a", 120), None);
        assert_eq!(sweep.deletes_before("org_a", 130), Some((121, 130)));
        // Another organisation starts from the beginning.
        assert_eq!(sweep.deletes_before("org_b", 105), Some((100, 105)));
        assert_eq!(Sweep::none().deletes_before("org_a", 500), None);
    }
}
