//! Wire types of the error event reads: a stored event shown with the ingest field names,
//! RFC 3339 times and its frames (derived from the stack when none are stored).

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::event::ErrorEvent;

/// A stored browser error or warning, as ingested (scrubbed).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorEventView {
    pub id: String,
    pub event_id: Option<String>,
    pub level: String,
    pub message: String,
    pub name: Option<String>,
    pub stack: Option<String>,
    #[schema(value_type = Option<Vec<Object>>)]
    pub frames: Option<Vec<Value>>,
    pub url: String,
    pub release: Option<String>,
    pub environment: Option<String>,
    pub service: Option<String>,
    pub session_id: Option<String>,
    pub user_id: Option<String>,
    pub user_agent: Option<String>,
    pub timestamp: String,
    pub received_at: String,
    #[schema(value_type = Object)]
    pub tags: Map<String, Value>,
    #[schema(value_type = Option<Vec<String>>)]
    pub fingerprint: Option<Vec<Value>>,
    /// The client's trail before the error, oldest first: objects such as
    /// `{"type":"click"|"navigation"|"request","message","timestamp"}`.
    #[schema(value_type = Option<Vec<Object>>)]
    pub breadcrumbs: Option<Vec<Value>>,
    /// The error group (`grp_…`).
    pub group_id: Option<String>,
}

impl From<ErrorEvent> for ErrorEventView {
    fn from(mut event: ErrorEvent) -> Self {
        // Frames derived from the stack are not stored; readers see them all the same.
        event.frames_mut();
        ErrorEventView {
            id: event.id.to_string(),
            event_id: event.event_id,
            level: event.level,
            message: event.message,
            name: event.name,
            stack: event.stack,
            frames: event.frames,
            url: event.url,
            release: event.release,
            environment: event.environment,
            service: event.service,
            session_id: event.session_id,
            user_id: event.user_id,
            user_agent: event.user_agent,
            timestamp: event.timestamp.to_rfc3339(),
            received_at: event.received_at.to_rfc3339(),
            tags: event.tags,
            fingerprint: event.fingerprint,
            breadcrumbs: event.breadcrumbs,
            group_id: event.group_id,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorEventList {
    pub items: Vec<ErrorEventView>,
    pub next_cursor: Option<String>,
    /// Events matching the request: exact up to 10,000, then an estimate.
    pub total: u64,
    /// Whether `total` is an estimate.
    pub total_is_estimate: bool,
}
