//! Error groups: the stored record and the pure rules that fold events into it (counts, first
//! and last seen, per-release counts, the per-hour histogram, regression).
//!
//! Invariants: folding is deterministic and bounded — at most `MAX_RELEASES` releases and
//! `HISTOGRAM_HOURS` hours are kept per group, so a group record stays small however long it
//! lives; an event for a `resolved` group makes it `unresolved` again (a regression) while an
//! `ignored` group stays ignored; `first_seen <= last_seen` always.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::event::ErrorEvent;
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// `grp_…`
    GroupId,
    "grp_"
);

/// Releases counted separately per group; beyond, the least recent release is dropped.
pub const MAX_RELEASES: usize = 100;
/// Hours of the histogram (30 days back from the group's latest hour).
pub const HISTOGRAM_HOURS: i64 = 30 * 24;
const HOUR_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupStatus {
    Unresolved,
    Resolved,
    Ignored,
}

impl GroupStatus {
    pub fn parse(text: &str) -> Option<GroupStatus> {
        match text {
            "unresolved" => Some(GroupStatus::Unresolved),
            "resolved" => Some(GroupStatus::Resolved),
            "ignored" => Some(GroupStatus::Ignored),
            _ => None,
        }
    }
}

/// Per-release figures of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseCount {
    pub count: u64,
    pub last_seen: Timestamp,
}

/// A stored error group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorGroup {
    pub id: GroupId,
    /// 32 hex digits (`fingerprint.rs`).
    pub fingerprint: String,
    /// `client`, `stack` or `message`.
    pub basis: String,
    pub name: Option<String>,
    /// The message of the first event.
    pub message: String,
    pub level: String,
    /// The innermost in-app frame of the first event: `function (file)`.
    pub culprit: Option<String>,
    pub service: Option<String>,
    pub status: GroupStatus,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    pub count: u64,
    pub users: u64,
    pub releases: BTreeMap<String, ReleaseCount>,
    /// Hour start (ms) -> events in that hour.
    pub hours: BTreeMap<i64, u64>,
    /// When the status last changed, and how often the group came back after resolution.
    pub status_changed_at: Option<Timestamp>,
    pub regressions: u64,
    /// The latest event, for the detail view.
    pub latest_event: Option<String>,
    /// Set when the group's events were all moved to another group (`regroup.rs`): the id
    /// then names that group, which answers for it (`db::get_group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<GroupId>,
}

impl Record for ErrorGroup {
    const KIND: &'static str = "error group";
}

impl ErrorGroup {
    /// A new group for its first event (which `fold` then counts).
    pub fn open(
        event: &ErrorEvent,
        fingerprint: String,
        basis: &str,
        culprit: Option<String>,
    ) -> Self {
        ErrorGroup {
            id: GroupId::generate(),
            fingerprint,
            basis: basis.to_string(),
            name: event.name.clone(),
            message: event.message.clone(),
            level: event.level.clone(),
            culprit,
            service: event.service.clone(),
            status: GroupStatus::Unresolved,
            first_seen: event.timestamp,
            last_seen: event.timestamp,
            count: 0,
            users: 0,
            releases: BTreeMap::new(),
            hours: BTreeMap::new(),
            status_changed_at: None,
            regressions: 0,
            latest_event: None,
            merged_into: None,
        }
    }

    /// Counts one event; `new_user` when its user was not seen in this group before.
    pub fn fold(&mut self, event: &ErrorEvent, new_user: bool) {
        let at = event.timestamp;
        self.count += 1;
        self.users += u64::from(new_user);
        self.first_seen = self.first_seen.min(at);
        if at >= self.last_seen {
            self.last_seen = at;
            self.latest_event = Some(event.id.to_string());
        }
        if self.status == GroupStatus::Resolved {
            self.status = GroupStatus::Unresolved;
            self.status_changed_at = Some(event.received_at);
            self.regressions += 1;
        }
        if let Some(release) = &event.release {
            let entry = self
                .releases
                .entry(release.clone())
                .or_insert(ReleaseCount {
                    count: 0,
                    last_seen: at,
                });
            entry.count += 1;
            entry.last_seen = entry.last_seen.max(at);
            self.trim_releases();
        }
        let hour = at.0.div_euclid(HOUR_MS) * HOUR_MS;
        *self.hours.entry(hour).or_insert(0) += 1;
        let newest = self.hours.keys().next_back().copied().unwrap_or(hour);
        let oldest_kept = newest - (HISTOGRAM_HOURS - 1) * HOUR_MS;
        self.hours = self.hours.split_off(&oldest_kept);
    }

