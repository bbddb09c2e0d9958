//! The ingest gate seen from a client: every limit at its edge, the order of checks, keys and
//! key rotation, `?key=` beacons, media types and encodings, methods, CORS, hostile bodies,
//! and every status code of CONTRACT section 3 but the full disk (in `ingest_durability`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{TestServer, http};
use crate::http_basics::send;
use crate::ingest_support::*;

const ROUTES: [&str; 6] = [
    "/ingest/web-errors",
    "/ingest/web-sessions",
    "/ingest/spans",
    "/ingest/sourcemaps",
    "/ingest/ab-config",
    "/ingest/ab-uniques",
];

/// `{"events":[event…]}` padded with trailing spaces (valid JSON) to exactly `size` bytes.
fn body_of_size(events: usize, size: usize) -> Vec<u8> {
    let items: Vec<Value> = (0..events).map(|i| event(&format!("edge {i}"))).collect();
    let mut body = json!({"events": items}).to_string().into_bytes();
    assert!(body.len() <= size, "{} > {size}", body.len());
    body.resize(size, b' ');
    body
}

#[test]
fn limits_hold_exactly_at_their_edges() {
    let server = ingest_server(&[
        ("WEB_INGEST_MAX_BODY_BYTES", "2048"),
        ("WEB_INGEST_MAX_EVENTS", "3"),
    ]);
    let json = "application/json";
    let path = "/ingest/web-errors";
    let reply = post_bytes(&server, path, json, body_of_size(1, 2048));
    assert_eq!(
        accepted(&reply)["accepted"],
        1,
        "exactly the maximum body passes"
    );
    post_bytes(&server, path, json, body_of_size(1, 2049)).problem(413, "body_too_large");

    // Gzip: the limit applies to the decoded bytes too.
    let reply = send(
        keyed(&server, Method::POST, path)
            .header("content-type", json)
            .header("content-encoding", "gzip")
            .body(gzip(&body_of_size(1, 2048))),
    );
    assert_eq!(accepted(&reply)["accepted"], 1);
    let reply = send(
        keyed(&server, Method::POST, path)
            .header("content-type", json)
            .header("content-encoding", "gzip")
            .body(gzip(&body_of_size(1, 2049))),
    );
    reply.problem(413, "body_too_large");

    let reply = post_bytes(&server, path, json, body_of_size(3, 2048));
    assert_eq!(
        accepted(&reply)["accepted"],
        3,
        "exactly the maximum count passes"
    );
    post_bytes(&server, path, json, body_of_size(4, 2048)).problem(413, "too_many_events");

    // Only the three accepted requests stored anything.
    let key = owner_key(&server);
    assert_eq!(all_errors(&server, &key).len(), 5);
}

#[test]
fn the_rate_limit_is_per_address_with_retry_after_and_comes_first() {
    let server = ingest_server(&[
        ("WEB_INGEST_RATE_PER_MIN", "5"),
        ("TRUSTED_PROXIES", "127.0.0.1"),
        ("WEB_INGEST_MAX_BODY_BYTES", "1024"),
    ]);
    let from = |address: &str| {
        keyed(&server, Method::POST, "/ingest/web-errors")
            .header("x-forwarded-for", address)
            .header("content-type", "application/json")
    };
    let body = json!({"events": [event("rate")]}).to_string();
    for _ in 0..5 {
        accepted(&send(from("198.51.100.7").body(body.clone())));
    }
    let refused = send(from("198.51.100.7").body(body.clone()));
    refused.problem(429, "rate_limited");
    let wait: u64 = refused
        .header("retry-after")
        .parse()
        .expect("Retry-After seconds");
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(refused.header("access-control-allow-origin"), "*");
    // Rate before size and key: a huge keyless body from that address is still a 429.
    let huge = http()
        .post(server.url("/ingest/web-errors"))
        .header("x-forwarded-for", "198.51.100.7")
        .body(vec![b'x'; 4096]);
    send(huge).problem(429, "rate_limited");
    accepted(&send(from("198.51.100.8").body(body)));
}

