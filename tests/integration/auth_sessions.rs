//! Web sessions (CONTRACT section 2): the login body and cookies with every attribute and the
//! settings that shape them, the session JWT's claims, `GET /api/v1/auth/me`, logout of one
//! session, logout-everywhere (RegisterUserLogout), both surviving a restart, and CSRF on
//! cookie-authenticated writes (token and `Origin`).

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, bearer, create_key, jwt_part, login, server,
    set_cookie, sign_in, unix_now,
};
use crate::harness::http;
use crate::http_basics::send;

fn keys(value: &Value) -> BTreeSet<String> {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"));
    object.keys().cloned().collect()
}

fn set_of(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| name.to_string()).collect()
}

/// Asserts the session and CSRF cookies of a login reply carry `max_age`, `secure` and
/// `domain`, and returns the session token.
fn assert_session_cookies(
    reply: &crate::http_basics::Reply,
    max_age: &str,
    secure: bool,
    domain: Option<&str>,
) -> String {
    let session = set_cookie(reply, "lookout_session").expect("lookout_session cookie");
    let csrf = set_cookie(reply, "lookout_csrf").expect("lookout_csrf cookie");
    for cookie in [&session, &csrf] {
        let raw = &cookie.raw;
        assert_eq!(cookie.attribute("samesite"), Some("Lax"), "{raw}");
        assert_eq!(cookie.attribute("path"), Some("/"), "{raw}");
        assert_eq!(cookie.attribute("max-age"), Some(max_age), "{raw}");
        assert_eq!(cookie.has("secure"), secure, "{raw}");
        assert_eq!(cookie.attribute("domain"), domain, "{raw}");
    }
    assert!(session.has("httponly"), "{}", session.raw);
    assert!(
        !csrf.has("httponly"),
        "the CSRF cookie is read by scripts: {}",
        csrf.raw
    );
    assert_eq!(
        csrf.value,
        reply.json()["csrf_token"],
        "lookout_csrf = csrf_token"
    );
    session.value
}

#[test]
fn login_returns_the_session_body_and_cookies() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    // The e-mail is matched normalised: case and surrounding spaces do not matter.
    let reply = login(&server, "  Ada@Example.COM ", PASSWORD);
    assert_eq!(reply.status, 200);
    assert!(reply.header("cache-control").contains("no-store"));
    let body = reply.json();
    assert_eq!(keys(&body), set_of(&["user", "org", "role", "csrf_token"]));
    assert_eq!(body["user"]["email"], "ada@example.com");
    assert!(body["user"]["id"].as_str().unwrap().starts_with("usr_"));
    assert!(body["org"]["id"].as_str().unwrap().starts_with("org_"));
    assert_eq!(body["org"]["name"], "default");
    assert_eq!(body["role"], "owner");
    assert!(body["csrf_token"].as_str().unwrap().len() >= 32);

    let token = assert_session_cookies(&reply, "86400", false, None);
    assert_eq!(jwt_part(&token, 0)["alg"], "HS256");
    let claims = jwt_part(&token, 1);
    assert_eq!(claims["sub"], body["user"]["id"]);
    assert_eq!(claims["org"], body["org"]["id"]);
    assert_eq!(claims["role"], "owner");
    assert_eq!(
        (claims["iss"].clone(), claims["aud"].clone()),
        (json!("lookout"), json!("lookout"))
    );
    assert_eq!(claims["typ"], "session");
    assert!(
        claims["jti"].as_str().is_some_and(|jti| jti.len() >= 16),
        "{claims}"
    );
    let iat = claims["iat"].as_i64().unwrap();
    assert!((iat as f64 - unix_now()).abs() < 60.0, "{claims}");
    assert_eq!(claims["exp"].as_i64().unwrap() - iat, 86_400, "{claims}");

    // The cookie alone signs the next request in.
    let session = Session::from_reply(&reply);
    assert_eq!(session.get(&server, "/api/v1/auth/me").status, 200);
}

#[test]
fn login_refuses_a_malformed_body() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let url = server.url("/api/v1/auth/login");
    let missing = http().post(&url).json(&json!({"email": "ada@example.com"}));
    send(missing).problem(400, "invalid_payload");
    let form = http()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("email=ada%40example.com&password={PASSWORD}"));
    send(form).problem(415, "unsupported_media_type");
}

#[test]
fn cookie_attributes_follow_cookie_secure_cookie_domain_and_jwt_ttl_hours() {
    let configured = server(&[
        ("COOKIE_SECURE", "true"),
        ("COOKIE_DOMAIN", "lookout.example"),
        ("JWT_TTL_HOURS", "2"),
    ]);
    add_user(&configured, "ada@example.com", "owner");
    let reply = login(&configured, "ada@example.com", PASSWORD);
    let token = assert_session_cookies(&reply, "7200", true, Some("lookout.example"));
    let claims = jwt_part(&token, 1);
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 7200, "{claims}");

    // COOKIE_SECURE defaults to true when BASE_URL is https.
    let https = server(&[("BASE_URL", "https://lookout.example")]);
    add_user(&https, "ada@example.com", "owner");
    let reply = login(&https, "ada@example.com", PASSWORD);
    assert_session_cookies(&reply, "86400", true, None);
}

