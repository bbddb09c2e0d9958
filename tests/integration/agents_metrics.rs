//! An agent's host metric history (`GET /api/v1/agents/{id}/metrics`) through the real binary:
//! a real `lookout agent`'s heartbeats become points a viewer can read, the window is checked,
//! and another organisation's or an unknown agent is 404.

use std::time::Duration;

use serde_json::Value;

use crate::agents_support::{online_agent, server_with_owner};
use crate::auth_support::{add_user, sign_in};
use crate::harness::{text, wait_for};

#[test]
fn heartbeats_become_a_metric_history_that_viewers_read() {
    let (server, session) = server_with_owner();
    let (_process, agent) = online_agent(&server, &session, "web-1", &[]);
    let id = agent["id"].as_str().unwrap().to_string();
    add_user(&server, "viewer@example.com", "viewer");
    let viewer = sign_in(&server, "viewer@example.com");
    let path = format!("/api/v1/agents/{id}/metrics");

    // The first heartbeat follows the welcome at once, and is the first point.
    let history: Value = wait_for("a metric point", Duration::from_secs(20), || {
        let reply = viewer.get(&server, &path);
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
        let body = reply.json();
        (!body["points"].as_array().unwrap().is_empty()).then_some(body)
    });
    assert_eq!(history["step_seconds"], 60, "{history}");
    let point = &history["points"][0];
    assert!(point["at"].as_str().unwrap().ends_with('Z'), "{point}");
    assert!(point["memory_total_bytes"].as_u64().unwrap() > 0, "{point}");
    assert!(point["disk_total_bytes"].as_u64().unwrap() > 0, "{point}");
    assert!(point["load1"].is_number(), "{point}");
    // One point per minute: heartbeats of the same minute replace each other.
    assert!(
        history["points"].as_array().unwrap().len() <= 2,
        "{history}"
    );

    // A window that ended before the agent existed is empty; one reaching past 24 hours back
    // is cut to the history kept.
    let past = viewer.get(&server, &format!("{path}?from=0&to=1000"));
    assert_eq!(past.status, 200, "{}", text(&past.body));
    assert_eq!(past.json()["points"], serde_json::json!([]));
    let wide = viewer.get(&server, &format!("{path}?from=0")).json();
    assert_ne!(wide["from"], "1970-01-01T00:00:00.000Z", "{wide}");
    assert!(!wide["points"].as_array().unwrap().is_empty(), "{wide}");

    for bad in ["from=yesterday", "from=5000&to=1000", "from=1&from=2"] {
        let reply = viewer.get(&server, &format!("{path}?{bad}"));
        assert_eq!(reply.status, 400, "{bad}: {}", text(&reply.body));
        assert_eq!(reply.json()["code"], "invalid_parameter", "{bad}");
    }
    let unknown = viewer.get(
        &server,
        "/api/v1/agents/agt_01JAAAAAAAAAAAAAAAAAAAAAAA/metrics",
    );
    assert_eq!(unknown.status, 404, "{}", text(&unknown.body));
}
