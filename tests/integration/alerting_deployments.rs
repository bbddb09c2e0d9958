//! Deployments through the generic CI webhook: `external_id` upserts one deployment, its
//! start and finish reach a real webhook receiver as `deployment.started` and
//! `deployment.finished` (each once), the services registry learns the service, and the list
//! pages.

use std::time::Duration;

use serde_json::json;

use crate::alerting_support::*;
use crate::harness::text;
use crate::webhooks_support::{Receiver, create_channel, owner, webhook_server};

#[test]
fn external_id_upserts_one_deployment_and_both_events_reach_the_receiver() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let receiver = Receiver::ok();
    let channel = create_channel(
        &server,
        &session,
        json!({"url": receiver.url("/hook"), "events": ["deployment.*"]}),
    );
    let channel = channel["id"].as_str().unwrap().to_string();
    let token = inbound_secret(&server, &session, "deployments");
    let path = "/api/v1/deployments/webhook";
    let started = json!({"service": "checkout", "environment": "production", "version": "1.4.2",
        "status": "started", "commit": "9f1c2ab", "external_id": "gha-run-77",
        "url": "https://ci.example.com/runs/77", "triggered_by": "extra fields are ignored"});
    let first = post_inbound(&server, path, &token, &started);
    assert_eq!(first.status, 201, "{}", text(&first.body));
    let first = first.json();
    let id = first["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("dep_"), "{id}");
    assert_eq!(first["status"], "started");
    assert!(first["finished_at"].is_null());

    // The same report again (a CI retry) changes nothing and sends nothing.
    let again = post_inbound(&server, path, &token, &started);
    assert_eq!(again.status, 200, "{}", text(&again.body));
    assert_eq!(again.json()["id"], id.as_str());

    let mut finished = started.clone();
    finished["status"] = json!("succeeded");
    let done = post_inbound_query(&server, path, &token, &finished);
    assert_eq!(done.status, 200, "{}", text(&done.body));
    let done = done.json();
    assert_eq!(done["id"], id.as_str());
    assert_eq!(done["status"], "succeeded");
    assert_eq!(done["started_at"], first["started_at"]);
    assert!(done["finished_at"].is_string());
    assert_eq!(done["external_id"], "gha-run-77");

    let requests = receiver.wait_for(2, Duration::from_secs(10));
    let events: Vec<String> = requests
        .iter()
        .map(|r| r.json()["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["deployment.started", "deployment.finished"]);
    let payload = requests[1].json();
    assert_eq!(payload["deployment_id"], id.as_str());
    assert_eq!(payload["version"], "1.4.2");
    assert_eq!(payload["status"], "succeeded");
    assert_eq!(payload["service"], "checkout");
    assert_eq!(payload["environment"], "production");
    assert!(payload["alert_id"].is_null());
    assert_eq!(requests[0].json()["status"], "started");

    // One deployment in the list; the services registry knows the service and environment.
    let list = session.get(&server, "/api/v1/deployments").json();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["items"][0]["commit"], "9f1c2ab");
    let services = session.get(&server, "/api/v1/services").json();
    let checkout = services["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "checkout")
        .cloned()
        .unwrap_or_else(|| panic!("service missing: {services}"));
    assert_eq!(checkout["environments"], json!(["production"]));

    // Deliveries are enqueued in the report's own transaction, so the log is complete once
    // the reports were answered: the repeated `started` queued nothing.
    let log = session
        .get(&server, &format!("/api/v1/channels/{channel}/deliveries"))
        .json();
    assert_eq!(log["items"].as_array().unwrap().len(), 2, "{log}");
}

#[test]
fn reports_without_external_id_are_separate_and_the_list_pages() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "deployments");
    let path = "/api/v1/deployments/webhook";
    for version in ["1", "2", "3"] {
        let body = json!({"service": "api", "environment": "staging", "version": version,
            "status": "failed"});
        let reply = post_inbound(&server, path, &token, &body);
        assert_eq!(reply.status, 201, "{}", text(&reply.body));
        assert_eq!(reply.json()["status"], "failed");
    }
    let page = session.get(&server, "/api/v1/deployments?limit=2").json();
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let rest = session
        .get(
            &server,
            &format!("/api/v1/deployments?limit=2&cursor={cursor}"),
        )
        .json();
    assert_eq!(rest["items"][0]["version"], "3");
    assert!(rest["next_cursor"].is_null());

    for bad in [
        json!({"service": "api", "environment": "staging", "version": "1", "status": "done"}),
        json!({"service": "", "environment": "staging", "version": "1", "status": "started"}),
        json!({"environment": "staging", "version": "1", "status": "started"}),
    ] {
        let reply = post_inbound(&server, path, &token, &bad);
        assert_eq!(reply.status, 400, "{bad}: {}", text(&reply.body));
    }
    let anonymous = crate::harness::http()
        .get(server.url("/api/v1/deployments"))
        .send()
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[test]
fn a_deployment_and_a_firing_alert_are_found_again_after_a_restart() {
    let mut server = webhook_server(&[]);
    let session = owner(&server);
    let deployments = inbound_secret(&server, &session, "deployments");
    let alerts = inbound_secret(&server, &session, "alerts");
    let started = json!({"service": "api", "environment": "production", "version": "7",
        "status": "started", "external_id": "pipeline-7"});
    let first = post_inbound(
        &server,
        "/api/v1/deployments/webhook",
        &deployments,
        &started,
    );
    assert_eq!(first.status, 201, "{}", text(&first.body));
    let firing = json!({"title": "Latency", "severity": "warning", "status": "firing",
        "dedup_key": "latency"});
    let fired = post_inbound(&server, "/api/v1/alerts/webhook", &alerts, &firing).json();

    server.restart();

    // Tokens, the external id index and the live-alert index all come back from the store.
    let mut finished = started.clone();
    finished["status"] = json!("failed");
    let done = post_inbound(
        &server,
        "/api/v1/deployments/webhook",
        &deployments,
        &finished,
    );
    assert_eq!(done.status, 200, "{}", text(&done.body));
    assert_eq!(done.json()["id"], first.json()["id"]);
    let mut resolved = firing.clone();
    resolved["status"] = json!("resolved");
    let ended = post_inbound(&server, "/api/v1/alerts/webhook", &alerts, &resolved).json();
    assert_eq!(ended["resolved"], 1, "{ended}");
    assert_eq!(ended["items"][0]["id"], fired["items"][0]["id"]);
}

#[test]
fn from_and_to_keep_the_deployments_started_in_that_range() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "deployments");
    let path = "/api/v1/deployments/webhook";
    let report = |version: &str| {
        let body = json!({"service": "api", "environment": "production", "version": version,
            "status": "started"});
        let reply = post_inbound(&server, path, &token, &body);
        assert_eq!(reply.status, 201, "{}", text(&reply.body));
        reply.json()["started_at"].as_str().unwrap().to_string()
    };
    let first = report("1");
    std::thread::sleep(Duration::from_millis(20));
    let second = report("2");
    std::thread::sleep(Duration::from_millis(20));
    let third = report("3");
    let versions = |query: &str| -> Vec<String> {
        let reply = session.get(&server, &format!("/api/v1/deployments?{query}"));
        assert_eq!(reply.status, 200, "{query}: {}", text(&reply.body));
        let items = reply.json()["items"].as_array().unwrap().clone();
        items
            .iter()
            .map(|item| item["version"].as_str().unwrap().to_string())
            .collect()
    };
    let encode = |at: &str| at.replace(':', "%3A");
    assert_eq!(versions(&format!("from={}", encode(&second))), ["2", "3"]);
    assert_eq!(versions(&format!("to={}", encode(&second))), ["1"]);
    let between = format!("from={}&to={}", encode(&first), encode(&third));
    assert_eq!(versions(&between), ["1", "2"]);
    // Pages of a filtered list: the cursor goes on after the last one shown.
    let reply = session.get(&server, &format!("/api/v1/deployments?{between}&limit=1"));
    let page = reply.json();
    assert_eq!(page["items"][0]["version"], "1");
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    assert_eq!(
        versions(&format!("{between}&limit=1&cursor={cursor}")),
        ["2"]
    );
    let bad = session.get(&server, "/api/v1/deployments?from=yesterday");
    bad.problem(400, "invalid_parameter");
}

