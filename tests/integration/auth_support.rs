//! What the identity-and-access tests share: users made through `lookout user create`, signing
//! in over HTTP, a cookie session that sends its CSRF token, `Set-Cookie` parsing, JWTs forged
//! with the server key read from `<data_dir>/jwt.key` (to build tokens correctly signed but
//! with bad claims), and TOTP codes by time step.
//!
//! Sessions are carried by hand-written `Cookie` headers, never a cookie store, so every test
//! states exactly which credential a request carries.

#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use reqwest::Method;
use reqwest::blocking::RequestBuilder;
use serde_json::{Value, json};

use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

/// The password of every user these tests create.
pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// A server with `env` on top of the test defaults.
pub(crate) fn server(env: &[(&str, &str)]) -> TestServer {
    let mut builder = TestServer::builder();
    for (key, value) in env {
        builder = builder.env(key, value);
    }
    builder.start()
}

/// `lookout user create` in the `default` organisation.
pub(crate) fn add_user(server: &TestServer, email: &str, role: &str) {
    add_user_in(server, email, role, None);
}

/// `lookout user create`, in `org` when given.
pub(crate) fn add_user_in(server: &TestServer, email: &str, role: &str, org: Option<&str>) {
    let mut args = vec![
        "user",
        "create",
        "--email",
        email,
        "--password-stdin",
        "--role",
        role,
    ];
    if let Some(org) = org {
        args.extend(["--org", org]);
    }
    let output = server.cli(&args, &format!("{PASSWORD}\n"));
    assert!(
        output.status.success(),
        "user create {email}: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// `POST /api/v1/auth/login`.
pub(crate) fn login(server: &TestServer, email: &str, password: &str) -> Reply {
    login_from(server, email, password, None)
}

/// `POST /api/v1/auth/login` with an `X-Forwarded-For` header (believed only from a trusted
/// proxy, which is how one test client acts as several addresses).
pub(crate) fn login_from(
    server: &TestServer,
    email: &str,
    password: &str,
    forwarded_for: Option<&str>,
) -> Reply {
    let mut request = http()
        .post(server.url("/api/v1/auth/login"))
        .json(&json!({"email": email, "password": password}));
    if let Some(address) = forwarded_for {
        request = request.header("x-forwarded-for", address);
    }
    send(request)
}

/// Signs in with the right password and returns the session (asserting a 200 with cookies).
pub(crate) fn sign_in(server: &TestServer, email: &str) -> Session {
    let reply = login(server, email, PASSWORD);
    assert_eq!(reply.status, 200, "login {email}: {}", text(&reply.body));
    Session::from_reply(&reply)
}

/// One `Set-Cookie` header, parsed.
#[derive(Debug, Clone)]
pub(crate) struct SetCookie {
    pub name: String,
    pub value: String,
    /// Attribute names lower-cased, with their values when they have one.
    pub attributes: Vec<(String, Option<String>)>,
    pub raw: String,
}

impl SetCookie {
    fn parse(raw: &str) -> SetCookie {
        let mut parts = raw.split(';').map(str::trim);
        let (name, value) = parts
            .next()
            .and_then(|pair| pair.split_once('='))
            .unwrap_or_else(|| panic!("malformed Set-Cookie {raw:?}"));
        let attributes = parts
            .filter(|part| !part.is_empty())
            .map(|part| match part.split_once('=') {
                Some((key, value)) => (key.trim().to_lowercase(), Some(value.trim().to_string())),
                None => (part.to_lowercase(), None),
            })
            .collect();
        SetCookie {
            name: name.trim().to_string(),
            value: value.trim().to_string(),
            attributes,
            raw: raw.to_string(),
        }
    }

    pub fn has(&self, attribute: &str) -> bool {
        self.attributes.iter().any(|(key, _)| key == attribute)
    }

    /// The value of an attribute (`max-age`, `domain`, ...), if present.
    pub fn attribute(&self, attribute: &str) -> Option<&str> {
        let found = self.attributes.iter().find(|(key, _)| key == attribute);
        found.and_then(|(_, value)| value.as_deref())
    }
}

/// Every `Set-Cookie` of a reply.
pub(crate) fn set_cookies(reply: &Reply) -> Vec<SetCookie> {
    let headers = reply.headers.iter();
    let values = headers.filter(|(key, _)| key.eq_ignore_ascii_case("set-cookie"));
    values.map(|(_, value)| SetCookie::parse(value)).collect()
}

/// The `Set-Cookie` of cookie `name` that sets a value (not one that clears it).
pub(crate) fn set_cookie(reply: &Reply, name: &str) -> Option<SetCookie> {
    let cookies = set_cookies(reply).into_iter();
    cookies
        .filter(|cookie| cookie.name == name)
        .find(|cookie| !cookie.value.is_empty())
}

/// A cookie session: the JWT of `lookout_session` and its CSRF token.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub token: String,
    pub csrf: String,
    /// The body of the login (or 2FA completion) that opened it.
    pub body: Value,
}

impl Session {
    /// The session a 200 login or 2FA completion opened.
    pub fn from_reply(reply: &Reply) -> Session {
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
        let token = set_cookie(reply, "lookout_session")
            .unwrap_or_else(|| panic!("no session cookie in {:?}", reply.headers))
            .value;
        let body = reply.json();
        let csrf = body["csrf_token"].as_str().expect("csrf_token").to_string();
        Session { token, csrf, body }
    }

    pub fn user_id(&self) -> String {
        self.body["user"]["id"]
            .as_str()
            .expect("user id")
            .to_string()
    }

    /// A request carrying the session cookie (and the CSRF cookie, as a browser would) but no
    /// `X-CSRF-Token` header.
    pub fn request(&self, server: &TestServer, method: Method, path: &str) -> RequestBuilder {
        let cookies = format!("lookout_session={}; lookout_csrf={}", self.token, self.csrf);
        http()
            .request(method, server.url(path))
            .header("cookie", cookies)
    }

    pub fn get(&self, server: &TestServer, path: &str) -> Reply {
        send(self.request(server, Method::GET, path))
    }

    /// An unsafe request as the web UI sends it: cookie plus `X-CSRF-Token`.
    pub fn write(&self, server: &TestServer, method: Method, path: &str, body: &Value) -> Reply {
        let request = self.request(server, method, path);
        send(request.header("x-csrf-token", &self.csrf).json(body))
    }

    pub fn post(&self, server: &TestServer, path: &str, body: &Value) -> Reply {
        self.write(server, Method::POST, path, body)
    }

    /// `POST` without a body (logout, logout-everywhere).
    pub fn post_empty(&self, server: &TestServer, path: &str) -> Reply {
        let request = self.request(server, Method::POST, path);
        send(request.header("x-csrf-token", &self.csrf))
    }
}

/// A request with `Authorization: Bearer <key>` and nothing else.
pub(crate) fn bearer(server: &TestServer, key: &str, method: Method, path: &str) -> RequestBuilder {
    let request = http().request(method, server.url(path));
    request.header("authorization", format!("Bearer {key}"))
}

/// `GET path` with a session token as the `lookout_session` cookie (forged ones included).
pub(crate) fn get_with_session_cookie(server: &TestServer, token: &str, path: &str) -> Reply {
    let request = http().get(server.url(path));
    send(request.header("cookie", format!("lookout_session={token}")))
}

/// Creates an API key through `session` and returns the 201 body.
pub(crate) fn create_key(server: &TestServer, session: &Session, name: &str) -> Value {
    let reply = session.post(server, "/api/v1/orgs/me/api-keys", &json!({"name": name}));
    assert_eq!(reply.status, 201, "create key: {}", text(&reply.body));
    reply.json()
}

// ---- JWTs ----

/// The 64-byte HS256 key the server generated in its data dir.
pub(crate) fn jwt_key(server: &TestServer) -> Vec<u8> {
    let key = std::fs::read(server.data_dir.join("jwt.key")).expect("read jwt.key");
    assert_eq!(key.len(), 64, "jwt.key holds {} bytes", key.len());
    key
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `header.claims` in base64url, the part a JWT signature covers.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", b64(header.to_string()), b64(claims.to_string()))
}

/// A JWT signed with HMAC-SHA-256 under `key`, whatever `header` claims.
pub(crate) fn sign_hs256(header: &Value, claims: &Value, key: &[u8]) -> String {
    let input = signing_input(header, claims);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
    mac.update(input.as_bytes());
    format!("{input}.{}", b64(mac.finalize().into_bytes()))
}

/// A JWT signed with HMAC-SHA-512 under `key` (an algorithm switch with the real key).
pub(crate) fn sign_hs512(header: &Value, claims: &Value, key: &[u8]) -> String {
    let input = signing_input(header, claims);
    let mut mac = Hmac::<sha2::Sha512>::new_from_slice(key).expect("any key length");
    mac.update(input.as_bytes());
    format!("{input}.{}", b64(mac.finalize().into_bytes()))
}

/// The decoded header (part 0) or claims (part 1) of a JWT.
pub(crate) fn jwt_part(token: &str, part: usize) -> Value {
    let encoded = token.split('.').nth(part).expect("a JWT part");
    let bytes = URL_SAFE_NO_PAD.decode(encoded).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON")
}

/// Seconds since the epoch, by the wall clock the server also uses.
pub(crate) fn unix_now() -> f64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.expect("after 1970").as_secs_f64()
}

