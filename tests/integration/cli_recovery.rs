//! The operator's recovery of one account (CONTRACT.md section 9, issue 13 finding 3):
//! `lookout user reset-password|reset-2fa|unlock|disable --email E`, each through the admin
//! socket of a running server and on a data dir no server holds, each audited; a wrong e-mail
//! fails with exit code 1 and a message naming it.

use std::process::Output;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_members::audit_event;
use crate::auth_support::{
    PASSWORD, Session, add_user, bearer, create_key, enrol, login, server, sign_in,
};
use crate::harness::{TestServer, text};
use crate::http_basics::send;

const NEW_PASSWORD: &str = "a brand new passphrase";

/// Runs `lookout user COMMAND --email EMAIL --json` (the password on stdin for
/// reset-password) and returns its JSON, asserting success.
fn recover(server: &TestServer, command: &str, email: &str) -> Value {
    let mut args = vec!["user", command, "--email", email, "--json"];
    if command == "reset-password" {
        args.push("--password-stdin");
    }
    let output = server.cli(&args, &format!("{NEW_PASSWORD}\n"));
    assert!(
        output.status.success(),
        "user {command} {email}: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    serde_json::from_str(text(&output.stdout).trim()).expect("JSON output")
}

/// Asserts that `user COMMAND` for an unknown e-mail fails with exit code 1, naming it.
fn refused_for_unknown_email(server: &TestServer, command: &str) {
    let mut args = vec!["user", command, "--email", "nobody@example.com"];
    if command == "reset-password" {
        args.push("--password-stdin");
    }
    let output: Output = server.cli(&args, &format!("{NEW_PASSWORD}\n"));
    assert_eq!(output.status.code(), Some(1), "user {command}: {output:?}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no user with e-mail nobody@example.com"),
        "user {command}: {stderr}"
    );
}

/// Five wrong passwords: the account is locked (423 even with the right one).
fn lock(server: &TestServer, email: &str) {
    for _ in 0..5 {
        login(server, email, "wrong password").problem(401, "invalid_credentials");
    }
    login(server, email, PASSWORD).problem(423, "account_locked");
}

/// Accounts for one round of the four commands: `{prefix}-2fa` (with a second factor),
/// `{prefix}-pw`, `{prefix}-locked` (locked out) and `{prefix}-off` (an admin with an API key);
/// returns their sessions and the key.
struct Round {
    two_factor: Session,
    password: Session,
    disabled: Session,
    key: String,
}

fn prepare(server: &TestServer, prefix: &str) -> Round {
    for (name, role) in [("2fa", "member"), ("pw", "member"), ("locked", "member")] {
        add_user(server, &format!("{prefix}-{name}@example.com"), role);
    }
    add_user(server, &format!("{prefix}-off@example.com"), "admin");
    let two_factor = sign_in(server, &format!("{prefix}-2fa@example.com"));
    enrol(server, &two_factor);
    let disabled = sign_in(server, &format!("{prefix}-off@example.com"));
    let key = create_key(server, &disabled, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    lock(server, &format!("{prefix}-locked@example.com"));
    Round {
        two_factor,
        password: sign_in(server, &format!("{prefix}-pw@example.com")),
        disabled,
        key,
    }
}

/// Runs the four commands on the accounts of `prefix`.
fn run_commands(server: &TestServer, prefix: &str) {
    let reset = recover(server, "reset-2fa", &format!("{prefix}-2fa@example.com"));
    assert_eq!(
        (
            &reset["sessions_ended"],
            &reset["detail"]["two_factor_removed"]
        ),
        (&json!(true), &json!(true)),
        "{reset}"
    );
    let reset = recover(
        server,
        "reset-password",
        &format!("{prefix}-pw@example.com"),
    );
    assert_eq!(reset["sessions_ended"], true, "{reset}");
    let unlocked = recover(server, "unlock", &format!("{prefix}-locked@example.com"));
    assert_eq!(
        unlocked["detail"]["login_state_cleared"], true,
        "{unlocked}"
    );
    let disabled = recover(server, "disable", &format!("{prefix}-off@example.com"));
    assert_eq!(disabled["detail"]["api_keys_revoked"], 1, "{disabled}");
    for command in ["reset-password", "reset-2fa", "unlock", "disable"] {
        refused_for_unknown_email(server, command);
    }
}

/// What the commands must have done, seen over HTTP.
fn check_effects(server: &TestServer, prefix: &str, round: &Round, owner: &Session) {
    let email = |name: &str| format!("{prefix}-{name}@example.com");
    // reset-2fa: sessions ended, the password alone signs in.
    round
        .two_factor
        .get(server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let again = sign_in(server, &email("2fa"));
    assert_eq!(again.body["user"]["two_factor_enabled"], false);
    // reset-password: sessions ended, only the new password works.
    round
        .password
        .get(server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    login(server, &email("pw"), PASSWORD).problem(401, "invalid_credentials");
    assert_eq!(login(server, &email("pw"), NEW_PASSWORD).status, 200);
    // unlock: the right password works at once.
    assert_eq!(login(server, &email("locked"), PASSWORD).status, 200);
    // disable: no sign-in, no session, no API key.
    login(server, &email("off"), PASSWORD).problem(401, "invalid_credentials");
    round
        .disabled
        .get(server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    send(bearer(server, &round.key, Method::GET, "/api/v1/services"))
        .problem(401, "invalid_api_key");
    // Each is in the audit log of the account's organisation, as the operator's.
    let targets = [
        ("two_factor.reset", &round.two_factor),
        ("user.password_reset", &round.password),
        ("user.disabled", &round.disabled),
    ];
    for (action, session) in targets {
        let event = audit_event(server, owner, action, &session.user_id());
        assert_eq!(event["detail"]["by"], "operator", "{event}");
    }
}

#[test]
fn operator_recovery_works_through_the_running_server_and_offline() {
    let mut server = server(&[]);
    add_user(&server, "owner@example.com", "owner");

    // Online: through the admin socket; the server's memory learns of ended sessions at once.
    let online = prepare(&server, "on");
    run_commands(&server, "on");
    let owner = sign_in(&server, "owner@example.com");
    check_effects(&server, "on", &online, &owner);

    // Offline: the data dir is free; the server reads it all back when it starts again.
    let offline = prepare(&server, "off");
    server.terminate(Duration::from_secs(15));
    run_commands(&server, "off");
    server.restart();
    check_effects(&server, "off", &offline, &owner);
}