    /// Takes back what `fold` counted for an event that moves to another group. Users stay
    /// counted: whether the user has other events here is not known without reading them.
    pub fn unfold(&mut self, event: &ErrorEvent) {
        self.count = self.count.saturating_sub(1);
        if let Some(release) = &event.release
            && let Some(entry) = self.releases.get_mut(release)
        {
            entry.count = entry.count.saturating_sub(1);
            if entry.count == 0 {
                self.releases.remove(release);
            }
        }
        let hour = event.timestamp.0.div_euclid(HOUR_MS) * HOUR_MS;
        if let Some(count) = self.hours.get_mut(&hour) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.hours.remove(&hour);
            }
        }
    }

    /// Adds what is left of a group whose events all moved here (events retention removed
    /// are still in its counts), so the counts of the two add up.
    pub fn absorb(&mut self, other: &ErrorGroup) {
        self.count += other.count;
        self.first_seen = self.first_seen.min(other.first_seen);
        if other.last_seen > self.last_seen {
            self.last_seen = other.last_seen;
            self.latest_event.clone_from(&other.latest_event);
        }
        for (release, figures) in &other.releases {
            let entry = self
                .releases
                .entry(release.clone())
                .or_insert(ReleaseCount {
                    count: 0,
                    last_seen: figures.last_seen,
                });
            entry.count += figures.count;
            entry.last_seen = entry.last_seen.max(figures.last_seen);
        }
        self.trim_releases();
        for (hour, count) in &other.hours {
            *self.hours.entry(*hour).or_insert(0) += count;
        }
        if let Some(newest) = self.hours.keys().next_back().copied() {
            self.hours = self
                .hours
                .split_off(&(newest - (HISTOGRAM_HOURS - 1) * HOUR_MS));
        }
    }

    fn trim_releases(&mut self) {
        while self.releases.len() > MAX_RELEASES {
            let stalest = self
                .releases
                .iter()
                .min_by_key(|(_, figures)| figures.last_seen)
                .map(|(release, _)| release.clone());
            match stalest {
                Some(release) => self.releases.remove(&release),
                None => break,
            };
        }
    }

    /// Sets the status from the API; `false` when it already was that.
    pub fn set_status(&mut self, status: GroupStatus, now: Timestamp) -> bool {
        if self.status == status {
            return false;
        }
        self.status = status;
        self.status_changed_at = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    fn event(at: i64, release: &str) -> ErrorEvent {
        let item = json!({"level": "error", "message": "m", "url": "u", "timestamp": at, "release": release});
        crate::ingest::web_errors::parse_event(&item.clone().into(), NOW, None).unwrap()
    }

    #[test]
    fn folding_counts_times_releases_and_hours() {
        let first = event(NOW.0, "1.0");
        let mut group = ErrorGroup::open(&first, "f".repeat(32), "stack", None);
        group.fold(&first, true);
        group.fold(&event(NOW.0 - 2 * HOUR_MS, "1.0"), false);
        group.fold(&event(NOW.0 + 10, "1.1"), true);
        assert_eq!((group.count, group.users), (3, 2));
        assert_eq!(group.first_seen, Timestamp(NOW.0 - 2 * HOUR_MS));
        assert_eq!(group.last_seen, Timestamp(NOW.0 + 10));
        assert_eq!(group.releases["1.0"].count, 2);
        assert_eq!(group.releases["1.1"].count, 1);
        assert_eq!(group.hours.values().sum::<u64>(), 3);
        assert_eq!(group.hours.len(), 2);
        // An event far in the past falls out of the window instead of growing it.
        group.fold(&event(NOW.0 - 400 * 24 * HOUR_MS, "1.0"), false);
        assert_eq!(group.hours.len(), 2);
        assert_eq!(group.count, 4);
    }

    #[test]
    fn resolved_groups_regress_and_ignored_ones_stay_ignored() {
        let first = event(NOW.0, "1.0");
        let mut group = ErrorGroup::open(&first, "f".repeat(32), "stack", None);
        assert!(group.set_status(GroupStatus::Resolved, NOW));
        assert!(!group.set_status(GroupStatus::Resolved, NOW));
        group.fold(&first, false);
        assert_eq!(
            (group.status, group.regressions),
            (GroupStatus::Unresolved, 1)
        );
        group.set_status(GroupStatus::Ignored, NOW);
        group.fold(&first, false);
        assert_eq!(group.status, GroupStatus::Ignored);
    }

    #[test]
    fn a_moved_event_leaves_its_group_and_the_rest_is_absorbed() {
        let first = event(NOW.0, "1.0");
        let moved = event(NOW.0 - 2 * HOUR_MS, "1.1");
        let mut old = ErrorGroup::open(&first, "f".repeat(32), "stack", None);
        old.fold(&first, true);
        old.fold(&moved, false);
        old.unfold(&moved);
        assert_eq!((old.count, old.releases.len(), old.hours.len()), (1, 1, 1));
        let mut survivor = ErrorGroup::open(&moved, "e".repeat(32), "stack", None);
        survivor.fold(&moved, true);
        survivor.absorb(&old);
        assert_eq!(survivor.count, 2);
        assert_eq!(survivor.hours.values().sum::<u64>(), 2);
        assert_eq!(survivor.releases.len(), 2);
        assert_eq!(
            (survivor.first_seen, survivor.last_seen),
            (moved.timestamp, first.timestamp)
        );
        assert_eq!(survivor.latest_event, Some(first.id.to_string()));
    }

    #[test]
    fn releases_are_bounded() {
        let first = event(NOW.0, "r0");
        let mut group = ErrorGroup::open(&first, "f".repeat(32), "stack", None);
        for index in 0..(MAX_RELEASES as i64 + 20) {
            group.fold(&event(NOW.0 + index, &format!("r{index}")), false);
        }
        assert_eq!(group.releases.len(), MAX_RELEASES);
        assert!(
            !group.releases.contains_key("r0"),
            "the stalest release went first"
        );
    }
}
