//! Sentry SDKs sending to Lookout unchanged: `GET /api/v1/orgs/me/ingest`, the envelope and
//! store endpoints with every auth form and encoding, items read into events (grouped with the
//! native event of the same throw site and found by search), transactions into traces,
//! sessions, unknown items skipped, CORS and the 429 headers SDKs read. Limits are in
//! `compat_sentry_limits.rs`, shared helpers in `compat_support.rs`.

use std::io::Write;

use serde_json::{Value, json};

use crate::compat_support::*;
use crate::harness::{http, wait_for};
use crate::http_basics::send;
use crate::ingest_support::*;

#[test]
fn the_ingest_endpoints_give_a_project_id_and_a_dsn_to_admins_only() {
    let (server, key) = sentry_server(&[]);
    let body = read(&server, &key, "/api/v1/orgs/me/ingest");
    let project = body["project_id"].as_u64().expect("integer project_id");
    let base = server.url("");
    let base = base.trim_end_matches('/');
    assert_eq!(
        body["envelope_url"],
        format!("{base}/api/{project}/envelope/")
    );
    assert_eq!(body["otlp_traces_url"], format!("{base}/v1/traces"));
    let host = base.trim_start_matches("http://");
    // The first key (with '-') cannot stand in a DSN; the second can.
    assert_eq!(body["dsn"], format!("http://{DSN_KEY}@{host}/{project}"));
    assert_eq!(
        read(&server, &key, "/api/v1/orgs/me/ingest")["project_id"],
        project
    );

    // A viewer reads the URLs but no DSN.
    server.add_user("viewer@lookout.test", "viewer", "viewer password 1");
    let login = json!({"email": "viewer@lookout.test", "password": "viewer password 1"});
    let reply = send(http().post(server.url("/api/v1/auth/login")).json(&login));
    let cookie = reply
        .headers
        .iter()
        .find_map(|(name, value)| {
            (name.eq_ignore_ascii_case("set-cookie") && value.starts_with("lookout_session="))
                .then(|| value.split(';').next().unwrap().to_string())
        })
        .expect("session cookie");
    let reply = send(
        http()
            .get(server.url("/api/v1/orgs/me/ingest"))
            .header("cookie", cookie),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["project_id"], project);
    assert_eq!(reply.json()["dsn"], Value::Null);

    // No key a DSN can hold: null for admins too.
    let plain = ingest_server(&[]);
    let plain_key = owner_key(&plain);
    assert_eq!(
        read(&plain, &plain_key, "/api/v1/orgs/me/ingest")["dsn"],
        Value::Null
    );
    assert_eq!(
        send(http().get(plain.url("/api/v1/orgs/me/ingest"))).status,
        401
    );
}

#[test]
fn a_browser_error_arrives_with_every_auth_form_and_groups_with_the_native_event() {
    let (server, key) = sentry_server(&[]);
    let project = project_of(&server, &key);
    let envelope = fixture("browser-error.envelope");

    let reply = post_envelope(&server, project, &keyed_query(), &[], envelope.clone());
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json(), json!({"id": ERROR_ID}));

    // X-Sentry-Auth, as server SDKs send it; the same event id again is stored once.
    let auth = format!(
        "Sentry sentry_version=7, sentry_client=sentry.python/2.19.0, sentry_key={DSN_KEY}"
    );
    let reply = post_envelope(
        &server,
        project,
        "",
        &[("x-sentry-auth", auth.as_str())],
        envelope.clone(),
    );
    assert_eq!(reply.status, 200);

    // The envelope header's dsn (a tunnel), with another event id.
    let text = String::from_utf8(envelope).unwrap();
    let host = server
        .url("")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let with_dsn = text
        .replacen(
            "{\"event_id\":\"6b0b",
            &format!("{{\"dsn\":\"http://{DSN_KEY}@{host}/{project}\",\"event_id\":\"7b0b"),
            1,
        )
        .replace("\"event_id\":\"6b0b", "\"event_id\":\"7b0b");
    let reply = post_envelope(&server, project, "", &[], with_dsn.into_bytes());
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["id"], "7b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b");

    // The native SDK's report of the same throw site (Chrome's stack, other columns).
    let stack = "TypeError: Cannot read properties of undefined (reading 'total')\n    at computeTotal (https://app.example.com/assets/app.js:12:31)\n    at checkout (https://app.example.com/assets/app.js:40:9)\n    at HTMLButtonElement.onClick (https://app.example.com/assets/app.js:88:3)";
    let mut native = event("Cannot read properties of undefined (reading 'total')");
    native["name"] = json!("TypeError");
    native["stack"] = json!(stack);
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [native]}),
    ));

    let events = wait_for_events(&server, &key, 3);
    assert_eq!(events.len(), 3, "stored once per event id");
    let sentry = events
        .iter()
        .find(|e| e["event_id"] == ERROR_ID)
        .expect("sentry event");
    assert_eq!(sentry["name"], "TypeError");
    assert_eq!(sentry["release"], "shop@2.4.1");
    assert_eq!(sentry["environment"], "production");
    assert_eq!(sentry["url"], "https://app.example.com/cart");
    assert_eq!(sentry["user_id"], "u-42");
    assert_eq!(sentry["tags"]["plan"], "pro");
    assert_eq!(sentry["tags"]["sdk"], "sentry.javascript.browser");
    assert_eq!(sentry["frames"][0]["function"], "computeTotal");
    assert_eq!(sentry["frames"][0]["line"], 12);
    assert_eq!(sentry["frames"][0]["column"], 30);
    assert_eq!(sentry["breadcrumbs"][0]["category"], "ui.click");
    assert!(
        sentry["user_agent"]
            .as_str()
            .unwrap()
            .contains("Chrome/131")
    );
    let groups: std::collections::BTreeSet<&str> = events
        .iter()
        .map(|e| e["group_id"].as_str().unwrap())
        .collect();
    assert_eq!(groups.len(), 1, "one throw site, one group: {events:#?}");

    let found = wait_for("search", std::time::Duration::from_secs(10), || {
        let page = read(&server, &key, "/api/v1/errors?q=computeTotal");
        let items = page["items"].as_array().unwrap().clone();
        (items.len() == 3).then_some(items)
    });
    assert_eq!(found.len(), 3);
}