#[test]
fn one_deployment_is_read_by_its_id_and_only_in_its_org() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "deployments");
    let body = json!({"service": "api", "environment": "production", "version": "4.2",
        "status": "started"});
    let reply = post_inbound(&server, "/api/v1/deployments/webhook", &token, &body);
    assert_eq!(reply.status, 201, "{}", text(&reply.body));
    let id = reply.json()["id"].as_str().unwrap().to_string();

    let read = session.get(&server, &format!("/api/v1/deployments/{id}"));
    assert_eq!(read.status, 200, "{}", text(&read.body));
    assert_eq!(read.json()["version"], "4.2");
    assert_eq!(read.json()["id"], id.as_str());
    for unknown in ["dep_01J00000000000000000000000", "not-an-id"] {
        let missing = session.get(&server, &format!("/api/v1/deployments/{unknown}"));
        assert_eq!(missing.status, 404, "{unknown}: {}", text(&missing.body));
    }
}

#[test]
fn service_and_environment_keep_the_deployments_of_one_service_or_environment() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "deployments");
    for (service, environment, version) in [
        ("api", "production", "a1"),
        ("web", "production", "w1"),
        ("api", "staging", "a2"),
    ] {
        let body = json!({"service": service, "environment": environment, "version": version,
            "status": "succeeded"});
        let reply = post_inbound(&server, "/api/v1/deployments/webhook", &token, &body);
        assert_eq!(reply.status, 201, "{}", text(&reply.body));
    }
    let versions = |query: &str| -> Vec<String> {
        let reply = session.get(&server, &format!("/api/v1/deployments?{query}"));
        assert_eq!(reply.status, 200, "{query}: {}", text(&reply.body));
        let items = reply.json()["items"].as_array().unwrap().clone();
        let version = |item: &serde_json::Value| item["version"].as_str().unwrap().to_string();
        items.iter().map(version).collect()
    };
    assert_eq!(versions("service=api"), ["a1", "a2"]);
    assert_eq!(versions("environment=production"), ["a1", "w1"]);
    assert_eq!(versions("service=api&environment=staging"), ["a2"]);
    assert!(versions("service=nothing").is_empty());
    // An empty value filters nothing, as the page's "All services" sends it.
    assert_eq!(versions("service=&environment="), ["a1", "w1", "a2"]);
    // Pages of a filtered list go on after the last one shown.
    let page = session
        .get(&server, "/api/v1/deployments?service=api&limit=1")
        .json();
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    assert_eq!(
        versions(&format!("service=api&limit=1&cursor={cursor}")),
        ["a2"]
    );
    let twice = session.get(&server, "/api/v1/deployments?service=a&service=b");
    twice.problem(400, "invalid_parameter");
}

