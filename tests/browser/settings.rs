//! The settings pages in the browser: an API key made in the UI is shown once, works with
//! `curl` and then shows when it was used; an IP allowlist that would lock the admin out asks
//! first (Cancel keeps the old list, "Save anyway" saves it); an invitation made in the UI lets
//! the person in; the audit log filtered by action shows only those entries; services, ingest
//! and what a viewer sees. Every page passes axe and leaves its screenshot.

use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};

use crate::errors_support::{
    ApiSession, KEY, VIEWER, count, ingest_server, plain_error, send_errors, wait_until,
};
use crate::harness::{TestServer, http};
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, owner_page, server_with_owner, sign_in};

/// The cells of each body row of the table captioned `caption`, as shown.
fn table_rows(page: &Page, caption: &str) -> Vec<Vec<String>> {
    let rows = page.eval(&format!(
        "[...document.querySelectorAll('table')].filter((table) => table.caption && table.caption.textContent === {caption:?})
           .flatMap((table) => [...table.tBodies[0].rows])
           .map((row) => [...row.cells].map((cell) => cell.innerText.trim()))"
    ));
    serde_json::from_value(rows).expect("rows of cells")
}

/// `curl -sf -H "Authorization: Bearer <key>" <url>`: the body, or None when curl failed.
fn curl_with_key(server: &TestServer, key: &str, path: &str) -> Option<String> {
    let output = Command::new("curl")
        .args([
            "-sf",
            "-H",
            &format!("Authorization: Bearer {key}"),
            &server.url(path),
        ])
        .output()
        .unwrap_or_else(|err| panic!("cannot run curl ({err}): apt-get install curl"));
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Picks `value` in the select labelled `label` as a person would: the control changes and
/// announces it.
pub fn choose(page: &Page, label: &str, value: &str) {
    page.wait(&Query::label(label));
    page.eval(&format!(
        "(() => {{ const select = window.__lookoutQueries.findOne({{ label: {label:?} }}).element;
           select.value = {value:?}; select.dispatchEvent(new Event('change', {{ bubbles: true }})); }})()"
    ));
}

#[test]
fn an_api_key_made_in_the_ui_is_shown_once_works_with_curl_and_shows_its_use() {
    let server = server_with_owner();
    let page = owner_page(&server);
    page.goto("/settings/api-keys");
    page.wait(&Query::heading(1, "API keys"));
    page.wait_text("No API keys yet.");
    page.fill_label("Name", "deploy script");
    page.click_role("button", "Create API key");
    page.wait_text("This will not be shown again.");
    let key = page.text_of(&Query::label("API key"));
    assert!(key.starts_with("lk_") && key.len() == 46, "{key}");
    let example = page.text_of(&Query::text("Authorization: Bearer"));
    assert!(
        example.contains(&key),
        "the curl example uses the key: {example}"
    );
    page.check_accessibility();
    page.click_role("button", "Done");
    wait_until("the new key in the list", || {
        table_rows(&page, "API keys").len() == 1
    });
    let rows = table_rows(&page, "API keys");
    assert_eq!(rows[0][0], "deploy script");
    assert_eq!(rows[0][4], "never", "not used yet: {rows:?}");

    let me = curl_with_key(&server, &key, "/api/v1/auth/me").expect("curl with the key succeeds");
    let me: Value = serde_json::from_str(&me).expect("JSON");
    assert_eq!(me["user"]["email"], OWNER);

    // Opened again, the secret is gone and "last used" is filled in.
    page.goto("/settings/api-keys");
    page.wait_role("button", "Revoke deploy script");
    assert_eq!(
        count(&page, &Query::text("This will not be shown again.")),
        0
    );
    assert_eq!(count(&page, &Query::text(&key)), 0);
    let rows = table_rows(&page, "API keys");
    assert_ne!(rows[0][4], "never", "last used after curl: {rows:?}");
    page.check_accessibility();
    page.screenshot("settings-api-keys");

    // Revoked after a confirmation: curl is refused from then on.
    page.click_role("button", "Revoke deploy script");
    page.wait(&Query::heading(2, "Revoke deploy script?"));
    page.click_role("button", "Revoke key");
    page.wait_text("Revoked");
    assert_eq!(curl_with_key(&server, &key, "/api/v1/auth/me"), None);
}