#[test]
fn encodings_unknown_items_transactions_sessions_and_store() {
    let (server, key) = sentry_server(&[]);
    let project = project_of(&server, &key);
    let query = keyed_query();
    // An attachment (with a length) and a client report before the event: skipped.
    let mut body = b"{\"event_id\":\"1b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b\"}\n".to_vec();
    body.extend(b"{\"type\":\"attachment\",\"length\":5,\"filename\":\"a.txt\"}\nab\ncd\n");
    body.extend(b"{\"type\":\"client_report\"}\n{\"discarded_events\":[]}\n");
    body.extend(b"{\"type\":\"event\"}\n{\"event_id\":\"1b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b\",\"message\":\"skipped around\",\"level\":\"warning\"}\n");
    let reply = post_envelope(&server, project, &query, &[], body);
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );

    let encoded = |message: &str| {
        format!("{{}}\n{{\"type\":\"event\"}}\n{{\"message\":\"{message}\",\"level\":\"error\"}}\n")
            .into_bytes()
    };
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    deflate.write_all(&encoded("by deflate")).unwrap();
    let cases = [
        ("gzip", gzip(&encoded("by gzip"))),
        ("deflate", deflate.finish().unwrap()),
        ("br", brotli_stored(&encoded("by br"))),
    ];
    for (encoding, bytes) in cases {
        let reply = post_envelope(
            &server,
            project,
            &query,
            &[("content-encoding", encoding)],
            bytes,
        );
        assert_eq!(
            reply.status,
            200,
            "{encoding}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }
    let reply = post_envelope(
        &server,
        project,
        &query,
        &[("content-encoding", "zstd")],
        encoded("no"),
    );
    assert_eq!(reply.status, 415);
    assert_eq!(reply.json()["code"], "unsupported_media_type");

    // /store/: one event as the body, its user's e-mail scrubbed.
    let event = json!({"event_id": "2b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b", "level": "error", "platform": "python",
        "exception": {"values": [{"type": "ValueError", "value": "bad input", "stacktrace": {"frames": [
            {"filename": "app/views.py", "abs_path": "/srv/app/views.py", "function": "pay", "lineno": 7, "in_app": true}]}}]},
        "user": {"email": "jane@example.com"}, "server_name": "web-1"});
    let url = server.url(&format!("/api/{project}/store/{query}"));
    let reply = send(
        http()
            .post(url)
            .header("content-type", "application/json")
            .body(event.to_string()),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["id"], "2b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b");

    let events = wait_for_events(&server, &key, 5);
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    for expected in [
        "skipped around",
        "by gzip",
        "by deflate",
        "by br",
        "bad input",
    ] {
        assert!(messages.contains(&expected), "{expected} in {messages:?}");
    }
    let python = events.iter().find(|e| e["message"] == "bad input").unwrap();
    assert_eq!(python["user_id"], "[email]");
    assert_eq!(python["url"], "(none)");

    // A transaction becomes a trace; a session update a session.
    let reply = post_envelope(
        &server,
        project,
        &query,
        &[],
        fixture("browser-transaction.envelope"),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["id"], "0d1a6c9e8b7f4a3e9c2b1a0f9e8d7c6b");
    let trace = read(
        &server,
        &key,
        "/api/v1/traces/5cf92f3577b34da6a3ce929d0e0e4737",
    );
    let root = &trace["spans"][0];
    assert_eq!(root["name"], "/cart");
    assert_eq!(root["service"], "shop");
    assert_eq!(
        root["children"][0]["name"],
        "GET https://app.example.com/api/cart"
    );
    let reply = post_envelope(
        &server,
        project,
        &query,
        &[],
        fixture("browser-session.envelope"),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), json!({}));
    let session = read(
        &server,
        &key,
        "/api/v1/sessions/4a1c9d7e2b3f4c5d8e9f0a1b2c3d4e5f",
    );
    assert_eq!(session["release"], "shop@2.4.1");
}

