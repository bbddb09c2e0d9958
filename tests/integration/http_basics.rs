//! HTTP plumbing seen from a client: `/healthz`, request ids, 404/405 problems, the OpenAPI
//! document (and that it lists only mounted routes), `/metrics` access, and connection
//! hygiene: header and body read timeouts, URI, header-count, header-byte and body-size
//! limits, content-type and JSON errors, and the cap on concurrent connections.
//!
//! Slow and malformed clients are raw `TcpStream`s, so the test controls every byte sent.
//! `Reply` (with its problem+json assertion), `send`, `connect` and `read_response` are
//! shared with the other modules of this crate.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{TestServer, http};

/// One HTTP response, read off a raw connection or converted from reqwest.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl From<reqwest::blocking::Response> for Reply {
    fn from(response: reqwest::blocking::Response) -> Reply {
        let status = response.status().as_u16();
        let headers = response.headers().iter();
        let headers = headers.map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()));
        let (headers, body) = (headers.collect(), response.bytes().expect("body").to_vec());
        Reply {
            status,
            headers,
            body,
        }
    }
}

impl Reply {
    pub fn header(&self, name: &str) -> &str {
        let mut headers = self.headers.iter();
        let found = headers.find(|(key, _)| key.eq_ignore_ascii_case(name));
        found.map_or("", |(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Asserts an RFC 9457 problem with `status` and `code` (content type and every field).
    pub fn problem(&self, status: u16, code: &str) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        assert_eq!(self.status, status, "status (body: {text})");
        let content_type = self.header("content-type");
        assert!(
            content_type.starts_with("application/problem+json"),
            "{content_type:?}"
        );
        let problem = self.json();
        assert_eq!(problem["code"], code, "{problem}");
        assert_eq!(problem["status"], status, "{problem}");
        for field in ["type", "title", "detail"] {
            let value = problem[field].as_str().unwrap_or("");
            assert!(
                !value.is_empty(),
                "problem field {field} missing: {problem}"
            );
        }
        problem
    }
}

/// Sends a reqwest request and reads the whole response.
pub(crate) fn send(request: reqwest::blocking::RequestBuilder) -> Reply {
    Reply::from(request.send().expect("send request"))
}

fn server_with(setting: &str, value: &str) -> TestServer {
    TestServer::builder().env(setting, value).start()
}

/// A raw connection whose reads give up after `seconds` (instead of hanging the test).
fn set_timeout(stream: &TcpStream, seconds: f64) {
    let timeout = Duration::from_secs_f64(seconds);
    stream
        .set_read_timeout(Some(timeout))
        .expect("read timeout");
}

pub(crate) fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    set_timeout(&stream, 15.0);
    stream
}

fn assert_between(what: &str, elapsed: Duration, low_ms: u64, high_ms: u64) {
    let range = Duration::from_millis(low_ms)..Duration::from_millis(high_ms);
    assert!(
        range.contains(&elapsed),
        "{what} after {elapsed:?}, expected {range:?}"
    );
}

/// Reads one response (an interim `100 Continue` counts as one) without reading past it,
/// so the connection can carry the next request.
pub(crate) fn read_response(stream: &mut TcpStream) -> std::io::Result<Reply> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte)?;
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok());
    let status = status.expect(status_line);
    let headers = lines.filter_map(|line| line.split_once(':'));
    let headers = headers.map(|(name, value)| (name.to_string(), value.trim().to_string()));
    let (headers, body) = (headers.collect(), Vec::new());
    let mut reply = Reply {
        status,
        headers,
        body,
    };
    let length = reply.header("content-length").parse().unwrap_or(0);
    if status >= 200 {
        reply.body.resize(length, 0);
        stream.read_exact(&mut reply.body)?;
    }
    Ok(reply)
}

/// Sends `request` on a new connection and reads the response.
pub(crate) fn raw_exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = connect(addr);
    stream.write_all(request).expect("send request");
    read_response(&mut stream).expect("read response")
}

