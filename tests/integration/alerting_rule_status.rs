//! A rule's current value and state (`status` on `GET /api/v1/alert-rules` and `/{id}`):
//! measured at every tick whether or not the rule's phase changes, `firing` with the alert's
//! id once errors cross the threshold, and `disabled` for a rule that is not evaluated.

use std::time::Duration;

use serde_json::{Value, json};

use crate::alerting_rules::{create_rule, rule, rules_server, send_errors};
use crate::auth_support::Session;
use crate::harness::{TestServer, text, wait_for};
use crate::http_basics::send;
use crate::webhooks_support::owner;

/// Waits until the rule's status satisfies `check`; returns the rule.
fn wait_status(
    server: &TestServer,
    session: &Session,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(what, Duration::from_secs(20), || {
        let answer = rule(server, session, id);
        check(&answer["status"]).then_some(answer)
    })
}

#[test]
fn rule_status_shows_the_last_measured_value_and_state() {
    let server = rules_server(&[]);
    let session = owner(&server);
    let body = json!({"name": "Checkout errors", "kind": "error_count", "service": "checkout",
        "threshold": 3, "window_seconds": 120});
    let id = create_rule(&server, &session, body)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let off = json!({"name": "Switched off", "kind": "error_count", "threshold": 1,
        "enabled": false});
    let off = create_rule(&server, &session, off)["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Measured though nothing changed: the value is 0 and the rule is ok.
    let quiet = wait_status(&server, &session, &id, "a first measurement", |status| {
        status["measured_at"].is_string()
    });
    assert_eq!(quiet["status"]["state"], "ok", "{quiet}");
    assert_eq!(quiet["status"]["value"], 0.0, "{quiet}");
    assert_eq!(quiet["status"]["alert_id"], Value::Null);

    send_errors(&server, 5, "checkout");
    let firing = wait_status(&server, &session, &id, "the rule firing", |status| {
        status["state"] == "firing"
    });
    assert_eq!(firing["status"]["value"], 5.0, "{firing}");
    let alert_id = firing["status"]["alert_id"].as_str().expect("alert id");
    assert_eq!(
        firing["alert_id"].as_str(),
        Some(alert_id),
        "the old field agrees"
    );

    let reply = session.get(&server, "/api/v1/alert-rules");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let items = reply.json()["items"].as_array().unwrap().clone();
    let listed = items.iter().find(|item| item["id"] == id.as_str()).unwrap();
    assert_eq!(listed["status"]["state"], "firing");
    assert_eq!(listed["status"]["value"], 5.0);
    let disabled = items
        .iter()
        .find(|item| item["id"] == off.as_str())
        .unwrap();
    assert_eq!(disabled["status"]["state"], "disabled", "{disabled}");
    assert_eq!(disabled["status"]["value"], Value::Null);
    assert_eq!(disabled["status"]["measured_at"], Value::Null);
}

#[test]
fn rule_status_is_in_the_openapi_document() {
    let server = rules_server(&[]);
    let reply = send(crate::harness::http().get(server.url("/api/v1/openapi.json")));
    let schemas = &reply.json()["components"]["schemas"];
    let rule = schemas["RuleResponse"]["properties"].to_string();
    assert!(rule.contains("\"status\""), "{rule}");
    let status = schemas["RuleStatus"]["properties"].to_string();
    for field in ["state", "value", "measured_at", "alert_id"] {
        assert!(
            status.contains(&format!("\"{field}\"")),
            "{field}: {status}"
        );
    }
}