// ---- TOTP ----

const TOTP_STEP_SECONDS: f64 = 30.0;

/// The code of `secret` for the 30-second time step `step`.
pub(crate) fn code_at_step(secret: &str, step: i64) -> String {
    let at = lookout::clock::Timestamp(step * 30_000 + 1_000);
    lookout::auth::totp::current_code(secret, at).expect("a code")
}

/// The current time step, after waiting out the last 6 s of a step if need be, so that a test
/// using codes of this step and its neighbours is not cut by a step boundary. (Wall-clock
/// alignment is the one thing a poll cannot do here: the server's clock is the system's.)
pub(crate) fn fresh_step() -> i64 {
    let now = unix_now();
    let into_step = now % TOTP_STEP_SECONDS;
    if into_step > TOTP_STEP_SECONDS - 6.0 {
        std::thread::sleep(Duration::from_secs_f64(TOTP_STEP_SECONDS - into_step + 0.2));
    }
    (unix_now() / TOTP_STEP_SECONDS).floor() as i64
}

/// `POST /api/v1/auth/2fa/setup` (asserting 200); returns the body.
pub(crate) fn start_enrolment(server: &TestServer, session: &Session) -> Value {
    let reply = session.post_empty(server, "/api/v1/auth/2fa/setup");
    assert_eq!(reply.status, 200, "2fa setup: {}", text(&reply.body));
    reply.json()
}

