//! Alert rules through the real server on a one-second evaluation tick: the CRUD API and its
//! limits, the state machine (pending, For, Recovery, a blip, a return during Recovery,
//! restarts in every state), every rule kind, rule channels, incidents opened by rules, and
//! browser-error spike alerts with their cooldown, all observed at a real webhook receiver.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::agents_support::{AgentProcess, enrol, wait_agent};
use crate::alerting_support::code;
use crate::auth_support::{Session, add_user, sign_in};
use crate::harness::{TestServer, text, wait_for};
use crate::ingest_support::{KEY, accepted, post};
use crate::webhooks_support::{Receiver, create_channel, owner};

/// A server evaluating rules every second, with ingest and loopback webhooks allowed.
pub(crate) fn rules_server(extra: &[(&str, &str)]) -> TestServer {
    let mut builder = TestServer::builder()
        .env("WEB_INGEST_KEY", KEY)
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .env("WEBHOOK_RETRY_DELAYS_SECONDS", "1,1,1")
        .env("ALERT_EVAL_INTERVAL_SECONDS", "1")
        .env("API_RATE_PER_MIN", "100000");
    for (name, value) in extra {
        builder = builder.env(name, value);
    }
    builder.start()
}

/// A receiver subscribed to `events` through a new channel; returns it with the channel id.
fn subscribed(
    server: &TestServer,
    session: &Session,
    name: &str,
    events: &[&str],
) -> (Receiver, String) {
    let receiver = Receiver::ok();
    let channel = create_channel(
        server,
        session,
        json!({"name": name, "url": receiver.url("/hook"), "events": events}),
    );
    (receiver, channel["id"].as_str().unwrap().to_string())
}

/// A rules server, its owner, a receiver of `events` and one rule made from `rule`.
struct Scene {
    server: TestServer,
    session: Session,
    receiver: Receiver,
    rule: String,
}

fn scene(events: &[&str], rule: Value) -> Scene {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "receiver", events);
    let rule = create_rule(&server, &session, rule)["id"]
        .as_str()
        .unwrap()
        .to_string();
    Scene {
        server,
        session,
        receiver,
        rule,
    }
}

pub(crate) fn create_rule(server: &TestServer, session: &Session, body: Value) -> Value {
    let reply = session.post(server, "/api/v1/alert-rules", &body);
    assert_eq!(reply.status, 201, "create rule: {}", text(&reply.body));
    reply.json()
}

pub(crate) fn send_errors(server: &TestServer, count: usize, service: &str) {
    let events: Vec<Value> = (0..count)
        .map(|n| {
            json!({"level": "error", "message": format!("checkout failed {n}"),
                "url": "https://shop.example.com/cart", "service": service,
                "environment": "production"})
        })
        .collect();
    accepted(&post(
        server,
        "/ingest/web-errors",
        &json!({"events": events}),
    ));
}

/// The names of the events the receiver has got so far.
fn event_names(receiver: &Receiver) -> Vec<String> {
    receiver
        .received()
        .iter()
        .map(|request| request.header("x-lookout-event").unwrap_or("").to_string())
        .collect()
}

/// Waits until the receiver has seen `name` `count` times; returns those bodies.
fn wait_event(receiver: &Receiver, name: &str, count: usize, deadline: Duration) -> Vec<Value> {
    wait_for(&format!("{count} × {name}"), deadline, || {
        let bodies: Vec<Value> = receiver
            .received()
            .iter()
            .filter(|request| request.header("x-lookout-event") == Some(name))
            .map(|request| request.json())
            .collect();
        (bodies.len() >= count).then_some(bodies)
    })
}

fn alerts(server: &TestServer, session: &Session, query: &str) -> Vec<Value> {
    let reply = session.get(server, &format!("/api/v1/alerts{query}"));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()["items"].as_array().unwrap().clone()
}

pub(crate) fn rule(server: &TestServer, session: &Session, id: &str) -> Value {
    let reply = session.get(server, &format!("/api/v1/alert-rules/{id}"));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()
}

fn wait_rule_state(server: &TestServer, session: &Session, id: &str, state: &str) -> Value {
    wait_for(
        &format!("rule {id} {state}"),
        Duration::from_secs(20),
        || {
            let rule = rule(server, session, id);
            (rule["state"] == state).then_some(rule)
        },
    )
}

