//! The error tracker in the browser: an error whose source map was uploaded first is found by
//! a query typed on the Errors page, opened, shows its original function and file, and is
//! resolved; a group's link opened cold goes through sign-in to the group; the empty page
//! teaches a curl command that works; two groups are resolved at once; a viewer opens a group
//! from the keyboard and sees no actions. Every page visited passes axe-core; the pages are
//! kept as screenshots.

use std::process::Command;

use serde_json::json;

use crate::errors_support::{
    ApiSession, BUNDLE_TITLE, KEY, VIEWER, bundle_error, count, ingest_server, plain_error,
    send_errors, upload_bundle_map, wait_until,
};
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, owner_page, sign_in};

const DECOY_TITLE: &str = "Error: Network request failed";

#[test]
fn a_source_mapped_error_is_found_by_a_typed_query_opened_and_resolved() {
    let server = ingest_server();
    upload_bundle_map(&server, "2.0");
    let mut error = bundle_error("2.0");
    error["timestamp"] = json!("2026-11-22T12:00:05.000Z");
    error["breadcrumbs"] = json!([
        {"type": "navigation", "message": "https://shop.example.com/cart", "timestamp": "2026-11-22T12:00:00.000Z"},
        {"type": "request", "message": "POST https://shop.example.com/api/stock 409", "timestamp": "2026-11-22T12:00:03.500Z"},
    ]);
    send_errors(&server, &[error, plain_error("Network request failed")]);
    let page = owner_page(&server);
    page.goto("/errors");
    page.wait_role("link", DECOY_TITLE);
    page.wait_role("link", BUNDLE_TITLE);
    page.check_accessibility();
    page.screenshot("errors");

    // A query in the language of the search API, typed as a person types it.
    page.fill_label("Query", "TypeError release:2.0");
    page.press("Enter");
    page.wait_url(|path| path.starts_with("/errors?q=TypeError"));
    wait_until("the other error to leave the list", || {
        count(&page, &Query::role("link", DECOY_TITLE)) == 0
    });
    page.click_role("link", BUNDLE_TITLE);

    page.wait(&Query::heading(1, BUNDLE_TITLE));
    // The frames as the source map tells them: original function (bold), file, line and column,
    // and the original source line.
    page.wait_text("src/cart.js:5:23");
    page.wait_text("sum += item.price.amount * item.quantity;");
    let bold =
        page.eval("[...document.querySelectorAll('strong')].map((element) => element.textContent)");
    let bold: Vec<String> = serde_json::from_value(bold).expect("strings");
    assert!(
        bold.iter().any(|text| text == "total") && bold.iter().any(|text| text == "checkout"),
        "original function names in bold: {bold:?}"
    );
    // The trail before the error, newest first, timed from the error.
    page.wait(&Query::heading(2, "Breadcrumbs"));
    page.wait_text("POST https://shop.example.com/api/stock 409");
    page.wait_text("1.5 s before");
    page.wait_text("5.0 s before");
    page.check_accessibility();
    page.screenshot("error-group");

    page.click_role("button", "Resolve");
    page.wait_role("button", "Reopen");
    let header = page.eval("document.querySelector('h1').parentElement.innerText");
    assert!(
        header
            .as_str()
            .is_some_and(|text| text.trim_end().ends_with("resolved")),
        "the status beside the title: {header}"
    );
    let api = ApiSession::sign_in(&server, OWNER);
    let id = page.path().trim_start_matches("/errors/").to_string();
    assert_eq!(api.group_status(&id), "resolved");
}

#[test]
fn a_group_link_opened_cold_goes_through_sign_in_to_the_group() {
    let server = ingest_server();
    send_errors(&server, &[bundle_error("2.0")]);
    let id = ApiSession::sign_in(&server, OWNER).group_id(BUNDLE_TITLE);

    // A fresh browser, as after clicking the link in a webhook's payload.
    let page = Page::open(&server);
    let link = format!("/errors/{id}");
    page.goto(&link);
    page.wait_url(|path| path.starts_with("/login?next="));
    sign_in(&page, OWNER, PASSWORD);
    page.wait_url(|path| path == link);
    page.wait(&Query::heading(1, BUNDLE_TITLE));
    page.wait_role("button", "Copy link");
    page.check_accessibility();
}