/// A user with TOTP on: the secret, the recovery codes, and the step whose code enabled it.
pub(crate) struct Enrolled {
    pub secret: String,
    pub recovery_codes: Vec<String>,
    pub enabled_at_step: i64,
}

/// Turns TOTP on for the user of `session` with the code of the current step.
pub(crate) fn enrol(server: &TestServer, session: &Session) -> Enrolled {
    let secret = start_enrolment(server, session)["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    let step = fresh_step();
    let code = code_at_step(&secret, step);
    let reply = session.post(server, "/api/v1/auth/2fa/enable", &json!({"code": code}));
    assert_eq!(reply.status, 200, "2fa enable: {}", text(&reply.body));
    let codes = reply.json()["recovery_codes"]
        .as_array()
        .expect("codes")
        .clone();
    let recovery_codes = codes.iter().map(|c| c.as_str().unwrap().to_string());
    Enrolled {
        secret,
        recovery_codes: recovery_codes.collect(),
        enabled_at_step: step,
    }
}

/// The login token of a password login that awaits its second factor.
pub(crate) fn login_token(server: &TestServer, email: &str) -> String {
    let reply = login(server, email, PASSWORD);
    assert_eq!(reply.status, 200, "login {email}: {}", text(&reply.body));
    let body = reply.json();
    assert_eq!(body["two_factor_required"], true, "{body}");
    body["login_token"]
        .as_str()
        .expect("login_token")
        .to_string()
}

/// `POST /api/v1/auth/2fa/complete` with the login token in the body.
pub(crate) fn complete(server: &TestServer, login_token: &str, code: &str) -> Reply {
    let body = json!({"login_token": login_token, "code": code});
    send(
        http()
            .post(server.url("/api/v1/auth/2fa/complete"))
            .json(&body),
    )
}
