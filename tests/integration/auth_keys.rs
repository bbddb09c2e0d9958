//! API keys (CONTRACT section 2): creation (the secret once, its shape), listing without
//! secrets, `Authorization: Bearer` on session routes, revocation with immediate effect, no
//! keys in query strings, the admin requirement, keys of another organisation, and the
//! per-credential rate limit.

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{
    Session, add_user, add_user_in, bearer, create_key, get_with_session_cookie, server, sign_in,
};
use crate::harness::{TestServer, http};
use crate::http_basics::{Reply, send};

fn is_base64url(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn secret_of(created: &Value) -> String {
    created["key"].as_str().expect("key").to_string()
}

fn get_with_key(server: &TestServer, key: &str, path: &str) -> Reply {
    send(bearer(server, key, Method::GET, path))
}

fn owner_session(server: &TestServer) -> Session {
    add_user(server, "ada@example.com", "owner");
    sign_in(server, "ada@example.com")
}

#[test]
fn a_new_key_is_shown_once_and_listed_without_its_secret() {
    let server = server(&[]);
    let session = owner_session(&server);
    let created = create_key(&server, &session, "  deploy bot ");
    for field in ["id", "name", "prefix", "key", "role", "created_at"] {
        assert!(created.get(field).is_some(), "{field} missing: {created}");
    }
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("key_"), "{created}");
    assert_eq!(created["name"], "deploy bot");
    assert_eq!(created["role"], "owner");
    let secret = secret_of(&created);
    let random = secret.strip_prefix("lk_").expect("lk_ prefix");
    assert!(random.len() == 43 && is_base64url(random), "{secret}");
    let prefix = created["prefix"].as_str().unwrap();
    assert!(
        !prefix.is_empty() && secret.starts_with(prefix) && prefix.len() < 20,
        "{prefix}"
    );
    let created_at = created["created_at"].as_str().unwrap();
    assert!(
        created_at.ends_with('Z') && created_at.contains('T'),
        "{created_at}"
    );
    let second = secret_of(&create_key(&server, &session, "other"));
    assert_ne!(second, secret);

    let listed = session.get(&server, "/api/v1/orgs/me/api-keys");
    assert_eq!(listed.status, 200);
    let text = String::from_utf8_lossy(&listed.body).into_owned();
    for secret in [&secret, &second] {
        assert!(!text.contains(&secret[3..]), "a secret in the list: {text}");
    }
    let items = listed.json()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2, "{text}");
    let ours = items
        .iter()
        .find(|item| item["id"] == id)
        .expect("the key is listed");
    assert_eq!(ours["name"], "deploy bot");
    assert_eq!(ours["prefix"], prefix);
    assert!(ours.get("key").is_none(), "{ours}");
}

#[test]
fn a_key_authenticates_as_bearer_with_its_issuers_role() {
    let server = server(&[]);
    let session = owner_session(&server);
    let key = secret_of(&create_key(&server, &session, "ci"));
    let services = get_with_key(&server, &key, "/api/v1/services");
    assert_eq!(
        services.status,
        200,
        "{}",
        String::from_utf8_lossy(&services.body)
    );
    assert_eq!(services.json()["items"], json!([]));
    let me = get_with_key(&server, &key, "/api/v1/auth/me").json();
    assert_eq!(me["user"]["email"], "ada@example.com");
    assert_eq!(me["role"], "owner");
    // With owner rights: it may create keys (and, being a bearer, needs no CSRF token).
    let request = bearer(&server, &key, Method::POST, "/api/v1/orgs/me/api-keys");
    assert_eq!(send(request.json(&json!({"name": "child"}))).status, 201);
}