#[test]
fn rules_crud_validates_limits_and_roles() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (_receiver, channel) = subscribed(&server, &session, "pager", &["alert.*"]);
    let created = create_rule(
        &server,
        &session,
        json!({"name": "Checkout errors", "kind": "error_count", "service": "checkout",
            "environment": "production", "threshold": 50, "window_seconds": 300,
            "for_seconds": 60, "recovery_seconds": 120, "severity": "critical",
            "channels": [channel], "open_incident": true}),
    );
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("rul_"), "{id}");
    for (field, value) in [
        ("name", json!("Checkout errors")),
        ("kind", json!("error_count")),
        ("service", json!("checkout")),
        ("environment", json!("production")),
        ("threshold", json!(50.0)),
        ("window_seconds", json!(300)),
        ("for_seconds", json!(60)),
        ("recovery_seconds", json!(120)),
        ("severity", json!("critical")),
        ("channels", json!([channel])),
        ("open_incident", json!(true)),
        ("state", json!("inactive")),
    ] {
        assert_eq!(created[field], value, "{field}");
    }
    let defaults = create_rule(
        &server,
        &session,
        json!({"name": "New groups", "kind": "new_error_group"}),
    );
    assert_eq!(defaults["threshold"], 1.0);
    assert_eq!(defaults["window_seconds"], 300);
    assert_eq!(defaults["for_seconds"], 0);
    assert_eq!(defaults["severity"], "warning");
    assert_eq!(defaults["channels"], json!([]));
    assert_eq!(defaults["open_incident"], false);

    let list = session.get(&server, "/api/v1/alert-rules?limit=1");
    assert_eq!(list.status, 200);
    let page = list.json();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["items"][0]["id"], id.as_str());
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_string();
    let next = session.get(
        &server,
        &format!("/api/v1/alert-rules?limit=1&cursor={cursor}"),
    );
    assert_eq!(next.json()["items"][0]["id"], defaults["id"]);
    assert_eq!(next.json()["next_cursor"], Value::Null);

    let patched = session.write(
        &server,
        Method::PATCH,
        &format!("/api/v1/alert-rules/{id}"),
        &json!({"threshold": 75, "service": null}),
    );
    assert_eq!(patched.status, 200, "{}", text(&patched.body));
    let patched = patched.json();
    assert_eq!(patched["threshold"], 75.0);
    assert_eq!(patched["service"], Value::Null);
    assert_eq!(patched["environment"], "production");
    let replaced = session.write(
        &server,
        Method::PUT,
        &format!("/api/v1/alert-rules/{id}"),
        &json!({"name": "Slow spans", "kind": "span_p95_ms", "threshold": 800}),
    );
    assert_eq!(replaced.status, 200, "{}", text(&replaced.body));
    let replaced = replaced.json();
    assert_eq!(replaced["kind"], "span_p95_ms");
    assert_eq!(
        replaced["environment"],
        Value::Null,
        "PUT replaces every field"
    );
    assert_eq!(replaced["created_at"], created["created_at"]);

    // Bad input: each refused with invalid_payload, nothing changed.
    for body in [
        json!({"name": "x", "kind": "cpu", "threshold": 1}),
        json!({"name": "x", "kind": "error_count"}),
        json!({"name": "x", "kind": "error_count", "threshold": 0}),
        json!({"name": "x", "kind": "error_count", "threshold": 1, "window_seconds": 0}),
        json!({"name": "x", "kind": "error_count", "threshold": 1, "window_seconds": 86_401}),
        json!({"name": "x", "kind": "error_count", "threshold": 1, "for_seconds": -1}),
        json!({"name": "x", "kind": "error_count", "threshold": 1, "severity": "urgent"}),
        json!({"name": "x", "kind": "error_count", "threshold": 1, "channels": ["chn_01JD0000000000000000000000"]}),
        json!({"name": "", "kind": "error_count", "threshold": 1}),
        json!({"kind": "error_count", "threshold": 1}),
        json!("not an object"),
    ] {
        let reply = session.post(&server, "/api/v1/alert-rules", &body);
        assert_eq!(reply.status, 400, "{body}: {}", text(&reply.body));
        assert_eq!(code(&reply), "invalid_payload", "{body}");
    }
    let edge = create_rule(
        &server,
        &session,
        json!({"name": "x".repeat(200), "kind": "error_count", "threshold": 1,
            "window_seconds": 86_400, "for_seconds": 86_400, "recovery_seconds": 86_400}),
    );
    assert_eq!(edge["window_seconds"], 86_400);

    // Viewers read; only admins and owners manage rules.
    add_user(&server, "viewer@example.com", "viewer");
    add_user(&server, "member@example.com", "member");
    let viewer = sign_in(&server, "viewer@example.com");
    let member = sign_in(&server, "member@example.com");
    assert_eq!(viewer.get(&server, "/api/v1/alert-rules").status, 200);
    let body = json!({"name": "n", "kind": "new_error_group"});
    for who in [&viewer, &member] {
        let reply = who.post(&server, "/api/v1/alert-rules", &body);
        assert_eq!(reply.status, 403, "{}", text(&reply.body));
        assert_eq!(code(&reply), "forbidden");
        let reply = who.write(
            &server,
            Method::DELETE,
            &format!("/api/v1/alert-rules/{id}"),
            &json!({}),
        );
        assert_eq!(reply.status, 403);
    }

    let deleted = session.write(
        &server,
        Method::DELETE,
        &format!("/api/v1/alert-rules/{id}"),
        &json!({}),
    );
    assert_eq!(deleted.status, 204, "{}", text(&deleted.body));
    let gone = session.get(&server, &format!("/api/v1/alert-rules/{id}"));
    assert_eq!(gone.status, 404);
    assert_eq!(code(&gone), "not_found");
    let unknown = session.get(&server, "/api/v1/alert-rules/not-an-id");
    assert_eq!(unknown.status, 404);
}