#[test]
fn order_newest_lists_the_latest_deployment_first_and_pages_back() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "deployments");
    for (service, version) in [("api", "1"), ("web", "2"), ("api", "3"), ("api", "4")] {
        let body = json!({"service": service, "environment": "production", "version": version,
            "status": "succeeded"});
        let reply = post_inbound(&server, "/api/v1/deployments/webhook", &token, &body);
        assert_eq!(reply.status, 201, "{}", text(&reply.body));
    }
    let page = |query: &str| {
        let reply = session.get(&server, &format!("/api/v1/deployments?{query}"));
        assert_eq!(reply.status, 200, "{query}: {}", text(&reply.body));
        let body = reply.json();
        let items = body["items"].as_array().unwrap().clone();
        let version = |item: &serde_json::Value| item["version"].as_str().unwrap().to_string();
        let next = body["next_cursor"].as_str().map(String::from);
        (items.iter().map(version).collect::<Vec<_>>(), next)
    };
    assert_eq!(page("order=newest").0, ["4", "3", "2", "1"]);
    assert_eq!(page("order=oldest").0, ["1", "2", "3", "4"]);
    // Pages go on to older deployments, with and without a filter.
    let (first, next) = page("order=newest&limit=3");
    assert_eq!(first, ["4", "3", "2"]);
    let cursor = next.expect("a next page");
    assert_eq!(
        page(&format!("order=newest&limit=3&cursor={cursor}")).0,
        ["1"]
    );
    let (first, next) = page("order=newest&service=api&limit=2");
    assert_eq!(first, ["4", "3"]);
    let cursor = next.expect("a next page");
    let rest = page(&format!("order=newest&service=api&limit=2&cursor={cursor}"));
    assert_eq!(rest, (vec!["1".to_string()], None));
    let bad = session.get(&server, "/api/v1/deployments?order=latest");
    bad.problem(400, "invalid_parameter");
}
