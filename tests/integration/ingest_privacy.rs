//! Scrubbing proven on disk: personal data planted in every kind of ingested item, and the
//! client address sent through a trusted proxy, appear in no byte of the data dir after a
//! clean shutdown, nor in the server's log, while the items themselves were stored.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::harness::TestServer;
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

/// One generated secret in one of the shapes a review found passing through: the text planted
/// (`planted`, a JSON value so that numbers stay numbers) and the part that must not survive.
struct Planted {
    field: &'static str,
    planted: serde_json::Value,
    secret: String,
}

/// Shapes of personal data, each generated afresh: Basic credentials, single-quoted and spaced
/// values, Cookie values, addresses under innocent names, IPv4 in URL paths (zero-padded too),
/// e-mails as object keys, card numbers sent as JSON numbers.
fn generate_secrets(cases: u32) -> Vec<Vec<Planted>> {
    use base64::Engine;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    let word = "[a-z][a-z0-9]{7,11}";
    let shapes = (word, word, word, any_octets(), any_octets(), card_body());
    let mut runner = TestRunner::deterministic();
    (0..cases)
        .map(|_| {
            let (a, b, c, ip, padded, card) = shapes.new_tree(&mut runner).unwrap().current();
            let credential = base64::engine::general_purpose::STANDARD.encode(format!("{a}:{b}"));
            let email = format!("{a}.{b}@{c}.test");
            let ip = format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3]);
            let padded = format!(
                "{:03}.{:03}.{:03}.{:03}",
                padded[0], padded[1], padded[2], padded[3]
            );
            vec![
                Planted {
                    field: "message",
                    planted: json!(format!("Authorization: Basic {credential}")),
                    secret: credential.clone(),
                },
                Planted {
                    field: "message",
                    planted: json!(format!("login failed password='{a} {b}' for x")),
                    secret: format!("{a} {b}"),
                },
                Planted {
                    field: "message",
                    planted: json!(format!("Cookie: sid={a}; theme={c}")),
                    secret: c.clone(),
                },
                Planted {
                    field: "url",
                    planted: json!(format!("https://shop.test/hosts/{ip}/status")),
                    secret: format!("/{ip}/"),
                },
                Planted {
                    field: "url",
                    planted: json!(format!("https://shop.test/from/{padded}")),
                    secret: padded.clone(),
                },
                Planted {
                    field: "release",
                    planted: json!(format!("1.2.3 {email}")),
                    secret: email.clone(),
                },
                Planted {
                    field: "environment",
                    planted: json!(format!("prod-{}", card)),
                    secret: card.to_string(),
                },
                Planted {
                    field: "service",
                    planted: json!(format!("svc {email}")),
                    secret: email.clone(),
                },
                Planted {
                    field: "tags",
                    planted: json!({"release_note": email.clone(), "build": card, "peer": ip.clone()}),
                    secret: email.clone(),
                },
                Planted {
                    field: "tags",
                    planted: json!({ email.clone(): "x" }),
                    secret: email.clone(),
                },
                Planted {
                    field: "tags",
                    planted: json!({"amount": card}),
                    secret: card.to_string(),
                },
            ]
        })
        .collect()
}

fn any_octets() -> impl proptest::strategy::Strategy<Value = [u8; 4]> {
    // Two-digit octets and more, so that the text is long enough to be searched for alone.
    proptest::array::uniform4(10u8..=255)
}

/// Luhn-valid 16-digit card numbers.
fn card_body() -> impl proptest::strategy::Strategy<Value = u64> {
    use proptest::strategy::Strategy;
    (400_000_000_000_000u64..499_999_999_999_999).prop_map(|body| {
        let digits: Vec<u32> = body
            .to_string()
            .bytes()
            .map(|b| u32::from(b - b'0'))
            .collect();
        // The check digit that makes body * 10 + check pass Luhn.
        let sum: u32 = digits
            .iter()
            .rev()
            .enumerate()
            .map(|(position, &digit)| match position % 2 {
                0 => (digit * 2) % 9 + u32::from(digit == 9) * 9,
                _ => digit,
            })
            .sum();
        body * 10 + u64::from((10 - sum % 10) % 10)
    })
}

