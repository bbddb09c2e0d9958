//! Webhook delivery against a real receiver: payload, headers and signature over raw bytes;
//! retries on the shortened schedule, the dead-letter queue and its redrive; slow receivers,
//! redirects, 410 Gone, and a stalled receiver beside a healthy one.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use crate::harness::text;
use crate::webhooks_support::*;

const SECRET: &str = "s3cret-signing-key";

#[test]
fn test_button_sends_a_signed_payload_with_every_field_and_header() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let created = create_channel(
        &server,
        &session,
        json!({"name": "ops", "url": receiver.url("/hook"), "signing_secret": SECRET, "events": ["alert.*"]}),
    );
    assert_eq!(created["has_signing_secret"], true);
    assert!(
        created.get("signing_secret").is_none(),
        "secret is write-only"
    );
    assert_eq!(created["kind"], "webhook");
    let channel_id = created["id"].as_str().unwrap();
    assert!(channel_id.starts_with("chn_"));

    let delivery_id = send_test(&server, &session, channel_id);
    assert!(delivery_id.starts_with("dlv_"));
    let request = receiver.wait_for(1, Duration::from_secs(10)).remove(0);

    // The signature is over the raw bytes, before any JSON parsing.
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(&request.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    assert_eq!(
        request.header("x-lookout-signature"),
        Some(expected.as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-lookout-event"), Some("test"));
    assert_eq!(
        request.header("x-lookout-delivery"),
        Some(delivery_id.as_str())
    );
    let user_agent = request.header("user-agent").unwrap();
    assert!(user_agent.starts_with("lookout-webhook/"), "{user_agent}");
    let stamp: i64 = request
        .header("x-lookout-timestamp")
        .unwrap()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - stamp).abs() < 60, "timestamp {stamp} vs {now}");

    let payload = request.json();
    for field in [
        "event",
        "org_id",
        "alert_id",
        "title",
        "body",
        "severity",
        "service",
        "environment",
        "url",
        "timestamp",
    ] {
        assert!(
            payload.get(field).is_some(),
            "{field} missing from {payload}"
        );
    }
    assert_eq!(payload["event"], "test");
    assert!(payload["alert_id"].is_null());
    assert!(payload["org_id"].as_str().unwrap().starts_with("org_"));
    assert!(payload["url"].as_str().unwrap().starts_with("http://"));
    assert!(payload["timestamp"].as_str().unwrap().ends_with('Z'));

    let logged = wait_state(
        &server,
        &session,
        &delivery_id,
        "delivered",
        Duration::from_secs(5),
    );
    assert_eq!(logged["attempts"][0]["status_code"], 200);
    assert_eq!(logged["attempts"][0]["response_snippet"], "ok");
    let log = session.get(
        &server,
        &format!("/api/v1/channels/{channel_id}/deliveries"),
    );
    assert_eq!(log.json()["items"][0]["id"], delivery_id.as_str());
}

#[test]
fn unsigned_channels_send_no_signature_and_filters_are_validated() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    assert_eq!(created["events"], json!(["*"]));
    assert_eq!(created["has_signing_secret"], false);
    send_test(&server, &session, created["id"].as_str().unwrap());
    let request = receiver.wait_for(1, Duration::from_secs(10)).remove(0);
    assert_eq!(request.header("x-lookout-signature"), None);

    for events in [
        json!([]),
        json!(["alert"]),
        json!(["nope.*"]),
        json!(["*.fired"]),
    ] {
        let reply = session.post(
            &server,
            "/api/v1/channels",
            &json!({"url": receiver.url("/"), "events": events}),
        );
        reply.problem(400, "invalid_payload");
    }
}

#[test]
fn a_patch_with_a_null_secret_removes_it_and_an_absent_one_keeps_it() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let body = json!({"url": receiver.url("/"), "signing_secret": SECRET});
    let created = create_channel(&server, &session, body);
    let path = format!("/api/v1/channels/{}", created["id"].as_str().unwrap());
    let kept = patch(&server, &session, &path, &json!({"name": "renamed"}));
    assert_eq!(kept["has_signing_secret"], true, "absent keeps the secret");
    let removed = patch(&server, &session, &path, &json!({"signing_secret": null}));
    assert_eq!(removed["has_signing_secret"], false, "null removes it");
    send_test(&server, &session, created["id"].as_str().unwrap());
    let request = receiver.wait_for(1, Duration::from_secs(10)).remove(0);
    assert_eq!(request.header("x-lookout-signature"), None);
    let wrong = session.write(
        &server,
        reqwest::Method::PATCH,
        &path,
        &json!({"signing_secret": 7}),
    );
    wrong.problem(400, "invalid_payload");
}

