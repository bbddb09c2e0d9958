//! What ingest stores, read back through the `/api/v1` read APIs with an owner's API key:
//! error events (stored once per `event_id`), the services registry, sessions (upsert, filters,
//! their errors), traces and span percentiles, source maps, ab-config and exposure uniques.

use reqwest::Method;
use serde_json::{Value, json};

use crate::http_basics::send;
use crate::ingest_support::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[test]
fn errors_are_stored_once_per_id_and_feed_the_services_registry() {
    let server = ingest_server(&[]);
    let mut first = event("TypeError: x is undefined");
    first["event_id"] = json!("evt-client-1");
    first["service"] = json!("checkout");
    first["environment"] = json!("production");
    first["frames"] = json!([{"file": "https://app.example.com/app.js", "line": 10, "column": 5}]);
    first["tags"] = json!({"plan": "pro"});
    let mut warning = event("slow");
    warning["level"] = json!("warning");
    warning["id"] = json!("evt-client-2");
    warning["service"] = json!("checkout");
    warning["environment"] = json!("staging");
    let body = json!({"events": [first.clone(), warning]});
    assert_eq!(
        accepted(&post(&server, "/ingest/web-errors", &body))["accepted"],
        2
    );
    // Sent again (a retrying SDK): acknowledged again, stored once.
    let again = json!({"events": [first.clone(), first]});
    assert_eq!(
        accepted(&post(&server, "/ingest/web-errors", &again))["accepted"],
        2
    );
    let last = json!({"events": [event("third")]});
    accepted(&post(&server, "/ingest/web-errors", &last));

    let key = owner_key(&server);
    let events = all_errors(&server, &key);
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["third", "slow", "TypeError: x is undefined"],
        "newest first"
    );
    let stored = &events[2];
    assert!(stored["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(stored["event_id"], "evt-client-1");
    assert_eq!(stored["frames"][0]["line"], 10);
    assert_eq!(stored["tags"]["plan"], "pro");
    assert_eq!(stored["service"], "checkout");

    let page = read(&server, &key, "/api/v1/errors?limit=2");
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let rest = read(
        &server,
        &key,
        &format!("/api/v1/errors?limit=2&cursor={cursor}"),
    );
    assert_eq!(rest["items"][0]["message"], "TypeError: x is undefined");

    let services = read(&server, &key, "/api/v1/services");
    let checkout = &services["items"][0];
    assert_eq!(checkout["name"], "checkout");
    assert_eq!(checkout["environments"], json!(["production", "staging"]));
    assert_eq!(checkout["errors_24h"], 1, "one error, one warning");
}

#[test]
fn breadcrumbs_keep_the_newest_hundred_scrubbed_and_must_be_objects() {
    let server = ingest_server(&[]);
    let mut trail = event("with a trail");
    let crumbs: Vec<Value> = (0..150)
        .map(|n| json!({"type": "click", "message": format!("button#b{n}"), "timestamp": n}))
        .collect();
    trail["breadcrumbs"] = Value::Array(crumbs);
    trail["breadcrumbs"][149]["message"] = json!("GET /account?email=ada@example.com 500");
    let mut wrong = event("bad trail");
    wrong["breadcrumbs"] = json!(["clicked"]);
    let answer = accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [trail, wrong]}),
    ));
    assert_eq!(answer["accepted"], 1);
    assert_eq!(answer["rejected"][0]["index"], 1);
    assert!(
        answer["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("breadcrumbs"),
        "{answer}"
    );

    let key = owner_key(&server);
    let events = all_errors(&server, &key);
    assert_eq!(events.len(), 1);
    let kept = events[0]["breadcrumbs"].as_array().expect("breadcrumbs");
    assert_eq!(kept.len(), 100, "the newest hundred");
    assert_eq!(kept[0]["message"], "button#b50");
    let last = kept[99]["message"].as_str().unwrap();
    assert!(!last.contains("ada@example.com"), "scrubbed: {last}");
    assert!(last.starts_with("GET /account"), "{last}");
}

