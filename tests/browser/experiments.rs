//! Flags and experiments in the browser: a flag and an experiment created in the UI are served
//! by `/ingest/ab-config`; exposures the test sends show per variant and day on the
//! experiment's page; archiving takes it out of the list and out of `ab-config`.

use serde_json::{Value, json};

use crate::errors_support::{KEY, VIEWER, count, ingest, ingest_server, wait_until};
use crate::harness::{TestServer, http};
use crate::page::{Page, Query};
use crate::support::{PASSWORD, owner_page, sign_in};

fn ab_config(server: &TestServer) -> Value {
    let response = http()
        .get(server.url("/ingest/ab-config"))
        .header("x-lookout-key", KEY)
        .send()
        .expect("ab-config request");
    assert_eq!(response.status(), 200);
    response.json().expect("ab-config is JSON")
}

/// The UTC day `days_ago` days before now, as `YYYY-MM-DD`, and noon of it (RFC 3339).
fn day(days_ago: i64) -> (String, String) {
    let date = (time::OffsetDateTime::now_utc() - time::Duration::days(days_ago)).date();
    (date.to_string(), format!("{date}T12:00:00Z"))
}

#[test]
fn flags_and_experiments_are_served_counted_and_archived() {
    let server = ingest_server();
    let page = owner_page(&server);
    page.goto("/experiments");
    page.wait(&Query::heading(1, "Flags and experiments"));
    page.fill_label("Flag name", "new-checkout");
    page.fill_label("Flag value", "true");
    page.click_role("button", "Set flag");
    page.wait_role("button", "Edit flag new-checkout");

    page.click_role("button", "New experiment");
    page.wait(&Query::heading(2, "New experiment"));
    page.fill_label("Experiment key", "cta-colour");
    page.fill_label("Variant 2 key", "green");
    page.click_role("button", "Create experiment");
    page.wait_role("link", "cta-colour");
    let config = ab_config(&server);
    assert_eq!(config["flags"], json!({"new-checkout": true}));
    assert_eq!(
        config["experiments"],
        json!([{"key": "cta-colour", "active": true,
            "variants": [{"key": "control", "weight": 50}, {"key": "green", "weight": 50}]}])
    );

    // Edited in the UI: a flag's value, an experiment's weights; both served at once.
    page.click_role("button", "Edit flag new-checkout");
    page.wait(&Query::heading(3, "Change flag new-checkout"));
    page.fill_label("Flag value", "\"beta\"");
    page.click_role("button", "Set flag");
    page.wait_text("\"beta\"");
    page.click_role("button", "Edit experiment cta-colour");
    page.wait(&Query::heading(2, "Edit experiment cta-colour"));
    page.fill_label("Variant 2 weight", "30");
    page.click_role("button", "Save experiment");
    page.wait_text("green 30 (38%)");
    let config = ab_config(&server);
    assert_eq!(config["flags"], json!({"new-checkout": "beta"}));
    assert_eq!(
        config["experiments"][0]["variants"][1],
        json!({"key": "green", "weight": 30})
    );

    let ((today, now), (yesterday, then)) = (day(0), day(1));
    let exposure = |visitor: &str, variant: &str, at: &str| {
        json!({"experiment": "cta-colour",
        "variant": variant, "visitor_id": visitor, "timestamp": at})
    };
    let exposures = json!({"exposures": [
        exposure("v1", "control", &now), exposure("v2", "control", &now),
        exposure("v2", "control", &now), exposure("v3", "green", &now),
        exposure("v1", "control", &then),
    ]});
    ingest(&server, "/ingest/ab-uniques", &exposures);
    page.check_accessibility();
    page.screenshot("experiments");

    page.click_role("link", "cta-colour");
    page.wait(&Query::heading(1, "Experiment: cta-colour"));
    page.wait(&Query::role("rowheader", &today));
    let table = page.eval(
        "[...document.querySelectorAll('table.results-table tbody tr')].map((row) => [...row.cells].map((cell) => cell.innerText.trim()))",
    );
    assert_eq!(
        table,
        json!([[today, "2", "1"], [yesterday, "1", "0"]]),
        "newest day first"
    );
    wait_until("the chart", || {
        page.eval("!!document.querySelector('.chart canvas')") == json!(true)
    });
    page.check_accessibility();
    page.screenshot("experiment");

    page.click_role("link", "Flags and experiments");
    page.click_role("button", "Archive cta-colour");
    wait_until("the archived experiment to leave the list", || {
        count(&page, &Query::role("link", "cta-colour")) == 0
    });
    assert_eq!(ab_config(&server)["experiments"], json!([]));
    page.click(&Query::label("Show archived (1)"));
    page.wait_role("button", "Unarchive cta-colour");
    assert!(page.path().ends_with("archived=1"), "{}", page.path());

    page.click_role("button", "Delete flag new-checkout");
    wait_until("the flag to go", || {
        count(&page, &Query::role("button", "Edit flag new-checkout")) == 0
    });
    assert_eq!(ab_config(&server)["flags"], json!({}));
}

/// A viewer reads flags and experiments but is offered no button that would change them.
#[test]
fn viewers_see_flags_and_experiments_without_actions() {
    let server = ingest_server();
    let owner = crate::errors_support::ApiSession::sign_in(&server, crate::support::OWNER);
    owner.post(
        "/api/v1/experiments",
        &json!({"key": "cta", "variants": [{"key": "a", "weight": 1}]}),
    );
    let page = Page::open(&server);
    page.goto("/login");
    sign_in(&page, VIEWER, PASSWORD);
    page.goto("/experiments");
    page.wait_role("link", "cta");
    page.wait_text("An admin sets them");
    for button in [
        "New experiment",
        "Set flag",
        "Archive cta",
        "Edit experiment cta",
    ] {
        assert_eq!(count(&page, &Query::role("button", button)), 0, "{button}");
    }
    page.check_accessibility();
}
