//! First-run setup (CONTRACT.md section 0): the setup URL printed on stdout while no user
//! exists, `GET /api/v1/setup`, `POST /api/v1/setup` and its refusals (wrong token, bad
//! input, completed setup), a fresh token at every start without a user, and how setup
//! interacts with `lookout user create` and `lookout user list`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{TestServer, http, run_cli, text, wait_for};
use crate::http_basics::Reply;

const PASSWORD: &str = "correct horse battery";

/// The stdout lines of the second start (after one restart): those after the first
/// `listening on` line, once the second one has been read.
fn lines_of_second_start(server: &TestServer) -> Vec<String> {
    wait_for(
        "the second `listening on` line",
        Duration::from_secs(5),
        || {
            let lines = server.stdout_lines();
            let mut listening = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.starts_with("listening on "));
            let first = listening.next()?.0;
            listening.next()?;
            Some(lines[first + 1..].to_vec())
        },
    )
}

fn setup_token_of_second_start(server: &TestServer) -> Option<String> {
    let lines = lines_of_second_start(server);
    lines.iter().find_map(|line| {
        line.split("/setup?token=")
            .nth(1)
            .map(|t| t.trim().to_string())
    })
}

fn setup_required(server: &TestServer) -> bool {
    let response = http().get(server.url("/api/v1/setup")).send().unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().unwrap();
    body["required"]
        .as_bool()
        .unwrap_or_else(|| panic!("no boolean `required`: {body}"))
}

fn post_setup(server: &TestServer, body: Value) -> reqwest::blocking::Response {
    http()
        .post(server.url("/api/v1/setup"))
        .json(&body)
        .send()
        .unwrap()
}

fn setup_body(token: &str, email: &str, password: &str) -> Value {
    json!({"token": token, "email": email, "password": password, "org_name": "Acme Ops"})
}

#[test]
fn first_start_prints_the_setup_url_before_listening() {
    let server = TestServer::start();
    let expected = format!("http://{}/setup?token=", server.addr);
    // Both lines, in the order the server printed them.
    let (lines, url_line, listening) =
        wait_for("both stdout lines", Duration::from_secs(5), || {
            let lines = server.stdout_lines();
            let url_line = lines.iter().position(|line| line.contains(&expected))?;
            let listening = lines
                .iter()
                .position(|line| line.starts_with("listening on "))?;
            Some((lines, url_line, listening))
        });
    assert!(
        url_line < listening,
        "the setup URL must come before `listening on`: {lines:?}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|line| line.contains("/setup?token="))
            .count(),
        1,
        "{lines:?}"
    );
    let token = server.setup_token().unwrap();
    assert!(
        token.len() >= 16 && !token.contains(char::is_whitespace),
        "token {token:?}"
    );
    assert!(
        !server.log().contains(&token),
        "the token is a secret and must not be logged"
    );
}

#[test]
fn the_setup_url_uses_base_url() {
    let server = TestServer::builder()
        .env("BASE_URL", "https://mon.example.com/lookout/")
        .start();
    let lines = server.stdout_lines();
    let found = lines
        .iter()
        .any(|line| line.contains("https://mon.example.com/lookout/setup?token="));
    assert!(found, "{lines:?}");
}

