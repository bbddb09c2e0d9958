//! Search over error events through the real binary: new events searchable within 1 s, the
//! CONTRACT fields (`message`, `name`, `stack` through the group, `url`, `release`,
//! `service`, `environment`, `level`, `tag.KEY`), `from`/`to`/`group`, a bad query, `kill -9`
//! before the index commit, a deleted index rebuilt on start, and an offline `lookout
//! reindex` giving the same answers as the live index (online: `errors_reindex.rs`), and the
//! index's threads running below ingest's priority.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{TestServer, text, wait_for};
use crate::http_basics::send;
use crate::ingest_support::{accepted, bearer, ingest_server, owner_key, post, read};

fn ids(server: &TestServer, key: &str, query: &str) -> Vec<String> {
    let path = format!("/api/v1/errors?{query}");
    let mut found: Vec<String> = read(server, key, &path)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|event| event["message"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    found
}

pub(crate) fn events() -> Value {
    json!({"events": [
        {"level": "error", "name": "TypeError", "message": "checkout exploded", "url": "https://shop.example.com/cart",
         "release": "1.2.0", "service": "shop", "environment": "production", "tags": {"plan": "pro"},
         "timestamp": "2026-11-20T10:00:00Z",
         "stack": "TypeError: checkout exploded\n    at computeTotals (https://shop.example.com/app.js:1:10)"},
        {"level": "warning", "message": "slow image", "url": "https://shop.example.com/gallery",
         "release": "1.3.0", "service": "gallery", "environment": "staging", "tags": {"plan": "free"},
         "timestamp": "2026-11-21T10:00:00Z"},
    ]})
}

/// Every query of the contract, with the messages it must find.
pub(crate) fn assert_queries(server: &TestServer, key: &str) {
    let table: &[(&str, &[&str])] = &[
        ("q=exploded", &["checkout exploded"]),
        ("q=message:slow", &["slow image"]),
        ("q=name:TypeError", &["checkout exploded"]),
        ("q=stack:computeTotals", &["checkout exploded"]),
        ("q=computeTotals", &["checkout exploded"]),
        ("q=url:gallery", &["slow image"]),
        ("q=release:1.3.0", &["slow image"]),
        ("q=service:shop", &["checkout exploded"]),
        ("q=environment:staging", &["slow image"]),
        ("q=level:warning", &["slow image"]),
        ("q=tag.plan:pro", &["checkout exploded"]),
        (
            "q=level:error%20OR%20level:warning",
            &["checkout exploded", "slow image"],
        ),
        // Stack terms combine with the event's own fields as written.
        (
            "q=stack:computeTotals%20AND%20release:1.2.0",
            &["checkout exploded"],
        ),
        ("q=stack:computeTotals%20AND%20release:1.3.0", &[]),
        (
            "q=computeTotals%20AND%20service:shop",
            &["checkout exploded"],
        ),
        (
            "q=stack:computeTotals%20OR%20level:warning",
            &["checkout exploded", "slow image"],
        ),
        ("q=level:error%20AND%20NOT%20stack:computeTotals", &[]),
        ("q=stack:%22computeTotals%20shop%22", &[]),
        ("q=stack:nowhere%20OR%20message:slow", &["slow image"]),
        ("from=2026-11-21T00:00:00Z", &["slow image"]),
        ("to=2026-11-21T00:00:00Z", &["checkout exploded"]),
        ("q=nothingmatches", &[]),
    ];
    for (query, expected) in table {
        assert_eq!(ids(server, key, query), *expected, "{query}");
    }
}

#[test]
fn events_are_searchable_within_a_second_by_every_contract_field() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    accepted(&post(&server, "/ingest/web-errors", &events()));
    let acknowledged = Instant::now();
    wait_for("the first event searchable", Duration::from_secs(1), || {
        (ids(&server, &key, "q=exploded").len() == 1).then_some(())
    });
    assert!(acknowledged.elapsed() < Duration::from_secs(1));
    assert_queries(&server, &key);

    let group = read(&server, &key, "/api/v1/errors?q=exploded")["items"][0]["group_id"].clone();
    let group = group.as_str().unwrap();
    assert_eq!(
        ids(&server, &key, &format!("q=level:error&group={group}")),
        ["checkout exploded"]
    );
    assert!(ids(&server, &key, &format!("q=slow&group={group}")).is_empty());
    let bad = send(bearer(
        &server,
        &key,
        Method::GET,
        "/api/v1/errors?q=message:(unclosed",
    ));
    bad.problem(400, "invalid_parameter");
    // Pages of one hit each, with a cursor.
    let page = read(
        &server,
        &key,
        "/api/v1/errors?q=level:error%20OR%20level:warning&limit=1",
    );
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let next = read(
        &server,
        &key,
        &format!("/api/v1/errors?q=level:error%20OR%20level:warning&limit=1&cursor={cursor}"),
    );
    assert_ne!(next["items"][0]["id"], page["items"][0]["id"]);
    // A search pages through the newest 100,000 matches: a cursor at that depth is refused,
    // the one before it answers (here an empty page, without a next cursor).
    let deepest = read(
        &server,
        &key,
        "/api/v1/errors?q=level:error&limit=500&cursor=o99999",
    );
    assert_eq!(deepest["items"], json!([]));
    assert_eq!(deepest["next_cursor"], Value::Null);
    send(bearer(
        &server,
        &key,
        Method::GET,
        "/api/v1/errors?q=level:error&cursor=o100000",
    ))
    .problem(400, "invalid_parameter");
}

