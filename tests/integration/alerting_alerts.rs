//! Alerts from external monitoring: the generic body and a real Alertmanager (version 4)
//! payload, deduplicated so a repeated firing updates one alert and a resolution resolves it;
//! `alert.fired`, `alert.resolved` and `alert.acknowledged` (once) at a real receiver.

use std::time::Duration;

use serde_json::{Value, json};

use crate::alerting_support::*;
use crate::harness::text;
use crate::webhooks_support::{Receiver, create_channel, owner, webhook_server};

/// What Alertmanager POSTs to a webhook receiver (its documented version 4 shape).
fn alertmanager_body(status: &str) -> Value {
    json!({
        "version": "4",
        "groupKey": "{}:{alertname=\"HighErrorRate\"}",
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "lookout",
        "groupLabels": {"alertname": "HighErrorRate"},
        "commonLabels": {"alertname": "HighErrorRate", "severity": "critical"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example.com:9093",
        "alerts": [{
            "status": status,
            "labels": {"alertname": "HighErrorRate", "severity": "critical",
                       "service": "checkout", "environment": "production",
                       "instance": "10.0.0.7:9100"},
            "annotations": {"summary": "5xx above 5%", "description": "checkout returns 7% 5xx"},
            "startsAt": "2026-11-22T12:00:00.000Z",
            "endsAt": if status == "resolved" { "2026-11-22T12:10:00.000Z" } else { "0001-01-01T00:00:00Z" },
            "generatorURL": "http://prometheus.example.com/graph?g0.expr=rate",
            "fingerprint": "b4e2a1c9d7f30e15"
        }]
    })
}

fn events(receiver: &Receiver, count: usize) -> Vec<Value> {
    receiver
        .wait_for(count, Duration::from_secs(10))
        .iter()
        .map(|request| request.json())
        .collect()
}

#[test]
fn generic_alerts_deduplicate_resolve_and_are_acknowledged_once() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let channel = create_channel(
        &server,
        &session,
        json!({"url": receiver.url("/hook"), "events": ["alert.*"]}),
    );
    let channel = channel["id"].as_str().unwrap().to_string();
    let token = inbound_secret(&server, &session, "alerts");
    let path = "/api/v1/alerts/webhook";
    let firing = json!({"title": "Queue backlog", "body": "12k jobs waiting", "severity": "high",
        "service": "worker", "environment": "production", "status": "firing",
        "dedup_key": "queue-backlog"});
    let first = post_inbound(&server, path, &token, &firing);
    assert_eq!(first.status, 200, "{}", text(&first.body));
    let first = first.json();
    assert_eq!(first["fired"], 1);
    let alert = first["items"][0].clone();
    let id = alert["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("alr_"), "{id}");
    assert_eq!(alert["state"], "firing");

    // The same firing again updates the one alert.
    let again = post_inbound(&server, path, &token, &firing).json();
    assert_eq!(
        (again["fired"].clone(), again["updated"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(again["items"][0]["id"], id.as_str());

    let ack_path = format!("/api/v1/alerts/{id}/acknowledge");
    let acked = session.post(&server, &ack_path, &json!({}));
    assert_eq!(acked.status, 200, "{}", text(&acked.body));
    let acked = acked.json();
    assert_eq!(acked["acknowledged_by"], session.user_id().as_str());
    let at = acked["acknowledged_at"].clone();
    assert!(at.is_string());
    let twice = session.post(&server, &ack_path, &json!({})).json();
    assert_eq!(twice["acknowledged_at"], at, "acknowledged once");

    let mut resolved = firing.clone();
    resolved["status"] = json!("resolved");
    let done = post_inbound(&server, path, &token, &resolved).json();
    assert_eq!(done["resolved"], 1);
    assert_eq!(done["items"][0]["state"], "resolved");
    // A resolution for nothing firing is ignored.
    let stray = post_inbound(&server, path, &token, &resolved).json();
    assert_eq!(stray["ignored"], 1);

    let received = events(&receiver, 3);
    let names: Vec<&str> = received
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["alert.acknowledged", "alert.fired", "alert.resolved"],
        "{names:?}"
    );
    for event in &received {
        assert_eq!(event["alert_id"], id.as_str());
        assert_eq!(event["service"], "worker");
        assert_eq!(event["severity"], "high");
    }
    let log = session
        .get(&server, &format!("/api/v1/channels/{channel}/deliveries"))
        .json();
    assert_eq!(log["items"].as_array().unwrap().len(), 3, "{log}");

    let read = session.get(&server, &format!("/api/v1/alerts/{id}")).json();
    let history: Vec<&str> = read["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["fired", "acknowledged", "resolved"]);

    // Firing again after the resolution raises a new alert.
    let refired = post_inbound(&server, path, &token, &firing).json();
    assert_eq!(refired["fired"], 1);
    assert_ne!(refired["items"][0]["id"], id.as_str());
    let firing_now = session.get(&server, "/api/v1/alerts?state=firing").json();
    assert_eq!(firing_now["items"].as_array().unwrap().len(), 1);
    let all = session.get(&server, "/api/v1/alerts").json();
    assert_eq!(all["items"].as_array().unwrap().len(), 2);

    let bad = post_inbound(
        &server,
        path,
        &token,
        &json!({"title": "x", "severity": "loud", "status": "firing"}),
    );
    assert_eq!((bad.status, code(&bad)), (400, "invalid_payload".into()));
}

#[test]
fn alertmanager_payloads_fire_and_resolve_by_fingerprint() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    create_channel(
        &server,
        &session,
        json!({"url": receiver.url("/hook"), "events": ["alert.fired", "alert.resolved"]}),
    );
    let token = inbound_secret(&server, &session, "alerts");
    let path = "/api/v1/alerts/webhook";

    // Alertmanager cannot add a custom header to webhook requests: the query carries the token.
    let fired = post_inbound_query(&server, path, &token, &alertmanager_body("firing"));
    assert_eq!(fired.status, 200, "{}", text(&fired.body));
    let alert = fired.json()["items"][0].clone();
    assert_eq!(alert["source"], "alertmanager");
    assert_eq!(alert["title"], "5xx above 5%");
    assert_eq!(alert["body"], "checkout returns 7% 5xx");
    assert_eq!(alert["severity"], "critical");
    assert_eq!(alert["service"], "checkout");
    assert_eq!(alert["environment"], "production");
    assert_eq!(alert["labels"]["instance"], "10.0.0.7:9100");
    // repeat_interval resends the firing alert: still one alert.
    let repeat = post_inbound_query(&server, path, &token, &alertmanager_body("firing")).json();
    assert_eq!(repeat["updated"], 1);
    let resolved = post_inbound_query(&server, path, &token, &alertmanager_body("resolved")).json();
    assert_eq!(resolved["resolved"], 1);
    assert_eq!(resolved["items"][0]["id"], alert["id"]);

    let received = events(&receiver, 2);
    let mut names: Vec<&str> = received
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["alert.fired", "alert.resolved"]);

    // A deployments token is refused here.
    let deployments = inbound_secret(&server, &session, "deployments");
    let refused = post_inbound(&server, path, &deployments, &alertmanager_body("firing"));
    assert_eq!(
        (refused.status, code(&refused)),
        (403, "wrong_token_kind".into())
    );
    let mut old = alertmanager_body("firing");
    old["version"] = json!("3");
    let old = post_inbound(&server, path, &token, &old);
    assert_eq!((old.status, code(&old)), (400, "invalid_payload".into()));
}