/// Reads until the peer closes; returns how long that took, or panics if it stays open.
fn time_until_closed(mut stream: TcpStream, started: Instant) -> Duration {
    set_timeout(&stream, 8.0);
    let result = stream.read_to_end(&mut Vec::new());
    let open =
        result.is_err_and(|e| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut));
    assert!(!open, "connection still open after {:?}", started.elapsed());
    started.elapsed()
}

fn get(addr: SocketAddr, target: &str, extra_headers: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n{extra_headers}Connection: close\r\n\r\n")
        .into_bytes()
}

#[test]
fn healthz_answers_ok_and_every_response_carries_a_request_id() {
    let server = TestServer::start();
    let health = send(http().get(server.url("/healthz")));
    assert_eq!(health.status, 200);
    let content_type = health.header("content-type");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert_eq!(health.json(), serde_json::json!({"status": "ok"}));
    let second = send(http().get(server.url("/nope")));
    let ids = [health.header("x-request-id"), second.header("x-request-id")];
    assert!(
        !ids[0].is_empty() && ids[0] != ids[1],
        "request ids {ids:?}"
    );

    let chosen = http()
        .get(server.url("/healthz"))
        .header("x-request-id", "client-id-42");
    assert_eq!(send(chosen).header("x-request-id"), "client-id-42");
}

#[test]
fn unknown_paths_are_404_and_wrong_methods_405_problems() {
    let server = TestServer::start();
    // Page paths answer the app's shell (CONTRACT section 9); machine paths never do.
    for path in [
        "/api/v1/nope",
        "/ingest/nope",
        "/assets/nope.js",
        "/vendor/nope.mjs",
        "/sdk/nope.js",
    ] {
        let reply = send(http().get(server.url(path)));
        assert!(!reply.header("x-request-id").is_empty(), "{path}");
        reply.problem(404, "not_found");
    }
    let cases = [
        (reqwest::Method::DELETE, "/healthz", &["GET"][..]),
        (reqwest::Method::PUT, "/api/v1/setup", &["GET", "POST"][..]),
    ];
    for (method, path, allowed) in cases {
        let reply = send(http().request(method.clone(), server.url(path)));
        reply.problem(405, "method_not_allowed");
        let allow = reply.header("allow");
        for expected in allowed {
            assert!(allow.contains(expected), "{method} {path}: Allow {allow:?}");
        }
    }
}

/// `path` with each `{parameter}` segment replaced by a placeholder value.
fn concrete_path(path: &str) -> String {
    let segments = path.split('/');
    let segments = segments.map(|s| if s.starts_with('{') { "placeholder" } else { s });
    segments.collect::<Vec<_>>().join("/")
}

