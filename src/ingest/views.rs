//! Wire types of the ingest read APIs: stored records shown with the ingest field names and
//! RFC 3339 times.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::errors::ErrorEvent;
use super::session_spans::SessionTrace;
use super::sessions::WebSession;
use super::traces::{SpanStats, TraceSpan};

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

/// A browser session, as ingested (scrubbed).
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    pub id: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub url: String,
    pub referrer: Option<String>,
    pub user_agent: Option<String>,
    pub release: Option<String>,
    pub environment: Option<String>,
    pub service: Option<String>,
    pub user_id: Option<String>,
    pub page_views: Option<u64>,
    /// The error count the client reported (in a session's detail: `errors_reported`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    pub updated_at: String,
}

impl From<WebSession> for SessionView {
    fn from(session: WebSession) -> Self {
        SessionView {
            id: session.id,
            started_at: session.started_at.to_rfc3339(),
            ended_at: session.ended_at.map(|at| at.to_rfc3339()),
            duration_ms: session.duration_ms,
            url: session.url,
            referrer: session.referrer,
            user_agent: session.user_agent,
            release: session.release,
            environment: session.environment,
            service: session.service,
            user_id: session.user_id,
            page_views: session.page_views,
            errors: session.errors,
            updated_at: session.updated_at.to_rfc3339(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub items: Vec<SessionView>,
    pub next_cursor: Option<String>,
}

/// One session with the error events that named it, oldest first. The client's own error
/// count moves to `errors_reported` so that `errors` can list the events.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionDetail {
    #[serde(flatten)]
    pub session: SessionView,
    pub errors_reported: Option<u64>,
    pub errors: Vec<ErrorEventView>,
    /// The session's traces (spans sent with its `session_id`), newest first, at most 200.
    pub traces: Vec<SessionTrace>,
}

impl SessionDetail {
    pub fn new(session: WebSession, errors: Vec<ErrorEvent>, traces: Vec<SessionTrace>) -> Self {
        let mut view = SessionView::from(session);
        SessionDetail {
            errors_reported: view.errors.take(),
            session: view,
            errors: errors.into_iter().map(ErrorEventView::from).collect(),
            traces,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TraceView {
    pub trace_id: String,
    /// Root spans, each with `children`.
    pub spans: Vec<TraceSpan>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SpanStatsList {
    pub items: Vec<SpanStats>,
    pub next_cursor: Option<String>,
}