#[test]
fn error_count_goes_pending_then_fires_after_for_and_resolves_after_recovery() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "all alerts", &["alert.*"]);
    let rule = create_rule(
        &server,
        &session,
        json!({"name": "Checkout errors", "kind": "error_count", "service": "checkout",
            "threshold": 5, "window_seconds": 8, "for_seconds": 2, "recovery_seconds": 2,
            "severity": "high"}),
    );
    let id = rule["id"].as_str().unwrap();
    // Errors of another service do not count.
    send_errors(&server, 10, "search");
    send_errors(&server, 6, "checkout");
    let pending = wait_rule_state(&server, &session, id, "pending");
    let pending_alerts = alerts(&server, &session, "?state=pending");
    assert_eq!(pending_alerts.len(), 1, "{pending_alerts:?}");
    assert_eq!(pending_alerts[0]["id"], pending["alert_id"]);
    assert!(
        event_names(&receiver).is_empty(),
        "nothing is sent while pending"
    );

    let fired = wait_event(&receiver, "alert.fired", 1, Duration::from_secs(15));
    let fired = &fired[0];
    assert_eq!(fired["event"], "alert.fired");
    assert_eq!(
        fired["alert_id"], pending["alert_id"],
        "the pending alert is the one that fires"
    );
    assert_eq!(fired["title"], "Checkout errors");
    assert_eq!(fired["severity"], "high");
    assert_eq!(fired["service"], "checkout");
    let alert_id = fired["alert_id"].as_str().unwrap().to_string();
    let alert = session
        .get(&server, &format!("/api/v1/alerts/{alert_id}"))
        .json();
    assert_eq!(alert["state"], "firing");
    assert_eq!(alert["source"], "rule");
    assert_eq!(alert["rule_id"], id);

    // Acknowledged once: one event however often it is pressed.
    for _ in 0..2 {
        let reply = session.post_empty(&server, &format!("/api/v1/alerts/{alert_id}/acknowledge"));
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
    }
    wait_event(&receiver, "alert.acknowledged", 1, Duration::from_secs(10));

    // The errors leave the 8 s window; 2 s of Recovery later the alert resolves.
    let resolved = wait_event(&receiver, "alert.resolved", 1, Duration::from_secs(25));
    assert_eq!(resolved[0]["alert_id"], alert_id.as_str());
    wait_rule_state(&server, &session, id, "inactive");
    let alert = session
        .get(&server, &format!("/api/v1/alerts/{alert_id}"))
        .json();
    assert_eq!(alert["state"], "resolved");
    let kinds: Vec<&str> = alert["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pending", "fired", "acknowledged", "resolved"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        event_names(&receiver),
        ["alert.fired", "alert.acknowledged", "alert.resolved"]
    );
}

