//! The sign-in, two-factor, invitation, profile and organisation pages in the browser: a person
//! enrols a second factor and signs in with it, meets the lock after too many wrong passwords,
//! accepts an invitation as a new or an existing account, comes back to the page they were on
//! after their session ended elsewhere, and switches organisation in the top bar. Codes are
//! computed here from the secret the page shows, as an authenticator app would. Every page
//! visited passes axe-core; the pages are kept as screenshots for docs/ui.md.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use totp_rs::{Algorithm, Secret};

use crate::harness::{TestServer, http, text};
use crate::page::{Page, Query};
use crate::support::{OWNER, PASSWORD, server_with_owner, sign_in};

/// The code an authenticator app shows for base32 `secret`, `steps_ahead` 30-second steps from now.
fn authenticator_code(secret: &str, steps_ahead: u64) -> String {
    let bytes =
        Secret::try_from_base32(secret).unwrap_or_else(|_| panic!("a base32 secret: {secret:?}"));
    let totp = totp_rs::Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_step_duration(30)
        .with_secret(bytes)
        .build()
        .expect("a TOTP generator");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    totp.generate(now + 30 * steps_ahead).to_string()
}

/// A session opened through the API, as a script or another browser holds one.
struct ApiSession {
    cookies: String,
    csrf: String,
}

