//! Routes that write without a signed-in caller store a bounded number of bytes per request,
//! whatever the body: sign-in, the second factor, setup, invitations, the inbound webhooks,
//! every ingest route and the agent websocket, each with hostile bodies (the largest each limit
//! lets through, long e-mails and names, many distinct keys, text that does not compress),
//! with a wrong credential and, where there is one, a valid one.
//!
//! What is measured, while the server is stopped, before and after each route's requests: the
//! records (the compressed payload of a `lookout backup`, which holds the live rows of the
//! database and none of the free pages its file keeps) plus the files of the search index. The
//! database file's own size says little: it grows in steps and keeps freed pages for later
//! writes. A request without a valid credential may store nothing beyond noise; one with a
//! valid credential stores what it brought, within a small factor of its body. The bodies are
//! random letters, which zstd shrinks to about three quarters.

use std::path::Path;
use std::time::Duration;

use reqwest::blocking::RequestBuilder;
use serde_json::{Value, json};

use crate::alerting_support::inbound_secret;
use crate::auth_support::{add_user, enrol, login_token, sign_in};
use crate::harness::{TestServer, http, run_cli, text};
use crate::http_basics::Reply;
use crate::ingest_support::KEY;

/// Growth allowed per request that carries no valid credential or is refused: nothing is
/// stored; this is room for compression noise across a restart.
const NOTHING: u64 = 64;
/// Growth allowed per request that carries a valid credential: what it brought, within a
/// factor of 4 of the largest body its route accepts (indexes, the search index, history).
const FOUR_BODIES_API: u64 = 4 * API_BODY as u64;
const FOUR_BODIES_INGEST: u64 = 4 * INGEST_BODY as u64;
/// Body limit of `/ingest/*` (WEB_INGEST_MAX_BODY_BYTES default) and of `/api`.
const INGEST_BODY: usize = 256 * 1024;
const API_BODY: usize = 1024 * 1024;

/// Text of `len` bytes that does not compress (xorshift over a 64-letter alphabet), different
/// for each `seed`.
fn noise(seed: u64, len: usize) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            LETTERS[(state % 64) as usize] as char
        })
        .collect()
}

/// Bytes the stopped server's data dir holds: its records and its search index.
fn stored_bytes(data_dir: &Path) -> u64 {
    let backup = data_dir.with_extension("measure.lookout-backup");
    let _ = std::fs::remove_file(&backup);
    let output = run_cli(
        data_dir,
        &[],
        &["backup", "--out", backup.to_str().unwrap()],
        "",
    );
    assert!(output.status.success(), "backup: {}", text(&output.stderr));
    let file = std::fs::read(&backup).expect("backup file");
    // The footer's first field is the payload's length (format.rs).
    let footer = &file[file.len() - 64..];
    let payload = u64::from_be_bytes(footer[..8].try_into().unwrap());
    std::fs::remove_file(&backup).unwrap();
    payload + file_bytes(&data_dir.join("search"))
}

