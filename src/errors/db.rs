//! Error groups in redb: the group records, the fingerprint → group index, the last-seen
//! order and the users of each group (a group is found under the current fingerprint, else
//! under the version 1 one it was stored with); and `Grouping`, which assigns the events of one
//! write transaction to their groups and records each under its group (`group_events.rs`).
//!
//! Invariants: everything here is written inside the transaction that stores the events, so
//! an event and its group's counts commit together or not at all (the group-commit writer may
//! run the closure twice; each run starts from what is committed). A fingerprint maps to
//! exactly one group per organisation. Each group has exactly one `GROUP_LAST_SEEN` row,
//! moved whenever `last_seen` changes.

use std::collections::HashMap;

use redb::WriteTransaction;
use sha2::{Digest, Sha256};

use super::event::ErrorEvent;
use super::fingerprint::{self, Fingerprint, Inputs};
use super::group_events;
use super::model::{ErrorGroup, GroupId};
use crate::accounts::model::OrgId;
use crate::store::tables::time_key;
use crate::store::{IndexTable, IndexWriter, ReadTxn, RecordTable, StoreError, tables};

pub const GROUPS: RecordTable<ErrorGroup> = RecordTable::new(tables::ERROR_GROUPS);
pub const GROUP_FINGERPRINTS: IndexTable = IndexTable::new(tables::GROUP_FINGERPRINTS);
pub const GROUP_LAST_SEEN: IndexTable = IndexTable::new(tables::GROUP_LAST_SEEN);
pub const GROUP_USERS: IndexTable = IndexTable::new(tables::GROUP_USERS);

pub fn group_key(org: &OrgId, id: &GroupId) -> String {
    tables::composite_key(org.as_str(), id.as_str())
}

pub fn last_seen_key(org: &OrgId, group: &ErrorGroup) -> String {
    format!(
        "{}/{}/{}",
        org.as_str(),
        time_key(group.last_seen),
        group.id.as_str()
    )
}

pub fn group_event_key(org: &str, group: &str, event: &str) -> String {
    format!("{org}/{group}/{event}")
}

/// The group `id` names: the group itself, or the group it was merged into (`regroup.rs`),
/// so an old link, status change or fingerprint keeps reaching the events it named.
pub fn get_group(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &GroupId,
) -> Result<Option<ErrorGroup>, StoreError> {
    let mut found = get_group_record(txn, org, id)?;
    // Each merge adds at most one step; a longer chain is a loop, so corruption.
    for _ in 0..MAX_MERGE_STEPS {
        match found {
            Some(ErrorGroup {
                merged_into: Some(next),
                ..
            }) => found = get_group_record(txn, org, &next)?,
            _ => return Ok(found),
        }
    }
    Err(corrupt("merged groups form a loop"))
}

/// Merges followed from an old group id to the group that answers for it.
const MAX_MERGE_STEPS: usize = 64;

/// The group record stored under `id`, merged or not.
pub fn get_group_record(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &GroupId,
) -> Result<Option<ErrorGroup>, StoreError> {
    GROUPS.get(txn, &group_key(org, id))
}

/// Stores a group changed through the API (its last-seen row does not move).
pub fn put_group(
    txn: &WriteTransaction,
    org: &OrgId,
    group: &ErrorGroup,
) -> Result<(), StoreError> {
    GROUPS.insert(txn, &group_key(org, &group.id), group)
}

/// The fingerprint of an event, from the fields it was stored with.
pub fn fingerprint_of(event: &ErrorEvent) -> Fingerprint {
    let frames = event.frames_or_derived();
    fingerprint::fingerprint(&Inputs {
        client: event.fingerprint.as_deref(),
        name: event.name.as_deref(),
        frames: &frames,
        message: &event.message,
    })
}

/// `function (file)` of the innermost in-app frame, through its source map when resolved.
fn culprit_of(event: &ErrorEvent) -> Option<String> {
    let frames = event.frames_or_derived();
    let frame = frames
        .iter()
        .map(fingerprint::source_view)
        .find(|frame| fingerprint::is_in_app(frame))?;
    let file = frame["file"].as_str().map(fingerprint::normalise_file)?;
    Some(match frame["function"].as_str() {
        Some(function) => format!("{function} ({file})"),
        None => file,
    })
}

/// Groups touched by one batch, written back once each by `finish`. Holds the group-users
/// and unfolded group-events tables open for the batch (`IndexWriter`): nothing else may open
/// them until `finish`.
pub struct Grouping<'a, 't> {
    org: &'a OrgId,
    /// Fingerprint -> group id: several fingerprints may name one group (a version 1 group
    /// found under version 2 fingerprints).
    found: HashMap<String, String>,
    /// Group id -> (group as changed, `last_seen` row it had when loaded).
    touched: HashMap<String, (ErrorGroup, Option<String>)>,
    users: IndexWriter<'t>,
    events: IndexWriter<'t>,
}

impl<'a, 't> Grouping<'a, 't> {
    pub fn new(txn: &'t WriteTransaction, org: &'a OrgId) -> Result<Self, StoreError> {
        Ok(Grouping {
            org,
            found: HashMap::new(),
            touched: HashMap::new(),
            users: GROUP_USERS.writer(txn)?,
            events: group_events::UNFOLDED.writer(txn)?,
        })
    }

