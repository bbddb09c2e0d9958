//! Deployments and builds in a real browser: what CI and Jenkins report through the inbound
//! API appears in the lists (filtered by service through the URL) and on the deployment's page
//! with the errors first seen in its release, and as a marker on the error group's chart.

use serde_json::json;

use crate::errors_support::{ApiSession, ingest_server, plain_error, send_errors, wait_until};
use crate::page::Query;
use crate::support::{OWNER, owner_page, post_inbound};

#[test]
fn reported_deployments_and_builds_appear_in_the_lists_detail_and_error_chart() {
    let server = ingest_server();
    let api = ApiSession::sign_in(&server, OWNER);
    let token = |kind: &str| {
        let made = api.post(
            "/api/v1/orgs/me/inbound-tokens",
            &json!({"kind": kind, "name": kind}),
        );
        made["token"].as_str().unwrap().to_string()
    };
    let (deployments, jenkins) = (token("deployments"), token("jenkins"));
    let path = "/api/v1/deployments/webhook";
    let shop = post_inbound(
        &server,
        path,
        &deployments,
        &json!({"service": "shop",
        "environment": "production", "version": "2026.11.3", "status": "started",
        "commit": "3f2a9c1d0e4b", "url": "https://ci.example.com/runs/41", "external_id": "run-41"}),
    );
    post_inbound(
        &server,
        path,
        &deployments,
        &json!({"service": "shop", "environment": "production",
        "version": "2026.11.3", "status": "succeeded", "external_id": "run-41"}),
    );
    post_inbound(
        &server,
        path,
        &deployments,
        &json!({"service": "billing",
        "environment": "staging", "version": "0.9.0", "status": "failed"}),
    );
    for phase in ["STARTED", "COMPLETED"] {
        let status = (phase == "COMPLETED").then_some("SUCCESS");
        post_inbound(
            &server,
            "/api/v1/jenkins/notify",
            &jenkins,
            &json!({"name": "shop-build",
            "build": {"number": 12, "phase": phase, "status": status,
                "full_url": "https://jenkins.example.com/job/shop-build/12/",
                "scm": {"commit": "3f2a9c1d0e4b", "branch": "main"}}}),
        );
    }
    let mut error = plain_error("Basket total is NaN");
    error["release"] = json!("2026.11.3");
    send_errors(&server, &[error]);
    let shop = shop["id"].as_str().unwrap().to_string();
    wait_until("the error to be searchable by release", || {
        let found = api.get("/api/v1/error-groups?release=2026.11.3");
        found["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty())
    });

    let page = owner_page(&server);
    page.goto("/deployments");
    page.wait(&Query::heading(1, "Deployments"));
    page.wait_role("link", "2026.11.3");
    page.wait_role("link", "0.9.0");
    page.wait_text("3f2a9c1d0e4b");
    // Newest first: billing's report came after shop's.
    let versions = page
        .eval("[...document.querySelectorAll('tbody tr td:nth-child(3)')].map(c => c.textContent)");
    assert_eq!(versions, json!(["0.9.0", "2026.11.3"]));
    page.check_accessibility();
    page.screenshot("deployments");
    // From a cold load until the list is on screen (reported, not asserted).
    let ms = page.interactive_ms("/deployments", &Query::role("link", "0.9.0"));
    eprintln!("deployments interactive with its data after {ms:.0} ms");
    // The service filter lives in the URL.
    page.goto("/deployments?service=billing");
    page.wait_role("link", "0.9.0");
    wait_until("only billing's deployment", || {
        page.eval("document.querySelectorAll('tbody tr').length") == json!(1)
    });

    page.click_role("link", "0.9.0");
    page.wait(&Query::heading(1, "Deployment: 0.9.0"));
    page.goto(&format!("/deployments/{shop}"));
    page.wait(&Query::heading(1, "Deployment: 2026.11.3"));
    page.wait_text("run-41");
    page.wait_role("link", "Open the CI run (opens in a new tab)");
    page.wait_role("link", "Error: Basket total is NaN");
    let pill = page.eval("document.querySelector('main .pill').textContent");
    assert_eq!(pill, json!("succeeded"));
    page.check_accessibility();
    page.screenshot("deployment");

    page.goto("/builds");
    page.wait(&Query::heading(1, "Builds"));
    page.wait_text("success");
    page.wait_role("link", "shop-build #12 in Jenkins (opens in a new tab)");
    page.check_accessibility();
    page.screenshot("builds");

    // The error group's chart marks the shop deployment (and not billing's).
    let group = api.group_id("Error: Basket total is NaN");
    page.goto(&format!("/errors/{group}"));
    wait_until("the chart's summary to name the deployment", || {
        let label = page
            .eval("document.querySelector('figure.chart [role=img]')?.getAttribute('aria-label')");
        label
            .as_str()
            .unwrap_or("")
            .ends_with("; deployments: shop 2026.11.3 (production)")
    });
}