#[test]
fn an_allowlist_that_would_lock_the_admin_out_asks_first() {
    let server = server_with_owner();
    let api = ApiSession::sign_in(&server, OWNER);
    let probe = api.post("/api/v1/orgs/me/api-keys", &json!({"name": "probe"}));
    let probe = probe["key"].as_str().expect("key").to_string();
    let page = owner_page(&server);
    page.goto("/settings");
    page.wait(&Query::heading(1, "Organisation"));
    page.wait_text("Free");
    page.check_accessibility();
    page.screenshot("settings-organisation");

    // The name is the admin's to change; the top bar follows.
    page.fill_label("Organisation name", "Acme Ops");
    page.click_role("button", "Save settings");
    page.wait_text("Organisation settings saved.");
    assert_eq!(api.get("/api/v1/auth/me")["org"]["name"], "Acme Ops");
    // Shown at once in the top bar and the facts strip.
    wait_until("the new name on the page", || {
        count(&page, &Query::text("Acme Ops")) == 2
    });

    page.fill_label("Allowed networks", "192.0.2.0/24\n2001:db8::/32");
    page.click_role("button", "Save allowlist");
    page.wait(&Query::heading(2, "This list would lock you out"));
    page.wait_text("127.0.0.1");
    page.check_accessibility();
    page.click_role("button", "Cancel");
    page.wait_text("Not saved: the allowlist in force is unchanged.");
    let kept = api.get("/api/v1/orgs/me/ip-allowlist");
    assert_eq!(kept["cidrs"], json!([]), "cancel keeps the old list");

    page.click_role("button", "Save allowlist");
    page.wait(&Query::heading(2, "This list would lock you out"));
    page.click_role("button", "Save anyway");
    page.wait_text("IP allowlist saved.");
    // Saved: requests from this address are refused now, keys too.
    let refused = http()
        .request(Method::GET, server.url("/api/v1/auth/me"))
        .header("authorization", format!("Bearer {probe}"))
        .send()
        .expect("request");
    assert_eq!(refused.status(), 403);
    let problem: Value = refused.json().expect("problem");
    assert_eq!(problem["code"], "ip_not_allowed");
}

#[test]
fn an_invitation_made_in_the_ui_lets_the_person_in() {
    let server = server_with_owner();
    let page = owner_page(&server);
    page.goto("/settings/members");
    page.wait(&Query::heading(1, "Members"));
    page.wait_text("No pending invitations.");
    page.fill_label("E-mail", "newcomer@example.com");
    page.click_role("button", "Invite member");
    page.wait_text("This link will not be shown again.");
    let link = page.text_of(&Query::label("Invitation link"));
    assert!(link.contains("/invite?token="), "{link}");
    // The list is read again after the invitation: it shows up there as pending.
    wait_until("the invitation among the pending ones", || {
        table_rows(&page, "Pending invitations").len() == 1
    });
    let pending = table_rows(&page, "Pending invitations");
    assert!(
        pending[0][0].contains("newcomer@example.com"),
        "{pending:?}"
    );
    page.check_accessibility();
    page.screenshot("settings-members");

    // The person opens the link in their own browser, sets a password and is in.
    let newcomer = Page::open(&server);
    newcomer.goto(&link);
    newcomer.wait(&Query::heading(1, "Accept an invitation"));
    newcomer.fill_label("New password", "a newcomer's own password");
    newcomer.click_role("button", "Set password and join");
    newcomer.wait(&Query::heading(1, "Overview"));

    page.goto("/settings/members");
    page.wait_text("No pending invitations.");
    let members = table_rows(&page, "Members");
    let joined = members.iter().find(|row| row[0] == "newcomer@example.com");
    let joined = joined.unwrap_or_else(|| panic!("the newcomer is a member: {members:?}"));
    assert_eq!(joined[3], "Active", "{joined:?}");

    // The owner changes the newcomer's role with the row's select; their session ends.
    choose(&page, "Role of newcomer@example.com", "viewer");
    page.wait_text("newcomer@example.com is now Viewer; their sessions were ended.");
    let api = ApiSession::sign_in(&server, OWNER);
    let members = api.get("/api/v1/orgs/me/members");
    let items = members["items"].as_array().expect("items");
    let newcomer_row = items.iter().find(|m| m["email"] == "newcomer@example.com");
    assert_eq!(newcomer_row.expect("listed")["role"], "viewer", "{members}");
}

