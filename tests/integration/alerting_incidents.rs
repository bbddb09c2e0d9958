//! Incidents by hand: open, change, note, resolve, each with its timeline entry and exactly
//! its outbound event at a real receiver; no-op changes record and send nothing; viewers read
//! but cannot change.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::alerting_support::code;
use crate::auth_support::{add_user, sign_in};
use crate::harness::text;
use crate::webhooks_support::{Receiver, create_channel, owner, webhook_server};

fn kinds(incident: &Value) -> Vec<String> {
    incident["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lifecycle_records_a_timeline_and_emits_exactly_its_events() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let channel = create_channel(
        &server,
        &session,
        json!({"url": receiver.url("/hook"), "events": ["incident.*"]}),
    );
    let channel = channel["id"].as_str().unwrap().to_string();

    let opened = session.post(
        &server,
        "/api/v1/incidents",
        &json!({"title": "Checkout failing", "severity": "critical", "service": "checkout",
                "environment": "production"}),
    );
    assert_eq!(opened.status, 201, "{}", text(&opened.body));
    let opened = opened.json();
    let id = opened["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("inc_"), "{id}");
    assert_eq!(opened["status"], "open");
    assert!(opened["resolved_at"].is_null());
    assert_eq!(opened["alert_ids"], json!([]));
    assert_eq!(kinds(&opened), ["opened"]);

    let path = format!("/api/v1/incidents/{id}");
    let patched = session.write(&server, Method::PATCH, &path, &json!({"severity": "high"}));
    assert_eq!(patched.status, 200, "{}", text(&patched.body));
    let patched = patched.json();
    assert_eq!(patched["severity"], "high");
    let change = &patched["timeline"][1]["changes"][0];
    assert_eq!(
        (&change["field"], &change["from"], &change["to"]),
        (&json!("severity"), &json!("critical"), &json!("high"))
    );

    // The same value again changes nothing: no entry, no event.
    let same = session.write(&server, Method::PATCH, &path, &json!({"severity": "high"}));
    assert_eq!(kinds(&same.json()), ["opened", "updated"]);

    let noted = session.post(
        &server,
        &format!("{path}/notes"),
        &json!({"text": "Rolled back to 1.4.1"}),
    );
    assert_eq!(noted.status, 201, "{}", text(&noted.body));
    assert_eq!(noted.json()["timeline"][2]["text"], "Rolled back to 1.4.1");

    let resolved = session.post_empty(&server, &format!("{path}/resolve"));
    assert_eq!(resolved.status, 200, "{}", text(&resolved.body));
    let resolved = resolved.json();
    assert_eq!(resolved["status"], "resolved");
    assert!(resolved["resolved_at"].is_string());
    // Resolving again is accepted and changes nothing.
    let twice = session.post_empty(&server, &format!("{path}/resolve"));
    assert_eq!(twice.status, 200);
    assert_eq!(
        kinds(&twice.json()),
        ["opened", "updated", "note", "resolved"]
    );

    let read = session.get(&server, &path).json();
    assert_eq!(kinds(&read), ["opened", "updated", "note", "resolved"]);
    for entry in read["timeline"].as_array().unwrap() {
        assert_eq!(entry["actor_id"], session.user_id().as_str());
        assert!(entry["at"].is_string());
    }

    let requests = receiver.wait_for(4, Duration::from_secs(10));
    let mut events: Vec<String> = requests
        .iter()
        .map(|r| r.json()["event"].as_str().unwrap().to_string())
        .collect();
    events.sort();
    assert_eq!(
        events,
        [
            "incident.opened",
            "incident.resolved",
            "incident.updated",
            "incident.updated"
        ]
    );
    for request in &requests {
        let payload = request.json();
        assert_eq!(payload["incident_id"], id.as_str());
        assert_eq!(payload["service"], "checkout");
        assert!(payload["url"].as_str().unwrap().ends_with(&id));
    }
    // Every event was enqueued with its change, so the log is complete now: four, not six.
    let log = session
        .get(&server, &format!("/api/v1/channels/{channel}/deliveries"))
        .json();
    assert_eq!(log["items"].as_array().unwrap().len(), 4, "{log}");

    let list = session
        .get(&server, "/api/v1/incidents?status=resolved")
        .json();
    assert_eq!(list["items"][0]["id"], id.as_str());
    let open = session.get(&server, "/api/v1/incidents?status=open").json();
    assert_eq!(open["items"], json!([]));
}

#[test]
fn viewers_read_members_change_and_bad_input_is_refused() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let opened = session.post(
        &server,
        "/api/v1/incidents",
        &json!({"title": "Slow search"}),
    );
    assert_eq!(opened.status, 201, "{}", text(&opened.body));
    let id = opened.json()["id"].as_str().unwrap().to_string();
    assert_eq!(opened.json()["severity"], "high", "default severity");

    add_user(&server, "viewer@example.com", "viewer");
    let viewer = sign_in(&server, "viewer@example.com");
    assert_eq!(
        viewer
            .get(&server, &format!("/api/v1/incidents/{id}"))
            .status,
        200
    );
    let refused = viewer.post(&server, "/api/v1/incidents", &json!({"title": "x"}));
    assert_eq!((refused.status, code(&refused)), (403, "forbidden".into()));

    add_user(&server, "member@example.com", "member");
    let member = sign_in(&server, "member@example.com");
    let note = member.post(
        &server,
        &format!("/api/v1/incidents/{id}/notes"),
        &json!({"text": "looking"}),
    );
    assert_eq!(note.status, 201, "{}", text(&note.body));

    let bad = session.post(
        &server,
        "/api/v1/incidents",
        &json!({"title": "x", "severity": "apocalyptic"}),
    );
    assert_eq!((bad.status, code(&bad)), (400, "invalid_payload".into()));
    let missing = session.get(&server, "/api/v1/incidents/inc_01JAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(missing.status, 404);
    let garbage = session.get(&server, "/api/v1/incidents/nope");
    assert_eq!(garbage.status, 404);

    // Reopening through PATCH.
    let path = format!("/api/v1/incidents/{id}");
    let resolved = session.write(
        &server,
        Method::PATCH,
        &path,
        &json!({"status": "resolved"}),
    );
    assert_eq!(resolved.json()["status"], "resolved");
    let reopened = session.write(&server, Method::PATCH, &path, &json!({"status": "open"}));
    let reopened = reopened.json();
    assert_eq!(reopened["status"], "open");
    assert!(reopened["resolved_at"].is_null());
    assert_eq!(kinds(&reopened), ["opened", "note", "resolved", "reopened"]);
}