    /// Finds or opens the group of `event` by its fingerprint (`fingerprint_of`, computed by
    /// the caller, off the store's writer thread), counts the event in it and records the event
    /// and its user under the group. Returns the group id for the event to carry, and whether
    /// this event opened the group.
    pub fn assign(
        &mut self,
        txn: &WriteTransaction,
        event: &ErrorEvent,
        found: &Fingerprint,
    ) -> Result<(GroupId, bool), StoreError> {
        let org = self.org;
        let mut opened = false;
        if !self.found.contains_key(&found.hash) {
            let index_key = tables::composite_key(org.as_str(), &found.hash);
            let loaded = match find_group_id(txn, org, found, &index_key)? {
                Some(id) => {
                    let id = GroupId::parse(&id).map_err(|error| corrupt(&error.to_string()))?;
                    let group = get_group(txn, org, &id)?
                        .ok_or_else(|| corrupt("fingerprint names a missing group"))?;
                    let row = last_seen_key(org, &group);
                    (group, Some(row))
                }
                None => {
                    let group = ErrorGroup::open(
                        event,
                        found.hash.clone(),
                        found.basis.as_str(),
                        culprit_of(event),
                    );
                    GROUP_FINGERPRINTS.insert(txn, &index_key, group.id.as_str())?;
                    opened = true;
                    (group, None)
                }
            };
            let id = loaded.0.id.as_str().to_string();
            self.found.insert(found.hash.clone(), id.clone());
            // A group already in the batch (under another fingerprint) keeps its counts.
            self.touched.entry(id).or_insert(loaded);
        }
        let Some((group, _)) = self
            .found
            .get(&found.hash)
            .and_then(|id| self.touched.get_mut(id))
        else {
            return Err(corrupt("a group vanished from the batch"));
        };
        let new_user = match &event.user_id {
            Some(user) => {
                let digest = hex::encode(&Sha256::digest(user.as_bytes())[..16]);
                let key = group_event_key(org.as_str(), group.id.as_str(), &digest);
                let new = !self.users.contains(&key)?;
                if new {
                    self.users.insert(&key, "")?;
                }
                new
            }
            None => false,
        };
        group.fold(event, new_user);
        let (group_id, event_id) = (group.id.as_str(), event.id.as_str());
        group_events::record(&mut self.events, org.as_str(), group_id, event_id)?;
        Ok((group.id.clone(), opened))
    }

    /// Writes every touched group and moves its last-seen row; folds the group-event rows when
    /// enough wait (`group_events::fold_if_due`); returns the groups.
    pub fn finish(self, txn: &WriteTransaction) -> Result<Vec<ErrorGroup>, StoreError> {
        drop((self.users, self.events));
        group_events::fold_if_due(txn)?;
        let mut groups = Vec::with_capacity(self.touched.len());
        for (_, (group, old_row)) in self.touched {
            let row = last_seen_key(self.org, &group);
            if let Some(old_row) = old_row
                && old_row != row
            {
                GROUP_LAST_SEEN.remove(txn, &old_row)?;
            }
            GROUP_LAST_SEEN.insert(txn, &row, group.id.as_str())?;
            put_group(txn, self.org, &group)?;
            groups.push(group);
        }
        Ok(groups)
    }
}

/// The group id under the fingerprint's key; else under its version 1 key (a group stored
/// before version 2), which is then indexed under the current key too, so the group keeps its
/// events, counts and links.
pub(super) fn find_group_id(
    txn: &WriteTransaction,
    org: &OrgId,
    found: &Fingerprint,
    index_key: &str,
) -> Result<Option<String>, StoreError> {
    if let Some(id) = GROUP_FINGERPRINTS.get(txn, index_key)? {
        return Ok(Some(id));
    }
    let Some(legacy) = &found.legacy else {
        return Ok(None);
    };
    let legacy_key = tables::composite_key(org.as_str(), legacy);
    let id = GROUP_FINGERPRINTS.get(txn, &legacy_key)?;
    if let Some(id) = &id {
        GROUP_FINGERPRINTS.insert(txn, index_key, id)?;
    }
    Ok(id)
}

/// Removes an event from its group's event list (it moves to another group); the group's
/// counts stay: they describe everything the group ever saw.
pub fn forget_event(
    txn: &WriteTransaction,
    org: &str,
    group: &str,
    event: &str,
) -> Result<(), StoreError> {
    group_events::forget(txn, org, group, event)
}

/// Removes deleted events (`(org, group, event)`, a retention transaction's) from their
/// groups' event lists.
pub fn forget_events(
    txn: &WriteTransaction,
    items: &[(&str, &str, &str)],
) -> Result<(), StoreError> {
    group_events::forget_deleted(txn, items)
}

fn corrupt(detail: &str) -> StoreError {
    StoreError::Corrupt {
        what: "error group",
        detail: detail.to_string(),
    }
}

#[cfg(test)]
#[path = "db_tests.rs"]
mod tests;