#[test]
fn the_audit_log_filtered_by_action_shows_only_those_entries() {
    let server = server_with_owner();
    let api = ApiSession::sign_in(&server, OWNER);
    for name in ["first", "second"] {
        api.post("/api/v1/orgs/me/api-keys", &json!({"name": name}));
    }
    let page = owner_page(&server);
    page.goto("/settings/audit");
    page.wait(&Query::heading(1, "Audit log"));
    wait_until("the audit log's entries", || {
        !table_rows(&page, "Audit log").is_empty()
    });
    let all = table_rows(&page, "Audit log");
    assert!(all.iter().any(|row| row[2] != "api_key.created"), "{all:?}");

    choose(&page, "Action", "api_key.created");
    page.wait_url(|path| path.contains("action=api_key.created"));
    wait_until("only api_key.created entries", || {
        let rows = table_rows(&page, "Audit log");
        rows.len() == 2 && rows.iter().all(|row| row[2] == "api_key.created")
    });
    let rows = table_rows(&page, "Audit log");
    assert!(rows.iter().all(|row| row[1] == OWNER), "{rows:?}");
    assert!(rows.iter().any(|row| row[4].contains("second")), "{rows:?}");
    page.check_accessibility();
    page.screenshot("settings-audit");

    // The filter is in the URL: opened cold, the same entries.
    page.goto("/settings/audit?action=api_key.created&actor=nobody%40example.com");
    page.wait_text("No entries match these filters.");
    // A custom range shows its bounds as fields; nothing was recorded before 2001.
    page.goto("/settings/audit?range=custom&to=2001-01-01T00%3A00%3A00.000Z");
    page.wait(&Query::label("To"));
    page.wait_text("No entries match these filters.");
    page.check_accessibility();
}

#[test]
fn services_ingest_and_what_a_viewer_sees() {
    let server = ingest_server();
    let mut error = plain_error("checkout failed");
    error["service"] = json!("shop");
    error["environment"] = json!("production");
    send_errors(&server, &[error]);

    let page = owner_page(&server);
    page.goto("/settings/services");
    page.wait(&Query::heading(1, "Services"));
    page.wait_role("link", "shop");
    let rows = table_rows(&page, "Services");
    assert_eq!(rows[0][1], "production", "{rows:?}");
    assert_eq!(rows[0][3], "1", "{rows:?}");
    page.check_accessibility();
    page.screenshot("settings-services");
    page.click_role("link", "shop");
    page.wait_url(|path| path.starts_with("/errors") && path.contains("service=shop"));

    page.goto("/settings/ingest");
    page.wait(&Query::heading(1, "Ingest"));
    page.wait_text("1 key");
    let origin = server.url("");
    let origin = origin.trim_end_matches('/');
    page.wait_role("cell", &format!("{origin}/ingest/web-errors"));
    page.wait_role("cell", &format!("{origin}/ingest/sourcemaps"));
    // The SDK's script tag is pinned to this build's versioned file and its SRI hash.
    let manifest: serde_json::Value = crate::harness::http()
        .get(server.url("/sdk/manifest.json"))
        .send()
        .and_then(|response| response.json())
        .expect("the SDK manifest");
    let classic = manifest["files"]
        .as_array()
        .and_then(|files| files.iter().find(|file| file["name"] == "lookout.iife.js"))
        .expect("the classic script in the manifest");
    let path = classic["path"].as_str().expect("path");
    page.wait_text(&format!("<script src=\"{origin}{path}\""));
    page.wait_text(&format!(
        "integrity=\"{}\"",
        classic["integrity"].as_str().expect("integrity")
    ));
    let shown = page.eval("document.body.innerText");
    assert!(
        !shown.as_str().unwrap_or_default().contains(KEY),
        "the ingest key is never shown"
    );
    page.check_accessibility();
    page.screenshot("settings-ingest");

    // A viewer reads the organisation's settings without a button to change them.
    let viewer = Page::open(&server);
    viewer.goto("/login");
    sign_in(&viewer, VIEWER, PASSWORD);
    viewer.goto("/settings");
    viewer.wait(&Query::heading(1, "Organisation"));
    viewer.wait_text("Admins change these settings.");
    assert_eq!(count(&viewer, &Query::role("button", "Save allowlist")), 0);
    viewer.check_accessibility();
    viewer.goto("/settings/members");
    viewer.wait(&Query::heading(2, "Pending invitations"));
    viewer.wait_text("Admins invite, change roles and remove members.");
    assert_eq!(count(&viewer, &Query::role("button", "Invite member")), 0);
    assert_eq!(count(&viewer, &Query::any_role("combobox")), 0);
    viewer.check_accessibility();
    viewer.goto("/settings/api-keys");
    viewer.wait_text("ask one of them for a key");
    viewer.goto("/settings/audit");
    viewer.wait_text("Admins and owners read it.");
}
