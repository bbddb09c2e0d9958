//! What an index commit says about how far the index has come, in its payload: the greatest
//! event id it holds (the checkpoint) and, on the commit of a clean stop, that every event
//! committed to redb until then is in it (`complete`).
//!
//! Invariants: a payload is `complete` only when the writer's last commit came after every
//! ticket (`status.rs`) was either submitted or never used for a write, with no ticket able to
//! start afterwards; the first commit after a start clears the mark, so a crash after it is
//! caught up from the checkpoint as before. A payload this version cannot read (another
//! format, an unreadable id) means "index everything again", never "nothing to do".

/// The mark a clean stop appends to the checkpoint.
const COMPLETE: &str = "\ncomplete";

/// Events this much older than the checkpoint are indexed again after a crash: requests commit
/// concurrently, so ids reach redb slightly out of order.
pub(super) const CATCH_UP_MARGIN_MS: u64 = 60_000;

/// A commit's payload, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// Greatest event id added.
    pub checkpoint: Option<String>,
    /// The index holds every event redb held when it was committed (a clean stop).
    pub complete: bool,
}

impl Payload {
    pub fn parse(payload: Option<&str>) -> Payload {
        let payload = payload.unwrap_or_default();
        let (id, complete) = match payload.strip_suffix(COMPLETE) {
            Some(id) => (id, true),
            None => (payload, false),
        };
        Payload {
            checkpoint: (!id.is_empty()).then(|| id.to_string()),
            complete,
        }
    }

    pub fn render(&self) -> String {
        let id = self.checkpoint.as_deref().unwrap_or_default();
        if self.complete {
            format!("{id}{COMPLETE}")
        } else {
            id.to_string()
        }
    }
}

/// The id `CATCH_UP_MARGIN_MS` before `checkpoint` (ids are ULIDs: time first).
pub(super) fn margin_id(checkpoint: &str) -> String {
    earlier_id(checkpoint, CATCH_UP_MARGIN_MS)
}

/// The first id of the millisecond `ms` before `id`'s: every id after it is from then on.
pub(super) fn earlier_id(id: &str, ms: u64) -> String {
    match super::replace::minted_ms(id) {
        Some(minted) => format!(
            "evt_{}",
            ulid::Ulid::from_parts(minted.saturating_sub(ms), 0)
        ),
        // An unreadable id: index everything again.
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_old_or_odd_ones_are_never_complete() {
        let id = "evt_01JGZ0000000000000000000000";
        for complete in [false, true] {
            let payload = Payload {
                checkpoint: Some(id.to_string()),
                complete,
            };
            assert_eq!(Payload::parse(Some(&payload.render())), payload);
        }
        // A payload of the earlier format: the checkpoint alone.
        assert_eq!(
            Payload::parse(Some(id)),
            Payload {
                checkpoint: Some(id.to_string()),
                complete: false
            }
        );
        let empty = Payload {
            checkpoint: None,
            complete: false,
        };
        assert_eq!(Payload::parse(None), empty);
        assert_eq!(Payload::parse(Some("")), empty);
        // An index stopped cleanly before any event arrived is complete too.
        let complete_empty = Payload {
            checkpoint: None,
            complete: true,
        };
        assert_eq!(
            Payload::parse(Some(&complete_empty.render())),
            complete_empty
        );
    }

    #[test]
    fn the_margin_is_a_minute_before_and_an_odd_checkpoint_means_everything() {
        let at = ulid::Ulid::from_parts(1_000_000, 42);
        let margin = margin_id(&format!("evt_{at}"));
        let back = ulid::Ulid::from_string(margin.strip_prefix("evt_").unwrap()).unwrap();
        assert_eq!(back.timestamp_ms(), 1_000_000 - CATCH_UP_MARGIN_MS);
        assert_eq!(margin_id("garbage"), "");
    }
}