/// (name, nice) of each thread of process `pid`, from `/proc`.
fn thread_priorities(pid: u32) -> Vec<(String, i32)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the server's threads")
        .filter_map(|entry| {
            let task = entry.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            let stat = std::fs::read_to_string(task.join("stat")).ok()?;
            // Fields after the name (which may hold spaces): nice is the 17th of them.
            let nice = stat[stat.rfind(')')? + 2..]
                .split(' ')
                .nth(16)?
                .parse()
                .ok()?;
            Some((name.trim().to_string(), nice))
        })
        .collect()
}

#[test]
fn the_search_index_threads_yield_the_cpu_to_ingest() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    accepted(&post(&server, "/ingest/web-errors", &events()));
    wait_for("the events searchable", Duration::from_secs(5), || {
        (ids(&server, &key, "q=exploded").len() == 1).then_some(())
    });
    let threads = thread_priorities(server.pid());
    let nice = |name: &str| -> Vec<i32> {
        threads
            .iter()
            .filter(|(thread, _)| thread.starts_with(name))
            .map(|(_, nice)| *nice)
            .collect()
    };
    // The index writer and the pools tantivy started for it: lowered.
    for name in ["search-writer", "merge_thread", "segment_update"] {
        let found = nice(name);
        assert!(!found.is_empty(), "no {name} thread in {threads:?}");
        assert!(found.iter().all(|nice| *nice == 5), "{name}: {threads:?}");
    }
    // Ingest's threads: the store's writer and the runtime's workers keep the default.
    assert_eq!(nice("store-writer"), [0], "{threads:?}");
    assert!(nice("lookout").iter().all(|nice| *nice == 0), "{threads:?}");
}

/// Waits until `/healthz` no longer says the index is catching up after a start.
fn caught_up(server: &TestServer) {
    wait_for(
        "the search index to catch up",
        Duration::from_secs(30),
        || {
            let health = send(crate::harness::http().get(server.url("/healthz"))).json();
            health.get("search").is_none().then_some(())
        },
    );
}

#[test]
fn a_crash_before_the_index_commit_and_a_lost_index_are_caught_up_and_reindex_agrees() {
    let mut server = ingest_server(&[]);
    let key = owner_key(&server);
    // kill -9 right after the 202: the events are in redb, the index commit (250 ms later) is not.
    accepted(&post(&server, "/ingest/web-errors", &events()));
    server.kill9();
    server.restart();
    caught_up(&server);
    assert_queries(&server, &key);

    // A deleted index (as after a restore) is rebuilt from redb after start.
    server.terminate(Duration::from_secs(15));
    std::fs::remove_dir_all(server.data_dir.join("search")).unwrap();
    server.restart();
    caught_up(&server);
    assert_queries(&server, &key);

    // `lookout reindex` with the server stopped rebuilds the same answers.
    server.terminate(Duration::from_secs(15));
    let output = server.cli(&["reindex"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "indexed 2 error events");
    server.restart();
    assert_queries(&server, &key);
}