#[test]
fn keys_rotation_beacons_media_types_and_methods() {
    let server = TestServer::builder()
        .env("WEB_INGEST_KEY", "first-key-000000001")
        .env(
            "WEB_INGEST_KEYS",
            "second-key-00000002, third-key-000000003",
        )
        .start();
    add_owner(&server, OWNER);
    let body = json!({"events": [event("rotation")]}).to_string();
    let with_key = |key: &str| {
        http()
            .post(server.url("/ingest/web-errors"))
            .header("content-type", "application/json")
            .header("x-lookout-key", key)
            .body(body.clone())
    };
    for key in [
        "first-key-000000001",
        "second-key-00000002",
        "third-key-000000003",
    ] {
        accepted(&send(with_key(key)));
    }
    send(with_key("fourth-key-00000004")).problem(401, "invalid_ingest_key");
    let keyless = http()
        .post(server.url("/ingest/web-errors"))
        .header("content-type", "application/json")
        .body(body.clone());
    send(keyless).problem(401, "invalid_ingest_key");

    // navigator.sendBeacon: no custom headers, text/plain, the key in the query.
    let beacon = http()
        .post(server.url("/ingest/web-errors?key=second-key-00000002"))
        .header("content-type", "text/plain;charset=UTF-8")
        .body(body.clone());
    assert_eq!(accepted(&send(beacon))["accepted"], 1);
    let beacon = http()
        .post(server.url("/ingest/web-errors?key=wrong-key-0000000000"))
        .header("content-type", "text/plain")
        .body(body.clone());
    send(beacon).problem(401, "invalid_ingest_key");

    let typed = |content_type: &str, encoding: Option<&str>| {
        let mut request = http()
            .post(server.url("/ingest/web-errors"))
            .header("x-lookout-key", "first-key-000000001")
            .header("content-type", content_type)
            .body(body.clone());
        if let Some(encoding) = encoding {
            request = request.header("content-encoding", encoding);
        }
        send(request)
    };
    typed("application/x-www-form-urlencoded", None).problem(415, "unsupported_media_type");
    typed("application/json", Some("br")).problem(415, "unsupported_media_type");
    typed("application/json", Some("gzip")).problem(400, "invalid_payload");

    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let request = http().request(method.clone(), server.url("/ingest/web-errors"));
        let reply = send(request.header("x-lookout-key", "first-key-000000001"));
        reply.problem(405, "method_not_allowed");
        assert_eq!(reply.header("access-control-allow-origin"), "*", "{method}");
    }
    let post_config = http().post(server.url("/ingest/ab-config"));
    send(post_config).problem(405, "method_not_allowed");

    // Bodies that are not the documented shape, and per-item rejections.
    let raw = |text: &str| {
        let request = http()
            .post(server.url("/ingest/web-errors"))
            .header("x-lookout-key", "first-key-000000001")
            .header("content-type", "application/json");
        send(request.body(text.to_string()))
    };
    raw("{\"events\": [").problem(400, "invalid_payload");
    raw("{\"events\": {}}").problem(400, "invalid_payload");
    raw("[]").problem(400, "invalid_payload");
    let mixed = json!({"events": [event("ok"), {"level": "fatal"}, 7, event("ok too")]});
    let result = accepted(&raw(&mixed.to_string()));
    assert_eq!(result["accepted"], 2);
    let indexes: Vec<u64> = result["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
            r["index"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(indexes, [1, 2]);
}

#[test]
fn checks_run_in_the_contract_order() {
    let server = ingest_server(&[
        ("WEB_INGEST_MAX_BODY_BYTES", "1024"),
        ("WEB_INGEST_MAX_EVENTS", "2"),
    ]);
    let keyless = |body: Vec<u8>| {
        send(
            http()
                .post(server.url("/ingest/web-errors"))
                .header("content-type", "application/json")
                .body(body),
        )
    };
    keyless(vec![b' '; 1025]).problem(413, "body_too_large");
    keyless(b"not json".to_vec()).problem(401, "invalid_ingest_key");
    let three_bad = json!({"events": [{}, {}, {}]}).to_string().into_bytes();
    post_bytes(&server, "/ingest/web-errors", "application/json", three_bad)
        .problem(413, "too_many_events");
    let broken = b"{\"events\": [{}, {}, {}".to_vec();
    post_bytes(&server, "/ingest/web-errors", "application/json", broken)
        .problem(400, "invalid_payload");
}

#[test]
fn no_key_configured_is_401_and_no_organisation_is_503() {
    let unconfigured = TestServer::start();
    add_owner(&unconfigured, OWNER);
    let body = json!({"events": [event("x")]});
    post(&unconfigured, "/ingest/web-errors", &body).problem(401, "invalid_ingest_key");
    drop(unconfigured);

    let no_org = TestServer::builder().env("WEB_INGEST_KEY", KEY).start();
    let reply = post(&no_org, "/ingest/web-errors", &body);
    reply.problem(503, "ingest_unavailable");
    assert!(!reply.header("retry-after").is_empty());
    add_owner(&no_org, OWNER);
    accepted(&post(&no_org, "/ingest/web-errors", &body));
}

#[test]
fn cors_on_preflight_and_on_every_response() {
    let server = ingest_server(&[]);
    for route in ROUTES {
        let preflight = http()
            .request(Method::OPTIONS, server.url(route))
            .header("origin", "https://app.example.com")
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type, x-lookout-key",
            );
        let reply = send(preflight);
        assert_eq!(reply.status, 204, "{route}");
        assert_eq!(reply.header("access-control-allow-origin"), "*", "{route}");
        assert_eq!(
            reply.header("access-control-allow-methods"),
            "GET, POST, OPTIONS"
        );
        assert_eq!(
            reply.header("access-control-allow-headers"),
            "Content-Type, X-Lookout-Key"
        );
        assert_eq!(reply.header("access-control-max-age"), "86400");
    }
    let ok = post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [event("cors")]}),
    );
    assert_eq!(
        (ok.status, ok.header("access-control-allow-origin")),
        (202, "*")
    );
    let config = send(keyed(&server, Method::GET, "/ingest/ab-config"));
    assert_eq!(
        (config.status, config.header("access-control-allow-origin")),
        (200, "*")
    );
    let unauthorised = send(http().get(server.url("/ingest/ab-config")));
    unauthorised.problem(401, "invalid_ingest_key");
    assert_eq!(unauthorised.header("access-control-allow-origin"), "*");
    drop(server);

    let listed = ingest_server(&[(
        "WEB_INGEST_ALLOWED_ORIGINS",
        "https://app.example.com,http://localhost:3000",
    )]);
    let from = |origin: &str| {
        let request = keyed(&listed, Method::GET, "/ingest/ab-config").header("origin", origin);
        send(request)
    };
    let allowed = from("http://localhost:3000");
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        "http://localhost:3000"
    );
    assert!(
        allowed.header("vary").contains("Origin"),
        "{:?}",
        allowed.headers
    );
    let other = from("https://evil.example");
    other.problem(403, "forbidden_origin");
    assert_eq!(other.header("access-control-allow-origin"), "");
    assert!(other.header("vary").contains("Origin"));
    let preflight = http()
        .request(Method::OPTIONS, listed.url("/ingest/spans"))
        .header("origin", "https://app.example.com");
    let reply = send(preflight);
    assert_eq!(
        (reply.status, reply.header("access-control-allow-origin")),
        (204, "https://app.example.com")
    );
}

