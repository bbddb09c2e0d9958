//! Attacks on sign-in and on the session token (CONTRACT section 2, issue 4's attack list):
//! unknown e-mail versus wrong password (body, status and timing), per-account lockout across
//! client addresses and its settings, and forged session tokens — `alg: none`, algorithm
//! switches, another key, a tampered role, bad times, wrong issuer, audience or kind — made
//! with the server's own key so that only the claim under test is wrong.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::auth_support::{
    PASSWORD, add_user, code_at_step, complete, enrol, fresh_step, get_with_session_cookie,
    jwt_key, jwt_part, login, login_from, login_token, server, sign_hs256, sign_hs512, sign_in,
    unix_now,
};
use crate::harness::TestServer;
use crate::http_basics::Reply;

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The body of a refused login, without what legitimately differs per request.
fn comparable(reply: &Reply) -> Value {
    let mut body = reply.problem(401, "invalid_credentials");
    if let Some(object) = body.as_object_mut() {
        object.remove("request_id");
        object.remove("instance");
    }
    body
}

#[test]
fn unknown_email_and_wrong_password_get_the_same_401() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let wrong_password = login(&server, "ada@example.com", "not the password");
    let unknown_email = login(&server, "nobody@example.com", PASSWORD);
    assert_eq!(comparable(&wrong_password), comparable(&unknown_email));
    for reply in [&wrong_password, &unknown_email] {
        assert!(
            crate::auth_support::set_cookies(reply).is_empty(),
            "{:?}",
            reply.headers
        );
        assert!(reply.header("retry-after").is_empty());
    }
    let content_types = [&wrong_password, &unknown_email].map(|r| r.header("content-type"));
    assert_eq!(content_types[0], content_types[1]);
}

/// One attempt of each kind, back to back, so that load from other tests hits both alike; the
/// round's figure is the median of the per-pair differences (unknown minus known), which a
/// burst of load during one pair cannot move, and the two medians for the message.
fn timing_round(server: &TestServer, tries: usize) -> (Duration, Duration, i128) {
    let (mut known, mut unknown, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    for attempt in 0..tries {
        let started = Instant::now();
        let reply = login(server, "ada@example.com", "not the password");
        let known_took = started.elapsed();
        assert_eq!(reply.status, 401);
        let started = Instant::now();
        let reply = login(server, &format!("nobody{attempt}@example.com"), PASSWORD);
        let unknown_took = started.elapsed();
        assert_eq!(reply.status, 401);
        gaps.push(unknown_took.as_micros() as i128 - known_took.as_micros() as i128);
        known.push(known_took);
        unknown.push(unknown_took);
    }
    gaps.sort_unstable();
    (
        median(&mut known),
        median(&mut unknown),
        gaps[gaps.len() / 2],
    )
}

#[test]
fn unknown_email_and_wrong_password_take_similar_time() {
    // Enough allowed failures that no attempt is answered by the (fast) lockout path.
    let server = server(&[("LOGIN_MAX_FAILURES", "1000")]);
    add_user(&server, "ada@example.com", "owner");
    timing_round(&server, 2); // warm-up
    // A real difference (one side skipping argon2, ~20 ms) shows in every round; noise from
    // tests running alongside on a small machine does not, so one clean round of five suffices.
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let (known, unknown, median_gap_us) = timing_round(&server, 15);
        rounds.push((known, unknown, median_gap_us));
        if median_gap_us.abs() <= 5_000 {
            return;
        }
    }
    panic!(
        "wrong password and unknown e-mail differ by more than 5 ms (medians and median gap in µs): {rounds:?}"
    );
}

/// Seconds of a `Retry-After` header.
fn retry_after(reply: &Reply) -> u64 {
    let value = reply.header("retry-after");
    value
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After {value:?}"))
}

