//! Webhook destinations and the queue's durability: every private spelling refused at channel
//! creation, the send-time check on the address actually connected to, deliveries due across
//! a restart, and a `kill -9` with deliveries queued and in flight (none lost; duplicates only
//! with the same delivery id).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;

use crate::auth_support::server;
use crate::harness::{TestServer, text, wait_for};
use crate::webhooks_support::*;

#[test]
fn private_destinations_are_refused_in_every_spelling() {
    let server = server(&[]);
    let session = owner(&server);
    let refused = [
        "http://127.0.0.1:9/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::1]/",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://metadata.google.internal/",
    ];
    for url in refused {
        let reply = session.post(&server, "/api/v1/channels", &json!({"url": url}));
        let problem = reply.problem(400, "destination_refused");
        assert!(
            problem["detail"].as_str().unwrap().contains("url"),
            "{problem}"
        );
    }
    for url in ["ftp://example.com/", "file:///etc/passwd", "not a url"] {
        let reply = session.post(&server, "/api/v1/channels", &json!({"url": url}));
        reply.problem(400, "invalid_payload");
    }
    let listed = session.get(&server, "/api/v1/channels").json();
    assert_eq!(listed["items"], json!([]), "nothing refused was stored");
}

#[test]
fn the_address_connected_to_is_checked_at_send_time() {
    // Saved while private destinations were allowed, then sent after they no longer are: the
    // send-time check (on the resolved address) refuses it, and the receiver sees nothing.
    let receiver = Receiver::ok();
    let mut server = webhook_server(&[]);
    let session = owner(&server);
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    server.terminate(Duration::from_secs(15));
    let mut strict = TestServer::builder()
        .data_dir(&server.data_dir)
        .env("WEBHOOK_RETRY_DELAYS_SECONDS", "1,1,1")
        .start();
    let session = crate::auth_support::sign_in(&strict, "owner@example.com");
    let id = send_test(&strict, &session, &channel_id);
    let found = wait_for("refused attempt", Duration::from_secs(10), || {
        let found = delivery(&strict, &session, &id);
        (!found["attempts"].as_array().unwrap().is_empty()).then_some(found)
    });
    let error = found["attempts"][0]["error"].as_str().unwrap();
    assert!(error.contains("destination refused"), "{error}");
    assert!(receiver.received().is_empty());
    strict.kill9();
}

#[test]
fn deliveries_due_before_a_restart_are_sent_after_it() {
    let receiver = Receiver::start(|n| Answer::Status(if n == 0 { 500 } else { 200 }));
    let mut server = webhook_server(&[("WEBHOOK_RETRY_DELAYS_SECONDS", "3")]);
    let session = owner(&server);
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let id = send_test(&server, &session, created["id"].as_str().unwrap());
    receiver.wait_for(1, Duration::from_secs(10));
    wait_for("retry scheduled", Duration::from_secs(5), || {
        let found = delivery(&server, &session, &id);
        (found["attempts"].as_array().unwrap().len() == 1).then_some(())
    });
    server.restart();
    let session = crate::auth_support::sign_in(&server, "owner@example.com");
    let delivered = wait_state(&server, &session, &id, "delivered", Duration::from_secs(15));
    assert_eq!(delivered["attempts"].as_array().unwrap().len(), 2);
    let received = receiver.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1].header("x-lookout-delivery"), Some(id.as_str()));
}

#[test]
fn kill_9_with_deliveries_queued_and_in_flight_loses_none() {
    // A receiver slow enough that the kill lands with attempts in flight and more queued.
    let receiver = Receiver::start(|_| Answer::Stall(Duration::from_millis(200)));
    let mut server = webhook_server(&[]);
    let session = owner(&server);
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    let ids: HashSet<String> = (0..30)
        .map(|_| send_test(&server, &session, &channel_id))
        .collect();
    receiver.wait_for(2, Duration::from_secs(10));
    server.kill9();
    let before = receiver.received().len();
    assert!(
        before < ids.len(),
        "the kill came too late to test anything"
    );
    server.restart();
    let seen = wait_for("every delivery received", Duration::from_secs(60), || {
        let seen: HashSet<String> = receiver
            .received()
            .iter()
            .filter_map(|r| r.header("x-lookout-delivery").map(str::to_string))
            .collect();
        (seen.len() >= ids.len()).then_some(seen)
    });
    assert_eq!(
        seen, ids,
        "only emitted delivery ids arrive, each at least once"
    );
    let session = crate::auth_support::sign_in(&server, "owner@example.com");
    for id in &ids {
        wait_state(&server, &session, id, "delivered", Duration::from_secs(10));
    }
    let log = session.get(
        &server,
        &format!("/api/v1/channels/{channel_id}/deliveries?limit=500"),
    );
    assert_eq!(log.status, 200, "{}", text(&log.body));
    assert_eq!(log.json()["items"].as_array().unwrap().len(), ids.len());
}
