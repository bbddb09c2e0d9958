//! Each organisation's record dictionary through the real binary: once an organisation has
//! stored enough error events the server trains a dictionary on them and compresses the next
//! events with it; those events read back at once, after a restart, and from a backup
//! restored into another data dir (the dictionary travels with the store).

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{TestServer, wait_for};
use crate::ingest_support::{
    accepted, all_errors, ingest_server, metric, owner_key, post, restored_copy,
};

const PER_REQUEST: usize = 500;
/// More than the server's `TRAIN_AFTER_EVENTS` (1,000).
const BEFORE: usize = 1_200;
const AFTER: usize = 100;

/// `count` browser errors numbered from `first`, with stacks and URLs like a real app's;
/// `word` is in each message.
fn events(first: usize, count: usize, word: &str) -> Value {
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            let stack = (0..12)
                .map(|frame| {
                    format!(
                        "    at handler{frame} (https://shop.example.com/assets/app.{}.js:1:{})",
                        n % 7,
                        1000 + frame * 37 + n % 13
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            json!({"level": "error", "name": "TypeError",
                   "message": format!("Cannot read properties of undefined {word} n{n}"),
                   "stack": format!("TypeError: Cannot read properties of undefined\n{stack}"),
                   "url": format!("https://shop.example.com/checkout/{}", n % 50),
                   "release": "5.1.0", "environment": "production",
                   "user_agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0"})
        })
        .collect();
    json!({ "events": events })
}

fn send_events(server: &TestServer, first: usize, count: usize, word: &str) {
    for start in (first..first + count).step_by(PER_REQUEST) {
        let size = PER_REQUEST.min(first + count - start);
        let reply = accepted(&post(
            server,
            "/ingest/web-errors",
            &events(start, size, word),
        ));
        assert_eq!(reply["accepted"], size, "{reply}");
    }
}

/// The events stored (every one decoded from its record), and how many carry `word`.
fn stored(server: &TestServer, key: &str, word: &str) -> (usize, usize) {
    let items = all_errors(server, key);
    let with_word = items
        .iter()
        .filter(|item| item["message"].as_str().is_some_and(|m| m.contains(word)))
        .count();
    (items.len(), with_word)
}

#[test]
fn events_after_the_dictionary_is_trained_read_back_after_a_restart_and_a_restore() {
    let mut server = ingest_server(&[
        ("WEB_INGEST_MAX_EVENTS", "1000"),
        ("WEB_INGEST_MAX_BODY_BYTES", "4194304"),
    ]);
    let key = owner_key(&server);
    send_events(&server, 0, BEFORE, "before");
    wait_for(
        "the dictionary to be trained",
        Duration::from_secs(60),
        || metric(&server, "lookout_record_dictionaries_trained_total").filter(|n| *n >= 1.0),
    );
    // The log line reaches the harness through a pipe and a reader thread: wait for it too.
    wait_for("the training's log line", Duration::from_secs(10), || {
        server
            .log()
            .contains("record dictionary trained")
            .then_some(())
    });
    send_events(&server, BEFORE, AFTER, "afterdict");
    let total = BEFORE + AFTER;
    assert_eq!(stored(&server, &key, "afterdict"), (total, AFTER));

    // A restart loads the dictionary before anything is read.
    server.restart();
    assert_eq!(stored(&server, &key, "afterdict"), (total, AFTER));
    assert_eq!(
        metric(&server, "lookout_record_dictionaries_trained_total"),
        None,
        "not trained again after the restart"
    );

    // A backup holds the dictionary: the restored store reads the same events.
    let temp = tempfile::tempdir().unwrap();
    let copy = restored_copy(&server, temp.path());
    assert_eq!(stored(&copy, &key, "afterdict"), (total, AFTER));
}
