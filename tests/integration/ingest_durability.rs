//! Ingest and the disk: `kill -9` under ingest load loses no acknowledged item, a full disk
//! turns ingest into 503 `store_unavailable` (never a 2xx) until space returns, and retention
//! deletes telemetry older than `RETENTION_DAYS` while keeping the rest.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::{TmpfsMount, http, wait_for};
use crate::ingest_support::*;

#[test]
fn kill_9_under_ingest_load_loses_no_acknowledged_event() {
    let mut server = ingest_server(&[("WEB_INGEST_RATE_PER_MIN", "1000000")]);
    let acknowledged = Arc::new(Mutex::new(HashSet::new()));
    let url = server.url("/ingest/web-errors");
    let senders: Vec<_> = (0..4)
        .map(|sender| {
            let (url, acknowledged) = (url.clone(), acknowledged.clone());
            std::thread::spawn(move || {
                let client = http();
                for batch in 0..10_000 {
                    let ids: Vec<String> = (0..10)
                        .map(|i| format!("load-{sender}-{batch}-{i}"))
                        .collect();
                    let events: Vec<Value> = ids
                        .iter()
                        .map(|id| {
                            let mut item = event("under load");
                            item["event_id"] = json!(id);
                            item
                        })
                        .collect();
                    let request = client
                        .post(&url)
                        .header("x-lookout-key", KEY)
                        .json(&json!({"events": events}));
                    // The server is killed under us: the first failure ends this sender.
                    match request.send() {
                        Ok(response) if response.status() == 202 => {
                            acknowledged.lock().unwrap().extend(ids);
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect();
    wait_for("acknowledged events", Duration::from_secs(60), || {
        (acknowledged.lock().unwrap().len() >= 400).then_some(())
    });
    server.kill9();
    for sender in senders {
        sender.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();

    server.restart();
    let key = owner_key(&server);
    let stored: HashSet<String> = all_errors(&server, &key)
        .iter()
        .map(|event| event["event_id"].as_str().unwrap().to_string())
        .collect();
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
}

/// Milliseconds since the epoch, `days_ago` days back.
fn epoch_ms(days_ago: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    now - days_ago * 86_400_000
}

#[test]
fn retention_deletes_old_telemetry_and_keeps_the_rest() {
    let server = ingest_server(&[("RETENTION_DAYS", "1")]);
    let dated = |message: &str, days_ago: u64| {
        let mut item = event(message);
        item["timestamp"] = json!(epoch_ms(days_ago));
        item["session_id"] = json!("recent");
        item
    };
    let events = json!({"events": [dated("old", 2), dated("new", 0)]});
    accepted(&post(&server, "/ingest/web-errors", &events));
    let session =
        |id: &str, days_ago: u64| json!({"id": id, "started_at": epoch_ms(days_ago), "url": "u"});
    let sessions = json!({"sessions": [session("ancient", 3), session("recent", 0)]});
    accepted(&post(&server, "/ingest/web-sessions", &sessions));
    let span = |id: &str, days_ago: u64| {
        json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": id, "name": "load",
            "start_time": epoch_ms(days_ago), "duration_ms": 5, "service": "web"})
    };
    let spans = json!({"spans": [span("00000000000000a1", 5), span("00000000000000a2", 0)]});
    accepted(&post(&server, "/ingest/spans", &spans));

    let key = owner_key(&server);
    let messages = || -> Vec<String> {
        all_errors(&server, &key)
            .iter()
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect()
    };
    // The worker sweeps every 10 s: poll until the old items are gone.
    wait_for("retention sweep", Duration::from_secs(30), || {
        (messages() == ["new"]).then_some(())
    });
    let listed = read(&server, &key, "/api/v1/sessions");
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["recent"]);
    assert_eq!(
        read(&server, &key, "/api/v1/sessions/recent")["errors"][0]["message"],
        "new"
    );
    let trace = read(
        &server,
        &key,
        "/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736",
    );
    let spans = trace["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["span_id"], "00000000000000a2");
}

#[test]
fn a_full_disk_makes_ingest_503_never_2xx_until_space_returns() {
    let temp = tempfile::tempdir().unwrap();
    let mount = TmpfsMount::new(temp.path(), "8m");
    let mut builder = crate::harness::TestServer::builder()
        .inside(&mount, "data")
        .env("WEB_INGEST_KEY", KEY);
    builder = builder.env("WEB_INGEST_RATE_PER_MIN", "100000");
    let server = builder.start();
    add_owner(&server, OWNER);
    let body = json!({"events": [event("before the disk filled")]});
    accepted(&post(&server, "/ingest/web-errors", &body));

    let filler_path = mount.0.join("filler");
    let mut filler = std::fs::File::create(&filler_path).unwrap();
    let chunk = vec![0x5a_u8; 64 * 1024];
    while std::io::Write::write(&mut filler, &chunk).is_ok() {}
    // The database may still have free pages inside its file: send until the disk refuses.
    let mut refused = Vec::new();
    let mut attempt = 0;
    while refused.len() < 3 {
        attempt += 1;
        assert!(
            attempt < 200,
            "the store never refused a write on a full disk"
        );
        let message = format!("disk full {attempt}");
        let reply = post(
            &server,
            "/ingest/web-errors",
            &json!({"events": [event(&message)]}),
        );
        if reply.status == 202 && refused.is_empty() {
            continue;
        }
        reply.problem(503, "store_unavailable");
        assert!(!reply.header("retry-after").is_empty());
        refused.push(message);
    }
    drop(filler);
    std::fs::remove_file(&filler_path).unwrap();
    wait_for("ingest accepted again", Duration::from_secs(10), || {
        let reply = post(
            &server,
            "/ingest/web-errors",
            &json!({"events": [event("after")]}),
        );
        (reply.status == 202).then_some(())
    });
    let key = owner_key(&server);
    let messages: Vec<String> = all_errors(&server, &key)
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(messages.first().map(String::as_str), Some("after"));
    for message in &refused {
        assert!(
            !messages.contains(message),
            "{message} was refused yet stored"
        );
    }
}
