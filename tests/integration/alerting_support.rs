//! What the alerting tests share: a server that may deliver to loopback receivers, an owner
//! session, inbound tokens made through the API, and inbound requests carrying a token in the
//! header or the query.

#![allow(dead_code)]

use serde_json::{Value, json};

use crate::auth_support::Session;
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

/// Creates an inbound token of `kind` and returns the 201 body.
pub(crate) fn create_inbound_token(server: &TestServer, session: &Session, kind: &str) -> Value {
    let body = json!({"kind": kind, "name": format!("{kind} sender")});
    let reply = session.post(server, "/api/v1/orgs/me/inbound-tokens", &body);
    assert_eq!(reply.status, 201, "create token: {}", text(&reply.body));
    reply.json()
}

/// The secret of a new inbound token of `kind`.
pub(crate) fn inbound_secret(server: &TestServer, session: &Session, kind: &str) -> String {
    create_inbound_token(server, session, kind)["token"]
        .as_str()
        .expect("token")
        .to_string()
}

/// `POST path` with `body` and the token in `X-Lookout-Token` (no cookie, no CSRF header).
pub(crate) fn post_inbound(server: &TestServer, path: &str, token: &str, body: &Value) -> Reply {
    let request = http().post(server.url(path)).json(body);
    send(request.header("x-lookout-token", token))
}

/// `POST path?token=…` with `body`, as senders that cannot set headers do.
pub(crate) fn post_inbound_query(
    server: &TestServer,
    path: &str,
    token: &str,
    body: &Value,
) -> Reply {
    let url = format!("{}?token={token}", server.url(path));
    send(http().post(url).json(body))
}

/// The problem `code` of a reply.
pub(crate) fn code(reply: &Reply) -> String {
    reply.json()["code"].as_str().unwrap_or("").to_string()
}