#[test]
fn setup_creates_the_owner_once() {
    let mut server = TestServer::start();
    let token = server.setup_token().expect("setup URL on first start");
    assert!(setup_required(&server));

    let response = post_setup(&server, setup_body(&token, "Owner@Example.com", PASSWORD));
    assert_eq!(response.status(), 201);
    let created: Value = response.json().unwrap();
    let user_id = created["user"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(user_id.starts_with("usr_"), "{created}");
    assert!(
        created["org"]["id"]
            .as_str()
            .unwrap_or_default()
            .starts_with("org_"),
        "{created}"
    );
    assert_eq!(created["org"]["name"], "Acme Ops");
    assert_eq!(created["role"], "owner");
    assert_eq!(
        created["user"]["email"], "owner@example.com",
        "e-mail is normalised"
    );
    assert!(
        !created.to_string().contains(PASSWORD),
        "the password must not echo"
    );
    assert!(!setup_required(&server));

    let again = post_setup(&server, setup_body(&token, "second@example.com", PASSWORD));
    Reply::from(again).problem(409, "setup_completed");

    // The CLI reaches the running server through its admin socket.
    let output = server.cli(&["user", "list", "--json"], "");
    assert!(
        output.status.success(),
        "user list failed: {}",
        text(&output.stderr)
    );
    let listed: Value =
        serde_json::from_slice(&output.stdout).expect("user list --json prints JSON");
    let users = listed["items"].as_array().expect("items");
    assert_eq!(users.len(), 1, "{listed}");
    assert_eq!(users[0]["id"], user_id.as_str());
    assert_eq!(users[0]["email"], "owner@example.com");
    assert_eq!(users[0]["memberships"][0]["role"], "owner");
    assert_eq!(users[0]["memberships"][0]["org_name"], "Acme Ops");

    server.restart();
    let latest = lines_of_second_start(&server);
    assert!(
        !latest.iter().any(|line| line.contains("/setup?token=")),
        "a user exists, yet: {latest:?}"
    );
    assert!(!setup_required(&server));
    Reply::from(post_setup(
        &server,
        setup_body(&token, "third@example.com", PASSWORD),
    ))
    .problem(409, "setup_completed");
}

#[test]
fn bad_setup_requests_are_refused_and_leave_the_token_usable() {
    let server = TestServer::start();
    let token = server.setup_token().unwrap();
    let wrong = post_setup(
        &server,
        setup_body("not-the-token", "a@example.com", PASSWORD),
    );
    Reply::from(wrong).problem(401, "invalid_setup_token");
    let short = post_setup(&server, setup_body(&token, "a@example.com", "1234567"));
    Reply::from(short).problem(400, "invalid_payload");
    for email in ["not-an-email", "a@b", "@example.com", "a b@example.com"] {
        let response = post_setup(&server, setup_body(&token, email, PASSWORD));
        Reply::from(response).problem(400, "invalid_payload");
    }
    let missing_field = post_setup(&server, json!({"token": token, "email": "a@example.com"}));
    Reply::from(missing_field).problem(400, "invalid_payload");
    assert!(
        setup_required(&server),
        "a refused request must not create anything"
    );

    // Exactly eight characters is long enough.
    let response = post_setup(&server, setup_body(&token, "a@example.com", "12345678"));
    assert_eq!(response.status(), 201, "{}", response.text().unwrap());
}

#[test]
fn a_restart_without_a_user_prints_a_new_token_and_retires_the_old() {
    let mut server = TestServer::start();
    let old = server.setup_token().unwrap();
    server.restart();
    let new = setup_token_of_second_start(&server).expect("a new setup URL after the restart");
    assert_ne!(new, old);
    assert!(setup_required(&server));
    let refused = post_setup(&server, setup_body(&old, "a@example.com", PASSWORD));
    Reply::from(refused).problem(401, "invalid_setup_token");
    let accepted = post_setup(&server, setup_body(&new, "a@example.com", PASSWORD));
    assert_eq!(accepted.status(), 201);
}

#[test]
fn a_user_created_offline_closes_setup() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let args = [
        "user",
        "create",
        "--email",
        "ops@example.com",
        "--password-stdin",
        "--role",
        "owner",
        "--json",
    ];
    let output = run_cli(&data_dir, &[], &args, &format!("{PASSWORD}\n"));
    assert!(
        output.status.success(),
        "user create failed: {}",
        text(&output.stderr)
    );
    let created: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(created["org"]["name"], "default");

    let server = TestServer::builder().data_dir(&data_dir).start();
    let lines = server.stdout_lines();
    assert!(
        !lines.iter().any(|line| line.contains("/setup?token=")),
        "{lines:?}"
    );
    assert!(!setup_required(&server));
    let refused = post_setup(&server, setup_body("any-token", "b@example.com", PASSWORD));
    Reply::from(refused).problem(409, "setup_completed");
}