#[test]
fn a_blip_shorter_than_for_never_fires() {
    let Scene {
        server,
        session,
        receiver,
        rule: id,
    } = scene(
        &["*"],
        json!({"name": "Blip", "kind": "error_count", "threshold": 3, "window_seconds": 2,
            "for_seconds": 30}),
    );
    send_errors(&server, 5, "web");
    wait_rule_state(&server, &session, &id, "pending");
    // The window empties long before For: the pending alert ends silently.
    wait_rule_state(&server, &session, &id, "inactive");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        event_names(&receiver).is_empty(),
        "{:?}",
        event_names(&receiver)
    );
    assert!(
        alerts(&server, &session, "").is_empty(),
        "a cancelled pending alert is gone"
    );
}

#[test]
fn a_condition_returning_during_recovery_keeps_one_firing_alert() {
    let Scene {
        server,
        session,
        receiver,
        rule: id,
    } = scene(
        &["alert.*"],
        json!({"name": "Flapping", "kind": "error_count", "threshold": 3, "window_seconds": 2,
            "recovery_seconds": 6}),
    );
    let id = id.as_str();
    send_errors(&server, 4, "web");
    wait_event(&receiver, "alert.fired", 1, Duration::from_secs(10));
    // Let the window empty (Recovery starts), then bring the condition back inside Recovery.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(rule_state(&server, &session, id), "firing");
    send_errors(&server, 4, "web");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(rule_state(&server, &session, id), "firing");
    wait_event(&receiver, "alert.resolved", 1, Duration::from_secs(25));
    assert_eq!(event_names(&receiver), ["alert.fired", "alert.resolved"]);
    assert_eq!(alerts(&server, &session, "").len(), 1);
}

fn rule_state(server: &TestServer, session: &Session, id: &str) -> String {
    rule(server, session, id)["state"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn restarts_neither_lose_nor_refire_alerts_in_any_state() {
    let mut server = rules_server(&[]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "all alerts", &["alert.*"]);
    // Firing across a restart: the errors stay in its 10-minute window.
    let firing = create_rule(
        &server,
        &session,
        json!({"name": "Firing", "kind": "error_count", "threshold": 3, "window_seconds": 600}),
    );
    // Pending across a restart: For is 6 s from its first true evaluation.
    let pending = create_rule(
        &server,
        &session,
        json!({"name": "Pending", "kind": "error_count", "threshold": 3, "window_seconds": 600,
            "for_seconds": 6}),
    );
    let (firing, pending) = (
        firing["id"].as_str().unwrap().to_string(),
        pending["id"].as_str().unwrap().to_string(),
    );
    send_errors(&server, 4, "web");
    wait_event(&receiver, "alert.fired", 1, Duration::from_secs(10));
    let pending_alert = wait_rule_state(&server, &session, &pending, "pending")["alert_id"].clone();
    let started = Instant::now();

    server.restart();
    let session = owner_again(&server);
    assert_eq!(rule_state(&server, &session, &firing), "firing");
    // The pending rule fires once, with the alert it had before the restart.
    let fired = wait_event(&receiver, "alert.fired", 2, Duration::from_secs(20));
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "For is not cut short by a restart"
    );
    assert_eq!(fired[1]["alert_id"], pending_alert);
    std::thread::sleep(Duration::from_secs(3));
    let fired_count = event_names(&receiver)
        .iter()
        .filter(|name| *name == "alert.fired")
        .count();
    assert_eq!(fired_count, 2, "nothing fires twice after a restart");
    assert_eq!(alerts(&server, &session, "?state=firing").len(), 2);

    // In Recovery across a restart: deleting the errors' window is not possible, so shrink it.
    let reply = session.write(
        &server,
        Method::PATCH,
        &format!("/api/v1/alert-rules/{firing}"),
        &json!({"window_seconds": 1, "recovery_seconds": 4}),
    );
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    std::thread::sleep(Duration::from_secs(2));
    server.restart();
    let session = owner_again(&server);
    let resolved = wait_event(&receiver, "alert.resolved", 1, Duration::from_secs(20));
    assert_eq!(resolved.len(), 1);
    assert_eq!(rule_state(&server, &session, &firing), "inactive");
    assert_eq!(rule_state(&server, &session, &pending), "firing");
}

/// The owner again after a restart (sessions survive, but sign in afresh to be plain).
fn owner_again(server: &TestServer) -> Session {
    sign_in(server, "owner@example.com")
}

#[test]
fn rule_channels_and_incidents_opened_by_rules() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (chosen, chosen_id) = subscribed(&server, &session, "pager", &["*"]);
    let (other, _) = subscribed(&server, &session, "chat", &["*"]);
    let rule = create_rule(
        &server,
        &session,
        json!({"name": "Checkout down", "kind": "error_count", "threshold": 3,
            "window_seconds": 2, "severity": "critical", "channels": [chosen_id],
            "open_incident": true}),
    );
    send_errors(&server, 4, "checkout");
    let fired = wait_event(&chosen, "alert.fired", 1, Duration::from_secs(10));
    let opened = wait_event(&chosen, "incident.opened", 1, Duration::from_secs(10));
    let alert_id = fired[0]["alert_id"].as_str().unwrap().to_string();
    let incident_id = opened[0]["incident_id"].as_str().unwrap().to_string();
    assert_eq!(opened[0]["alert_id"], alert_id.as_str());
    let incident = session
        .get(&server, &format!("/api/v1/incidents/{incident_id}"))
        .json();
    assert_eq!(incident["status"], "open");
    assert_eq!(incident["severity"], "critical");
    assert_eq!(incident["alert_ids"], json!([alert_id]));
    let alert = session
        .get(&server, &format!("/api/v1/alerts/{alert_id}"))
        .json();
    assert_eq!(alert["incident_id"], incident_id.as_str());
    // The alert resolves; the incident stays open for people to close, with a timeline note.
    wait_event(&chosen, "alert.resolved", 1, Duration::from_secs(20));
    let incident = session
        .get(&server, &format!("/api/v1/incidents/{incident_id}"))
        .json();
    assert_eq!(incident["status"], "open");
    let last = incident["timeline"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["kind"], "alert_resolved");
    // Deliveries run in parallel: compare without order.
    let mut names = event_names(&chosen);
    names.sort();
    assert_eq!(names, ["alert.fired", "alert.resolved", "incident.opened"]);
    assert!(event_names(&other).is_empty(), "{:?}", event_names(&other));
    // Deleting a rule that is firing resolves its alert.
    send_errors(&server, 4, "checkout");
    let rule_id = rule["id"].as_str().unwrap();
    wait_rule_state(&server, &session, rule_id, "firing");
    let reply = session.write(
        &server,
        Method::DELETE,
        &format!("/api/v1/alert-rules/{rule_id}"),
        &json!({}),
    );
    assert_eq!(reply.status, 204);
    wait_event(&chosen, "alert.resolved", 2, Duration::from_secs(10));
    assert!(alerts(&server, &session, "?state=firing").is_empty());
}

