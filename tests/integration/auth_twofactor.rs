//! TOTP second factor (CONTRACT section 2): setup and enable, the login that asks for a code,
//! completion by `login_token` or by the `lookout_login` cookie, recovery codes, replay and
//! window limits, concurrent submissions of one code, and wrong codes counting towards the
//! per-account lockout.
//!
//! Codes are computed from the secret by time step (`code_at_step`); a test first waits out
//! the end of a step (`fresh_step`) so that the codes it uses stay inside the ±1-step window.

use std::sync::{Arc, Barrier};

use reqwest::Method;
use serde_json::json;

use crate::auth_support::{
    PASSWORD, Session, add_user, code_at_step, complete, enrol, fresh_step, jwt_part, login,
    login_token, server, set_cookie, set_cookies, sign_in, start_enrolment,
};
use crate::harness::http;
use crate::http_basics::{Reply, send};

fn assert_signed_in(reply: &Reply, email: &str) -> Session {
    let session = Session::from_reply(reply);
    assert_eq!(session.body["user"]["email"], email);
    assert_eq!(session.body["user"]["two_factor_enabled"], true);
    session
}

#[test]
fn setup_gives_a_secret_uri_and_qr_and_enable_gives_ten_recovery_codes() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let enable =
        |code: &str| session.post(&server, "/api/v1/auth/2fa/enable", &json!({"code": code}));
    enable("123456").problem(401, "invalid_code"); // no enrolment in progress

    let setup = start_enrolment(&server, &session);
    let secret = setup["secret"].as_str().expect("secret").to_string();
    let base32 = secret
        .bytes()
        .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b));
    assert!(
        base32 && secret.len() >= 26,
        "base32 secret of 128+ bits: {secret}"
    );
    let uri = setup["otpauth_uri"].as_str().expect("otpauth_uri");
    assert!(uri.starts_with("otpauth://totp/"), "{uri}");
    assert!(uri.contains(&format!("secret={secret}")), "{uri}");
    assert!(uri.contains("issuer=Lookout"), "{uri}");
    assert!(setup["qr_svg"].as_str().expect("qr_svg").contains("<svg"));

    let step = fresh_step();
    enable("000000x").problem(401, "invalid_code");
    let wrong = if code_at_step(&secret, step) == "000000" {
        "111111"
    } else {
        "000000"
    };
    enable(wrong).problem(401, "invalid_code");
    let me = session.get(&server, "/api/v1/auth/me").json();
    assert_eq!(
        me["user"]["two_factor_enabled"], false,
        "not on before a valid code"
    );

    let reply = enable(&code_at_step(&secret, step));
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let codes = reply.json()["recovery_codes"]
        .as_array()
        .expect("recovery_codes")
        .clone();
    assert_eq!(codes.len(), 10);
    let distinct: std::collections::HashSet<_> = codes.iter().map(|c| c.to_string()).collect();
    assert_eq!(distinct.len(), 10, "{codes:?}");
    assert!(
        codes
            .iter()
            .all(|c| c.as_str().is_some_and(|c| c.len() >= 8)),
        "{codes:?}"
    );
    let me = session.get(&server, "/api/v1/auth/me").json();
    assert_eq!(me["user"]["two_factor_enabled"], true);

    let again = session.post_empty(&server, "/api/v1/auth/2fa/setup");
    again.problem(409, "two_factor_already_enabled");
}

#[test]
fn a_code_from_two_steps_back_is_refused_and_one_step_back_accepted() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let secret = start_enrolment(&server, &session)["secret"]
        .as_str()
        .unwrap()
        .to_string();
    let step = fresh_step();
    let path = "/api/v1/auth/2fa/enable";
    // Enabling has no earlier code to compare with, so only the ±1-step window can refuse.
    let two_back = session.post(
        &server,
        path,
        &json!({"code": code_at_step(&secret, step - 2)}),
    );
    two_back.problem(401, "invalid_code");
    let one_back = session.post(
        &server,
        path,
        &json!({"code": code_at_step(&secret, step - 1)}),
    );
    assert_eq!(
        one_back.status,
        200,
        "{}",
        String::from_utf8_lossy(&one_back.body)
    );

    let pending = login_token(&server, "ada@example.com");
    let old = complete(&server, &pending, &code_at_step(&secret, step - 2));
    old.problem(401, "invalid_code");
}

#[test]
fn login_with_two_factor_waits_for_the_code_then_completes_by_login_token() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));

    let reply = login(&server, "ada@example.com", PASSWORD);
    assert_eq!(reply.status, 200);
    let body = reply.json();
    let fields: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["login_token", "two_factor_required"], "{body}");
    assert_eq!(body["two_factor_required"], true);
    let token = body["login_token"].as_str().unwrap();
    let cookie = set_cookie(&reply, "lookout_login").expect("lookout_login cookie");
    assert_eq!(cookie.value, token);
    assert!(cookie.has("httponly"), "{}", cookie.raw);
    assert_eq!(cookie.attribute("max-age"), Some("300"), "{}", cookie.raw);
    assert_eq!(cookie.attribute("path"), Some("/"), "{}", cookie.raw);
    let others = set_cookies(&reply);
    let named = |name: &str| others.iter().any(|c| c.name == name && !c.value.is_empty());
    assert!(
        !named("lookout_session") && !named("lookout_csrf"),
        "no session yet: {others:?}"
    );
    assert_eq!(jwt_part(token, 1)["typ"], "login");

    let code = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let done = complete(&server, token, &code);
    let session = assert_signed_in(&done, "ada@example.com");
    assert_eq!(session.get(&server, "/api/v1/auth/me").status, 200);
    let cleared = set_cookies(&done)
        .into_iter()
        .find(|c| c.name == "lookout_login");
    assert_eq!(
        cleared.expect("login cookie cleared").attribute("max-age"),
        Some("0")
    );

    // The login token is single-use.
    let recovery = &enrolled.recovery_codes[0];
    complete(&server, token, recovery).problem(401, "unauthorized");
}

