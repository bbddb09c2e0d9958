//! What the webhook tests share: a server with the short retry schedule, an owner session,
//! and polling helpers (the receiver itself is `receiver.rs`).

#![allow(dead_code)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{Session, add_user, sign_in};
use crate::harness::{TestServer, text, wait_for};
pub(crate) use crate::receiver::{Answer, Receiver};

/// A server that may reach loopback receivers, retrying after 1 s each time.
pub(crate) fn webhook_server(extra: &[(&str, &str)]) -> TestServer {
    let mut builder = TestServer::builder()
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .env("WEBHOOK_RETRY_DELAYS_SECONDS", "1,1,1");
    for (key, value) in extra {
        builder = builder.env(key, value);
    }
    builder.start()
}

/// An owner of the default org, signed in.
pub(crate) fn owner(server: &TestServer) -> Session {
    add_user(server, "owner@example.com", "owner");
    sign_in(server, "owner@example.com")
}

/// Creates a channel and returns its JSON (asserting 201).
pub(crate) fn create_channel(server: &TestServer, session: &Session, body: Value) -> Value {
    let reply = session.post(server, "/api/v1/channels", &body);
    assert_eq!(reply.status, 201, "create channel: {}", text(&reply.body));
    reply.json()
}

/// Presses the Test button; returns the delivery id.
pub(crate) fn send_test(server: &TestServer, session: &Session, channel: &str) -> String {
    let reply = session.post(
        server,
        &format!("/api/v1/channels/{channel}/test"),
        &json!({}),
    );
    assert_eq!(reply.status, 202, "test: {}", text(&reply.body));
    reply.json()["delivery_id"].as_str().unwrap().to_string()
}

pub(crate) fn delivery(server: &TestServer, session: &Session, id: &str) -> Value {
    let reply = session.get(server, &format!("/api/v1/deliveries/{id}"));
    assert_eq!(reply.status, 200, "delivery: {}", text(&reply.body));
    reply.json()
}

/// Polls a delivery until it reaches `state`.
pub(crate) fn wait_state(
    server: &TestServer,
    session: &Session,
    id: &str,
    state: &str,
    deadline: Duration,
) -> Value {
    wait_for(&format!("delivery {id} {state}"), deadline, || {
        let found = delivery(server, session, id);
        (found["state"] == state).then_some(found)
    })
}

pub(crate) fn channel(server: &TestServer, session: &Session, id: &str) -> Value {
    session
        .get(server, &format!("/api/v1/channels/{id}"))
        .json()
}

pub(crate) fn patch(server: &TestServer, session: &Session, path: &str, body: &Value) -> Value {
    let reply = session.write(server, Method::PATCH, path, body);
    assert_eq!(reply.status, 200, "patch: {}", text(&reply.body));
    reply.json()
}
