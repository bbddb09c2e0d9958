//! Scrubbing proven on disk: personal data planted in every kind of ingested item, and the
//! client address sent through a trusted proxy, appear in no byte of the data dir after a
//! clean shutdown, nor in the server's log, while the items themselves were stored.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::http_basics::send;
use crate::ingest_support::*;

const EMAIL: &str = "jane.doe@example.com";
const IPV4: &str = "203.0.113.77";
const IPV6: &str = "2001:db8:85a3::8a2e:370:7334";
const CARD: &str = "4111111111111111";
const CARD_SPACED: &str = "5555 5555 5555 4444";
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
const PASSWORD_VALUE: &str = "hunter2-Secret";
const PHONE: &str = "+44-20-7946-0958";
/// The client's own address, seen only through `X-Forwarded-For`.
const CLIENT: &str = "198.51.100.23";

/// Every file under `dir`, recursively.
fn files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, found);
        } else {
            found.push(path);
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn planted_personal_data_reaches_no_byte_of_the_data_dir() {
    let mut server = ingest_server(&[("TRUSTED_PROXIES", "127.0.0.1")]);
    let url = format!("https://shop.example.com/login?user=ann&password={PASSWORD_VALUE}&next=%2F");
    let message =
        format!("checkout failed for {EMAIL} from {IPV4} / {IPV6} card {CARD} auth Bearer {JWT}");
    let error = json!({"level": "error", "message": message, "url": url, "event_id": "e-1",
        "stack": format!("Error: {EMAIL}\n    at pay (https://{IPV4}/app.js:1:2)"),
        "frames": [{"file": format!("https://{IPV4}/app.js?token={JWT}"), "line": 1, "column": 2}],
        "user_id": EMAIL, "user_agent": "Mozilla/5.0 Chrome/120.0.0.0",
        "tags": {"card": CARD_SPACED, "phone": PHONE, "note": format!("call {IPV6}"), "email": "x"},
        "service": "shop", "session_id": "s-1"});
    let session = json!({"id": "s-1", "started_at": "2026-11-22T12:00:00Z", "url": url,
        "referrer": format!("https://mail.example.com/?email={EMAIL}"), "user_id": EMAIL});
    let span = json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
        "name": format!("GET /users/{EMAIL}"), "start_time": "2026-11-22T12:00:00Z",
        "duration_ms": 12, "service": "shop",
        "attributes": {"http.url": url, "client": IPV4, "authorization": format!("Bearer {JWT}")}});
    for (path, body) in [
        ("/ingest/web-errors", json!({"events": [error]})),
        ("/ingest/web-sessions", json!({"sessions": [session]})),
        ("/ingest/spans", json!({"spans": [span]})),
    ] {
        let request = keyed(&server, reqwest::Method::POST, path)
            .header("x-forwarded-for", CLIENT)
            .json(&body);
        assert_eq!(accepted(&send(request))["accepted"], 1, "{path}");
    }

    // What was stored is the scrubbed item.
    let key = owner_key(&server);
    let events = all_errors(&server, &key);
    assert_eq!(events.len(), 1);
    let stored = &events[0];
    assert_eq!(
        stored["message"],
        "checkout failed for [email] from [ip] / [ip] card [card] auth Bearer [token]"
    );
    assert_eq!(
        stored["url"],
        "https://shop.example.com/login?user=ann&password=[redacted]&next=%2F"
    );
    assert_eq!(stored["user_id"], "[email]");
    assert_eq!(stored["tags"]["card"], "[card]");
    assert_eq!(stored["tags"]["phone"], "[redacted]");
    assert_eq!(stored["user_agent"], "Mozilla/5.0 Chrome/120.0.0.0");
    let session = read(&server, &key, "/api/v1/sessions/s-1");
    assert_eq!(session["user_id"], "[email]");
    assert_eq!(session["errors"].as_array().unwrap().len(), 1);

    let status = server.terminate(Duration::from_secs(15));
    assert!(status.success(), "clean shutdown: {status:?}");
    let mut found = Vec::new();
    files(&server.data_dir, &mut found);
    assert!(found.iter().any(|path| path.ends_with("lookout.redb")));
    let secrets = [
        EMAIL,
        IPV4,
        IPV6,
        CARD,
        CARD_SPACED,
        JWT,
        PASSWORD_VALUE,
        PHONE,
        CLIENT,
        "jane.doe%40example.com",
    ];
    for path in &found {
        let bytes = std::fs::read(path).expect("read data file");
        for secret in secrets {
            assert!(
                !contains(&bytes, secret),
                "{secret} found in {}",
                path.display()
            );
        }
    }
    let log = server.log();
    for secret in secrets {
        assert!(!log.contains(secret), "{secret} found in the log");
    }
    // The data dir was searched, not merely empty of telemetry: the scrubbed text is there.
    let database = std::fs::read(server.data_dir.join("lookout.redb")).unwrap();
    assert!(contains(&database, "checkout failed for [email]"));
}