impl ApiSession {
    fn sign_in(server: &TestServer, email: &str, password: &str) -> ApiSession {
        let response = http()
            .post(server.url("/api/v1/auth/login"))
            .json(&json!({"email": email, "password": password}))
            .send()
            .expect("login request");
        assert_eq!(response.status(), 200, "login of {email}");
        let cookies: Vec<String> = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok()?.split(';').next().map(str::to_string))
            .filter(|pair| !pair.ends_with('='))
            .collect();
        let body: Value = response.json().expect("login JSON");
        let csrf = body["csrf_token"].as_str().expect("csrf_token").to_string();
        ApiSession {
            cookies: cookies.join("; "),
            csrf,
        }
    }

    fn post(&self, server: &TestServer, path: &str, body: &Value) -> (u16, Value) {
        self.send(server, reqwest::Method::POST, path, body)
    }

    fn send(
        &self,
        server: &TestServer,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> (u16, Value) {
        let response = http()
            .request(method, server.url(path))
            .header("cookie", &self.cookies)
            .header("x-csrf-token", &self.csrf)
            .json(body)
            .send()
            .unwrap_or_else(|err| panic!("POST {path}: {err}"));
        let status = response.status().as_u16();
        let bytes = response.bytes().expect("a body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// An invitation link for `email` to the session's organisation, as the page path.
    fn invite(&self, server: &TestServer, email: &str, role: &str) -> String {
        let body = json!({"email": email, "role": role});
        let (status, member) = self.post(server, "/api/v1/orgs/me/members", &body);
        assert_eq!(status, 201, "invite {email}: {member}");
        let link = member["invite_url"].as_str().expect("an invite_url");
        let at = link.find("/invite?token=").expect("an /invite link");
        link[at..].to_string()
    }
}

/// What the page's <main> shows, as one line of words.
fn main_text(page: &Page) -> String {
    page.text_of(&Query::any_role("main"))
}

/// Runs `lookout user create` for an owner of organisation `org` (made when missing).
fn create_owner(server: &TestServer, email: &str, org: &str) {
    let mut args = vec!["user", "create", "--email", email, "--password-stdin"];
    args.extend(["--role", "owner", "--org", org]);
    let output = server.cli(&args, &format!("{PASSWORD}\n"));
    assert!(
        output.status.success(),
        "user create: {}",
        text(&output.stderr)
    );
}

#[test]
fn setup_then_two_factor_enrolment_then_sign_in_with_a_code() {
    let server = TestServer::start();
    let token = server.setup_token().expect("a setup URL on stdout");
    let page = Page::open(&server);
    page.goto(&format!("/setup?token={token}"));
    page.fill_label("Organisation", "Acme Ops");
    page.fill_label("E-mail", OWNER);
    page.fill_label("Password", PASSWORD);
    page.click_role("button", "Create owner");
    page.wait_text("You can sign in now");
    page.check_accessibility();
    page.click_role("link", "Sign in");
    sign_in(&page, OWNER, PASSWORD);

    page.goto("/profile");
    page.wait(&Query::heading(1, "Profile"));
    let facts = main_text(&page);
    for fact in [OWNER, "Acme Ops", "Owner", "Two-factor Off"] {
        assert!(facts.contains(fact), "the profile shows {fact:?}: {facts}");
    }
    page.check_accessibility();
    // Taken before enrolling: the secret and its QR code differ on every run.
    page.screenshot("profile");
    page.click_role("button", "Set up two-factor authentication");
    page.wait(&Query::role(
        "img",
        "QR code of your new two-factor secret, for an authenticator app",
    ));
    let secret: String = page
        .text_of(&Query::label("Secret key"))
        .split_whitespace()
        .collect();
    page.check_accessibility();

    page.fill_label("Code from your authenticator app", "000000");
    page.click_role("button", "Turn on two-factor authentication");
    let refusal = page.text_of(&Query::any_role("alert"));
    assert!(refusal.contains("That code is not right"), "{refusal}");
    page.fill_label(
        "Code from your authenticator app",
        &authenticator_code(&secret, 0),
    );
    page.click_role("button", "Turn on two-factor authentication");
    page.wait(&Query::heading(3, "Save your recovery codes"));
    let codes = page.text_of(&Query::role("list", "Recovery codes"));
    assert_eq!(
        codes.split_whitespace().count(),
        10,
        "ten recovery codes: {codes}"
    );
    let download = page.eval("document.querySelector('a[download]').getAttribute('download')");
    assert_eq!(download, "lookout-recovery-codes.txt");
    page.wait_role("link", "Download codes (.txt)");
    page.wait_role("button", "Copy codes");
    page.check_accessibility();
    page.click_role("button", "I have saved these codes");
    page.wait_role("button", "Turn off two-factor authentication");

    page.click_role("button", "Sign out");
    page.wait_url(|path| path.starts_with("/login"));
    page.fill_label("E-mail", OWNER);
    page.fill_label("Password", PASSWORD);
    page.click_role("button", "Sign in");
    page.wait(&Query::heading(1, "Two-factor authentication"));
    page.fill_label("Authentication or recovery code", "123456");
    page.click_role("button", "Verify");
    let refusal = page.text_of(&Query::any_role("alert"));
    assert!(
        refusal.contains("That code is not right"),
        "a wrong code keeps the step: {refusal}"
    );
    page.check_accessibility();
    page.screenshot("two-factor");
    // The code of the next step: the one used to enrol may not serve twice.
    page.fill_label(
        "Authentication or recovery code",
        &authenticator_code(&secret, 1),
    );
    page.click_role("button", "Verify");
    page.wait_url(|path| path == "/");

    // A recovery code stands in for the app once, at sign-in and to turn the second factor off
    // (which ends every session).
    let recovery: Vec<&str> = codes.split_whitespace().collect();
    page.goto("/profile");
    page.click_role("button", "Sign out");
    page.fill_label("E-mail", OWNER);
    page.fill_label("Password", PASSWORD);
    page.click_role("button", "Sign in");
    page.fill_label("Authentication or recovery code", recovery[0]);
    page.click_role("button", "Verify");
    page.wait_url(|path| path == "/");
    page.goto("/profile");
    page.fill_label("Authentication or recovery code", recovery[1]);
    page.click_role("button", "Turn off two-factor authentication");
    page.wait_text("Two-factor authentication is off and every session has ended.");
    sign_in(&page, OWNER, PASSWORD);
    page.goto("/profile");
    page.wait_role("button", "Set up two-factor authentication");
}

#[test]
fn five_wrong_passwords_lock_the_account_and_the_page_says_for_how_long() {
    let server = server_with_owner();
    let page = Page::open(&server);
    page.goto("/login");
    for attempt in 1..=5 {
        page.fill_label("E-mail", OWNER);
        page.fill_label("Password", &format!("wrong password {attempt}"));
        page.click_role("button", "Sign in");
        page.wait_text("The e-mail or password is not right.");
        // The summary is focused when it appears; wait for the form to be ready again.
        page.wait_role("button", "Sign in");
    }
    // Locked now: even the right password is refused, with the time left (LOGIN_LOCKOUT_MINUTES, 15).
    page.fill_label("E-mail", OWNER);
    page.fill_label("Password", PASSWORD);
    page.click_role("button", "Sign in");
    page.wait(&Query::heading(2, "Account locked"));
    let message = page.text_of(&Query::any_role("alert"));
    assert!(message.contains("Try again in 15 minutes."), "{message}");
    assert!(page.path().starts_with("/login"), "{}", page.path());
    page.check_accessibility();
    page.screenshot("locked");
}

#[test]
fn a_new_person_accepts_an_invitation_and_sees_the_organisation() {
    let server = server_with_owner();
    let owner = ApiSession::sign_in(&server, OWNER, PASSWORD);
    let link = owner.invite(&server, "newcomer@example.com", "member");

    let page = Page::open(&server);
    page.goto(&link);
    page.wait(&Query::heading(1, "Accept an invitation"));
    page.fill_label("New password", "a newcomer's own password");
    page.check_accessibility();
    page.screenshot("invite");
    page.click_role("button", "Set password and join");
    page.wait(&Query::heading(1, "Overview"));
    assert_eq!(page.path(), "/");
    page.goto("/profile");
    page.wait(&Query::heading(1, "Profile"));
    let facts = main_text(&page);
    for fact in [
        "newcomer@example.com",
        "Organisation default",
        "Role Member",
    ] {
        assert!(facts.contains(fact), "the profile shows {fact:?}: {facts}");
    }

    // A wrong current password is said beside the form; a right one ends every session.
    page.fill_label("Current password", "not my password");
    page.fill_label("New password", "a newcomer's second password");
    page.click_role("button", "Change password");
    page.wait_text("The current password is not right.");
    page.fill_label("Current password", "a newcomer's own password");
    page.click_role("button", "Change password");
    page.wait_text("Your password is changed and every session has ended.");
    sign_in(
        &page,
        "newcomer@example.com",
        "a newcomer's second password",
    );

    // The link works once: opened again, it says so in words.
    page.goto(&link);
    page.click_role("button", "Join as newcomer@example.com");
    page.wait(&Query::heading(2, "This invitation can no longer be used"));
    page.check_accessibility();
}

#[test]
fn a_session_ended_elsewhere_brings_sign_in_then_the_same_page() {
    let server = server_with_owner();
    let page = Page::open(&server);
    page.goto("/login");
    sign_in(&page, OWNER, PASSWORD);
    page.goto("/profile");
    page.wait(&Query::heading(1, "Profile"));

    // Another session of the same person signs out everywhere (RegisterUserLogout).
    let elsewhere = ApiSession::sign_in(&server, OWNER, PASSWORD);
    let (status, _) = elsewhere.post(&server, "/api/v1/auth/logout-everywhere", &json!({}));
    assert_eq!(status, 204);

    page.click_role("button", "Set up two-factor authentication");
    page.wait_url(|path| path.starts_with("/login?") && path.contains("next=%2Fprofile"));
    page.wait_text("Your session has ended.");
    page.check_accessibility();
    sign_in(&page, OWNER, PASSWORD);
    page.wait(&Query::heading(1, "Profile"));
    assert_eq!(page.path(), "/profile");
}

#[test]
fn an_existing_account_joins_a_second_organisation_and_switches_between_them() {
    let server = server_with_owner();
    create_owner(&server, "beta-owner@example.com", "Beta");
    let beta_owner = ApiSession::sign_in(&server, "beta-owner@example.com", PASSWORD);
    let link = beta_owner.invite(&server, OWNER, "admin");

    // The owner of `default` opens the link and signs in as themselves to join Beta.
    let page = Page::open(&server);
    page.goto(&link);
    page.wait(&Query::heading(1, "Accept an invitation"));
    // Taken for a new person, the account's own password is asked for by the other choice.
    page.fill_label("New password", "a password of someone else's");
    page.click_role("button", "Set password and join");
    let refusal = page.text_of(&Query::any_role("alert"));
    assert!(
        refusal.contains("an account that already exists"),
        "{refusal}"
    );
    page.click(&Query::label("I already have a Lookout account"));
    page.wait(&Query::heading(2, "Sign in to join"));
    page.fill_label("E-mail", OWNER);
    page.fill_label("Password", PASSWORD);
    page.check_accessibility();
    page.click_role("button", "Sign in and join");
    page.wait_url(|path| path == "/");
    page.wait(&Query::heading(1, "Overview"));
    // Lands in the organisation joined; the top bar offers both.
    page.wait_role("button", "Organisation: Beta");
    page.goto("/profile");
    page.wait(&Query::heading(1, "Profile"));
    let facts = main_text(&page);
    assert!(
        facts.contains("Organisation Beta") && facts.contains("Role Admin"),
        "{facts}"
    );

    page.click_role("button", "Organisation: Beta");
    page.wait_role("button", "Beta (admin)");
    page.check_accessibility();
    page.click_role("button", "default (owner)");
    page.wait_url(|path| path == "/");
    page.wait(&Query::heading(1, "Overview"));
    page.wait_role("button", "Organisation: default");
    page.goto("/profile");
    page.wait(&Query::heading(1, "Profile"));
    let facts = main_text(&page);
    assert!(
        facts.contains("Organisation default") && facts.contains("Role Owner"),
        "{facts}"
    );
}

#[test]
fn an_organisation_that_requires_two_factor_brings_its_people_to_enrol_first() {
    let server = server_with_owner();
    let owner = ApiSession::sign_in(&server, OWNER, PASSWORD);
    let settings = json!({"two_factor_required": true});
    let (status, answer) = owner.send(
        &server,
        reqwest::Method::PATCH,
        "/api/v1/orgs/me/settings",
        &settings,
    );
    assert_eq!(status, 200, "{answer}");

    let page = Page::open(&server);
    page.goto("/errors");
    sign_in(&page, OWNER, PASSWORD);
    page.wait_url(|path| path == "/profile");
    page.wait_text("default requires two-factor authentication.");
    page.check_accessibility();
    page.click_role("button", "Set up two-factor authentication");
    let secret: String = page
        .text_of(&Query::label("Secret key"))
        .split_whitespace()
        .collect();
    page.fill_label(
        "Code from your authenticator app",
        &authenticator_code(&secret, 0),
    );
    page.click_role("button", "Turn on two-factor authentication");
    page.click_role("button", "I have saved these codes");
    page.click_role("link", "Overview");
    page.wait(&Query::heading(1, "Overview"));
}
