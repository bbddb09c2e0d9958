//! Alerting in the browser: an alert rule created in the editor (error_count, For 0, open an
//! incident) fires from errors the test ingests; the rule shows its current value and state;
//! the alert is acknowledged from the Alerts page, which then names who did it; the incident
//! it opened gets a note and is resolved from its page; the alert's history and the
//! incident's timeline show each step. A viewer sees none of the buttons. The editor explains
//! mistakes beside the fields; a rule is disabled, and deleted only once the dialog is
//! confirmed; an external monitor's alert is listed with its source, firing then resolved.
//! Every page passes axe-core and is kept as a screenshot.

use std::time::Duration;

use serde_json::Value;

use crate::errors_support::{ApiSession, KEY, VIEWER, count, plain_error, send_errors, wait_until};
use crate::harness::TestServer;
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, owner_page, sign_in};

const RULE: &str = "Checkout errors";

/// A server evaluating rules every second, taking browser errors, with an owner and a viewer.
fn alerting_server() -> TestServer {
    let server = TestServer::builder()
        .env("WEB_INGEST_KEY", KEY)
        .env("ALERT_EVAL_INTERVAL_SECONDS", "1")
        .start();
    server.add_user(OWNER, "owner", PASSWORD);
    server.add_user(VIEWER, "viewer", PASSWORD);
    server
}

/// The visible text of the first element `selector` finds (empty when there is none).
fn text_of(page: &Page, selector: &str) -> String {
    let found = page.eval(&format!(
        "(document.querySelector({selector:?}) || {{ innerText: '' }}).innerText"
    ));
    found.as_str().unwrap_or_default().to_string()
}

/// Waits until the element `selector` finds shows every one of `words`.
fn wait_words(page: &Page, selector: &str, words: &[&str]) {
    wait_until(&format!("{selector} to show {words:?}"), || {
        let shown = text_of(page, selector);
        words.iter().all(|word| shown.contains(word))
    });
}

fn checked_page(page: &Page, screenshot: &str) {
    page.check_accessibility();
    page.screenshot(screenshot);
}

/// Creates the rule in the editor as an admin would; answers the page on the new rule.
fn create_rule_in_the_editor(server: &TestServer) -> Page {
    let mut page = owner_page(server);
    // The evaluator ticks every second and the rule page refreshes every five.
    page.set_deadline(Duration::from_secs(30));
    page.goto("/alerts");
    page.wait_text("No alert is firing.");
    page.goto("/alert-rules");
    page.wait_text("No alert rules yet.");
    page.click(&Query::role("link", "Create rule"));
    page.wait(&Query::heading(1, "New alert rule"));
    page.fill_label("Name", RULE);
    page.fill_label("Threshold", "3");
    page.fill_label("Window (seconds)", "600");
    page.fill_label("Service", "shop");
    page.click_role("checkbox", "Open an incident when it fires");
    page.wait_text("Opens an incident when it fires.");
    page.click_role("button", "Create rule");
    page.wait(&Query::heading(1, &format!("Alert rule: {RULE}")));
    page
}

fn viewer_sees_no_actions(server: &TestServer, alert_path: &str) {
    let page = Page::open(server);
    page.goto("/login");
    sign_in(&page, VIEWER, PASSWORD);
    page.goto("/alerts");
    page.wait_role("link", RULE);
    let acknowledge = Query::role("button", &format!("Acknowledge {RULE}"));
    assert_eq!(count(&page, &acknowledge), 0, "a viewer cannot acknowledge");
    page.goto(alert_path);
    page.wait(&Query::heading(1, &format!("Alert: {RULE}")));
    assert_eq!(count(&page, &Query::role("button", "Acknowledge")), 0);
    page.goto("/alert-rules");
    page.wait_role("link", RULE);
    assert_eq!(count(&page, &Query::role("link", "Create rule")), 0);
    page.click_role("link", RULE);
    page.wait(&Query::heading(1, &format!("Alert rule: {RULE}")));
    page.wait_text("Only admins change alert rules.");
    for button in ["Save rule", "Disable rule", "Delete rule"] {
        assert_eq!(count(&page, &Query::role("button", button)), 0, "{button}");
    }
    page.check_accessibility();
    page.goto("/incidents");
    page.wait_role("link", RULE);
    assert_eq!(count(&page, &Query::role("button", "Open incident")), 0);
    page.click_role("link", RULE);
    page.wait(&Query::heading(1, &format!("Incident: {RULE}")));
    for button in ["Add note", "Resolve incident", "Save changes"] {
        assert_eq!(count(&page, &Query::role("button", button)), 0, "{button}");
    }
    page.check_accessibility();
}

