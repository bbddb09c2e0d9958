//! The overview in a real browser: what is wrong now (error rate, top errors, alerts,
//! incidents, agents) from real ingested data, the deployment marker data, the time until the
//! page is usable, and a record a webhook payload links to opened cold.

use serde_json::json;

use crate::errors_support::{ApiSession, ingest_server, send_errors};
use crate::harness::http;
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, sign_in};

/// An error thrown in `function` (its own stack, so its own group).
fn error_at(message: &str, function: &str) -> serde_json::Value {
    json!({"level": "error", "name": "Error", "message": message,
        "stack": format!("Error: {message}\n    at {function} (https://shop.example.com/assets/main.js:3:9)"),
        "url": "https://shop.example.com/", "environment": "production", "service": "shop"})
}

/// A `deployments` inbound token's secret, made by the owner.
fn deployments_token(api: &ApiSession) -> String {
    let token = api.post(
        "/api/v1/orgs/me/inbound-tokens",
        &json!({"kind": "deployments", "name": "ci"}),
    );
    token["token"].as_str().expect("token").to_string()
}

/// Reports a deployment as CI would; answers its id.
fn report_deployment(server: &crate::harness::TestServer, token: &str, version: &str) -> String {
    let response = http()
        .post(server.url("/api/v1/deployments/webhook"))
        .header("x-lookout-token", token)
        .json(
            &json!({"service": "shop", "environment": "production", "version": version,
            "status": "succeeded"}),
        )
        .send()
        .expect("deployment webhook");
    assert_eq!(response.status(), 201);
    let body: serde_json::Value = response.json().expect("JSON");
    body["id"].as_str().expect("id").to_string()
}

#[test]
fn the_overview_shows_the_error_rate_top_errors_and_what_is_quiet() {
    let server = ingest_server();
    let api = ApiSession::sign_in(&server, OWNER);
    let token = deployments_token(&api);
    report_deployment(&server, &token, "2026.11.3");
    let checkout = error_at("Checkout total is NaN", "total");
    send_errors(&server, &[checkout.clone(), checkout.clone(), checkout]);
    send_errors(&server, &[error_at("Avatar failed to load", "avatar")]);

    let page = Page::open(&server);
    page.goto("/login");
    sign_in(&page, OWNER, PASSWORD);
    page.wait(&Query::heading(1, "Overview"));
    page.wait_text("4 events in the last 24 hours, 1 deployment.");
    // The top errors, most events first, each a link to its group.
    page.wait_role("link", "Error: Checkout total is NaN");
    page.wait_role("link", "Error: Avatar failed to load");
    let table = page.eval(
        "[...document.querySelectorAll('section[aria-labelledby=panel-top-unresolved-errors] tbody tr')].map(r => r.cells[0].innerText.split('\\n')[0])",
    );
    assert_eq!(
        table,
        json!([
            "Error: Checkout total is NaN",
            "Error: Avatar failed to load"
        ])
    );
    page.wait_text("No alert is firing.");
    page.wait_text("No incident is open.");
    page.wait_text("No agent is enrolled yet.");
    // The chart is drawn (uPlot's canvas inside the labelled figure).
    page.wait(&Query::role(
        "img",
        "Error events per minute over the last 24 hours: 4 in all",
    ));
    crate::errors_support::wait_until("the chart's canvas", || {
        page.eval("!!document.querySelector('figure.chart canvas')") == json!(true)
    });
    // The Errors badge counts the unresolved groups first seen in the last 24 hours.
    crate::errors_support::wait_until("the Errors badge to say 2", || {
        page.eval("(document.querySelector('nav .badge') || {}).textContent || ''") == json!("2")
    });
    page.check_accessibility();
    page.screenshot("overview");

    // From a cold load until the top errors are on screen (reported, not asserted).
    let ms = page.interactive_ms("/", &Query::role("link", "Error: Checkout total is NaN"));
    eprintln!("overview interactive with its data after {ms:.0} ms");

    // A click on a top error opens its group.
    page.click_role("link", "Error: Checkout total is NaN");
    page.wait_url(|path| path.starts_with("/errors/grp_"));
}

#[test]
fn a_deployment_link_opened_cold_lands_on_its_page_after_sign_in() {
    let server = ingest_server();
    let api = ApiSession::sign_in(&server, OWNER);
    let token = deployments_token(&api);
    let id = report_deployment(&server, &token, "2026.11.4");

    let page = Page::open(&server);
    page.goto(&format!("/deployments/{id}"));
    page.wait_url(|path| path.starts_with("/login"));
    sign_in(&page, OWNER, PASSWORD);
    page.wait_url(|path| path == format!("/deployments/{id}"));
    page.wait(&Query::heading(1, "Deployment: 2026.11.4"));
    let pill = page.eval("document.querySelector('main .pill').textContent");
    assert_eq!(pill, json!("succeeded"));
    page.check_accessibility();
}