#[test]
fn a_revoked_key_is_refused_on_the_next_request() {
    let server = server(&[]);
    let session = owner_session(&server);
    let revoked = create_key(&server, &session, "old");
    let kept = secret_of(&create_key(&server, &session, "kept"));
    let secret = secret_of(&revoked);
    assert_eq!(
        get_with_key(&server, &secret, "/api/v1/services").status,
        200
    );
    let path = format!(
        "/api/v1/orgs/me/api-keys/{}",
        revoked["id"].as_str().unwrap()
    );
    let reply = session.write(&server, Method::DELETE, &path, &json!({}));
    assert_eq!(
        reply.status,
        204,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(reply.body.is_empty());
    get_with_key(&server, &secret, "/api/v1/services").problem(401, "invalid_api_key");
    assert_eq!(get_with_key(&server, &kept, "/api/v1/services").status, 200);
    let unknown = "/api/v1/orgs/me/api-keys/key_01J00000000000000000000000";
    session
        .write(&server, Method::DELETE, unknown, &json!({}))
        .problem(404, "not_found");
}

#[test]
fn a_key_in_the_query_string_is_not_accepted() {
    let server = server(&[]);
    let session = owner_session(&server);
    let key = secret_of(&create_key(&server, &session, "ci"));
    for parameter in ["api_key", "key", "token", "access_token"] {
        let path = format!("/api/v1/services?{parameter}={key}");
        let reply = send(http().get(server.url(&path)));
        assert_eq!(reply.status, 401, "?{parameter}=");
        reply.problem(401, "unauthorized");
    }
}

#[test]
fn malformed_bearer_credentials_are_refused() {
    let server = server(&[]);
    let session = owner_session(&server);
    let key = secret_of(&create_key(&server, &session, "ci"));
    let mut flipped = key.clone().into_bytes();
    let last = flipped.len() - 1;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    // The session JWT is not an API key, even though it is a valid credential elsewhere.
    let cases = [
        ("one character changed", flipped.as_str()),
        ("truncated", &key[..key.len() - 1]),
        ("session JWT", session.token.as_str()),
        ("empty", ""),
    ];
    for (what, credential) in cases {
        let reply = get_with_key(&server, credential, "/api/v1/services");
        assert_eq!(reply.status, 401, "{what}");
        let code = reply.json()["code"].clone();
        assert!(
            code == "invalid_api_key" || code == "unauthorized",
            "{what}: {code}"
        );
        reply.problem(401, code.as_str().unwrap());
    }
    let basic = http()
        .get(server.url("/api/v1/services"))
        .header("authorization", "Basic YTpi");
    send(basic).problem(401, "unauthorized");
    // A bad bearer is not rescued by a good cookie.
    let both = bearer(&server, &flipped, Method::GET, "/api/v1/auth/me")
        .header("cookie", format!("lookout_session={}", session.token));
    send(both).problem(401, "invalid_api_key");
    assert_eq!(
        get_with_session_cookie(&server, &session.token, "/api/v1/auth/me").status,
        200
    );
}

#[test]
fn the_bearer_scheme_is_case_insensitive() {
    // RFC 7235 section 2.1: the authentication scheme is a case-insensitive token.
    let server = server(&[]);
    let session = owner_session(&server);
    let key = secret_of(&create_key(&server, &session, "ci"));
    for scheme in ["bearer", "BEARER"] {
        let request = http()
            .get(server.url("/api/v1/services"))
            .header("authorization", format!("{scheme} {key}"));
        let reply = send(request);
        assert_eq!(
            reply.status,
            200,
            "{scheme}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }
}

#[test]
fn creating_keys_needs_the_admin_role() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    add_user(&server, "mia@example.com", "member");
    add_user(&server, "vic@example.com", "viewer");
    add_user(&server, "adam@example.com", "admin");
    for email in ["mia@example.com", "vic@example.com"] {
        let session = sign_in(&server, email);
        let reply = session.post(
            &server,
            "/api/v1/orgs/me/api-keys",
            &json!({"name": "mine"}),
        );
        reply.problem(403, "forbidden");
        session
            .get(&server, "/api/v1/orgs/me/api-keys")
            .problem(403, "forbidden");
    }
    let admin = sign_in(&server, "adam@example.com");
    let created = create_key(&server, &admin, "admin key");
    assert_eq!(created["role"], "admin");
    let me = get_with_key(&server, &secret_of(&created), "/api/v1/auth/me").json();
    assert_eq!(me["role"], "admin");
}

#[test]
fn a_key_of_another_organisation_cannot_be_revoked_or_listed() {
    let server = server(&[]);
    let session = owner_session(&server);
    add_user_in(&server, "zed@example.com", "owner", Some("Other"));
    let foreign_session = sign_in(&server, "zed@example.com");
    let foreign = create_key(&server, &foreign_session, "theirs");
    let path = format!(
        "/api/v1/orgs/me/api-keys/{}",
        foreign["id"].as_str().unwrap()
    );
    session
        .write(&server, Method::DELETE, &path, &json!({}))
        .problem(404, "not_found");
    let listed = session.get(&server, "/api/v1/orgs/me/api-keys").json();
    assert_eq!(listed["items"], json!([]), "{listed}");
    let theirs = get_with_key(&server, &secret_of(&foreign), "/api/v1/auth/me").json();
    assert_eq!(
        theirs["org"]["name"], "Other",
        "still working, in its own org"
    );
}

#[test]
fn a_key_may_carry_an_expiry_in_the_future_only() {
    let server = server(&[]);
    let session = owner_session(&server);
    let path = "/api/v1/orgs/me/api-keys";
    let past = json!({"name": "old", "expires_at": "2020-01-01T00:00:00.000Z"});
    session
        .post(&server, path, &past)
        .problem(400, "invalid_payload");
    let future = json!({"name": "new", "expires_at": "2999-01-01T00:00:00.000Z"});
    let reply = session.post(&server, path, &future);
    assert_eq!(reply.status, 201);
    let created = reply.json();
    assert_eq!(created["expires_at"], "2999-01-01T00:00:00.000Z");
    assert_eq!(
        get_with_key(&server, &secret_of(&created), "/api/v1/services").status,
        200
    );
    session
        .post(&server, path, &json!({"name": " "}))
        .problem(400, "invalid_payload");
}

#[test]
fn the_rate_limit_is_per_credential() {
    let server = server(&[("API_RATE_PER_MIN", "5")]);
    let session = owner_session(&server);
    let first = secret_of(&create_key(&server, &session, "first"));
    let second = secret_of(&create_key(&server, &session, "second"));
    for request in 1..=5 {
        let reply = get_with_key(&server, &first, "/api/v1/services");
        assert_eq!(reply.status, 200, "request {request}");
    }
    let limited = get_with_key(&server, &first, "/api/v1/services");
    limited.problem(429, "rate_limited");
    let wait: u64 = limited
        .header("retry-after")
        .parse()
        .expect("Retry-After seconds");
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(
        get_with_key(&server, &second, "/api/v1/services").status,
        200
    );
    assert_eq!(
        session.get(&server, "/api/v1/services").status,
        200,
        "the session"
    );
}
