//! The identity-provider pages in the browser: SCIM provisioning (free plan told what the plan
//! brings; on the enterprise plan a token made in the UI is shown once, works on `/scim/v2`, and
//! is refused there once revoked); single sign-on (an owner saves an OpenID Connect provider,
//! its secret never shown again, and the sign-in page sends people at its domain there and
//! says in words why it came back); and the whole sign-in in Chromium against the real
//! `oidc-provider` npm package: an owner's test sign-in, then a person at the domain signed in as
//! a new member. Every page of ours passes axe and leaves its screenshot.

use std::process::Command;

use serde_json::json;

use crate::errors_support::{ApiSession, count, wait_until};
use crate::harness::TestServer;
use crate::oidc_node::{CLIENT_ID, CLIENT_SECRET, NodeProvider, start_provider};
use crate::page::{Page, Query};
use crate::settings::choose;
use crate::support::{OWNER, PASSWORD, owner_page, server_with_owner};

/// A server with `OWNER` whose provider fetches may reach the loopback identity providers
/// these tests run (the same switch as webhooks: `WEBHOOK_ALLOW_PRIVATE`).
fn sso_server() -> TestServer {
    let server = TestServer::builder()
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .start();
    server.add_user(OWNER, "owner", PASSWORD);
    server
}

/// `lookout org set-plan default <plan>` through the running server's admin socket.
pub fn set_plan(server: &TestServer, plan: &str) {
    let output = server.cli(&["org", "set-plan", "default", plan], "");
    assert!(
        output.status.success(),
        "set-plan: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The HTTP status of `GET /scim/v2/Users` with `token` as a bearer token, as curl reports it.
fn scim_status(server: &TestServer, token: &str) -> String {
    let output = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            &format!("Authorization: Bearer {token}"),
            &server.url("/scim/v2/Users"),
        ])
        .output()
        .unwrap_or_else(|err| panic!("cannot run curl ({err}): apt-get install curl"));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn token_rows(page: &Page) -> usize {
    page.eval(
        "[...document.querySelectorAll('table')].filter((t) => t.caption && t.caption.textContent === 'SCIM tokens')
           .flatMap((t) => [...t.tBodies[0].rows]).length",
    )
    .as_u64()
    .expect("a count") as usize
}

#[test]
fn a_scim_token_made_in_the_ui_is_shown_once_and_works_until_revoked() {
    let server = server_with_owner();
    let page = owner_page(&server);
    page.goto("/settings/scim");
    page.wait(&Query::heading(1, "SCIM provisioning"));
    page.wait_text("comes with the Enterprise plan");
    assert_eq!(count(&page, &Query::label("Token name")), 0);
    page.check_accessibility();

    set_plan(&server, "enterprise");
    page.goto("/settings/scim");
    page.wait_text("No SCIM tokens yet.");
    page.wait_text(&server.url("/scim/v2"));
    page.fill_label("Token name", "Okta");
    page.click_role("button", "Create SCIM token");
    page.wait_text("This will not be shown again.");
    let token = page.text_of(&Query::label("SCIM token"));
    assert!(token.starts_with("lkscim_"), "{token}");
    page.check_accessibility();
    page.screenshot("settings-scim");
    assert_eq!(scim_status(&server, &token), "200");

    page.click_role("button", "Done");
    wait_until("the new token in the list", || token_rows(&page) == 1);
    assert_eq!(count(&page, &Query::text(&token)), 0, "shown once");
    page.click_role("button", "Revoke Okta");
    page.wait(&Query::heading(2, "Revoke Okta?"));
    page.click_role("button", "Revoke token");
    page.wait_text("The SCIM token Okta was revoked.");
    page.wait_text("Revoked");
    assert_eq!(token_rows(&page), 1, "a revoked token stays listed");
    assert_eq!(count(&page, &Query::role("button", "Revoke Okta")), 0);
    assert_eq!(scim_status(&server, &token), "401");
}

#[test]
fn an_owner_sets_up_single_sign_on_and_the_sign_in_page_sends_people_there() {
    let server = sso_server();
    let page = owner_page(&server);
    page.goto("/settings/sso");
    page.wait(&Query::heading(1, "Single sign-on"));
    page.wait_text("comes with the Enterprise plan");
    page.check_accessibility();

    set_plan(&server, "enterprise");
    page.goto("/settings/sso");
    page.wait(&Query::heading(2, "Service provider details"));
    page.wait_text(&server.url("/api/v1/auth/sso/oidc/callback"));
    page.click_role("checkbox", "Sign in with OpenID Connect");
    // Nothing listens there: the sign-in below meets an unreachable provider.
    page.fill_label("Issuer URL", "http://127.0.0.1:9/realms/acme");
    page.fill_label("Client ID", "lookout");
    page.fill_label("Client secret", "a client secret of the provider");
    page.fill_label("E-mail domains", "Example.ORG");
    choose(&page, "Role of new members", "viewer");
    page.click_role("checkbox", "Require single sign-on");
    page.click_role("button", "Save single sign-on");
    page.wait_text("Single sign-on settings saved.");
    page.wait_text("Saved and never shown. Leave empty to keep it.");
    page.check_accessibility();
    page.screenshot("settings-sso");

    let api = ApiSession::sign_in(&server, OWNER);
    let saved = api.get("/api/v1/orgs/me/sso");
    assert_eq!(saved["oidc"]["issuer"], "http://127.0.0.1:9/realms/acme");
    assert_eq!(saved["oidc"]["client_id"], "lookout");
    assert_eq!(saved["domains"], json!(["example.org"]));
    assert_eq!(saved["default_role"], "viewer");
    assert_eq!(saved["required"], true);
    assert!(
        !saved
            .to_string()
            .contains("a client secret of the provider"),
        "the secret is never answered: {saved}"
    );

    // Someone at that domain is sent to the provider; its failure comes back in words.
    let visitor = Page::open(&server);
    visitor.goto("/login");
    visitor.click_role("link", "Sign in with SSO");
    visitor.fill_label("Work e-mail", "someone@example.org");
    visitor.click_role("button", "Continue with SSO");
    visitor.wait(&Query::heading(2, "Single sign-on failed"));
    visitor.wait_text("Your identity provider could not be reached.");
    assert!(visitor.url().contains("sso_error="), "{}", visitor.url());
    visitor.check_accessibility();

    // An address at another domain is told single sign-on is not set up for it.
    visitor.goto("/login");
    visitor.click_role("link", "Sign in with SSO");
    visitor.fill_label("Work e-mail", "someone@elsewhere.example");
    visitor.click_role("button", "Continue with SSO");
    visitor.wait_text("Single sign-on is not set up for that organisation or e-mail domain.");
}

/// Walks the `oidc-provider` development pages in `page` until the browser is back on Lookout:
/// its sign-in form (any login, which becomes the verified e-mail) and its consent form.
fn through_the_provider(page: &Page, provider: &NodeProvider, login: &str) {
    for _ in 0..10 {
        // The provider's pages ask for web fonts this machine cannot reach: their problems
        // are the provider's, not Lookout's.
        std::thread::sleep(std::time::Duration::from_millis(500));
        page.take_page_problems();
        if !page.url().starts_with(&provider.issuer) {
            return;
        }
        page.eval(&format!(
            "(() => {{ const form = document.forms[0]; if (!form) return 'waiting';
               const login = form.querySelector('input[name=login]');
               if (login) {{ login.value = {login:?}; form.querySelector('input[name=password]').value = 'any'; }}
               form.submit(); return 'submitted'; }})()"
        ));
    }
    panic!("still at the provider after ten pages: {}", page.url());
}

