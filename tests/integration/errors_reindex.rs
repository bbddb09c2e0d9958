//! `lookout reindex` while the server runs: the server's own index writer rebuilds the index
//! (through the admin socket) and searches give the same answers after; events ingested while
//! the rebuild runs are all searchable after it, each once.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::errors_search::{assert_queries, events};
use crate::harness::{TestServer, text, wait_for};
use crate::ingest_support::{accepted, ingest_server, owner_key, post, read};

/// The ids of every event `q` finds, following `next_cursor`.
fn found(server: &TestServer, key: &str, q: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut path = format!("/api/v1/errors?q={q}&limit=500");
    loop {
        let page = read(server, key, &path);
        for event in page["items"].as_array().expect("items") {
            ids.push(event["id"].as_str().expect("id").to_string());
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/v1/errors?q={q}&limit=500&cursor={cursor}"),
            None => return ids,
        }
    }
}

/// A batch of `count` events whose messages carry `word` and a number, with a stack naming
/// `word` too: five groups per word, each with a document of its own.
fn batch(word: &str, first: usize, count: usize) -> Value {
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            json!({"level": "error", "name": "TypeError", "message": format!("{word} number {n}"),
                "url": "https://shop.example.com/cart", "release": "1.0.0",
                "stack": format!("TypeError: {word}\n    at {word}Render{} (https://shop.example.com/app.js:1:{n})", n % 5)})
        })
        .collect();
    json!({ "events": events })
}

#[test]
fn reindex_while_the_server_runs_keeps_the_same_answers() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    accepted(&post(&server, "/ingest/web-errors", &events()));
    wait_for("the events searchable", Duration::from_secs(5), || {
        (found(&server, &key, "exploded").len() == 1).then_some(())
    });
    assert_queries(&server, &key);

    let output = server.cli(&["reindex"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "indexed 2 error events");
    assert_queries(&server, &key);
    // The rebuilt index is the live one now: new events land in it.
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &batch("afterwards", 0, 1),
    ));
    wait_for("an event after the reindex", Duration::from_secs(5), || {
        (found(&server, &key, "afterwards").len() == 1).then_some(())
    });
    let search = server.data_dir.join("search");
    assert!(search.join("meta.json").exists());
    assert!(!search.with_extension("rebuild").exists());
    assert!(!search.with_extension("old").exists());
}

#[test]
fn events_ingested_during_an_online_reindex_are_all_found_once() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    const STORED: usize = 5_000;
    for first in (0..STORED).step_by(100) {
        accepted(&post(
            &server,
            "/ingest/web-errors",
            &batch("stored", first, 100),
        ));
    }

    // The admin protocol itself, so the test sees the progress lines and when the rebuild ends.
    let socket = UnixStream::connect(server.data_dir.join("admin.sock")).expect("admin socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let reindex = std::thread::spawn(move || {
        (&socket).write_all(b"{\"command\":\"reindex\"}\n").unwrap();
        let mut progress = Vec::new();
        for line in BufReader::new(&socket).lines() {
            let line: Value = serde_json::from_str(&line.expect("a line")).expect("json");
            if line.get("progress").is_some() {
                progress.push(line["progress"].clone());
                continue;
            }
            return (progress, line, Instant::now());
        }
        panic!("the server closed the admin connection without a reply");
    });

    // Ingest until the rebuild has ended, and a little after.
    let (mut during, mut sent, mut tail) = (0usize, 0usize, 0);
    while tail < 3 {
        if reindex.is_finished() {
            tail += 1;
        }
        accepted(&post(
            &server,
            "/ingest/web-errors",
            &batch("during", sent, 10),
        ));
        sent += 10;
        if !reindex.is_finished() {
            during += 10;
        }
    }
    let (progress, reply, _) = reindex.join().expect("the reindex thread");
    assert_eq!(reply["ok"], true, "{reply}");
    let indexed = reply["result"]["indexed"].as_u64().expect("indexed");
    assert!(indexed >= STORED as u64, "indexed {indexed}");
    assert!(!progress.is_empty(), "no progress line");
    assert_eq!(progress[0]["done"], 0);
    assert!(progress[0]["total"].as_u64().unwrap() >= STORED as u64);
    assert!(
        during > 0,
        "no batch was acknowledged while the rebuild ran"
    );

    // Every event is found, once: those stored before and those ingested while it ran.
    wait_for("every event searchable", Duration::from_secs(10), || {
        (found(&server, &key, "during").len() == sent).then_some(())
    });
    for (word, count) in [("during", sent), ("stored", STORED)] {
        let ids = found(&server, &key, word);
        let distinct: BTreeSet<&String> = ids.iter().collect();
        assert_eq!((ids.len(), distinct.len()), (count, count), "{word}");
    }
}
