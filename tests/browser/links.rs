//! Every link the product sends opens a real page: the `url` of each webhook payload kind
//! (a channel's test, an alert, an incident, a deployment), taken from real deliveries to a
//! receiver, and the invitation link a new member is given.

use std::time::Duration;

use serde_json::{Value, json};

use crate::errors_support::ApiSession;
use crate::harness::TestServer;
use crate::page::{Page, Query};
use crate::receiver::Receiver;
use crate::support::{OWNER, PASSWORD, owner_page, post_inbound};

/// Makes an inbound token of `kind` and posts `body` to `path` with it, as an external system would.
fn inbound(server: &TestServer, api: &ApiSession, kind: &str, path: &str, body: Value) -> Value {
    let token = api.post(
        "/api/v1/orgs/me/inbound-tokens",
        &json!({"kind": kind, "name": format!("{kind} sender")}),
    );
    post_inbound(server, path, token["token"].as_str().expect("token"), &body)
}

/// The payload `url` of the first delivery of `event` the receiver got.
fn url_of(received: &[crate::receiver::Received], event: &str) -> String {
    let delivery = received
        .iter()
        .find(|request| request.header("x-lookout-event") == Some(event))
        .unwrap_or_else(|| panic!("no {event} delivery"));
    delivery.json()["url"].as_str().expect("url").to_string()
}

#[test]
fn every_payload_url_and_the_invitation_link_open_their_page() {
    let server = TestServer::builder()
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .start();
    server.add_user(OWNER, "owner", PASSWORD);
    let api = ApiSession::sign_in(&server, OWNER);
    let receiver = Receiver::ok();
    let channel = api.post(
        "/api/v1/channels",
        &json!({"name": "Team chat", "kind": "webhook", "url": receiver.url("/hook"), "events": ["*"]}),
    );
    let channel_id = channel["id"].as_str().expect("id");

    api.post(&format!("/api/v1/channels/{channel_id}/test"), &json!({}));
    inbound(
        &server,
        &api,
        "deployments",
        "/api/v1/deployments/webhook",
        json!({"service": "shop", "environment": "production", "version": "2026.11.25", "status": "started"}),
    );
    inbound(
        &server,
        &api,
        "alerts",
        "/api/v1/alerts/webhook",
        json!({"title": "Disk almost full", "severity": "high", "status": "firing"}),
    );
    api.post(
        "/api/v1/incidents",
        &json!({"title": "Checkout is down", "severity": "critical"}),
    );
    let invited = api.post(
        "/api/v1/orgs/me/members",
        &json!({"email": "new@example.com", "role": "member"}),
    );

    let received = receiver.wait_for(4, Duration::from_secs(30));
    let base = server.url("");
    let pages = [
        ("test", "Channel: Team chat"),
        ("deployment.started", "Deployment: 2026.11.25"),
        ("alert.fired", "Alert: Disk almost full"),
        ("incident.opened", "Incident: Checkout is down"),
    ];
    let page = owner_page(&server);
    for (event, heading) in pages {
        let url = url_of(&received, event);
        let path = url
            .strip_prefix(&base)
            .unwrap_or_else(|| panic!("{url} is not under {base}"));
        page.goto(path);
        page.wait(&Query::heading(1, heading));
    }

    // The invitation link, opened in a browser that has never signed in.
    let invite_url = invited["invite_url"].as_str().expect("invite_url");
    let path = invite_url.strip_prefix(&base).expect("under the base URL");
    let stranger = Page::open(&server);
    stranger.goto(path);
    stranger.wait(&Query::heading(1, "Accept an invitation"));
    stranger.wait(&Query::heading(2, "Choose a password"));
}