#[test]
fn sessions_upsert_filter_and_list_their_errors() {
    let server = ingest_server(&[]);
    let session = |id: &str, started: &str, service: &str| {
        json!({"id": id, "started_at": started, "url": "https://app.example.com/",
            "service": service, "environment": "production", "page_views": 1})
    };
    let body = json!({"sessions": [
        session("s-1", "2026-11-22T10:00:00.000Z", "web"),
        session("s-2", "2026-11-22T11:00:00.000Z", "web"),
        session("s-3", "2026-11-22T12:00:00.000Z", "admin"),
        {"id": "bad/id", "started_at": 1, "url": "u"},
    ]});
    let result = accepted(&post(&server, "/ingest/web-sessions", &body));
    assert_eq!(
        (
            result["accepted"].as_u64(),
            result["rejected"][0]["index"].as_u64()
        ),
        (Some(3), Some(3))
    );
    let update = json!({"sessions": [{"id": "s-1", "started_at": "2026-11-22T10:00:00.000Z",
        "ended_at": "2026-11-22T10:30:00.000Z", "url": "https://app.example.com/done", "page_views": 7}]});
    accepted(&post(&server, "/ingest/web-sessions", &update));
    let mut error = event("in session");
    error["session_id"] = json!("s-1");
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [error, event("elsewhere")]}),
    ));

    let key = owner_key(&server);
    let ids = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&read(&server, &key, "/api/v1/sessions")),
        ["s-3", "s-2", "s-1"]
    );
    assert_eq!(
        ids(&read(&server, &key, "/api/v1/sessions?service=web")),
        ["s-2", "s-1"]
    );
    let window = "/api/v1/sessions?from=2026-11-22T10:30:00Z&to=2026-11-22T12:00:00Z";
    assert_eq!(ids(&read(&server, &key, window)), ["s-2"]);
    assert_eq!(
        ids(&read(&server, &key, "/api/v1/sessions?environment=staging")),
        Vec::<String>::new()
    );
    let first_page = read(&server, &key, "/api/v1/sessions?limit=2");
    let cursor = first_page["next_cursor"].as_str().expect("next page");
    let second = read(
        &server,
        &key,
        &format!("/api/v1/sessions?limit=2&cursor={cursor}"),
    );
    assert_eq!(ids(&second), ["s-1"]);

    let detail = read(&server, &key, "/api/v1/sessions/s-1");
    assert_eq!(detail["page_views"], 7, "the update replaced what it sent");
    assert_eq!(detail["service"], "web", "and kept what it left out");
    assert_eq!(detail["url"], "https://app.example.com/done");
    assert_eq!(detail["errors"].as_array().unwrap().len(), 1);
    assert_eq!(detail["errors"][0]["message"], "in session");
    let missing = send(bearer(&server, &key, Method::GET, "/api/v1/sessions/nope"));
    missing.problem(404, "not_found");
    let anonymous = send(crate::harness::http().get(server.url("/api/v1/sessions")));
    assert_eq!(anonymous.status, 401);
}

#[test]
fn traces_are_trees_and_spans_have_percentiles() {
    let server = ingest_server(&[]);
    let span = |id: &str, parent: Option<&str>, name: &str, start: i64, ms: u32| {
        let mut span = json!({"trace_id": TRACE, "span_id": id, "name": name,
            "start_time": 1_795_348_800_000i64 + start, "duration_ms": ms, "service": "web"});
        if let Some(parent) = parent {
            span["parent_span_id"] = json!(parent);
        }
        span
    };
    let body = json!({"spans": [
        span("00000000000000a1", None, "page load", 0, 900),
        span("00000000000000b1", Some("00000000000000a1"), "fetch", 10, 100),
        span("00000000000000b2", Some("00000000000000a1"), "fetch", 20, 300),
        span("00000000000000c1", Some("00000000000000b2"), "parse", 30, 5),
        {"trace_id": "short", "span_id": "00000000000000d1", "name": "x", "start_time": 0, "duration_ms": 1, "service": "web"},
        {"trace_id": TRACE, "span_id": "00000000000000d2", "name": "x", "start_time": 0, "service": "web"},
    ]});
    let result = accepted(&post(&server, "/ingest/spans", &body));
    assert_eq!(result["accepted"], 4);
    assert_eq!(result["rejected"].as_array().unwrap().len(), 2);

    let key = owner_key(&server);
    let trace = read(&server, &key, &format!("/api/v1/traces/{TRACE}"));
    assert_eq!(trace["trace_id"], TRACE);
    let roots = trace["spans"].as_array().unwrap();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0]["name"], "page load");
    let children = roots[0]["children"].as_array().unwrap();
    assert_eq!(children.len(), 2);
    assert_eq!(children[1]["children"][0]["name"], "parse");
    let unknown = format!("/api/v1/traces/{}", "1".repeat(32));
    send(bearer(&server, &key, Method::GET, &unknown)).problem(404, "not_found");

    let more: Vec<Value> = (0..96)
        .map(|i| {
            span(
                &format!("{:016x}", 0x100 + i),
                None,
                "fetch",
                100 + i as i64,
                200,
            )
        })
        .collect();
    accepted(&post(&server, "/ingest/spans", &json!({"spans": more})));
    let stats = read(&server, &key, "/api/v1/spans?service=web&name=fetch");
    assert_eq!(
        stats["items"],
        json!([{"name": "fetch", "count": 98, "p50_ms": 200.0, "p95_ms": 200.0, "p99_ms": 300.0}])
    );
    let all = read(&server, &key, "/api/v1/spans?service=web");
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fetch", "page load", "parse"]);
}