#[test]
fn failures_retry_then_dead_letter_and_a_redrive_delivers_with_the_same_id() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::start(|_| Answer::Status(500));
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    let id = send_test(&server, &session, &channel_id);

    // One attempt and three retries (1 s apart here), then the dead-letter queue.
    let dead = wait_state(&server, &session, &id, "dead", Duration::from_secs(20));
    assert_eq!(dead["attempts"].as_array().unwrap().len(), 4, "{dead}");
    assert_eq!(dead["attempts"][3]["status_code"], 500);
    let received = receiver.received();
    assert_eq!(received.len(), 4);
    assert!(
        received
            .iter()
            .all(|r| r.header("x-lookout-delivery") == Some(id.as_str()))
    );
    let gaps: Vec<_> = received.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(
        gaps.iter().all(|gap| *gap >= Duration::from_millis(900)),
        "{gaps:?}"
    );
    assert_eq!(channel(&server, &session, &channel_id)["dead_letters"], 1);
    let listed = session.get(&server, "/api/v1/deliveries/dead").json();
    assert_eq!(listed["items"][0]["id"], id.as_str());

    receiver.set_script(|_| Answer::Status(204));
    let reply = session.post(
        &server,
        &format!("/api/v1/deliveries/{id}/retry"),
        &json!({}),
    );
    assert_eq!(reply.status, 202, "{}", text(&reply.body));
    let delivered = wait_state(&server, &session, &id, "delivered", Duration::from_secs(10));
    assert_eq!(delivered["attempts"].as_array().unwrap().len(), 5);
    let last = receiver.received().pop().unwrap();
    assert_eq!(last.header("x-lookout-delivery"), Some(id.as_str()));
    assert_eq!(channel(&server, &session, &channel_id)["dead_letters"], 0);
    // A delivered delivery is not in the dead-letter queue: retrying it is refused.
    let again = session.post(
        &server,
        &format!("/api/v1/deliveries/{id}/retry"),
        &json!({}),
    );
    again.problem(409, "delivery_not_dead");
}

#[test]
fn dead_letters_of_a_channel_are_redriven_all_at_once() {
    let server = webhook_server(&[("WEBHOOK_RETRY_DELAYS_SECONDS", "1")]);
    let session = owner(&server);
    let receiver = Receiver::start(|_| Answer::Status(503));
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = (0..3)
        .map(|_| send_test(&server, &session, &channel_id))
        .collect();
    for id in &ids {
        wait_state(&server, &session, id, "dead", Duration::from_secs(15));
    }
    assert_eq!(channel(&server, &session, &channel_id)["dead_letters"], 3);
    receiver.set_script(|_| Answer::Status(200));
    let path = format!("/api/v1/channels/{channel_id}/deliveries/dead/retry");
    let reply = session.post(&server, &path, &json!({}));
    assert_eq!(reply.status, 202, "{}", text(&reply.body));
    assert_eq!(reply.json()["retried"], 3);
    for id in &ids {
        wait_state(&server, &session, id, "delivered", Duration::from_secs(10));
    }
}

#[test]
fn the_dead_letter_queue_keeps_one_channel_s_when_asked() {
    let server = webhook_server(&[("WEBHOOK_RETRY_DELAYS_SECONDS", "1")]);
    let session = owner(&server);
    let receiver = Receiver::start(|_| Answer::Status(503));
    let channels: Vec<String> = (0..2)
        .map(|_| {
            let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
            created["id"].as_str().unwrap().to_string()
        })
        .collect();
    let ids: Vec<String> = channels
        .iter()
        .map(|channel| send_test(&server, &session, channel))
        .collect();
    for id in &ids {
        wait_state(&server, &session, id, "dead", Duration::from_secs(15));
    }
    let dead = |query: &str| session.get(&server, &format!("/api/v1/deliveries/dead{query}"));
    assert_eq!(dead("").json()["items"].as_array().unwrap().len(), 2);
    for (channel, id) in channels.iter().zip(&ids) {
        let items = dead(&format!("?channel={channel}")).json()["items"].clone();
        assert_eq!(items.as_array().unwrap().len(), 1, "{items}");
        assert_eq!(items[0]["id"], id.as_str());
    }
    dead("?channel=chn_01J00000000000000000000000").problem(404, "not_found");
    dead("?channel=nope").problem(400, "invalid_parameter");
}

#[test]
fn the_delivery_log_reads_newest_first_when_asked() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = (0..3)
        .map(|_| send_test(&server, &session, &channel_id))
        .collect();
    let log = |query: &str| {
        let path = format!("/api/v1/channels/{channel_id}/deliveries?{query}");
        let body = session.get(&server, &path).json();
        let items = body["items"].as_array().unwrap().clone();
        let id = |item: &serde_json::Value| item["id"].as_str().unwrap().to_string();
        let next = body["next_cursor"].as_str().map(String::from);
        (items.iter().map(id).collect::<Vec<_>>(), next)
    };
    let newest: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(log("order=newest").0, newest);
    assert_eq!(log("").0, ids);
    let (first, next) = log("order=newest&limit=2");
    assert_eq!(first, newest[..2]);
    let cursor = next.expect("a next page");
    let rest = log(&format!("order=newest&limit=2&cursor={cursor}"));
    assert_eq!(rest, (vec![ids[0].clone()], None));
    let path = format!("/api/v1/channels/{channel_id}/deliveries?order=sideways");
    session
        .get(&server, &path)
        .problem(400, "invalid_parameter");
}