#[test]
fn openapi_document_lists_exactly_the_mounted_routes() {
    let server = TestServer::start();
    let reply = send(http().get(server.url("/api/v1/openapi.json")));
    assert_eq!(reply.status, 200);
    assert!(reply.header("content-type").starts_with("application/json"));
    let document = reply.json();
    let version = document["openapi"].as_str().unwrap_or("");
    assert!(version.starts_with("3.1"), "openapi version {version:?}");
    let paths = document["paths"].as_object().expect("paths object");
    for expected in ["/api/v1/setup", "/api/v1/openapi.json"] {
        assert!(paths.contains_key(expected), "document lacks {expected}");
    }
    let methods = ["get", "post", "put", "patch", "delete", "options", "head"];
    let mut checked = 0;
    for (path, item) in paths {
        let concrete = concrete_path(path);
        for method in methods.iter().filter(|m| item.get(**m).is_some()) {
            let verb = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let reply = send(http().request(verb, server.url(&concrete)));
            // A handler may say "not found" for a placeholder id, but the router's own 404 (its
            // fallback) or a 405 means the documented route is not mounted.
            let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
            let fallback = concrete == *path || body["detail"] == "no resource at this path";
            let unmounted = reply.status == 405 || (reply.status == 404 && fallback);
            let status = reply.status;
            assert!(
                !unmounted,
                "{method} {path} is documented but answers {status}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} operations in the document");
}

#[test]
fn metrics_are_served_to_loopback_clients_and_admins() {
    let server = server_with("TRUSTED_PROXIES", "127.0.0.1/32");
    let reply = send(http().get(server.url("/metrics")));
    assert_eq!(reply.status, 200);
    assert!(reply.header("content-type").starts_with("text/plain"));
    let text = String::from_utf8_lossy(&reply.body);
    let mut lines = text.lines();
    let counter = lines.find(|line| line.starts_with("lookout_http_requests_total{"));
    let counter = counter.unwrap_or_else(|| panic!("no request counter in:\n{text}"));
    assert!(counter.contains("route=\""), "{counter}");
    let histograms = [
        "lookout_http_request_duration_seconds",
        "lookout_store_commit_seconds",
    ];
    for name in histograms {
        assert!(text.contains(name), "metrics lack {name}:\n{text}");
    }
    // Through the trusted proxy on loopback, the client is the forwarded remote address:
    // it needs an admin credential.
    let remote = |key: Option<&str>| {
        let request = http()
            .get(server.url("/metrics"))
            .header("x-forwarded-for", "203.0.113.7");
        match key {
            Some(key) => send(request.bearer_auth(key)),
            None => send(request),
        }
    };
    remote(None).problem(401, "unauthorized");
    let admin_key = api_key_of(&server, "owner@example.com", "owner");
    let second_admin_key = api_key_of(&server, "admin@example.com", "admin");
    assert_eq!(remote(Some(&admin_key)).status, 200);
    assert_eq!(
        remote(Some(&second_admin_key)).status,
        200,
        "admins may scrape too"
    );
    remote(Some("lk_0000000000000000000000000000000000000000000")).problem(401, "invalid_api_key");
}

/// Creates a user with `role` and an API key of theirs (keys are made by admins and above).
fn api_key_of(server: &TestServer, email: &str, role: &str) -> String {
    let password = "long-enough-password";
    let created = server.cli(
        &[
            "user",
            "create",
            "--email",
            email,
            "--password-stdin",
            "--role",
            role,
        ],
        &format!("{password}\n"),
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let response = http()
        .post(server.url("/api/v1/auth/login"))
        .json(&serde_json::json!({"email": email, "password": password}))
        .send()
        .unwrap();
    let session = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("lookout_session="))
        .and_then(|value| value.split(';').next())
        .expect("session cookie")
        .to_string();
    let login: Value = response.json().unwrap();
    let csrf = login["csrf_token"]
        .as_str()
        .expect("csrf token")
        .to_string();
    let key: Value = http()
        .post(server.url("/api/v1/orgs/me/api-keys"))
        .header("cookie", session)
        .header("x-csrf-token", csrf)
        .json(&serde_json::json!({"name": "scraper"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    key["key"].as_str().expect("key").to_string()
}

#[test]
fn header_read_timeout_closes_slow_and_silent_connections() {
    let server = server_with("LOOKOUT_HEADER_READ_TIMEOUT_SECONDS", "1");
    let started = Instant::now();
    let mut slow = connect(server.addr);
    slow.write_all(b"GET /heal").unwrap();
    let silent = connect(server.addr);
    let silent_thread = std::thread::spawn(move || time_until_closed(silent, started));
    let slow_closed = time_until_closed(slow, started);
    let silent_closed = silent_thread.join().unwrap();
    assert_between(
        "sending half a request line: closed",
        slow_closed,
        900,
        6000,
    );
    assert_between("sending nothing: closed", silent_closed, 900, 6000);
}

#[test]
fn uri_longer_than_the_limit_is_414() {
    let server = server_with("LOOKOUT_MAX_URI_BYTES", "256");
    let at_limit = format!("/healthz?x={}", "a".repeat(256 - "/healthz?x=".len()));
    let exchange = |target: &str| raw_exchange(server.addr, &get(server.addr, target, ""));
    let status = exchange(&at_limit).status;
    assert_eq!(status, 200, "a 256-byte target must pass");
    exchange(&format!("{at_limit}a")).problem(414, "uri_too_long");
}

#[test]
fn more_header_fields_than_the_default_count_limit_is_431() {
    let server = TestServer::start();
    // `fields` header lines in all, counting Host and Connection.
    let exchange = |fields: usize| {
        let extra: String = (2..fields).map(|i| format!("X-Field-{i}: v\r\n")).collect();
        raw_exchange(server.addr, &get(server.addr, "/healthz", &extra))
    };
    let at_limit = exchange(100);
    let body = String::from_utf8_lossy(&at_limit.body);
    assert_eq!(at_limit.status, 200, "exactly 100 fields must pass: {body}");
    exchange(101).problem(431, "headers_too_large");
}

#[test]
fn header_bytes_over_the_limit_is_431() {
    let server = server_with("LOOKOUT_MAX_HEADER_BYTES", "1024");
    // Names plus values of Host, Connection and X-Fill.
    let host = server.addr.to_string();
    let fixed = "host".len() + host.len() + "connection".len() + "close".len() + "x-fill".len();
    let exchange = |total: usize| {
        let fill = format!("X-Fill: {}\r\n", "f".repeat(total - fixed));
        raw_exchange(server.addr, &get(server.addr, "/healthz", &fill))
    };
    let at_limit = exchange(1024);
    let body = String::from_utf8_lossy(&at_limit.body);
    assert_eq!(at_limit.status, 200, "exactly 1024 bytes must pass: {body}");
    exchange(1025).problem(431, "headers_too_large");
}

#[test]
fn a_stalled_body_gets_408_after_the_body_read_timeout() {
    let server = server_with("LOOKOUT_BODY_READ_TIMEOUT_SECONDS", "1");
    let mut stream = connect(server.addr);
    let head = format!(
        "POST /api/v1/setup HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"token\":\"",
        server.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let reply = read_response(&mut stream).expect("a response, not a dropped connection");
    let elapsed = started.elapsed();
    reply.problem(408, "request_timeout");
    assert_between("408", elapsed, 900, 4000);
}

/// A setup request with a wrong token, padded with JSON whitespace to exactly `size` bytes.
fn setup_body_of_size(size: usize) -> String {
    let body = r#"{"token":"wrong","email":"a@example.com","password":"long enough"}"#;
    format!("{body}{}", " ".repeat(size - body.len()))
}

fn post_setup(server: &TestServer, content_type: Option<&str>, body: &str) -> Reply {
    let mut request = http()
        .post(server.url("/api/v1/setup"))
        .body(body.to_string());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    send(request)
}

#[test]
fn api_body_over_the_limit_is_413() {
    let server = server_with("LOOKOUT_MAX_API_BODY_BYTES", "2048");
    let json = Some("application/json");
    // At the limit the body is read and judged on its content: the token is wrong.
    let at_limit = post_setup(&server, json, &setup_body_of_size(2048));
    at_limit.problem(401, "invalid_setup_token");
    let over = post_setup(&server, json, &setup_body_of_size(2049));
    over.problem(413, "body_too_large");
}

#[test]
fn wrong_content_type_is_415_and_bad_json_is_400() {
    let server = TestServer::start();
    let valid = setup_body_of_size(90);
    let content_types = [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ];
    for content_type in content_types {
        let reply = post_setup(&server, content_type, &valid);
        reply.problem(415, "unsupported_media_type");
    }
    for body in [
        r#"{"token": "#,
        r#"{"token":"t"}"#,
        r#"{"token":"t"} x"#,
        "[]",
        "",
    ] {
        let reply = post_setup(&server, Some("application/json"), body);
        reply.problem(400, "invalid_payload");
    }
}

#[test]
fn connections_over_the_cap_wait_until_one_closes() {
    let server = server_with("LOOKOUT_MAX_CONNECTIONS", "2");
    let keep_alive = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    let mut held: Vec<TcpStream> = Vec::new();
    for _ in 0..2 {
        let mut stream = connect(server.addr);
        stream.write_all(keep_alive.as_bytes()).unwrap();
        assert_eq!(read_response(&mut stream).unwrap().status, 200);
        held.push(stream);
    }

    let mut third = connect(server.addr);
    third.write_all(&get(server.addr, "/healthz", "")).unwrap();
    set_timeout(&third, 1.5);
    match third.read(&mut [0u8; 1]) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a third connection was served while two were held: {other:?}"),
    }

    drop(held.pop());
    set_timeout(&third, 5.0);
    let reply = read_response(&mut third).expect("served once a connection closes");
    assert_eq!(reply.status, 200);
}