/// Sends every planted secret, one small item each (under the size at which stored records
/// are compressed, so a byte scan sees their text), as an error, a session and a span.
fn plant_everywhere(server: &TestServer, planted: &[Vec<Planted>]) {
    let mut events = Vec::new();
    let mut sessions = Vec::new();
    let mut spans = Vec::new();
    for (case, shapes) in planted.iter().enumerate() {
        for (shape, plant) in shapes.iter().enumerate() {
            let id = format!("c{case}s{shape}");
            let mut error = json!({"level": "error", "message": "m", "url": "https://shop.test/",
                "service": "shop", "event_id": id});
            error[plant.field] = plant.planted.clone();
            events.push(error);
            let text = plant.planted.to_string();
            let mut session = json!({"id": id, "started_at": "2026-11-22T12:00:00Z",
                "url": format!("https://shop.test/?q={}", text.len())});
            if plant.field == "tags" {
                session["user_id"] = json!(plant.secret);
            } else if plant.field == "message" {
                session["referrer"] = plant.planted.clone();
            } else {
                session[plant.field] = plant.planted.clone();
            }
            sessions.push(session);
            let span_id = format!("{:016x}", case * 100 + shape + 1);
            let mut span = json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                "span_id": span_id, "name": "GET /", "start_time": "2026-11-22T12:00:00Z",
                "duration_ms": 3, "service": "shop"});
            match plant.field {
                "tags" => span["attributes"] = plant.planted.clone(),
                "message" | "url" => span["name"] = plant.planted.clone(),
                field => span[field] = plant.planted.clone(),
            }
            spans.push(span);
        }
    }
    for (path, field, items) in [
        ("/ingest/web-errors", "events", events),
        ("/ingest/web-sessions", "sessions", sessions),
        ("/ingest/spans", "spans", spans),
    ] {
        for chunk in items.chunks(50) {
            let body = json!({ field: chunk });
            let answer = accepted(&send(
                keyed(server, reqwest::Method::POST, path).json(&body),
            ));
            assert_eq!(answer["accepted"], chunk.len(), "{path}: {answer}");
        }
    }
}

/// The planted secrets found in any byte of the data dir after a clean shutdown.
fn secrets_on_disk(server: &mut TestServer, planted: &[Vec<Planted>]) -> Vec<String> {
    let status = server.terminate(Duration::from_secs(15));
    assert!(status.success(), "clean shutdown: {status:?}");
    let mut found = Vec::new();
    files(&server.data_dir, &mut found);
    let contents: Vec<Vec<u8>> = found.iter().map(|p| std::fs::read(p).unwrap()).collect();
    planted
        .iter()
        .flatten()
        .filter(|plant| contents.iter().any(|bytes| contains(bytes, &plant.secret)))
        .map(|plant| plant.secret.clone())
        .collect()
}

#[test]
fn generated_secrets_of_every_shape_reach_no_byte_of_the_data_dir() {
    let planted = generate_secrets(6);
    let mut server = ingest_server(&[]);
    plant_everywhere(&server, &planted);
    let key = owner_key(&server);
    // Releases keep their dotted versions (source maps are matched on them).
    let events = all_errors(&server, &key);
    assert!(
        events
            .iter()
            .any(|event| event["release"] == "1.2.3 [email]")
    );
    let survived = secrets_on_disk(&mut server, &planted);
    assert!(survived.is_empty(), "survived scrubbing: {survived:?}");

    // The scan is honest: without scrubbing, every planted secret is found.
    let mut control = ingest_server(&[("WEB_INGEST_SCRUB_PII", "false")]);
    plant_everywhere(&control, &planted);
    let seen = secrets_on_disk(&mut control, &planted);
    let every: std::collections::HashSet<&String> = planted
        .iter()
        .flatten()
        .map(|plant| &plant.secret)
        .collect();
    let seen: std::collections::HashSet<&String> = seen.iter().collect();
    assert_eq!(seen, every, "the byte scan missed unscrubbed secrets");
}
