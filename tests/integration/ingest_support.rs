//! What the ingest tests share: a server with ingest keys and an organisation, requests to the
//! `/ingest/*` routes with a key, and an admin API key to read the data back over `/api/v1`.

#![allow(dead_code)]

use std::io::Write;

use reqwest::Method;
use reqwest::blocking::RequestBuilder;
use serde_json::{Value, json};

use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

/// The ingest key of the test servers (WEB_INGEST_KEY).
pub(crate) const KEY: &str = "test-ingest-key-0001";
pub(crate) const OWNER: &str = "owner@lookout.test";
const PASSWORD: &str = "ingest tests password";

/// `lookout user create --role owner` (creating the `default` organisation).
pub(crate) fn add_owner(server: &TestServer, email: &str) {
    server.add_user(email, "owner", PASSWORD);
}

/// A request with `Authorization: Bearer <key>`.
pub(crate) fn bearer(server: &TestServer, key: &str, method: Method, path: &str) -> RequestBuilder {
    let request = http().request(method, server.url(path));
    request.header("authorization", format!("Bearer {key}"))
}

/// A server with `KEY` configured, `env` on top, and an organisation with an owner.
pub(crate) fn ingest_server(env: &[(&str, &str)]) -> TestServer {
    let mut builder = TestServer::builder().env("WEB_INGEST_KEY", KEY);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    let server = builder.start();
    add_owner(&server, OWNER);
    server
}

/// A request to `path` with the ingest key in `X-Lookout-Key`.
pub(crate) fn keyed(server: &TestServer, method: Method, path: &str) -> RequestBuilder {
    http()
        .request(method, server.url(path))
        .header("x-lookout-key", KEY)
}

/// `POST path` with `body` as JSON and the key.
pub(crate) fn post(server: &TestServer, path: &str, body: &Value) -> Reply {
    send(
        keyed(server, Method::POST, path)
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
}

/// `POST path` with raw bytes, the key and the given content type.
pub(crate) fn post_bytes(
    server: &TestServer,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Reply {
    send(
        keyed(server, Method::POST, path)
            .header("content-type", content_type)
            .body(body),
    )
}

/// Asserts a 202 and returns its `{"accepted","rejected"}` body.
pub(crate) fn accepted(reply: &Reply) -> Value {
    assert_eq!(
        reply.status,
        202,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

/// A valid error event with `message`.
pub(crate) fn event(message: &str) -> Value {
    json!({"level": "error", "message": message, "url": "https://app.example.com/"})
}

pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// An owner's API key, for the read APIs: sign in, then create it with the session cookie
/// and its CSRF token.
pub(crate) fn owner_key(server: &TestServer) -> String {
    let login = json!({"email": OWNER, "password": PASSWORD});
    let reply = send(http().post(server.url("/api/v1/auth/login")).json(&login));
    assert_eq!(reply.status, 200, "login: {}", text(&reply.body));
    let csrf = reply.json()["csrf_token"]
        .as_str()
        .expect("csrf_token")
        .to_string();
    let session = reply
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .find_map(|(_, value)| value.strip_prefix("lookout_session="))
        .and_then(|rest| rest.split(';').next())
        .expect("session cookie")
        .to_string();
    let request = http()
        .post(server.url("/api/v1/orgs/me/api-keys"))
        .header("cookie", format!("lookout_session={session}"))
        .header("x-csrf-token", csrf)
        .json(&json!({"name": "reader"}));
    let reply = send(request);
    assert_eq!(reply.status, 201, "create key: {}", text(&reply.body));
    reply.json()["key"].as_str().expect("key").to_string()
}

/// `GET path` with `Authorization: Bearer <key>`, asserting 200.
pub(crate) fn read(server: &TestServer, key: &str, path: &str) -> Value {
    let reply = send(bearer(server, key, Method::GET, path));
    assert_eq!(
        reply.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

/// Every stored error event, following `next_cursor` (newest first).
pub(crate) fn all_errors(server: &TestServer, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut path = "/api/v1/errors?limit=500".to_string();
    loop {
        let page = read(server, key, &path);
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/v1/errors?limit=500&cursor={cursor}"),
            None => return items,
        }
    }
}

/// The value of a metric without labels, from `/metrics` (loopback needs no credentials).
pub(crate) fn metric(server: &TestServer, name: &str) -> Option<f64> {
    let reply = send(http().get(server.url("/metrics")));
    assert_eq!(reply.status, 200);
    String::from_utf8_lossy(&reply.body)
        .lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
}

/// A server on a store restored (`lookout restore`) into `temp` from a backup of `server`'s
/// data dir (`lookout backup`: from the running server, or from the files when it is stopped).
pub(crate) fn restored_copy(server: &TestServer, temp: &std::path::Path) -> TestServer {
    let file = temp.join("copy.lookout-backup");
    let output = server.cli(&["backup", "--out", file.to_str().unwrap()], "");
    assert!(
        output.status.success(),
        "{}",
        crate::harness::text(&output.stderr)
    );
    let restored = temp.join("restored");
    let output = crate::harness::run_cli(
        &restored,
        &[],
        &["restore", file.to_str().unwrap(), "--json"],
        "",
    );
    assert!(
        output.status.success(),
        "{}",
        crate::harness::text(&output.stderr)
    );
    TestServer::builder().data_dir(&restored).start()
}