#[test]
fn wrong_keys_and_projects_are_refused_and_nothing_is_stored() {
    let (server, key) = sentry_server(&[]);
    let project = project_of(&server, &key);
    let envelope = fixture("browser-error.envelope");
    type Attempt<'a> = (u64, String, Vec<(&'a str, &'a str)>);
    let cases: Vec<Attempt> = vec![
        (project, "?sentry_key=wrong_key_0000000000".into(), vec![]),
        (
            project,
            String::new(),
            vec![("x-sentry-auth", "Sentry sentry_key=wrong_key_0000000000")],
        ),
        (project, String::new(), vec![]),
        (project + 1, keyed_query(), vec![]),
    ];
    for (project, query, headers) in cases {
        let reply = post_envelope(&server, project, &query, &headers, envelope.clone());
        assert_eq!(reply.status, 401, "{query} {headers:?}");
        assert_eq!(reply.json()["code"], "invalid_ingest_key");
    }
    let text = String::from_utf8(envelope).unwrap();
    let wrong_dsn = text.replacen(
        "{\"event_id\"",
        "{\"dsn\":\"http://wrong_key_0000000000@h/1\",\"event_id\"",
        1,
    );
    assert_eq!(
        post_envelope(&server, project, "", &[], wrong_dsn.into_bytes()).status,
        401
    );
    let bad = post_envelope(
        &server,
        project,
        &keyed_query(),
        &[],
        b"{}\n{\"type\":\"event\"}\nnot json\n".to_vec(),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["code"], "invalid_payload");
    assert!(all_errors(&server, &key).is_empty());
}

#[test]
fn cors_rate_limits_and_origins_as_browsers_need_them() {
    let (server, key) = sentry_server(&[
        ("WEB_INGEST_RATE_PER_MIN", "3"),
        ("WEB_INGEST_ALLOWED_ORIGINS", "https://app.example.com"),
    ]);
    let project = project_of(&server, &key);
    let path = format!("/api/{project}/envelope/");
    let preflight = preflight_allows(&server, &path, "x-sentry-auth");
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        "https://app.example.com"
    );

    let envelope = fixture("browser-error.envelope");
    let origin = [("origin", "https://app.example.com")];
    let reply = post_envelope(&server, project, &keyed_query(), &origin, envelope.clone());
    assert_eq!(reply.status, 200);
    let exposed = reply
        .header("access-control-expose-headers")
        .to_ascii_lowercase();
    assert!(
        exposed.contains("x-sentry-rate-limits") && exposed.contains("retry-after"),
        "{exposed}"
    );

    // A server SDK sends no Origin and is not refused for it; a foreign origin is.
    let reply = post_envelope(&server, project, &keyed_query(), &[], envelope.clone());
    assert_eq!(reply.status, 200);
    let foreign = [("origin", "https://evil.example")];
    let reply = post_envelope(&server, project, &keyed_query(), &foreign, envelope.clone());
    assert_eq!(reply.status, 403);
    assert_eq!(reply.json()["code"], "forbidden_origin");

    let limited = wait_for("429", std::time::Duration::from_secs(10), || {
        let reply = post_envelope(&server, project, &keyed_query(), &[], envelope.clone());
        (reply.status == 429).then_some(reply)
    });
    let retry = limited.header("retry-after").to_string();
    assert!(retry.parse::<u64>().is_ok_and(|s| s >= 1), "{retry:?}");
    assert_eq!(
        limited.header("x-sentry-rate-limits"),
        format!("{retry}::organization")
    );
}
