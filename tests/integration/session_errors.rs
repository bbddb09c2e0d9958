//! A session's errors (`GET /api/v1/sessions/{id}`) are found through the search index: they
//! are listed as soon as their request is answered (queued for the index or left out of its
//! inbox and read back), after a clean restart, and after `kill -9` once the index caught up;
//! earliest event time first and at most 1,000, never another session's.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::{TestServer, wait_for};
use crate::http_basics::send;
use crate::ingest_support::{accepted, ingest_server, owner_key, post, read};

/// An hour before the tests began, in ms since the epoch.
fn hour_ago() -> i64 {
    static START: OnceLock<i64> = OnceLock::new();
    *START.get_or_init(|| {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        i64::try_from(since.as_millis()).unwrap() - 3_600_000
    })
}

/// Events numbered `first..first + count` of `session` (or none), an hour ago plus their number
/// in milliseconds, each with its number as its message.
fn errors(first: i64, count: i64, session: Option<&str>) -> Value {
    let start = hour_ago();
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            let mut event = json!({"level": "error", "message": format!("n{n}"),
                "url": "https://app.example.com/", "timestamp": start + n});
            if let Some(session) = session {
                event["session_id"] = json!(session);
            }
            event
        })
        .collect();
    json!({ "events": events })
}

fn open_session(server: &TestServer, id: &str) {
    let session = json!({"sessions": [{"id": id, "started_at": hour_ago(),
        "url": "https://app.example.com/"}]});
    accepted(&post(server, "/ingest/web-sessions", &session));
}

/// The messages of the session's errors, in the order listed.
fn messages(server: &TestServer, key: &str, session: &str) -> Vec<String> {
    read(server, key, &format!("/api/v1/sessions/{session}"))["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|error| error["message"].as_str().unwrap().to_string())
        .collect()
}

fn numbered(range: std::ops::Range<i64>) -> Vec<String> {
    range.map(|n| format!("n{n}")).collect()
}

/// Sends errors of two sessions and none, checks both sessions at once, after a clean restart
/// and after kill -9 (once the index caught up).
fn listed_at_once_and_after_restarts(env: &[(&str, &str)]) {
    let mut server = ingest_server(env);
    let key = owner_key(&server);
    open_session(&server, "s-1");
    open_session(&server, "s-2");
    // Later events first: the list is by event time, not arrival.
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &errors(3, 2, Some("s-1")),
    ));
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &errors(0, 3, Some("s-1")),
    ));
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &errors(10, 2, Some("s-2")),
    ));
    accepted(&post(&server, "/ingest/web-errors", &errors(20, 1, None)));
    let (first, second) = (numbered(0..5), numbered(10..12));
    assert_eq!(messages(&server, &key, "s-1"), first, "listed at once");
    assert_eq!(messages(&server, &key, "s-2"), second);

    server.restart();
    assert_eq!(messages(&server, &key, "s-1"), first, "after a clean stop");
    assert_eq!(messages(&server, &key, "s-2"), second);

    accepted(&post(
        &server,
        "/ingest/web-errors",
        &errors(5, 1, Some("s-1")),
    ));
    server.kill9();
    server.restart();
    let all = numbered(0..6);
    wait_for("the index caught up", Duration::from_secs(30), || {
        let health = send(crate::harness::http().get(server.url("/healthz"))).json();
        (health["search"] != "catching_up").then_some(())
    });
    assert_eq!(messages(&server, &key, "s-1"), all, "after kill -9");
    assert_eq!(messages(&server, &key, "s-2"), second);
}

#[test]
fn a_sessions_errors_are_listed_as_soon_as_accepted_and_after_restarts() {
    listed_at_once_and_after_restarts(&[]);
}

#[test]
fn a_sessions_errors_left_out_of_the_index_inbox_are_listed_as_soon_as_accepted() {
    // An inbox of 0 bytes queues nothing: every batch is read back from the store.
    listed_at_once_and_after_restarts(&[("SEARCH_INBOX_MAX_BYTES", "0")]);
}

#[test]
fn a_session_lists_its_1000_earliest_errors() {
    let mut server = ingest_server(&[("WEB_INGEST_RATE_PER_MIN", "100000")]);
    let key = owner_key(&server);
    open_session(&server, "busy");
    // 1,001 errors, the newest first.
    for first in (0..1_001)
        .step_by(100)
        .collect::<Vec<i64>>()
        .into_iter()
        .rev()
    {
        let count = 100.min(1_001 - first);
        accepted(&post(
            &server,
            "/ingest/web-errors",
            &errors(first, count, Some("busy")),
        ));
    }
    assert_eq!(messages(&server, &key, "busy"), numbered(0..1_000));
    server.restart();
    assert_eq!(
        messages(&server, &key, "busy"),
        numbered(0..1_000),
        "from the index"
    );
}
