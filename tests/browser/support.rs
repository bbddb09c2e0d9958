//! What browser tests share: a server with an owner, and a page signed in as that owner
//! through the sign-in form, as a person would.

#![allow(dead_code)]

use serde_json::Value;

use crate::harness::{TestServer, http};
use crate::page::{Page, Query};

/// The password of every account these tests create.
pub const PASSWORD: &str = "correct horse battery staple";
pub const OWNER: &str = "owner@example.com";

/// A server whose `default` organisation has `OWNER` (made with `lookout user create`).
pub fn server_with_owner() -> TestServer {
    let server = TestServer::start();
    server.add_user(OWNER, "owner", PASSWORD);
    server
}

/// Fills the sign-in form at `/login` and waits until the app has left it.
pub fn sign_in(page: &Page, email: &str, password: &str) {
    page.wait(&Query::heading(1, "Sign in"));
    page.fill_label("E-mail", email);
    page.fill_label("Password", password);
    page.click_role("button", "Sign in");
    page.wait_url(|path| !path.starts_with("/login"));
}

/// A fresh browser signed in as `OWNER`, on the overview.
pub fn owner_page(server: &TestServer) -> Page {
    let page = Page::open(server);
    page.goto("/login");
    sign_in(&page, OWNER, PASSWORD);
    page
}

/// Posts `body` to an inbound endpoint with `token`; answers the JSON reply.
pub fn post_inbound(server: &TestServer, path: &str, token: &str, body: &Value) -> Value {
    let response = http()
        .post(server.url(path))
        .header("x-lookout-token", token)
        .json(body)
        .send()
        .expect("inbound request");
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.json().expect("JSON")
}
