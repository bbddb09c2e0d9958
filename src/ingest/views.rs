//! Wire types of the ingest read APIs: stored records shown with the ingest field names and
//! RFC 3339 times.

use serde::Serialize;
use utoipa::ToSchema;

use super::session_spans::SessionTrace;
use super::sessions::WebSession;
use super::traces::TraceSpan;
use crate::errors::{ErrorEvent, ErrorEventView};

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