#[test]
fn a_person_signs_in_through_a_real_openid_provider_in_the_browser() {
    let server = sso_server();
    set_plan(&server, "enterprise");
    let provider = start_provider(&server.url("/api/v1/auth/sso/oidc/callback"));
    let page = owner_page(&server);
    page.goto("/settings/sso");
    page.click_role("checkbox", "Sign in with OpenID Connect");
    page.fill_label("Issuer URL", &provider.issuer);
    page.fill_label("Client ID", CLIENT_ID);
    page.fill_label("Client secret", CLIENT_SECRET);
    page.fill_label("E-mail domains", "corp.example");
    page.click_role("button", "Save single sign-on");
    page.wait_text("Single sign-on settings saved.");

    // The owner's test sign-in: the provider vouches, nobody signs in, nothing is created.
    page.click_role("link", "Test OpenID Connect sign-in");
    through_the_provider(&page, &provider, "tester@corp.example");
    page.wait_text("Test sign-in worked: the provider vouched for");
    page.wait_text("tester@corp.example");
    assert!(page.path().starts_with("/settings/sso"), "{}", page.url());
    page.check_accessibility();
    let api = ApiSession::sign_in(&server, OWNER);
    let members = api.get("/api/v1/orgs/me/members?limit=100").to_string();
    assert!(!members.contains("tester@corp.example"), "{members}");

    // Someone at the domain signs in: they land on the overview as a new member.
    let visitor = Page::open(&server);
    visitor.goto("/login");
    visitor.click_role("link", "Sign in with SSO");
    visitor.fill_label("Work e-mail", "dana@corp.example");
    visitor.click_role("button", "Continue with SSO");
    through_the_provider(&visitor, &provider, "dana@corp.example");
    visitor.wait(&Query::heading(1, "Overview"));
    visitor.wait_text("dana@corp.example");
    let members = api.get("/api/v1/orgs/me/members?limit=100").to_string();
    assert!(members.contains("dana@corp.example"), "{members}");
}
