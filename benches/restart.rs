//! Start-up time against the number of stored events: how long `lookout serve` takes to answer
//! `/healthz` after a clean stop (SIGTERM) and after `kill -9`, and, after the crash, how long
//! the search index's catch-up runs in the background and how many events it indexed again
//! (the server's own `lookout_search_catch_up_events_total`).
//!
//! Run: `cargo bench --bench restart` (LOOKOUT_BENCH_EVENTS sets the stored events, 100000).

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{env_number, health, metric, sign_in_owner, start_until_healthy as start, stop};

const INGEST_KEY: &str = "bench-ingest-key-000000000001";
const PER_REQUEST: usize = 5_000;

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("WEB_INGEST_KEY", INGEST_KEY),
        ("WEB_INGEST_RATE_PER_MIN", "1000000000"),
        ("WEB_INGEST_MAX_EVENTS", "10000"),
        ("WEB_INGEST_MAX_BODY_BYTES", "16777216"),
    ]
}

/// One request's events: a 15-frame stack in one of 50 groups, about 1.5 KB each.
fn batch(first: usize, count: usize) -> Value {
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            let group = n % 50;
            let stack: String = std::iter::once(format!("TypeError: failed in step {group}"))
                .chain((0..15).map(|frame| {
                    format!("    at handler{group}_{frame} (https://shop.example.com/assets/app.js:{}:{})", frame + 1, 10 + frame)
                }))
                .collect::<Vec<_>>()
                .join("\n");
            json!({"level": "error", "name": "TypeError", "message": format!("failed in step {group} n{n}"),
                   "url": "https://shop.example.com/checkout", "release": "1.0.0", "stack": stack})
        })
        .collect();
    json!({ "events": events })
}

fn ingest(base: &str, first: usize, count: usize) {
    let reply = reqwest::blocking::Client::new()
        .post(format!("{base}/ingest/web-errors"))
        .header("x-lookout-key", INGEST_KEY)
        .json(&batch(first, count))
        .timeout(Duration::from_secs(120))
        .send()
        .expect("ingest");
    assert_eq!(reply.status().as_u16(), 202, "ingest");
}

fn main() {
    let events = env_number("LOOKOUT_BENCH_EVENTS", 100_000) as usize;
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let (server, base, _) = start(&data_dir, &env());
    sign_in_owner(&data_dir, &base);
    let filling = Instant::now();
    for first in (0..events).step_by(PER_REQUEST) {
        ingest(&base, first, PER_REQUEST.min(events - first));
    }
    println!(
        "stored {events} events in {:.1} s",
        filling.elapsed().as_secs_f64()
    );
    stop(server);

    for round in 1..=3 {
        let (server, base, took) = start(&data_dir, &env());
        let indexed = metric(&base, "lookout_search_catch_up_events_total");
        println!(
            "clean stop, start {round}: /healthz in {} ms, events indexed again {indexed}",
            took.as_millis()
        );
        stop(server);
    }

    let (server, base, _) = start(&data_dir, &env());
    ingest(&base, events, 1_000);
    drop(server); // kill -9: Process kills on drop
    let (server, base, took) = start(&data_dir, &env());
    let during = health(&base).unwrap_or_default();
    let catching = Instant::now();
    while health(&base).is_some_and(|body| body.get("search").is_some()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!(
        "kill -9: /healthz in {} ms ({during}), catch-up of {} events in the background: {:.2} s",
        took.as_millis(),
        metric(&base, "lookout_search_catch_up_events_total"),
        catching.elapsed().as_secs_f64()
    );
    stop(server);
}
