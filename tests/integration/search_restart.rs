//! A restart never waits for the search index: after a clean stop the index is complete and
//! nothing is indexed again (counted by the server's own metric, not timed); after `kill -9`
//! the server listens at once, `/healthz` says `"search":"catching_up"` while the writer
//! indexes the tail it missed, and every acknowledged event is then found. A crowded inbox
//! paces ingest rather than leaving events out for the writer to read back.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{TestServer, wait_for};
use crate::http_basics::send;
use crate::ingest_support::{accepted, ingest_server, metric, owner_key, post, read};

const EVENTS: usize = 100_000;
const PER_REQUEST: usize = 2_000;
const SENDERS: usize = 4;

fn server() -> TestServer {
    ingest_server(&[
        ("WEB_INGEST_MAX_EVENTS", "10000"),
        ("WEB_INGEST_MAX_BODY_BYTES", "4194304"),
        ("WEB_INGEST_RATE_PER_MIN", "100000"),
        ("API_RATE_PER_MIN", "100000"),
    ])
}

/// One request's events: `count` of them, numbered from `first`, each with its number as a
/// word of the message.
fn batch(first: usize, count: usize) -> Value {
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            json!({"level": "error", "name": "TypeError", "message": format!("restart probe n{n}"),
                   "url": "https://app.example.com/checkout", "release": "4.0.0"})
        })
        .collect();
    json!({ "events": events })
}

/// Sends `EVENTS` events from `SENDERS` threads, each request acknowledged.
fn fill(server: &TestServer) {
    std::thread::scope(|scope| {
        for sender in 0..SENDERS {
            scope.spawn(move || {
                let mut first = sender * PER_REQUEST;
                while first < EVENTS {
                    let reply = accepted(&post(
                        server,
                        "/ingest/web-errors",
                        &batch(first, PER_REQUEST),
                    ));
                    assert_eq!(reply["accepted"], PER_REQUEST, "{reply}");
                    first += SENDERS * PER_REQUEST;
                }
            });
        }
    });
}

fn health(server: &TestServer) -> Value {
    send(crate::harness::http().get(server.url("/healthz"))).json()
}

fn found(server: &TestServer, key: &str, word: &str) -> u64 {
    read(server, key, &format!("/api/v1/errors?q={word}&limit=1"))["total"]
        .as_u64()
        .expect("total")
}

#[test]
fn a_clean_restart_indexes_nothing_again_and_a_crash_only_the_tail_in_the_background() {
    let mut server = server();
    let key = owner_key(&server);
    fill(&server);
    wait_for("the last event searchable", Duration::from_secs(30), || {
        (found(&server, &key, "n99999") == 1).then_some(())
    });

    // A clean stop leaves the index complete: the next start catches up nothing.
    server.restart();
    assert_eq!(health(&server), json!({"status": "ok"}));
    assert_eq!(metric(&server, "lookout_search_catching_up"), Some(0.0));
    assert_eq!(
        metric(&server, "lookout_search_catch_up_events_total"),
        Some(0.0)
    );
    let log = server.log();
    let this_start = log.rsplit("---- restart ----").next().unwrap_or_default();
    assert!(!this_start.contains("search index caught up"), "{log}");
    for word in ["n0", "n54321", "n99999"] {
        assert_eq!(found(&server, &key, word), 1, "{word}");
    }
    // Every event is in the index once (the search counts them exactly).
    assert_eq!(found(&server, &key, "probe"), EVENTS as u64);

    // kill -9 right after an acknowledged batch: the next start serves at once and indexes
    // only the tail from the checkpoint, in the background.
    accepted(&post(&server, "/ingest/web-errors", &batch(EVENTS, 10)));
    server.kill9();
    server.restart();
    let body = health(&server);
    assert_eq!(body["status"], "ok", "{body}");
    wait_for("the catch-up to end", Duration::from_secs(60), || {
        health(&server).get("search").is_none().then_some(())
    });
    let caught_up = metric(&server, "lookout_search_catch_up_events_total").expect("counted");
    assert!(
        (10.0..=(EVENTS + 10) as f64).contains(&caught_up),
        "caught up {caught_up}"
    );
    assert_eq!(found(&server, &key, &format!("n{}", EVENTS + 9)), 1);
    assert_eq!(found(&server, &key, "probe"), EVENTS as u64 + 10);
}

