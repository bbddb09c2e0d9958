//! The spans of a browser session: the `SESSION_SPANS` index (one row per span that carries a
//! `session_id`) and the summaries of a session's traces for `GET /api/v1/sessions/{id}`.
//!
//! Invariants: a span's row is written, moved or removed in the transaction that writes,
//! replaces or removes the span (`spans.rs`), so retention, which removes spans by the age
//! index, takes their rows with them. A read is bounded: at most `MAX_SESSION_SPAN_ROWS` index
//! rows, the newest `MAX_SESSION_TRACES` traces, and `MAX_SUMMARY_SPANS` spans read per trace.

use std::collections::HashMap;

use redb::WriteTransaction;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::spans::{SPANS, Span};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::tables::time_key;
use crate::store::{IndexTable, ReadTxn, Scan, StoreError, tables};

pub const SESSION_SPANS: IndexTable = IndexTable::new(tables::SESSION_SPANS);

/// Most traces listed with one session, newest first.
pub const MAX_SESSION_TRACES: usize = 200;
/// Most index rows one session's read scans.
pub const MAX_SESSION_SPAN_ROWS: usize = 20_000;
/// Most spans read to summarise one trace (`span_count` counts at most this many).
pub const MAX_SUMMARY_SPANS: usize = 1_000;

/// One trace of a session, summarised by its root span.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SessionTrace {
    pub trace_id: String,
    /// The root span's name (the earliest span without a parent in the trace).
    pub name: String,
    /// The earliest start of the trace's spans (RFC 3339).
    pub started_at: String,
    /// From the earliest start to the latest end of the trace's spans.
    pub duration_ms: f64,
    pub span_count: usize,
    /// The root span's status as sent (a string or an object), or null.
    #[schema(value_type = Object)]
    pub status: Option<Value>,
}

fn prefix_of(org: &OrgId, session: &str) -> String {
    format!("{}/{session}/", org.as_str())
}

fn row_key(org: &OrgId, span: &Span) -> Option<String> {
    let session = span.session_id.as_deref()?;
    Some(format!(
        "{}{}/{}",
        prefix_of(org, session),
        span.trace_id,
        span.span_id
    ))
}

/// Writes the row of `span` (when it has a session), replacing the row of `old`.
pub fn put_row(
    txn: &WriteTransaction,
    org: &OrgId,
    old: Option<&Span>,
    span: &Span,
) -> Result<(), StoreError> {
    if let Some(old) = old {
        remove_row(txn, org, old)?;
    }
    match row_key(org, span) {
        Some(key) => SESSION_SPANS.insert(txn, &key, &time_key(span.start_time)),
        None => Ok(()),
    }
}

/// Removes the row of `span`, when it has one.
pub fn remove_row(txn: &WriteTransaction, org: &OrgId, span: &Span) -> Result<(), StoreError> {
    if let Some(key) = row_key(org, span) {
        SESSION_SPANS.remove(txn, &key)?;
    }
    Ok(())
}

/// The newest `MAX_SESSION_TRACES` traces of `session`, newest first.
pub fn traces_of_session(
    txn: &impl ReadTxn,
    org: &OrgId,
    session: &str,
) -> Result<Vec<SessionTrace>, StoreError> {
    let prefix = prefix_of(org, session);
    let scan = Scan {
        prefix: &prefix,
        after: None,
        limit: MAX_SESSION_SPAN_ROWS,
    };
    // The earliest start the session's own spans give each trace: enough to order them.
    let mut starts: HashMap<String, String> = HashMap::new();
    for (key, start) in SESSION_SPANS.scan(txn, scan)? {
        let Some((trace, _)) = key[prefix.len()..].split_once('/') else {
            continue;
        };
        let earliest = starts
            .entry(trace.to_string())
            .or_insert_with(|| start.clone());
        if start < *earliest {
            *earliest = start;
        }
    }
    let mut order: Vec<(String, String)> = starts.into_iter().map(|(t, s)| (s, t)).collect();
    order.sort_unstable_by(|a, b| b.cmp(a));
    order.truncate(MAX_SESSION_TRACES);
    let mut traces = Vec::with_capacity(order.len());
    for (_, trace_id) in order {
        let scan_prefix = format!("{}/{trace_id}/", org.as_str());
        let scan = Scan {
            prefix: &scan_prefix,
            after: None,
            limit: MAX_SUMMARY_SPANS,
        };
        let spans: Vec<Span> = SPANS.scan(txn, scan)?.into_iter().map(|(_, s)| s).collect();
        if let Some(summary) = summarise(trace_id, &spans) {
            traces.push(summary);
        }
    }
    // The trace's own earliest start may precede what the session's spans said.
    traces.sort_by(|a, b| (&b.started_at, &b.trace_id).cmp(&(&a.started_at, &a.trace_id)));
    Ok(traces)
}