#[test]
fn new_error_group_and_span_p95_rules_fire_on_their_measures() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "all alerts", &["alert.fired"]);
    // Existing groups before the rule's window matter not: only new ones count.
    let groups = create_rule(
        &server,
        &session,
        json!({"name": "New error", "kind": "new_error_group", "window_seconds": 60,
            "environment": "production"}),
    );
    let slow = create_rule(
        &server,
        &session,
        json!({"name": "Slow checkout", "kind": "span_p95_ms", "service": "checkout",
            "threshold": 400, "window_seconds": 60}),
    );
    let fast = create_rule(
        &server,
        &session,
        json!({"name": "Slow search", "kind": "span_p95_ms", "service": "search",
            "threshold": 400, "window_seconds": 60}),
    );
    let spans = |service: &str, ms: u32, salt: u32| -> Vec<Value> {
        (0..20u32)
            .map(|n| {
                json!({"trace_id": format!("{:032x}", 0xabc000 + salt), "span_id": format!("{:016x}", n + 1),
                    "name": "POST /api/checkout", "start_time": 1_795_348_800_000i64 + i64::from(n),
                    "duration_ms": if n == 0 { 5 } else { ms }, "service": service})
            })
            .collect()
    };
    accepted(&post(
        &server,
        "/ingest/spans",
        &json!({"spans": spans("checkout", 500, 1)}),
    ));
    accepted(&post(
        &server,
        "/ingest/spans",
        &json!({"spans": spans("search", 120, 2)}),
    ));
    send_errors(&server, 1, "web");
    let fired = wait_event(&receiver, "alert.fired", 2, Duration::from_secs(15));
    let titles: std::collections::BTreeSet<&str> = fired
        .iter()
        .map(|body| body["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["New error", "Slow checkout"].into_iter().collect());
    let slow = rule(&server, &session, slow["id"].as_str().unwrap());
    assert_eq!(slow["last_value"], 500.0, "p95 of equal durations is exact");
    assert_eq!(
        rule_state(&server, &session, fast["id"].as_str().unwrap()),
        "inactive"
    );
    assert_eq!(
        rule_state(&server, &session, groups["id"].as_str().unwrap()),
        "firing"
    );
}

#[test]
fn agent_offline_fires_when_an_agent_is_gone_for_the_window() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "all alerts", &["alert.*"]);
    let (token_id, token) = enrol(&server, &session, "db-1");
    let mut agent = AgentProcess::start(&server, &token, &["--no-shell"]);
    wait_agent(&server, &session, &token_id, "agent online", |agent| {
        agent["status"] == "online"
    });
    let rule = create_rule(
        &server,
        &session,
        json!({"name": "Host down", "kind": "agent_offline", "window_seconds": 2,
            "severity": "critical"}),
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        rule_state(&server, &session, rule["id"].as_str().unwrap()),
        "inactive"
    );
    agent.kill9();
    let fired = wait_event(&receiver, "alert.fired", 1, Duration::from_secs(20));
    assert_eq!(fired[0]["title"], "Host down");
    // Back online: the condition clears and the alert resolves.
    let _agent = AgentProcess::start(&server, &token, &["--no-shell"]);
    wait_event(&receiver, "alert.resolved", 1, Duration::from_secs(30));
}

