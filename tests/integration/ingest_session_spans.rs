//! Spans carry an optional `session_id` (CONTRACT section 9): validated and scrubbed like an
//! error event's, shown on the trace, and `GET /api/v1/sessions/{id}` lists the session's
//! traces by their root span, newest first and at most 200.

use serde_json::{Value, json};

use crate::ingest_support::*;

const START: i64 = 1_795_348_800_000;

fn span(trace: u32, id: u32, parent: Option<u32>, start: i64, session: Option<&str>) -> Value {
    let mut span = json!({"trace_id": format!("{trace:032x}"), "span_id": format!("{id:016x}"),
        "name": format!("op {id}"), "start_time": START + start, "duration_ms": 40,
        "service": "web", "status": "ok"});
    if let Some(parent) = parent {
        span["parent_span_id"] = json!(format!("{parent:016x}"));
    }
    if let Some(session) = session {
        span["session_id"] = json!(session);
    }
    span
}

#[test]
fn a_sessions_traces_are_listed_by_their_root_span() {
    let server = ingest_server(&[]);
    let session = json!({"sessions": [{"id": "s-1", "started_at": START, "url": "https://app.example.com/"}]});
    accepted(&post(&server, "/ingest/web-sessions", &session));
    let mut root = span(1, 1, None, 0, Some("s-1"));
    root["name"] = json!("page load");
    root["status"] = json!({"code": "error", "message": "timeout"});
    let mut later = span(2, 4, None, 5_000, Some("s-1"));
    later["name"] = json!("route change");
    let mut scrubbed = span(4, 6, None, 0, Some("jane@example.com"));
    scrubbed["name"] = json!("personal");
    let body = json!({"spans": [
        root,
        span(1, 2, Some(1), 100, None),
        span(1, 3, Some(2), 200, Some("s-1")),
        later,
        span(3, 5, None, 9_000, Some("s-2")),
        scrubbed,
        span(5, 7, None, 0, Some("a/b")),
        span(5, 8, None, 0, Some(&"x".repeat(300))),
    ]});
    let result = accepted(&post(&server, "/ingest/spans", &body));
    assert_eq!(result["accepted"], 6, "{result}");
    let rejected = result["rejected"].to_string();
    assert!(rejected.contains("session_id"), "{rejected}");

    let key = owner_key(&server);
    let detail = read(&server, &key, "/api/v1/sessions/s-1");
    let traces = detail["traces"].as_array().expect("traces").clone();
    let names: Vec<&str> = traces.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["route change", "page load"],
        "newest first, s-2 apart"
    );
    let page_load = &traces[1];
    assert_eq!(page_load["trace_id"], format!("{:032x}", 1));
    assert_eq!(
        page_load["span_count"], 3,
        "the whole trace, not only the session's spans"
    );
    assert_eq!(page_load["duration_ms"], 240.0);
    assert_eq!(page_load["started_at"], "2026-11-22T12:00:00.000Z");
    assert_eq!(page_load["status"]["code"], "error");

    let trace = read(&server, &key, &format!("/api/v1/traces/{:032x}", 1));
    assert_eq!(trace["spans"][0]["session_id"], "s-1");
    assert!(trace["spans"][0]["children"][0]["session_id"].is_null());
    // Scrubbed like every string before it is stored: the address never reaches the store.
    let personal = read(&server, &key, &format!("/api/v1/traces/{:032x}", 4));
    let stored = personal["spans"][0]["session_id"].as_str().unwrap();
    assert!(!stored.contains("jane"), "{stored}");
}

#[test]
fn a_session_lists_at_most_200_traces_newest_first() {
    let server = ingest_server(&[]);
    let session = json!({"sessions": [{"id": "busy", "started_at": START, "url": "u"}]});
    accepted(&post(&server, "/ingest/web-sessions", &session));
    for batch in 0..3_u32 {
        let spans: Vec<Value> = (0..70)
            .map(|n| {
                let trace = batch * 100 + n + 1;
                span(trace, trace, None, i64::from(trace) * 10, Some("busy"))
            })
            .collect();
        accepted(&post(&server, "/ingest/spans", &json!({"spans": spans})));
    }
    let key = owner_key(&server);
    let traces = read(&server, &key, "/api/v1/sessions/busy")["traces"].clone();
    let traces = traces.as_array().unwrap();
    assert_eq!(traces.len(), 200);
    assert_eq!(traces[0]["trace_id"], format!("{:032x}", 270));
    let starts: Vec<&str> = traces
        .iter()
        .map(|t| t["started_at"].as_str().unwrap())
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(starts, sorted);
}