#[test]
fn a_rule_made_in_the_ui_fires_is_acknowledged_and_its_incident_resolved() {
    let server = alerting_server();
    let page = create_rule_in_the_editor(&server);
    let errors: Vec<Value> = (0..5)
        .map(|n| plain_error(&format!("checkout failed {n}")))
        .collect();
    send_errors(&server, &errors);

    // The rule's page follows the evaluator: firing, with the value it measured.
    page.wait_role("link", "Open its firing alert");
    wait_words(&page, "main", &["firing", "5"]);
    checked_page(&page, "alert-rule");
    page.goto("/alert-rules");
    page.wait_role("link", RULE);
    wait_words(&page, "table.rules", &["firing", "5", "3"]);
    checked_page(&page, "alert-rules");

    page.goto("/alerts");
    page.wait_role("link", RULE);
    wait_words(&page, "table.alerts", &["firing", "Alert rule", "shop"]);
    checked_page(&page, "alerts");
    let api = ApiSession::sign_in(&server, OWNER);
    let alert = api.get("/api/v1/alerts?state=firing")["items"][0].clone();
    let alert_path = format!("/alerts/{}", alert["id"].as_str().expect("alert id"));
    viewer_sees_no_actions(&server, &alert_path);

    page.click_role("button", &format!("Acknowledge {RULE}"));
    wait_words(&page, "table.alerts", &[OWNER]);

    // j chooses the first row (its link takes the focus once the page has heard it), Enter
    // opens it.
    page.press("j");
    wait_until("the first row to be chosen", || {
        page.eval("document.activeElement.textContent") == RULE
    });
    page.press("Enter");
    page.wait(&Query::heading(1, &format!("Alert: {RULE}")));
    wait_words(
        &page,
        "ol.timeline",
        &["fired", &format!("acknowledged by {OWNER}")],
    );
    checked_page(&page, "alert");

    page.click_role("link", "The incident opened with it");
    page.wait(&Query::heading(1, &format!("Incident: {RULE}")));
    page.fill_label("Note", "Rolled back the checkout release");
    page.click_role("button", "Add note");
    wait_words(
        &page,
        "ol.timeline",
        &["Note", "Rolled back the checkout release"],
    );
    page.fill_label("Resolution note", "Fixed by the rollback");
    page.click_role("button", "Resolve incident");
    page.wait_role("button", "Reopen");
    wait_words(
        &page,
        "ol.timeline",
        &[
            "Opened",
            "Rolled back",
            "Resolved",
            "Fixed by the rollback",
            OWNER,
        ],
    );
    page.wait_role("link", RULE);
    checked_page(&page, "incident");
    let id = page.path().trim_start_matches("/incidents/").to_string();
    let incident = api.get(&format!("/api/v1/incidents/{id}"));
    assert_eq!(incident["status"], "resolved", "{incident}");
    let kinds: Vec<&str> = incident["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter_map(|entry| entry["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["opened", "note", "resolved"], "{incident}");

    page.goto("/incidents?status=resolved");
    page.wait_role("link", RULE);
    checked_page(&page, "incidents");

    // The alert's history: fired, then acknowledged by the owner.
    let history = api.get(&format!("/api/v1{alert_path}"))["history"].clone();
    let steps: Vec<&str> = history
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|step| step["kind"].as_str())
        .collect();
    assert_eq!(steps, ["fired", "acknowledged"], "{history}");
}

/// Reports `alert` to the alerts webhook with an `alerts` inbound token, as a monitor does.
fn report_alert(server: &TestServer, token: &str, alert: Value) {
    let response = crate::harness::http()
        .post(server.url("/api/v1/alerts/webhook"))
        .header("x-lookout-token", token)
        .json(&alert)
        .send()
        .expect("alerts webhook request");
    assert!(response.status().is_success(), "{}", response.status());
}

#[test]
fn the_rule_editor_explains_mistakes_and_a_rule_is_disabled_and_deleted_after_confirming() {
    let server = alerting_server();
    let page = owner_page(&server);
    page.goto("/alert-rules/new");
    page.wait(&Query::heading(1, "New alert rule"));
    page.fill_label("Name", "Slow checkout");
    // The kind changes from the keyboard, as a person moves through a closed list.
    page.fill_label("Kind", "");
    page.type_keys("ArrowDown ArrowDown");
    page.wait(&Query::label("Threshold (ms)"));
    page.fill_label("Window (seconds)", "");
    page.click_role("button", "Create rule");
    page.wait_text("The rule was not created");
    wait_words(&page, "form.rule-form", &["Enter a number."]);
    page.check_accessibility();
    page.fill_label("Threshold (ms)", "800");
    page.fill_label("Window (seconds)", "120");
    page.click_role("button", "Create rule");
    page.wait(&Query::heading(1, "Alert rule: Slow checkout"));
    let api = ApiSession::sign_in(&server, OWNER);
    let rule = api.get("/api/v1/alert-rules")["items"][0].clone();
    assert_eq!(rule["kind"], "span_p95_ms", "{rule}");
    assert_eq!(rule["threshold"], 800.0, "{rule}");

    page.click_role("button", "Disable rule");
    page.wait_role("button", "Enable rule");
    let rule = api.get("/api/v1/alert-rules")["items"][0].clone();
    assert_eq!(rule["enabled"], false, "{rule}");

    // Escape keeps the rule; confirming deletes it.
    page.click_role("button", "Delete rule");
    page.wait(&Query::heading(2, "Delete Slow checkout?"));
    page.check_accessibility();
    page.press("Escape");
    wait_until("the dialog to close", || {
        count(&page, &Query::heading(2, "Delete Slow checkout?")) == 0
    });
    page.click_role("button", "Delete rule");
    page.click_role("button", "Delete the rule");
    page.wait_text("No alert rules yet.");
    assert_eq!(
        api.get("/api/v1/alert-rules")["items"],
        serde_json::json!([])
    );

    // An external monitor's alert is listed with its source, then among the resolved.
    let token = api.post(
        "/api/v1/orgs/me/inbound-tokens",
        &serde_json::json!({"kind": "alerts", "name": "monitor"}),
    )["token"]
        .as_str()
        .expect("token")
        .to_string();
    let disk = serde_json::json!({"title": "Disk almost full", "severity": "critical",
        "service": "db", "status": "firing"});
    report_alert(&server, &token, disk.clone());
    page.goto("/alerts");
    page.wait_role("link", "Disk almost full");
    wait_words(&page, "table.alerts", &["Webhook", "Critical", "db"]);
    let mut resolved = disk;
    resolved["status"] = "resolved".into();
    report_alert(&server, &token, resolved);
    page.click_role("link", "Resolved");
    page.wait_url(|path| path == "/alerts?state=resolved");
    page.wait_role("link", "Disk almost full");
    wait_words(&page, "table.alerts", &["resolved", "Webhook"]);
    page.check_accessibility();
}
