//! First steps in the browser: the setup link the server prints, opened cold, creates the
//! owner; its "Sign in" link leads to the sign-in form; signing in lands on the overview,
//! which names the organisation. Each page passes axe-core and is kept as a screenshot.

use crate::harness::TestServer;
use crate::page::{Page, Query};
use crate::support::{PASSWORD, sign_in};

#[test]
fn the_setup_link_leads_to_a_signed_in_overview() {
    let server = TestServer::start();
    let token = server.setup_token().expect("a setup URL on stdout");
    let page = Page::open(&server);

    page.goto(&format!("/setup?token={token}"));
    page.wait(&Query::heading(1, "Set up Lookout"));
    page.fill_label("Organisation", "Acme Ops");
    page.fill_label("E-mail", "owner@example.com");
    page.fill_label("Password", PASSWORD);
    page.check_accessibility();
    page.screenshot("setup");
    page.click_role("button", "Create owner");
    page.wait_text("You can sign in now");

    page.click_role("link", "Sign in");
    page.wait_url(|path| path == "/login");
    page.wait(&Query::heading(1, "Sign in"));
    page.check_accessibility();
    page.screenshot("sign-in");
    sign_in(&page, "owner@example.com", PASSWORD);

    page.wait(&Query::heading(1, "Overview"));
    page.wait_text("Acme Ops");
    assert_eq!(page.path(), "/");
    page.check_accessibility();

    // A cold load of the overview with the session cookie: how soon a person can use it.
    let interactive = page.interactive_ms("/", &Query::heading(1, "Overview"));
    eprintln!("overview interactive after {interactive:.0} ms (loopback, not asserted)");
}

#[test]
fn a_wrong_password_is_said_in_words_beside_the_form() {
    let server = crate::support::server_with_owner();
    let page = Page::open(&server);
    page.goto("/login");
    page.fill_label("E-mail", crate::support::OWNER);
    page.fill_label("Password", "not the password");
    page.press("Enter");
    let summary = page.text_of(&Query::any_role("alert"));
    assert!(
        summary.contains("The e-mail or password is not right"),
        "{summary}"
    );
    assert!(page.path().starts_with("/login"), "{}", page.path());
}