#[test]
fn five_failures_lock_the_account_for_every_address() {
    let server = server(&[("TRUSTED_PROXIES", "127.0.0.1/32")]);
    add_user(&server, "ada@example.com", "owner");
    add_user(&server, "bob@example.com", "owner");
    let attacker = Some("198.51.100.7");
    for attempt in 1..=5 {
        let reply = login_from(&server, "ada@example.com", "guess", attacker);
        assert_eq!(reply.status, 401, "attempt {attempt}");
        reply.problem(401, "invalid_credentials");
    }
    // The owner, from another address, with the right password: locked all the same.
    let owner = login_from(&server, "ada@example.com", PASSWORD, Some("203.0.113.20"));
    owner.problem(423, "account_locked");
    let seconds = retry_after(&owner);
    assert!((850..=900).contains(&seconds), "Retry-After {seconds}");
    assert!(crate::auth_support::set_cookies(&owner).is_empty());
    let spelled = login_from(&server, " ADA@example.com", PASSWORD, None);
    spelled.problem(423, "account_locked");
    // Other accounts are not affected.
    assert_eq!(
        login_from(&server, "bob@example.com", PASSWORD, attacker).status,
        200
    );
}

#[test]
fn an_unknown_email_locks_the_same_way() {
    let server = server(&[]);
    for attempt in 1..=5 {
        let reply = login(&server, "Nobody@Example.com", &format!("guess {attempt}"));
        reply.problem(401, "invalid_credentials");
    }
    let locked = login(&server, "nobody@example.com", "guess 6");
    locked.problem(423, "account_locked");
    assert!(retry_after(&locked) > 0);
}

#[test]
fn lockout_settings_are_respected() {
    let server = server(&[("LOGIN_MAX_FAILURES", "3"), ("LOGIN_LOCKOUT_MINUTES", "2")]);
    add_user(&server, "ada@example.com", "owner");
    add_user(&server, "bob@example.com", "owner");
    for _ in 0..2 {
        login(&server, "bob@example.com", "guess").problem(401, "invalid_credentials");
    }
    assert_eq!(
        login(&server, "bob@example.com", PASSWORD).status,
        200,
        "two are allowed"
    );
    for _ in 0..3 {
        login(&server, "ada@example.com", "guess").problem(401, "invalid_credentials");
    }
    let locked = login(&server, "ada@example.com", PASSWORD);
    locked.problem(423, "account_locked");
    let seconds = retry_after(&locked);
    assert!((100..=120).contains(&seconds), "Retry-After {seconds}");
}

#[test]
fn a_successful_login_resets_the_failure_count() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    for round in 0..2 {
        for _ in 0..4 {
            login(&server, "ada@example.com", "guess").problem(401, "invalid_credentials");
        }
        assert_eq!(
            login(&server, "ada@example.com", PASSWORD).status,
            200,
            "round {round}"
        );
    }
}

/// A valid session of a member, the server key and the claims of that session.
struct Forge {
    server: TestServer,
    key: Vec<u8>,
    claims: Value,
}

impl Forge {
    fn new() -> Forge {
        let server = server(&[]);
        add_user(&server, "owner@example.com", "owner");
        add_user(&server, "mia@example.com", "member");
        let session = sign_in(&server, "mia@example.com");
        let key = jwt_key(&server);
        let claims = jwt_part(&session.token, 1);
        Forge {
            server,
            key,
            claims,
        }
    }

    /// The member's claims with `edit` applied, a fresh `jti`, signed HS256 with the real key.
    fn signed(&self, edit: impl Fn(&mut Value)) -> String {
        let mut claims = self.claims.clone();
        claims["jti"] = json!(format!("forged-{}", unix_now()));
        edit(&mut claims);
        sign_hs256(&json!({"alg": "HS256", "typ": "JWT"}), &claims, &self.key)
    }

    fn me(&self, token: &str) -> Reply {
        get_with_session_cookie(&self.server, token, "/api/v1/auth/me")
    }
}

/// A claims edit that removes `field`.
fn without(field: &'static str) -> impl Fn(&mut Value) {
    move |claims| {
        claims.as_object_mut().expect("claims object").remove(field);
    }
}

fn replace_part(token: &str, part: usize, value: &Value) -> String {
    use base64::Engine;
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    parts[part] = encoded;
    parts.join(".")
}

