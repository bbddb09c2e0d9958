//! What the compat tests share: a server with a key a DSN can hold, the project id, posting
//! envelopes as the browser SDK does, bodies refused by their declared length, preflights, and
//! a brotli stream made without an encoder.

#![allow(dead_code)]

use reqwest::Method;
use serde_json::Value;

use crate::harness::{TestServer, http, wait_for};
use crate::http_basics::{Reply, send};
use crate::ingest_support::*;

/// A second ingest key that a DSN can hold (`[A-Za-z0-9_]`).
pub(crate) const DSN_KEY: &str = "sentry_compat_key_0001";
pub(crate) const ERROR_ID: &str = "6b0b9a3c1f2d4e5f8a9b0c1d2e3f4a5b";

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/sentry/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// A server with both keys, an owner, and the owner's API key.
pub(crate) fn sentry_server(env: &[(&str, &str)]) -> (TestServer, String) {
    let mut all = vec![("WEB_INGEST_KEYS", DSN_KEY)];
    all.extend_from_slice(env);
    let server = ingest_server(&all);
    let key = owner_key(&server);
    (server, key)
}

pub(crate) fn project_of(server: &TestServer, key: &str) -> u64 {
    read(server, key, "/api/v1/orgs/me/ingest")["project_id"]
        .as_u64()
        .expect("project_id")
}

/// `POST /api/{project}/envelope/{query}` with `body` as the browser SDK sends it.
pub(crate) fn post_envelope(
    server: &TestServer,
    project: u64,
    query: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let url = server.url(&format!("/api/{project}/envelope/{query}"));
    let mut request = http()
        .post(url)
        .header("content-type", "text/plain;charset=UTF-8");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request.body(body))
}

pub(crate) fn keyed_query() -> String {
    format!(
        "?sentry_key={DSN_KEY}&sentry_version=7&sentry_client=sentry.javascript.browser%2F10.5.0"
    )
}

pub(crate) fn wait_for_events(server: &TestServer, key: &str, count: usize) -> Vec<Value> {
    wait_for("stored events", std::time::Duration::from_secs(10), || {
        let events = all_errors(server, key);
        (events.len() >= count).then_some(events)
    })
}

/// A brotli stream of stored (uncompressed) meta-blocks, as RFC 7932 section 9 allows: what a
/// br-encoding SDK may send, made without an encoder.
pub(crate) fn brotli_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut used) = (0u32, 0u32);
    let mut put = |out: &mut Vec<u8>, value: u32, count: u32, flush: bool| {
        acc |= value << used;
        used += count;
        while used >= 8 || (flush && used > 0) {
            out.push(acc as u8);
            acc >>= 8;
            used = used.saturating_sub(8);
        }
    };
    put(&mut out, 0, 1, false); // WBITS = 16
    for chunk in data.chunks(65_536) {
        put(&mut out, 0, 1, false); // ISLAST = 0
        put(&mut out, 0, 2, false); // MNIBBLES = 4
        put(&mut out, chunk.len() as u32 - 1, 16, false);
        put(&mut out, 1, 1, true); // ISUNCOMPRESSED, then pad to a byte
        out.extend_from_slice(chunk);
    }
    put(&mut out, 0b11, 2, true); // ISLAST, ISLASTEMPTY
    out
}

/// A POST declaring `length` body bytes, sent with none of them: a body over a limit is
/// refused from its declared length, before any of it is read (sending it all would race the
/// server closing the connection).
pub(crate) fn declared_post(server: &TestServer, path_and_query: &str, length: usize) -> Reply {
    let addr = server
        .url("")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let head = format!(
        "POST {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         X-Lookout-Key: {KEY}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    );
    crate::http_basics::raw_exchange(addr.parse().expect("address"), head.as_bytes())
}

/// A browser's preflight for a POST with `header` and `Content-Type`: 204, both allowed.
pub(crate) fn preflight_allows(server: &TestServer, path: &str, header: &str) -> Reply {
    let preflight = send(
        http()
            .request(Method::OPTIONS, server.url(path))
            .header("origin", "https://app.example.com")
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                format!("{header},content-type"),
            ),
    );
    assert_eq!(preflight.status, 204);
    let allowed = preflight
        .header("access-control-allow-headers")
        .to_ascii_lowercase();
    assert!(
        allowed.contains(header) && allowed.contains("content-type"),
        "{allowed}"
    );
    preflight
}