#[test]
fn a_listed_origin_or_none_may_send_and_every_other_origin_is_refused() {
    let server = ingest_server(&[("WEB_INGEST_ALLOWED_ORIGINS", "https://app.example.com")]);
    let events = json!({"events": [event("from a page")]});
    let map = json!({"version": 3, "sources": ["a.ts"], "names": [], "mappings": "AAAA"});
    let bodies = [
        ("/ingest/web-errors", events.clone()),
        (
            "/ingest/web-sessions",
            json!({"sessions": [{"id": "s1", "started_at": 1_795_348_800_000u64, "url": "https://app.example.com/"}]}),
        ),
        ("/ingest/spans", json!({"spans": []})),
        (
            "/ingest/sourcemaps",
            json!({"release": "1", "file": "/a.js", "sourcemap": map}),
        ),
        ("/ingest/ab-uniques", json!({"exposures": []})),
    ];
    for origin in [
        "https://evil.example",
        "null",
        "https://app.example.com.evil.example",
    ] {
        for (path, body) in &bodies {
            let request = keyed(&server, Method::POST, path)
                .header("origin", origin)
                .header("content-type", "application/json")
                .body(body.to_string());
            let reply = send(request);
            reply.problem(403, "forbidden_origin");
            assert_eq!(
                reply.header("access-control-allow-origin"),
                "",
                "{origin} {path}"
            );
        }
        let config = keyed(&server, Method::GET, "/ingest/ab-config").header("origin", origin);
        send(config).problem(403, "forbidden_origin");
        // The preflight grants nothing, so a browser does not even send the request.
        let preflight = http()
            .request(Method::OPTIONS, server.url("/ingest/web-errors"))
            .header("origin", origin)
            .header("access-control-request-method", "POST");
        let reply = send(preflight);
        assert_eq!(reply.status, 204);
        assert_eq!(reply.header("access-control-allow-origin"), "", "{origin}");
    }
    let key = owner_key(&server);
    assert!(all_errors(&server, &key).is_empty(), "nothing stored");

    // The listed origin, and senders without Origin (servers, curl), keep working.
    let listed = keyed(&server, Method::POST, "/ingest/web-errors")
        .header("origin", "https://app.example.com")
        .header("content-type", "application/json")
        .body(events.to_string());
    assert_eq!(accepted(&send(listed))["accepted"], 1);
    assert_eq!(
        accepted(&post(&server, "/ingest/web-errors", &events))["accepted"],
        1
    );
    assert_eq!(all_errors(&server, &key).len(), 2);
}