#[test]
fn forged_session_tokens_are_refused() {
    let forge = Forge::new();
    // The control: a token forged with the real key and unchanged claims is accepted, so each
    // refusal below is due to the one thing that case changes.
    let genuine = forge.signed(|_| {});
    assert_eq!(
        forge.me(&genuine).status,
        200,
        "the forging helper signs correctly"
    );

    let now = unix_now() as i64;
    let header_none = json!({"alg": "none", "typ": "JWT"});
    let with_none = replace_part(&genuine, 0, &header_none);
    let unsigned = format!("{}.", with_none.rsplit_once('.').unwrap().0);
    let hs512_header = json!({"alg": "HS512", "typ": "JWT"});
    let hs512 = sign_hs512(&hs512_header, &jwt_part(&genuine, 1), &forge.key);
    let rs256_header = json!({"alg": "RS256", "typ": "JWT"});
    let rs256 = sign_hs256(&rs256_header, &jwt_part(&genuine, 1), &forge.key);
    let other_key = sign_hs256(&jwt_part(&genuine, 0), &jwt_part(&genuine, 1), &[7u8; 64]);
    let mut promoted = jwt_part(&genuine, 1);
    promoted["role"] = json!("owner");
    let tampered_role = replace_part(&genuine, 1, &promoted);

    let cases: Vec<(&str, String)> = vec![
        ("alg none, signature kept", with_none),
        ("alg none, no signature", unsigned),
        ("algorithm switch to HS512 with the real key", hs512),
        ("RS256 header over an HMAC signature", rs256),
        ("signed with another key", other_key),
        ("role claim tampered after signing", tampered_role),
        (
            "expired",
            forge.signed(|c| {
                c["iat"] = json!(now - 7200);
                c["nbf"] = json!(now - 7200);
                c["iat_ms"] = json!((now - 7200) * 1000);
                c["exp"] = json!(now - 60);
            }),
        ),
        (
            "nbf in the future",
            forge.signed(|c| c["nbf"] = json!(now + 3600)),
        ),
        (
            "wrong issuer",
            forge.signed(|c| c["iss"] = json!("someone-else")),
        ),
        (
            "wrong audience",
            forge.signed(|c| c["aud"] = json!("someone-else")),
        ),
        ("login kind", forge.signed(|c| c["typ"] = json!("login"))),
        ("no kind", forge.signed(without("typ"))),
        ("no expiry", forge.signed(without("exp"))),
        ("no role", forge.signed(without("role"))),
        ("garbage", "not.a.jwt".to_string()),
    ];
    for (what, token) in cases {
        let reply = forge.me(&token);
        assert_eq!(
            reply.status,
            401,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.problem(401, "unauthorized");
    }
}

#[test]
fn a_tampered_role_gains_nothing() {
    let forge = Forge::new();
    let server = &forge.server;
    let session = sign_in(server, "mia@example.com");
    let body = json!({"name": "escalation"});
    let path = "/api/v1/orgs/me/api-keys";
    session.post(server, path, &body).problem(403, "forbidden");
    let mut promoted = jwt_part(&session.token, 1);
    promoted["role"] = json!("owner");
    let escalated = crate::auth_support::Session {
        token: replace_part(&session.token, 1, &promoted),
        ..session.clone()
    };
    escalated
        .post(server, path, &body)
        .problem(401, "unauthorized");
}

#[test]
fn a_login_token_is_not_a_session_and_a_session_is_not_a_login_token() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let enrolled = enrol(&server, &session);
    let pending = login_token(&server, "ada@example.com");
    assert_eq!(jwt_part(&pending, 1)["typ"], "login");
    let as_session = get_with_session_cookie(&server, &pending, "/api/v1/auth/me");
    as_session.problem(401, "unauthorized");

    // A session token (valid, of the same user) offered as the login token, with a right code.
    let step = fresh_step().max(enrolled.enabled_at_step);
    let code = code_at_step(&enrolled.secret, step + 1);
    let fresh_session = sign_in_with_code(&server, &pending, &enrolled.recovery_codes[0]);
    let confused = complete(&server, &fresh_session, &code);
    assert_eq!(
        confused.status,
        401,
        "{}",
        String::from_utf8_lossy(&confused.body)
    );
    assert!(crate::auth_support::set_cookie(&confused, "lookout_session").is_none());
    // The code was not spent by the refused attempt.
    let next = login_token(&server, "ada@example.com");
    assert_eq!(complete(&server, &next, &code).status, 200);
}

/// Completes `login_token` with `code` and returns the session token.
fn sign_in_with_code(server: &TestServer, login_token: &str, code: &str) -> String {
    let reply = complete(server, login_token, code);
    crate::auth_support::Session::from_reply(&reply).token
}
