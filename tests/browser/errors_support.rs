//! What the error tracker's browser tests share: a server that takes browser ingest (an ingest
//! key, an owner and a viewer), telemetry sent the way a browser or CI job sends it, and the
//! public API read back with a signed-in session to check what the UI claims.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{TestServer, http};
use crate::page::{DEADLINE, Page, Query};
use crate::support::{OWNER, PASSWORD};

/// The ingest key of these servers (`WEB_INGEST_KEY`).
pub const KEY: &str = "browser-ingest-key-0001";
pub const VIEWER: &str = "viewer@example.com";
/// The esbuild fixture: a minified bundle's map (with `sourcesContent`) and a V8 stack through it.
pub const MAP: &str = include_str!("../fixtures/sourcemaps/app.min.js.map");
pub const BUNDLE_STACK: &str = include_str!("../fixtures/sourcemaps/stack.txt");
/// The title of the fixture's error group.
pub const BUNDLE_TITLE: &str = "TypeError: Cannot read properties of undefined (reading 'amount')";

/// A server with `KEY` and the `default` organisation with `OWNER` (owner) and `VIEWER` (viewer).
pub fn ingest_server() -> TestServer {
    let server = TestServer::builder().env("WEB_INGEST_KEY", KEY).start();
    server.add_user(OWNER, "owner", PASSWORD);
    server.add_user(VIEWER, "viewer", PASSWORD);
    server
}

/// How many shown elements `query` describes now (0 when there are none: `Page` waits for one).
pub fn count(page: &Page, query: &Query) -> u64 {
    const QUERIES: &str = include_str!("queries.js");
    let spec = serde_json::to_string(query).expect("query as JSON");
    let found = page.eval(&format!("{QUERIES}.findAll({spec}).length"));
    found.as_u64().expect("a count")
}

/// Waits until `check` holds (what is left on a page, or gone from it), for `DEADLINE`.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `POST path` with the ingest key, as a browser SDK (or a CI job) sends it; asserts success.
pub fn ingest(server: &TestServer, path: &str, body: &Value) -> Value {
    let response = http()
        .post(server.url(path))
        .header("x-lookout-key", KEY)
        .json(body)
        .send()
        .expect("ingest request");
    let status = response.status();
    let answer: Value = response.json().expect("ingest answers JSON");
    assert!(status.is_success(), "{path}: {status} {answer}");
    if let Some(rejected) = answer.get("rejected") {
        assert_eq!(rejected, &json!([]), "{path} rejected items");
    }
    answer
}

/// Uploads the fixture map for `release` as the file `/assets/app.min.js`.
pub fn upload_bundle_map(server: &TestServer, release: &str) {
    let upload = json!({"release": release, "file": "/assets/app.min.js", "sourcemap": MAP});
    ingest(server, "/ingest/sourcemaps", &upload);
}

/// The fixture's error as a browser reports it from the minified bundle.
pub fn bundle_error(release: &str) -> Value {
    json!({"level": "error", "name": "TypeError",
        "message": "Cannot read properties of undefined (reading 'amount')",
        "stack": BUNDLE_STACK, "url": "https://shop.example.com/cart", "release": release,
        "environment": "production", "service": "shop", "user_id": "u-1", "tags": {"plan": "pro"}})
}

/// A plain error with its own message (so its own group).
pub fn plain_error(message: &str) -> Value {
    json!({"level": "error", "name": "Error", "message": message,
        "stack": format!("Error: {message}\n    at load (https://shop.example.com/assets/main.js:3:9)"),
        "url": "https://shop.example.com/", "environment": "production", "service": "shop"})
}

pub fn send_errors(server: &TestServer, events: &[Value]) {
    ingest(server, "/ingest/web-errors", &json!({ "events": events }));
}

/// A signed-in API client (session cookie and CSRF token), to check what the UI did.
pub struct ApiSession<'a> {
    server: &'a TestServer,
    cookie: String,
    csrf: String,
}

impl<'a> ApiSession<'a> {
    pub fn sign_in(server: &'a TestServer, email: &str) -> ApiSession<'a> {
        let response = http()
            .post(server.url("/api/v1/auth/login"))
            .json(&json!({"email": email, "password": PASSWORD}))
            .send()
            .expect("login request");
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(|value| value.strip_prefix("lookout_session="))
            .and_then(|rest| rest.split(';').next())
            .expect("a session cookie")
            .to_string();
        let body: Value = response.json().expect("login answers JSON");
        let csrf = body["csrf_token"].as_str().expect("csrf_token").to_string();
        ApiSession {
            server,
            cookie,
            csrf,
        }
    }

    pub fn call(&self, method: Method, path: &str) -> reqwest::blocking::RequestBuilder {
        http()
            .request(method, self.server.url(path))
            .header("cookie", format!("lookout_session={}", self.cookie))
            .header("x-csrf-token", &self.csrf)
    }

    /// `GET path`, asserting a 200.
    pub fn get(&self, path: &str) -> Value {
        let response = self.call(Method::GET, path).send().expect("API request");
        let status = response.status();
        let body: Value = response.json().expect("API answers JSON");
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// `POST path` with `body`, asserting a success; answers the JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Value {
        let response = self
            .call(Method::POST, path)
            .json(body)
            .send()
            .expect("API request");
        let status = response.status();
        let answer: Value = response.json().expect("API answers JSON");
        assert!(status.is_success(), "POST {path}: {status} {answer}");
        answer
    }

    /// The id of the error group titled `title` (among the newest 100).
    pub fn group_id(&self, title: &str) -> String {
        let groups = self.get("/api/v1/error-groups?limit=100");
        let items = groups["items"].as_array().expect("items");
        let found = items.iter().find(|group| group["title"] == title);
        let found = found.unwrap_or_else(|| panic!("no group titled {title:?} in {groups}"));
        found["id"].as_str().expect("id").to_string()
    }

    pub fn group_status(&self, id: &str) -> String {
        let group = self.get(&format!("/api/v1/error-groups/{id}"));
        group["status"].as_str().expect("status").to_string()
    }
}
