//! Error event records in segment files through the real binary: they are appended to
//! `lookout.events/` beside the database, read back after a restart and after `kill -9`, and
//! an offline backup (server stopped) holds them whole, so the store restored from it reads
//! every event without any segment of its own.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::TestServer;
use crate::ingest_support::{accepted, all_errors, ingest_server, owner_key, post, restored_copy};

const PER_REQUEST: usize = 100;

fn events(first: usize, count: usize) -> Value {
    let events: Vec<Value> = (first..first + count)
        .map(|n| {
            json!({"level": "error", "name": "RangeError",
                   "message": format!("Index out of range segmented n{n}"),
                   "stack": format!("RangeError: Index out of range\n    at pick (https://shop.example.com/app.js:1:{n})"),
                   "url": format!("https://shop.example.com/list/{}", n % 20), "release": "2.0.0"})
        })
        .collect();
    json!({ "events": events })
}

fn send(server: &TestServer, first: usize, count: usize) {
    for start in (first..first + count).step_by(PER_REQUEST) {
        let size = PER_REQUEST.min(first + count - start);
        let reply = accepted(&post(server, "/ingest/web-errors", &events(start, size)));
        assert_eq!(reply["accepted"], size, "{reply}");
    }
}

/// The event numbers read back, sorted, each checked whole (message and group).
fn numbers(server: &TestServer, key: &str) -> Vec<usize> {
    let mut numbers: Vec<usize> = all_errors(server, key)
        .iter()
        .map(|item| {
            assert!(item["group_id"].as_str().is_some(), "{item}");
            let message = item["message"].as_str().expect("a message");
            message
                .rsplit_once(" n")
                .and_then(|(_, n)| n.parse().ok())
                .unwrap_or_else(|| panic!("{message}"))
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The segment files of the data dir at `data_dir` and their bytes.
fn segments(data_dir: &Path) -> Vec<(String, u64)> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("lookout.events")) else {
        return Vec::new();
    };
    let mut files: Vec<(String, u64)> = entries
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".seg"))
        .map(|entry| {
            let len = entry.metadata().unwrap().len();
            (entry.file_name().to_string_lossy().into_owned(), len)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn records_live_in_segments_survive_restarts_and_a_crash_and_an_offline_backup_holds_them_whole() {
    let mut server = ingest_server(&[]);
    let key = owner_key(&server);
    send(&server, 0, 600);
    let files = segments(&server.data_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].1 > 600 * 60,
        "{files:?}: every record in the segment"
    );
    assert_eq!(numbers(&server, &key), (0..600).collect::<Vec<_>>());

    server.restart();
    assert_eq!(numbers(&server, &key), (0..600).collect::<Vec<_>>());
    send(&server, 600, 200);
    // Appends go on in the same segment after a clean restart.
    assert_eq!(segments(&server.data_dir).len(), 1);

    server.kill9();
    server.restart();
    assert_eq!(numbers(&server, &key), (0..800).collect::<Vec<_>>());

    // Offline: the backup reads the records from the segments and holds them whole.
    server.terminate(std::time::Duration::from_secs(15));
    let temp = tempfile::tempdir().unwrap();
    let copy = restored_copy(&server, temp.path());
    assert_eq!(numbers(&copy, &key), (0..800).collect::<Vec<_>>());
    assert_eq!(
        segments(&copy.data_dir),
        Vec::new(),
        "the restored store's records are in its rows"
    );
}