#[test]
fn hostile_bodies_are_refused_and_the_server_stays_up() {
    let server = ingest_server(&[("WEB_INGEST_MAX_BODY_BYTES", "1048576")]);
    let path = "/ingest/web-errors";
    let json = "application/json";

    // 256 MiB of spaces inside a valid document, gzipped to about 256 KiB.
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut bomb, b"{\"events\":[").unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..256 {
        std::io::Write::write_all(&mut bomb, &spaces).unwrap();
    }
    let bomb = bomb.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{} bytes compressed", bomb.len());
    let reply = send(
        keyed(&server, Method::POST, path)
            .header("content-type", json)
            .header("content-encoding", "gzip")
            .body(bomb),
    );
    reply.problem(413, "body_too_large");

    let deep = format!(
        "{{\"events\":[{}{}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    post_bytes(&server, path, json, deep.into_bytes()).problem(400, "invalid_payload");
    for body in [
        b"{\"events\":[{\"level\":\"error\",\"message\":\"\xff\xfe\",\"url\":\"u\"}]}".to_vec(),
        b"{\"events\":[{\"level\":\"error\",\"message\":\"\\ud800\",\"url\":\"u\"}]}".to_vec(),
        b"{\"events\":[{\"level\":\"error\",\"message\":\"m\",\"url\":\"u\",\"timestamp\":1e400}]}"
            .to_vec(),
    ] {
        post_bytes(&server, path, json, body).problem(400, "invalid_payload");
    }

    // 50,000 keys, under the byte cap: stored as tags of one event.
    let tags: serde_json::Map<String, Value> =
        (0..50_000).map(|i| (format!("k{i}"), json!(1))).collect();
    let mut item = event("many keys");
    item["tags"] = Value::Object(tags);
    let body = json!({"events": [item]}).to_string();
    assert!(body.len() < 1 << 20);
    assert_eq!(
        accepted(&post_bytes(&server, path, json, body.into_bytes()))["accepted"],
        1
    );
    // Wrong types are per-item rejections.
    let wrong = json!({"events": [{"level": ["error"], "message": {}, "url": 5}, "text", null]});
    let result = accepted(&post(&server, path, &wrong));
    assert_eq!(
        (
            result["accepted"].as_u64(),
            result["rejected"].as_array().map(Vec::len)
        ),
        (Some(0), Some(3))
    );

    assert_eq!(send(http().get(server.url("/healthz"))).status, 200);
    accepted(&post(
        &server,
        path,
        &json!({"events": [event("still alive")]}),
    ));
}