#[test]
fn spike_alerts_fire_once_per_cooldown_to_their_channels_and_resolve() {
    let server = rules_server(&[
        ("WEB_ERROR_ALERTS_ENABLED", "true"),
        ("WEB_ERROR_SPIKE_THRESHOLD", "5"),
        ("WEB_ERROR_SPIKE_WINDOW_SECONDS", "2"),
        ("WEB_ERROR_ALERT_COOLDOWN_SECONDS", "60"),
        ("WEB_ERROR_ALERT_CHANNELS", "oncall"),
    ]);
    let session = owner(&server);
    let (oncall, _) = subscribed(&server, &session, "oncall", &["*"]);
    let (chat, _) = subscribed(&server, &session, "chat", &["*"]);
    // Below the threshold: nothing.
    send_errors(&server, 4, "web");
    std::thread::sleep(Duration::from_secs(3));
    assert!(event_names(&oncall).is_empty());
    send_errors(&server, 5, "web");
    let fired = wait_event(&oncall, "alert.fired", 1, Duration::from_secs(10));
    assert_eq!(fired[0]["title"], "Browser error spike");
    let resolved = wait_event(&oncall, "alert.resolved", 1, Duration::from_secs(15));
    assert_eq!(resolved[0]["alert_id"], fired[0]["alert_id"]);
    // A second spike inside the cooldown raises nothing.
    send_errors(&server, 6, "web");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(event_names(&oncall), ["alert.fired", "alert.resolved"]);
    assert!(
        event_names(&chat).is_empty(),
        "only the configured channel: {:?}",
        event_names(&chat)
    );
    let spikes: Vec<Value> = alerts(&server, &session, "")
        .into_iter()
        .filter(|alert| alert["source"] == "spike")
        .collect();
    assert_eq!(spikes.len(), 1);
}

#[test]
fn spike_alerts_fire_at_ingest_without_waiting_for_a_tick() {
    // An hour between ticks: only ingest's nudge can raise the alert in time.
    let server = rules_server(&[
        ("ALERT_EVAL_INTERVAL_SECONDS", "3600"),
        ("WEB_ERROR_ALERTS_ENABLED", "true"),
        ("WEB_ERROR_SPIKE_THRESHOLD", "5"),
    ]);
    let session = owner(&server);
    let (receiver, _) = subscribed(&server, &session, "oncall", &["alert.*"]);
    // The first tick runs at start; wait it out so it cannot be what fires.
    std::thread::sleep(Duration::from_secs(1));
    send_errors(&server, 4, "web");
    std::thread::sleep(Duration::from_secs(1));
    assert!(event_names(&receiver).is_empty());
    send_errors(&server, 1, "web");
    let fired = wait_event(&receiver, "alert.fired", 1, Duration::from_secs(5));
    assert_eq!(fired[0]["title"], "Browser error spike");
}