/// Total apparent size of the files under `dir`.
fn file_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map_while(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => file_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Builds the n-th request of a case.
type RequestOf = dyn Fn(&TestServer, u64) -> RequestBuilder;

/// One route's hostile requests and how much each may store.
struct Case {
    name: String,
    requests: u64,
    /// Most bytes the data dir may grow per request.
    bound_per_request: u64,
    /// The n-th request.
    request: Box<RequestOf>,
}

impl Case {
    fn new(
        name: impl Into<String>,
        requests: u64,
        bound_per_request: u64,
        request: impl Fn(&TestServer, u64) -> RequestBuilder + 'static,
    ) -> Case {
        Case {
            name: name.into(),
            requests,
            bound_per_request,
            request: Box::new(request),
        }
    }
}

/// A JSON request to `path`.
fn post_json(server: &TestServer, path: &str, body: &Value) -> RequestBuilder {
    http()
        .post(server.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// An error-event batch close to the ingest body limit: long distinct messages and many
/// distinct tag keys.
fn hostile_events(n: u64) -> Value {
    let events: Vec<Value> = (0..8)
        .map(|i| {
            let tags: serde_json::Map<String, Value> = (0..50)
                .map(|t| (noise(n * 1000 + i * 100 + t, 40), json!(noise(t, 40))))
                .collect();
            json!({"level": "error", "message": noise(n * 10 + i, 24 * 1024),
                "url": "https://app.example.com/", "tags": tags,
                "fingerprint": [noise(n * 10 + i + 7, 64)]})
        })
        .collect();
    json!({"events": events})
}

/// The experiment the exposures name (exposures of unknown experiments are not stored).
const EXPERIMENT: &str = "hostile-visitors";

/// Cases for the ingest routes: each with the key, without it and with a wrong one.
fn ingest_cases(cases: &mut Vec<Case>) {
    type Body = fn(u64) -> Value;
    let bodies: [(&'static str, Body); 4] = [
        ("/ingest/web-errors", hostile_events),
        ("/ingest/web-sessions", |n| {
            let sessions: Vec<Value> = (0..40)
                .map(|i| {
                    json!({"id": noise(n * 100 + i, 100), "started_at": 1,
                    "url": format!("https://app.example.com/{}", noise(i, 5000)),
                    "user_agent": noise(n + i, 1000)})
                })
                .collect();
            json!({"sessions": sessions})
        }),
        ("/ingest/spans", |n| {
            let spans: Vec<Value> = (0..40)
                .map(|i| json!({"trace_id": format!("{:032x}", n * 1000 + i + 1),
                    "span_id": format!("{:016x}", n * 1000 + i + 1), "name": noise(n * 100 + i, 2000),
                    "start_time": 1, "duration_ms": 5, "service": noise(i, 200),
                    "attributes": {noise(n + i, 100): noise(i, 3000)}}))
                .collect();
            json!({"spans": spans})
        }),
        ("/ingest/ab-uniques", |n| {
            let exposures: Vec<Value> = (0..100)
                .map(|i| {
                    let variant = if i % 2 == 0 { "a" } else { "b" };
                    json!({"experiment": EXPERIMENT, "variant": variant,
                        "visitor_id": noise(n * 1000 + i, 200)})
                })
                .collect();
            json!({"exposures": exposures})
        }),
    ];
    for (path, body) in bodies {
        cases.push(Case::new(path, 10, FOUR_BODIES_INGEST, move |server, n| {
            post_json(server, path, &body(n)).header("x-lookout-key", KEY)
        }));
        cases.push(Case::new(path, 10, NOTHING, move |server, n| {
            post_json(server, path, &body(n))
        }));
        cases.push(Case::new(path, 10, NOTHING, move |server, n| {
            post_json(server, path, &body(n)).header("x-lookout-key", noise(n, 40))
        }));
    }
    let map = |n: u64| {
        json!({"release": noise(n, 200), "file": format!("https://app.example.com/{}.js", noise(n, 200)),
            "sourcemap": json!({"version": 3, "sources": [noise(n, 100)], "names": [],
                "mappings": "AAAA", "sourcesContent": [noise(n + 1, 1024 * 1024)]}).to_string()})
    };
    cases.push(Case::new(
        "/ingest/sourcemaps",
        5,
        FOUR_BODIES_API,
        move |server, n| {
            post_json(server, "/ingest/sourcemaps", &map(n)).header("x-lookout-key", KEY)
        },
    ));
    cases.push(Case::new(
        "/ingest/sourcemaps",
        5,
        NOTHING,
        move |server, n| post_json(server, "/ingest/sourcemaps", &map(n)),
    ));
}

/// Cases for the inbound webhooks: each with its valid token and with a wrong one.
fn inbound_cases(cases: &mut Vec<Case>, tokens: [String; 3]) {
    type Body = fn(u64) -> Value;
    let [jenkins, deployments, alerts] = tokens;
    // Every field at the longest its route accepts, and each request a new record.
    let routes: [(&'static str, String, Body); 4] = [
        ("/api/v1/jenkins/notify", jenkins, |n| {
            json!({"name": noise(n, 300), "build": {"phase": "STARTED", "number": n,
                "status": noise(n, 50), "full_url": noise(n + 1, 2000),
                "scm": {"commit": noise(n + 2, 200), "branch": noise(n + 3, 200)}}})
        }),
        ("/api/v1/deployments/webhook", deployments, |n| {
            json!({"service": noise(n, 200), "environment": noise(n + 1, 100),
                "version": noise(n + 2, 200), "status": "started", "commit": noise(n + 5, 200),
                "external_id": noise(n + 3, 200), "url": noise(n + 4, 2000)})
        }),
        ("/api/v1/alerts/webhook", alerts.clone(), |n| {
            json!({"title": noise(n, 300), "body": noise(n + 1, 10_000), "severity": "critical",
                "status": "firing", "service": noise(n + 3, 200), "environment": noise(n + 4, 100),
                "dedup_key": noise(n + 2, 200), "url": noise(n + 5, 2000)})
        }),
        // Alertmanager: as many alerts as one notification may carry, with labels as large
        // as the body limit leaves room for.
        ("/api/v1/alerts/webhook (Alertmanager)", alerts, |n| {
            let alerts: Vec<Value> = (0..500)
                .map(|i| {
                    json!({"status": "firing", "fingerprint": noise(n * 1000 + i, 32),
                    "labels": {"alertname": noise(i, 300), "extra": noise(n + i, 1300)},
                    "annotations": {"description": noise(i + 1, 100)},
                    "generatorURL": noise(i + 2, 100)})
                })
                .collect();
            json!({"version": "4", "status": "firing", "alerts": alerts})
        }),
    ];
    for (name, token, body) in routes {
        let path = name.split(' ').next().unwrap();
        cases.push(Case::new(name, 10, FOUR_BODIES_API, move |server, n| {
            post_json(server, path, &body(n)).header("x-lookout-token", &token)
        }));
        cases.push(Case::new(name, 10, NOTHING, move |server, n| {
            post_json(server, path, &body(n)).header("x-lookout-token", noise(n, 60))
        }));
    }
}

/// Ten sign-ins with a wrong password and the e-mail `email(n)`.
fn login_case(name: &'static str, bound_per_request: u64, email: fn(u64) -> String) -> Case {
    let body = move |n| json!({"email": email(n), "password": "wrong"});
    let name = format!("/api/v1/auth/login {name}");
    Case::new(name, 10, bound_per_request, move |server, n| {
        post_json(server, "/api/v1/auth/login", &body(n))
    })
}

/// Cases for signing in, the second factor, setup, invitations and the agent websocket.
fn account_cases(cases: &mut Vec<Case>, two_factor_token: String) {
    // Sign-in with an e-mail as long as the body limit allows, one that is not an address,
    // and addresses that parse, each new (their lockout state and audit entry are small).
    let long = |n| noise(n, API_BODY - 200);
    cases.push(login_case("(1 MiB e-mail)", NOTHING, long));
    cases.push(login_case("(300-byte non-address)", NOTHING, |n| {
        noise(n, 300)
    }));
    let new_address = |n| format!("{}@{}.example.com", noise(n, 60), noise(n + 1, 150));
    cases.push(login_case("(new addresses)", 4096, new_address));
    cases.push(Case::new(
        "/api/v1/auth/2fa/complete (forged token)",
        10,
        NOTHING,
        |server, n| {
            post_json(
                server,
                "/api/v1/auth/2fa/complete",
                &json!({"login_token": noise(n, API_BODY / 2), "code": noise(n + 1, 1000)}),
            )
        },
    ));
    cases.push(Case::new(
        "/api/v1/auth/2fa/complete (wrong codes)",
        10,
        4096,
        move |server, n| {
            post_json(
                server,
                "/api/v1/auth/2fa/complete",
                &json!({"login_token": two_factor_token, "code": format!("{:06}", n)}),
            )
        },
    ));
    cases.push(Case::new(
        "/api/v1/setup (after setup)",
        10,
        NOTHING,
        |server, n| {
            post_json(
                server,
                "/api/v1/setup",
                &json!({"token": noise(n, 1000),
            "email": noise(n + 1, 300_000), "password": noise(n + 2, 300_000),
            "org_name": noise(n + 3, 300_000)}),
            )
        },
    ));
    cases.push(Case::new(
        "/api/v1/auth/invitations/accept",
        10,
        NOTHING,
        |server, n| {
            post_json(
                server,
                "/api/v1/auth/invitations/accept",
                &json!({"token": noise(n, 400_000), "password": noise(n + 1, 400_000)}),
            )
        },
    ));
    cases.push(Case::new(
        "/api/v1/agent/connect (wrong token)",
        10,
        NOTHING,
        |server, n| {
            http()
                .get(server.url("/api/v1/agent/connect"))
                .header("connection", "upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-version", "13")
                .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
                .header("authorization", format!("Bearer {}", noise(n, 4000)))
        },
    ));
}

#[test]
fn writes_without_a_signed_in_caller_store_a_bounded_number_of_bytes_per_request() {
    let mut server = TestServer::builder()
        .env("WEB_INGEST_KEY", KEY)
        .env("WEB_INGEST_RATE_PER_MIN", "1000000")
        .env("API_RATE_PER_MIN", "1000000")
        .start();
    add_user(&server, "owner@example.com", "owner");
    let owner = sign_in(&server, "owner@example.com");
    let tokens =
        ["jenkins", "deployments", "alerts"].map(|kind| inbound_secret(&server, &owner, kind));
    add_user(&server, "second@example.com", "member");
    let member = sign_in(&server, "second@example.com");
    enrol(&server, &member);
    let two_factor_token = login_token(&server, "second@example.com");
    let experiment = json!({"key": EXPERIMENT, "active": true,
        "variants": [{"key": "a", "weight": 1}, {"key": "b", "weight": 1}]});
    let created = owner.post(&server, "/api/v1/experiments", &experiment);
    assert_eq!(created.status, 201, "{}", text(&created.body));

    let mut cases = Vec::new();
    account_cases(&mut cases, two_factor_token);
    inbound_cases(&mut cases, tokens);
    ingest_cases(&mut cases);

    let mut report = Vec::new();
    let mut over = Vec::new();
    // Sizes are read while the server is stopped: everything it wrote is in the files.
    server.terminate(Duration::from_secs(15));
    for case in &cases {
        let before = stored_bytes(&server.data_dir);
        server.restart();
        let (mut sent, mut statuses) = (0_u64, std::collections::BTreeMap::new());
        for n in 0..case.requests {
            let request = (case.request)(&server, n + 1);
            let body_len = request
                .try_clone()
                .and_then(|r| r.build().ok())
                .and_then(|r| r.body().and_then(|b| b.as_bytes()).map(<[u8]>::len))
                .unwrap_or(0);
            sent += body_len as u64;
            // A server that refuses a declared length before reading may close the connection
            // while a large body is still being written: the client sees a broken pipe instead
            // of the 413, and nothing was read. That counts as a refusal (status 0).
            let reply = match request.send() {
                Ok(response) => Reply::from(response),
                Err(error) if error.is_request() && body_len > 8 * 1024 => {
                    *statuses.entry(0).or_insert(0) += 1;
                    assert!(
                        case.bound_per_request < FOUR_BODIES_INGEST,
                        "{}: a credentialed request was cut off: {error}",
                        case.name
                    );
                    continue;
                }
                Err(error) => panic!("{}: send request: {error}", case.name),
            };
            *statuses.entry(reply.status).or_insert(0) += 1;
            // A request with a valid credential must be taken, or the case proves nothing.
            let taken = (200..300).contains(&reply.status);
            if reply.status >= 500 || (case.bound_per_request >= FOUR_BODIES_INGEST && !taken) {
                panic!("{}: {} {}", case.name, reply.status, text(&reply.body));
            }
        }
        server.terminate(Duration::from_secs(15));
        let after = stored_bytes(&server.data_dir);
        let per_request = after.saturating_sub(before) / case.requests;
        let line = format!(
            "{:<48} {:>3} requests, {:>8} body bytes each, statuses {:?}: {:>8} stored bytes per request (bound {})",
            case.name,
            case.requests,
            sent / case.requests,
            statuses,
            per_request,
            case.bound_per_request
        );
        if per_request > case.bound_per_request {
            over.push(line.clone());
        }
        report.push(line);
    }
    eprintln!("{}", report.join("\n"));
    assert!(over.is_empty(), "over their bound:\n{}", over.join("\n"));
}