#[test]
fn the_empty_page_teaches_a_working_curl_then_two_groups_resolve_at_once() {
    let server = ingest_server();
    let page = owner_page(&server);
    page.goto("/errors");
    page.wait(&Query::heading(2, "No errors yet: send the first one"));
    page.wait_role("button", "Copy ingest URL");
    page.wait_role("button", "Copy script tag");
    page.check_accessibility();
    page.screenshot("errors-empty");

    // The command exactly as shown (the Copy button copies the same text), run with the key.
    let command = page.eval(
        "[...document.querySelectorAll('code')].map((code) => code.textContent)
           .find((text) => text.startsWith('curl '))",
    );
    let command = command.as_str().expect("a curl command on the page");
    let output = Command::new("sh")
        .args(["-c", command])
        .env("LOOKOUT_KEY", KEY)
        .output()
        .expect("sh runs curl");
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && answer.contains("\"accepted\":1"),
        "curl: {answer} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    send_errors(&server, &[plain_error("Checkout button does nothing")]);

    page.click_role("button", "Check for errors");
    page.wait_role("link", "Error: Test event sent with curl");
    page.wait_role("link", "Error: Checkout button does nothing");
    page.click_role("checkbox", "Select all on this page");
    page.click_role("button", "Resolve selected");
    page.wait_text("2 error groups resolved");
    page.wait_text("No unresolved error groups.");

    let api = ApiSession::sign_in(&server, OWNER);
    for title in [
        "Error: Test event sent with curl",
        "Error: Checkout button does nothing",
    ] {
        assert_eq!(
            api.group_status(&api.group_id(title)),
            "resolved",
            "{title}"
        );
    }
}

#[test]
fn a_viewer_sees_groups_but_no_actions() {
    let server = ingest_server();
    send_errors(&server, &[bundle_error("2.0")]);
    let page = Page::open(&server);
    page.goto("/login");
    sign_in(&page, VIEWER, PASSWORD);

    page.goto("/errors");
    page.wait_role("link", BUNDLE_TITLE);
    assert_eq!(
        count(&page, &Query::any_role("checkbox")),
        0,
        "row selection"
    );
    page.check_accessibility();

    // j selects the first row (focus follows), Enter opens it.
    wait_until("j to select the first row", || {
        page.press("j");
        page.eval("document.activeElement.textContent") == BUNDLE_TITLE
    });
    page.press("Enter");
    page.wait(&Query::heading(1, BUNDLE_TITLE));
    page.wait_role("button", "Copy link");
    for action in ["Resolve", "Ignore", "Reopen"] {
        assert_eq!(count(&page, &Query::role("button", action)), 0, "{action}");
    }
    page.check_accessibility();
}

#[test]
fn r_resolves_the_group_on_screen() {
    let server = ingest_server();
    send_errors(&server, &[plain_error("Basket badge is stale")]);
    let api = ApiSession::sign_in(&server, OWNER);
    let id = api.group_id("Error: Basket badge is stale");
    let page = owner_page(&server);
    page.goto(&format!("/errors/{id}"));
    page.wait_role("button", "Resolve");
    // The key is listened for once the page has rendered its actions; press until it is heard.
    wait_until("r to resolve the group", || {
        page.press("r");
        count(&page, &Query::role("button", "Reopen")) == 1
    });
    wait_until("the API to say resolved", || {
        api.group_status(&id) == "resolved"
    });
    // Resolved already: `r` changes nothing and offers nothing new.
    page.press("r");
    assert_eq!(api.group_status(&id), "resolved");
}