#[test]
fn two_factor_completes_with_the_login_cookie() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let token = login_token(&server, "ada@example.com");
    let code = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let request = http()
        .post(server.url("/api/v1/auth/2fa/complete"))
        .header("cookie", format!("lookout_login={token}"))
        .json(&json!({"code": code}));
    let session = assert_signed_in(&send(request), "ada@example.com");
    let me = session.get(&server, "/api/v1/auth/me").json();
    assert_eq!(me["user"]["two_factor_enabled"], true);

    let without = http().post(server.url("/api/v1/auth/2fa/complete"));
    send(without.json(&json!({"code": code}))).problem(401, "unauthorized");
}

#[test]
fn a_replayed_code_is_refused_with_invalid_code() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let next = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let first = login_token(&server, "ada@example.com");
    assert_signed_in(&complete(&server, &first, &next), "ada@example.com");

    let second = login_token(&server, "ada@example.com");
    complete(&server, &second, &next).problem(401, "invalid_code");
    let enabling_code = code_at_step(&enrolled.secret, enrolled.enabled_at_step);
    complete(&server, &second, &enabling_code).problem(401, "invalid_code");
    // A refused code does not spend the login token.
    let recovered = complete(&server, &second, &enrolled.recovery_codes[3]);
    assert_signed_in(&recovered, "ada@example.com");
}

#[test]
fn a_recovery_code_works_once() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let code = &enrolled.recovery_codes[0];
    let first = login_token(&server, "ada@example.com");
    assert_signed_in(&complete(&server, &first, code), "ada@example.com");
    let second = login_token(&server, "ada@example.com");
    complete(&server, &second, code).problem(401, "invalid_code");
    // The others still work, typed in upper case.
    let other = enrolled.recovery_codes[1].to_uppercase();
    assert_signed_in(&complete(&server, &second, &other), "ada@example.com");
}

#[test]
fn twenty_parallel_submissions_of_one_code_let_exactly_one_in() {
    // The 19 refusals count as failures; a high limit keeps them all `invalid_code`.
    let server = Arc::new(server(&[("LOGIN_MAX_FAILURES", "100")]));
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let code = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let tokens: Vec<String> = (0..20)
        .map(|_| login_token(&server, "ada@example.com"))
        .collect();
    let barrier = Arc::new(Barrier::new(tokens.len()));
    let threads: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let (server, barrier, code) = (server.clone(), barrier.clone(), code.clone());
            std::thread::spawn(move || {
                let request = http()
                    .post(server.url("/api/v1/auth/2fa/complete"))
                    .json(&json!({"login_token": token, "code": code}));
                barrier.wait();
                send(request)
            })
        })
        .collect();
    let replies: Vec<Reply> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let accepted = replies.iter().filter(|reply| reply.status == 200).count();
    assert_eq!(
        accepted,
        1,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for reply in replies.iter().filter(|reply| reply.status != 200) {
        reply.problem(401, "invalid_code");
    }
}

#[test]
fn wrong_codes_count_towards_the_lockout() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let right = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let wrong = if right == "000000" {
        "111111"
    } else {
        "000000"
    };
    let token = login_token(&server, "ada@example.com");
    for attempt in 1..=5 {
        let reply = complete(&server, &token, wrong);
        assert_eq!(reply.status, 401, "attempt {attempt}");
    }
    let locked = complete(&server, &token, &right);
    locked.problem(423, "account_locked");
    assert!(!locked.header("retry-after").is_empty());
    login(&server, "ada@example.com", PASSWORD).problem(423, "account_locked");
}

#[test]
fn a_right_password_does_not_reset_the_count_of_wrong_codes() {
    // Otherwise whoever has the password may guess codes without end: four guesses, sign in
    // again with the password, four more, ...
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let enrolled = enrol(&server, &sign_in(&server, "ada@example.com"));
    let right = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let wrong = if right == "000000" {
        "111111"
    } else {
        "000000"
    };
    for guesses in [3, 2] {
        let token = login_token(&server, "ada@example.com");
        for _ in 0..guesses {
            complete(&server, &token, wrong).problem(401, "invalid_code");
        }
    }
    login(&server, "ada@example.com", PASSWORD).problem(423, "account_locked");
}

#[test]
fn enrolment_needs_a_session_and_its_csrf_token() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let anonymous = http().post(server.url("/api/v1/auth/2fa/setup"));
    send(anonymous).problem(401, "unauthorized");
    let no_csrf = session.request(&server, Method::POST, "/api/v1/auth/2fa/setup");
    send(no_csrf).problem(403, "csrf_failed");
}

#[test]
fn turning_two_factor_off_needs_a_code_and_ends_every_session() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let enrolled = enrol(&server, &session);
    let other = assert_signed_in(
        &complete(
            &server,
            &login_token(&server, "ada@example.com"),
            &enrolled.recovery_codes[0],
        ),
        "ada@example.com",
    );
    let path = "/api/v1/auth/2fa/disable";
    session
        .post(&server, path, &json!({"code": "000000x"}))
        .problem(401, "invalid_code");
    let code = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let reply = session.post(&server, path, &json!({"code": code}));
    assert_eq!(
        reply.status,
        204,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    for ended in [&session, &other] {
        ended
            .get(&server, "/api/v1/auth/me")
            .problem(401, "session_revoked");
    }
    let fresh = sign_in(&server, "ada@example.com");
    let me = fresh.get(&server, "/api/v1/auth/me").json();
    assert_eq!(me["user"]["two_factor_enabled"], false);
}
