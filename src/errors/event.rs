//! The error event: a stored browser error or warning, as ingest read it off the wire
//! (`ingest::web_errors`) and this capability stores, groups, indexes and shows it.
//!
//! Invariants: an event keeps the ingest field names; `frames`, `tags`, `fingerprint` and
//! `breadcrumbs` are kept as sent (already scrubbed; breadcrumbs cut to the newest
//! `MAX_BREADCRUMBS`). Frames that are only a parse of `stack` are not stored (`frames` is
//! `None`): every reader goes through `frames_or_derived` or `frames_mut`, which parse them
//! again, so a stored event is about half the size; frames a source map resolved at ingest are
//! stored. Event ids are `evt_` ULIDs minted on arrival, so the events of an organisation
//! re-read in key order come back in arrival order.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::stack;
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::{Decode, Record};
use crate::store::{ages, tables};

crate::typed_id!(
    /// `evt_…`
    EventId,
    "evt_"
);

/// The most breadcrumbs one event keeps (the newest).
pub const MAX_BREADCRUMBS: usize = 100;

/// A stored browser error or warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    pub id: EventId,
    /// The client's `event_id` (or `id`), when it sent one.
    #[serde(default)]
    pub event_id: Option<String>,
    pub level: String,
    pub message: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub stack: Option<String>,
    #[serde(default)]
    pub frames: Option<Vec<Value>>,
    pub url: String,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    /// The client's time of the error, else the arrival time.
    pub timestamp: Timestamp,
    pub received_at: Timestamp,
    #[serde(default)]
    pub tags: Map<String, Value>,
    #[serde(default)]
    pub fingerprint: Option<Vec<Value>>,
    /// The client's trail before the error (clicks, navigations, failed requests), oldest
    /// first, at most `MAX_BREADCRUMBS` (the newest kept), as sent (already scrubbed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breadcrumbs: Option<Vec<Value>>,
    /// Only when `WEB_INGEST_SCRUB_IP=false`.
    #[serde(default)]
    pub client_ip: Option<String>,
    /// The error group (`grp_…`), assigned in the transaction that stores the event.
    #[serde(default)]
    pub group_id: Option<String>,
}

impl Record for ErrorEvent {
    const KIND: &'static str = "error event";

    /// An event is encoded on the request's thread, before the write knows its group
    /// (`EventBatch`); the group id is stored as the record's tag.
    fn attach_tag(&mut self, tag: &str) -> bool {
        self.group_id = Some(tag.to_string());
        true
    }
}

impl ErrorEvent {
    pub fn key(&self, org: &OrgId) -> String {
        tables::composite_key(org.as_str(), self.id.as_str())
    }

    /// Its row in the telemetry age index (`store::ages`).
    pub(super) fn age(&self) -> Timestamp {
        ages::age_of(self.timestamp, self.received_at)
    }

    /// The event's frames: those stored (sent by the client, or resolved through a source map
    /// at ingest), else those parsed from `stack` (none without one).
    pub fn frames_or_derived(&self) -> Cow<'_, [Value]> {
        match &self.frames {
            Some(frames) => Cow::Borrowed(frames),
            None => Cow::Owned(derive_frames(self.stack.as_deref())),
        }
    }

    /// Fills `frames` from the stack when none are stored, for a reader that changes or hands
    /// them on; the frames, when the event has any.
    pub fn frames_mut(&mut self) -> Option<&mut Vec<Value>> {
        if self.frames.is_none() {
            let derived = derive_frames(self.stack.as_deref());
            if !derived.is_empty() {
                self.frames = Some(derived);
            }
        }
        self.frames.as_mut()
    }
}

fn derive_frames(stack: Option<&str>) -> Vec<Value> {
    let Some(stack) = stack else {
        return Vec::new();
    };
    stack::parse(stack)
        .iter()
        .map(stack::Frame::to_json)
        .collect()
}

/// What removing a stored event needs to know of it: its index rows' keys and its group.
/// Read from the same record as `ErrorEvent`, whose other fields are skipped unread (no
/// message, stack or tags decoded into values: most of the cost of reading an event).
#[derive(Debug, Deserialize)]
pub(super) struct EventRows {
    pub id: EventId,
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    pub timestamp: Timestamp,
    pub received_at: Timestamp,
    #[serde(default)]
    pub group_id: Option<String>,
}

impl Decode for EventRows {
    const KIND: &'static str = <ErrorEvent as Record>::KIND;

    fn attach_tag(&mut self, tag: &str) -> bool {
        self.group_id = Some(tag.to_string());
        true
    }
}

impl EventRows {
    /// Its row in the telemetry age index, as `ErrorEvent::age` says.
    pub(super) fn age(&self) -> Timestamp {
        ages::age_of(self.timestamp, self.received_at)
    }
}