#[test]
fn me_describes_the_caller_and_needs_a_credential() {
    let server = server(&[]);
    add_user(&server, "owner@example.com", "owner");
    add_user_in(&server, "mia@example.com", "member", Some("Acme"));
    let session = sign_in(&server, "mia@example.com");
    let reply = session.get(&server, "/api/v1/auth/me");
    assert_eq!(reply.status, 200);
    let me = reply.json();
    assert_eq!(keys(&me), set_of(&["user", "org", "role"]));
    assert_eq!(
        keys(&me["user"]),
        set_of(&["id", "email", "two_factor_enabled"])
    );
    let org_fields = ["id", "name", "plan", "two_factor_required"];
    assert_eq!(keys(&me["org"]), set_of(&org_fields));
    assert_eq!(me["user"]["id"], session.body["user"]["id"]);
    assert_eq!(me["user"]["email"], "mia@example.com");
    assert_eq!(me["user"]["two_factor_enabled"], false);
    assert_eq!(me["org"]["name"], "Acme");
    assert_eq!(me["org"]["plan"], "free");
    assert_eq!(me["org"]["two_factor_required"], false);
    assert_eq!(me["role"], "member");

    let anonymous = send(http().get(server.url("/api/v1/auth/me")));
    anonymous.problem(401, "unauthorized");
    let cookie = http()
        .get(server.url("/api/v1/auth/me"))
        .header("cookie", "lookout_session=");
    send(cookie).problem(401, "unauthorized");
}

#[test]
fn logout_ends_only_that_session_even_across_a_restart() {
    let mut server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let ending = sign_in(&server, "ada@example.com");
    let other = sign_in(&server, "ada@example.com");
    let reply = ending.post_empty(&server, "/api/v1/auth/logout");
    assert_eq!(reply.status, 204);
    let cleared = crate::auth_support::set_cookies(&reply);
    let session_cleared = cleared
        .iter()
        .find(|cookie| cookie.name == "lookout_session")
        .expect("the session cookie is cleared");
    assert_eq!(session_cleared.value, "");
    assert_eq!(session_cleared.attribute("max-age"), Some("0"));

    ending
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    assert_eq!(other.get(&server, "/api/v1/auth/me").status, 200);

    server.restart();
    ending
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    assert_eq!(other.get(&server, "/api/v1/auth/me").status, 200);
}

#[test]
fn logout_everywhere_ends_every_earlier_session_and_a_new_login_works() {
    let mut server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    add_user(&server, "bob@example.com", "admin");
    let first = sign_in(&server, "ada@example.com");
    let second = sign_in(&server, "ada@example.com");
    let bystander = sign_in(&server, "bob@example.com");
    let reply = second.post_empty(&server, "/api/v1/auth/logout-everywhere");
    assert_eq!(reply.status, 204);
    for session in [&first, &second] {
        session
            .get(&server, "/api/v1/auth/me")
            .problem(401, "session_revoked");
        let write = session.post(&server, "/api/v1/orgs/me/api-keys", &json!({"name": "x"}));
        write.problem(401, "session_revoked");
    }
    assert_eq!(
        bystander.get(&server, "/api/v1/auth/me").status,
        200,
        "another user"
    );

    let fresh = sign_in(&server, "ada@example.com");
    assert_eq!(fresh.get(&server, "/api/v1/auth/me").status, 200);

    server.restart();
    first
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    assert_eq!(fresh.get(&server, "/api/v1/auth/me").status, 200);
}

#[test]
fn cookie_writes_need_the_csrf_token_of_their_session() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let other = sign_in(&server, "ada@example.com");
    let path = "/api/v1/orgs/me/api-keys";
    let body = json!({"name": "ci"});

    let missing = session.request(&server, Method::POST, path).json(&body);
    send(missing).problem(403, "csrf_failed");
    let wrong_values = ["wrong", "", other.csrf.as_str()];
    for wrong in wrong_values {
        let request = session.request(&server, Method::POST, path);
        let reply = send(request.header("x-csrf-token", wrong).json(&body));
        reply.problem(403, "csrf_failed");
    }
    // Other unsafe methods too, and logout (a forced logout is a CSRF attack as well).
    let delete = session.request(&server, Method::DELETE, "/api/v1/orgs/me/api-keys/key_x");
    send(delete).problem(403, "csrf_failed");
    let logout = session.request(&server, Method::POST, "/api/v1/auth/logout");
    send(logout).problem(403, "csrf_failed");
    assert_eq!(
        session.get(&server, "/api/v1/auth/me").status,
        200,
        "still signed in"
    );

    // Nothing was created by the refused requests; the right token works.
    let listed = session.get(&server, path).json();
    assert_eq!(listed["items"], json!([]), "{listed}");
    assert_eq!(session.post(&server, path, &body).status, 201);
}

#[test]
fn bearer_writes_need_no_csrf_token() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let key = create_key(&server, &session, "automation")["key"]
        .as_str()
        .unwrap()
        .to_string();
    let request = bearer(&server, &key, Method::POST, "/api/v1/orgs/me/api-keys");
    let reply = send(request.json(&json!({"name": "made by a key"})));
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[test]
fn a_cross_site_origin_on_a_cookie_request_is_refused() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let session = sign_in(&server, "ada@example.com");
    let path = "/api/v1/orgs/me/api-keys";
    let body = json!({"name": "ci"});
    let base_origin = format!("http://{}", server.addr);
    let foreign = [
        "https://evil.example",
        "null",
        "http://127.0.0.1:1",
        &base_origin.replace("http://", "https://"),
    ];
    for origin in foreign {
        let request = session.request(&server, Method::POST, path);
        let request = request
            .header("x-csrf-token", &session.csrf)
            .header("origin", origin);
        let reply = send(request.json(&body));
        assert_eq!(reply.status, 403, "Origin {origin}");
        reply.problem(403, "csrf_failed");
    }
    let listed = session.get(&server, path).json();
    assert_eq!(listed["items"], json!([]), "{listed}");

    let request = session.request(&server, Method::POST, path);
    let request = request
        .header("x-csrf-token", &session.csrf)
        .header("origin", &base_origin);
    assert_eq!(send(request.json(&body)).status, 201, "same origin");
}