#[test]
fn events_left_out_of_a_full_inbox_are_read_back_and_a_clean_stop_stays_complete() {
    // An inbox of 0 bytes queues nothing: every batch is read back from the store.
    let mut server = ingest_server(&[
        ("SEARCH_INBOX_MAX_BYTES", "0"),
        ("WEB_INGEST_RATE_PER_MIN", "100000"),
        ("API_RATE_PER_MIN", "100000"),
    ]);
    let key = owner_key(&server);
    std::thread::scope(|scope| {
        for sender in 0..2 {
            let server = &server;
            scope.spawn(move || {
                for request in 0..10 {
                    let first = (sender * 10 + request) * 100;
                    assert_eq!(
                        accepted(&post(server, "/ingest/web-errors", &batch(first, 100)))["accepted"],
                        100
                    );
                }
            });
        }
    });
    wait_for("every event searchable", Duration::from_secs(30), || {
        (found(&server, &key, "probe") == 2_000).then_some(())
    });
    // The writer counts read-back events before the commit that makes them searchable.
    assert_eq!(
        metric(&server, "lookout_search_left_out_events_total"),
        Some(2_000.0)
    );
    let read_back = metric(&server, "lookout_search_read_back_events_total").expect("counted");
    assert!(read_back >= 2_000.0, "read back {read_back}");
    assert_eq!(metric(&server, "lookout_search_inbox_bytes"), Some(0.0));
    for word in ["n0", "n1234", "n1999"] {
        assert_eq!(found(&server, &key, word), 1, "{word}");
    }

    // Everything was read back before the stop: the index is complete, nothing is caught up.
    server.restart();
    assert_eq!(
        metric(&server, "lookout_search_catch_up_events_total"),
        Some(0.0)
    );
    assert_eq!(found(&server, &key, "probe"), 2_000);
}

#[test]
fn a_crowded_inbox_paces_ingest_and_leaves_out_only_after_a_stalled_second() {
    // About two and a half 100-event batches: requests wait once two are queued.
    let server = ingest_server(&[
        ("SEARCH_INBOX_MAX_BYTES", "200000"),
        ("WEB_INGEST_RATE_PER_MIN", "100000"),
        ("API_RATE_PER_MIN", "100000"),
    ]);
    let key = owner_key(&server);
    const SENDERS: usize = 8;
    const REQUESTS: usize = 25;
    std::thread::scope(|scope| {
        for sender in 0..SENDERS {
            let server = &server;
            scope.spawn(move || {
                for request in 0..REQUESTS {
                    let first = (sender * REQUESTS + request) * 100;
                    let reply = accepted(&post(server, "/ingest/web-errors", &batch(first, 100)));
                    assert_eq!(reply["accepted"], 100, "{reply}");
                }
            });
        }
    });
    let all = (SENDERS * REQUESTS * 100) as u64;
    wait_for("every event searchable", Duration::from_secs(30), || {
        (found(&server, &key, "probe") == all).then_some(())
    });
    // A batch is left out only when its request waited the whole second in vain.
    let timeouts = metric(&server, "lookout_search_inbox_wait_timeouts_total").expect("counted");
    let left_out = metric(&server, "lookout_search_left_out_events_total").expect("counted");
    assert!(
        left_out <= timeouts * 100.0,
        "left out {left_out} after {timeouts} timeouts"
    );
    let waits = metric(&server, "lookout_search_inbox_wait_seconds_count").unwrap_or(0.0);
    assert!(waits > 0.0, "eight senders crowd an inbox of two batches");
    for word in ["n0", "n12345", "n19999"] {
        assert_eq!(found(&server, &key, word), 1, "{word}");
    }
}