/// The root span of one trace's spans: the earliest without a parent among them (or the
/// earliest of all, when every parent link points inside); `None` for no spans.
pub fn root_of(spans: &[Span]) -> Option<&Span> {
    let ids: std::collections::HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let is_root = |span: &&Span| {
        span.parent_span_id
            .as_deref()
            .is_none_or(|parent| !ids.contains(parent))
    };
    let first = |span: &&Span| (span.start_time, span.span_id.clone());
    spans
        .iter()
        .filter(is_root)
        .min_by_key(first)
        .or_else(|| spans.iter().min_by_key(first))
}

/// The summary of one trace's spans; `None` for none (removed since the index was read).
fn summarise(trace_id: String, spans: &[Span]) -> Option<SessionTrace> {
    let root = root_of(spans)?;
    let start = spans.iter().map(|s| s.start_time).min()?;
    let end = spans.iter().map(|s| s.end_time).max()?;
    Some(SessionTrace {
        trace_id,
        name: root.name.clone(),
        started_at: start.to_rfc3339(),
        duration_ms: duration_between(start, end),
        span_count: spans.len(),
        status: root.status.clone(),
    })
}

fn duration_between(start: Timestamp, end: Timestamp) -> f64 {
    (end.unix_millis() - start.unix_millis()).max(0) as f64
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ingest::item::Item;
    use crate::ingest::spans::{parse_span, remove_span, store_spans};

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    fn span(
        trace: char,
        id: char,
        parent: Option<char>,
        start: i64,
        session: Option<&str>,
    ) -> Span {
        let mut item = json!({"trace_id": trace.to_string().repeat(32),
            "span_id": id.to_string().repeat(16), "name": format!("op {id}"),
            "start_time": NOW.0 + start, "duration_ms": 100, "service": "web", "status": "ok"});
        if let Some(parent) = parent {
            item["parent_span_id"] = json!(parent.to_string().repeat(16));
        }
        if let Some(session) = session {
            item["session_id"] = json!(session);
        }
        parse_span(&Item::from(item.clone()), NOW).unwrap()
    }

    #[test]
    fn a_sessions_traces_are_summarised_newest_first_and_leave_with_their_spans() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let txn = database.begin_write().unwrap();
        let spans = [
            span('a', '1', None, 0, Some("s-1")),
            span('a', '2', Some('1'), 50, None),
            span('a', '3', Some('2'), 120, Some("s-1")),
            span('b', '4', None, 1_000, Some("s-1")),
            span('c', '5', None, 2_000, Some("other")),
        ];
        store_spans(&txn, &org, &spans).unwrap();
        let traces = traces_of_session(&txn, &org, "s-1").unwrap();
        let ids: Vec<&str> = traces.iter().map(|t| &t.trace_id[..1]).collect();
        assert_eq!(ids, ["b", "a"], "newest first, other sessions apart");
        let a = &traces[1];
        assert_eq!((a.name.as_str(), a.span_count), ("op 1", 3));
        assert_eq!(a.duration_ms, 220.0);
        assert_eq!(a.status, Some(json!("ok")));
        assert_eq!(a.started_at, NOW.to_rfc3339());

        // Sent again without the session: its row goes; removed (retention): the same.
        store_spans(&txn, &org, &[span('b', '4', None, 1_000, None)]).unwrap();
        let key = format!("{}/{}/{}", org.as_str(), "a".repeat(32), "1".repeat(16));
        remove_span(&txn, &key).unwrap();
        let left = traces_of_session(&txn, &org, "s-1").unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!((left[0].name.as_str(), left[0].span_count), ("op 2", 2));
        assert_eq!(SESSION_SPANS.scan(&txn, Scan::all()).unwrap().len(), 2);
    }
}