#[test]
fn a_slow_receiver_counts_as_a_failure_and_a_redirect_is_not_followed() {
    let server = webhook_server(&[("WEBHOOK_TIMEOUT_SECONDS", "1")]);
    let session = owner(&server);
    let slow = Receiver::start(|_| Answer::Stall(Duration::from_secs(3)));
    let created = create_channel(&server, &session, json!({"url": slow.url("/")}));
    let id = send_test(&server, &session, created["id"].as_str().unwrap());
    let found = wait_for_attempts(&server, &session, &id, 1);
    let attempt = &found["attempts"][0];
    assert!(attempt["status_code"].is_null(), "{attempt}");
    assert!(
        attempt["error"]
            .as_str()
            .unwrap()
            .contains("WEBHOOK_TIMEOUT_SECONDS")
    );
    assert!(attempt["duration_ms"].as_u64().unwrap() < 2500, "{attempt}");
    assert_eq!(found["state"], "pending", "a timeout is retried");

    let target = Receiver::ok();
    let redirecting = Receiver::start({
        let location = target.url("/elsewhere");
        move |_| Answer::Redirect(location.clone())
    });
    let created = create_channel(&server, &session, json!({"url": redirecting.url("/")}));
    let id = send_test(&server, &session, created["id"].as_str().unwrap());
    let found = wait_for_attempts(&server, &session, &id, 1);
    assert_eq!(found["attempts"][0]["status_code"], 302);
    assert_eq!(
        found["state"], "pending",
        "a redirect is a failure, retried"
    );
    assert!(target.received().is_empty(), "the redirect was followed");
}

fn wait_for_attempts(
    server: &crate::harness::TestServer,
    session: &crate::auth_support::Session,
    id: &str,
    count: usize,
) -> serde_json::Value {
    crate::harness::wait_for("attempts", Duration::from_secs(10), || {
        let found = delivery(server, session, id);
        (found["attempts"].as_array().unwrap().len() >= count).then_some(found)
    })
}

#[test]
fn gone_disables_the_channel_and_shows_why() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::start(|_| Answer::Status(410));
    let created = create_channel(&server, &session, json!({"url": receiver.url("/")}));
    let channel_id = created["id"].as_str().unwrap().to_string();
    let id = send_test(&server, &session, &channel_id);
    let dead = wait_state(&server, &session, &id, "dead", Duration::from_secs(10));
    assert_eq!(
        dead["attempts"].as_array().unwrap().len(),
        1,
        "410 is not retried"
    );
    let disabled = channel(&server, &session, &channel_id);
    assert_eq!(disabled["enabled"], false);
    assert!(
        disabled["disabled_reason"]
            .as_str()
            .unwrap()
            .contains("410")
    );
    let reply = session.post(
        &server,
        &format!("/api/v1/channels/{channel_id}/test"),
        &json!({}),
    );
    reply.problem(409, "channel_disabled");
    let enabled = patch(
        &server,
        &session,
        &format!("/api/v1/channels/{channel_id}"),
        &json!({"enabled": true}),
    );
    assert!(enabled["disabled_reason"].is_null());
}

#[test]
fn a_stalled_receiver_does_not_delay_a_healthy_one() {
    let server = webhook_server(&[("WEBHOOK_TIMEOUT_SECONDS", "10")]);
    let session = owner(&server);
    let stalled = Receiver::start(|_| Answer::Stall(Duration::from_secs(8)));
    let healthy = Receiver::ok();
    let stalled_channel = create_channel(&server, &session, json!({"url": stalled.url("/")}));
    let healthy_channel = create_channel(&server, &session, json!({"url": healthy.url("/")}));
    let cap = lookout::notify::worker::PER_DESTINATION;
    for _ in 0..cap + 4 {
        send_test(&server, &session, stalled_channel["id"].as_str().unwrap());
    }
    stalled.wait_for(1, Duration::from_secs(5));
    let started = std::time::Instant::now();
    send_test(&server, &session, healthy_channel["id"].as_str().unwrap());
    healthy.wait_for(1, Duration::from_secs(5));
    let latency = started.elapsed();
    assert!(
        latency < Duration::from_millis(1000),
        "healthy delivery took {latency:?}"
    );
    assert!(
        stalled.received().len() <= cap,
        "per-destination cap exceeded"
    );
}