#[test]
fn source_maps_by_ingest_key_or_member_api_key_within_their_limit() {
    let server = ingest_server(&[("WEB_INGEST_MAX_SOURCEMAP_BYTES", "2048")]);
    let map = json!({"version": 3, "sources": ["src/app.ts"], "names": [], "mappings": "AAAA"});
    let upload =
        json!({"release": "1.4.2", "file": "https://app.example.com/app.min.js", "sourcemap": map});
    let reply = post(&server, "/ingest/sourcemaps", &upload);
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(reply.json()["id"].as_str().is_some_and(|id| !id.is_empty()));

    let key = owner_key(&server);
    let boundary = "lookoutboundary";
    let form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"release\"\r\n\r\n1.4.2\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n/static/vendor.js\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"sourcemap\"; filename=\"vendor.js.map\"\r\n\
         Content-Type: application/json\r\n\r\n{map}\r\n--{boundary}--\r\n"
    );
    let multipart = bearer(&server, &key, Method::POST, "/ingest/sourcemaps")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(form);
    assert_eq!(send(multipart).status, 201, "a member's API key, multipart");
    let wrong = bearer(
        &server,
        "lk_not-a-real-key-at-all-000000000000000000000",
        Method::POST,
        "/ingest/sourcemaps",
    )
    .header("content-type", "application/json")
    .body(upload.to_string());
    assert_eq!(send(wrong).status, 401);

    // The limit is its own: exactly 2048 bytes pass, 2049 do not.
    let sized = |size: usize| {
        let mut body = upload.to_string().into_bytes();
        body.resize(size, b' ');
        post_bytes(&server, "/ingest/sourcemaps", "application/json", body)
    };
    assert_eq!(sized(2048).status, 201);
    sized(2049).problem(413, "body_too_large");
    let not_a_map = json!({"release": "1", "file": "a.js", "sourcemap": {"version": 2}});
    post(&server, "/ingest/sourcemaps", &not_a_map).problem(400, "invalid_payload");
}

#[test]
fn ab_config_etags_flag_changes_and_uniques_once_per_day() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let admin = |method: Method, path: &str, body: Value| {
        let reply = send(bearer(&server, &key, method, path).json(&body));
        assert!(
            reply.status < 300,
            "{path}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    };
    admin(
        Method::PUT,
        "/api/v1/flags/new-checkout",
        json!({"value": true}),
    );
    let experiment = json!({"key": "cta-colour", "active": true,
        "variants": [{"key": "blue", "weight": 1}, {"key": "green", "weight": 1}]});
    admin(Method::POST, "/api/v1/experiments", experiment);

    let config = send(keyed(&server, Method::GET, "/ingest/ab-config"));
    assert_eq!(config.status, 200);
    assert_eq!(config.header("cache-control"), "no-cache");
    let etag = config.header("etag").to_string();
    assert!(etag.starts_with('"'), "{etag}");
    let document = config.json();
    assert_eq!(document["flags"]["new-checkout"], true);
    assert_eq!(document["experiments"][0]["key"], "cta-colour");
    let cached =
        send(keyed(&server, Method::GET, "/ingest/ab-config").header("if-none-match", &etag));
    assert_eq!((cached.status, cached.body.len()), (304, 0));
    assert_eq!(cached.header("etag"), etag);

    admin(
        Method::PUT,
        "/api/v1/flags/new-checkout",
        json!({"value": false}),
    );
    let changed =
        send(keyed(&server, Method::GET, "/ingest/ab-config").header("if-none-match", &etag));
    assert_eq!(changed.status, 200, "a flag change shows at once");
    assert_eq!(changed.json()["flags"]["new-checkout"], false);
    assert_ne!(changed.header("etag"), etag);

    let exposure = |visitor: &str, variant: &str, at: &str| json!({"experiment": "cta-colour", "variant": variant, "visitor_id": visitor, "timestamp": at});
    let body = json!({"exposures": [
        exposure("v1", "blue", "2026-11-22T08:00:00Z"),
        exposure("v1", "blue", "2026-11-22T20:00:00Z"),
        exposure("v2", "blue", "2026-11-22T09:00:00Z"),
        exposure("v1", "blue", "2026-11-23T01:00:00Z"),
        exposure("v3", "green", "2026-11-22T10:00:00Z"),
        exposure("v4", "purple", "2026-11-22T10:00:00Z"),
        {"experiment": "nope", "variant": "blue", "visitor_id": "v5"},
    ]});
    let result = accepted(&post(&server, "/ingest/ab-uniques", &body));
    assert_eq!(result["accepted"], 5);
    let rejected: Vec<u64> = result["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(rejected, [5, 6]);
    accepted(&post(
        &server,
        "/ingest/ab-uniques",
        &json!({"exposures": [exposure("v2", "blue", "2026-11-22T23:59:00Z")]}),
    ));
    let results = read(&server, &key, "/api/v1/experiments/cta-colour/results");
    assert_eq!(
        results["days"],
        json!([
            {"day": "2026-11-22", "variants": {"blue": 2, "green": 1}},
            {"day": "2026-11-23", "variants": {"blue": 1}},
        ])
    );
}
