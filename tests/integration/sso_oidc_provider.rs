//! OIDC sign-in end to end against the real `oidc-provider` npm package (`oidc_node.rs`
//! installs and starts it): the test walks its development sign-in and consent pages with a plain HTTP
//! client and its own cookie jar, as a browser would, until Lookout's callback signs the person
//! in; and the refusals the real peer can be made to produce: a tampered `state`, a replayed
//! callback, an unverified e-mail, an ID token signed with the client secret (HS256) instead of
//! the provider's keys, an issuer other than the one the provider announces, and an expired ID
//! token (Lookout's clock run ahead of the provider's one-hour ID-token lifetime).
//!
//! Kept on the in-test provider (`sso_oidc.rs`), because `oidc-provider` cannot issue them: an
//! unsigned (`alg: none`) ID token (version 9 removed `none` from its algorithms), a token for
//! another audience (its `aud` is always the requesting client) and a token whose `iss`
//! differs from its own discovery document (both come from the one configured issuer).

use std::collections::HashMap;

use serde_json::json;

use crate::auth_support::{Session, add_user, server, set_cookie, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};
use crate::oidc_node::{CLIENT_ID, CLIENT_SECRET, NodeProvider, start_provider};

/// Cookies of the provider, as a browser keeps them (one host, so every path gets them all).
#[derive(Default)]
struct Jar(HashMap<String, String>);

impl Jar {
    fn take(&mut self, reply: &Reply) {
        let values = reply
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"));
        for (_, value) in values {
            let pair = value.split(';').next().unwrap_or("");
            if let Some((name, value)) = pair.split_once('=') {
                if value.is_empty() {
                    self.0.remove(name.trim());
                } else {
                    self.0.insert(name.trim().to_string(), value.to_string());
                }
            }
        }
    }

    fn header(&self) -> String {
        let pairs: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        pairs.join("; ")
    }
}

/// The first form of a page: its action and its inputs' names and values.
fn form_of(page: &str) -> (String, Vec<(String, String)>) {
    let form = regex::Regex::new(r#"<form[^>]*action="([^"]+)""#).unwrap();
    let action = form.captures(page).expect("a form on the provider's page")[1].to_string();
    let input = regex::Regex::new(r#"<input[^>]*>"#).unwrap();
    let attribute = |tag: &str, name: &str| {
        regex::Regex::new(&format!(r#"\b{name}="([^"]*)""#))
            .unwrap()
            .captures(tag)
            .map(|c| c[1].to_string())
    };
    let fields = input
        .find_iter(page)
        .filter_map(|tag| {
            let name = attribute(tag.as_str(), "name")?;
            Some((name, attribute(tag.as_str(), "value").unwrap_or_default()))
        })
        .collect();
    (action, fields)
}

#[test]
fn oidc_sign_in_end_to_end_with_oidc_provider() {
    let (server, provider, _owner, org) = with_provider(&[]);
    let (target, attempt) = walk(&server, &provider.issuer, &org, "person@corp.example");
    let back = come_back(&server, &target, &attempt);
    assert_eq!(back.status, 303, "{}", text(&back.body));
    assert_eq!(back.header("location"), "/");
    let session = set_cookie(&back, "lookout_session").expect("session").value;
    let me = send(
        http()
            .get(server.url("/api/v1/auth/me"))
            .header("cookie", format!("lookout_session={session}")),
    );
    assert_eq!(me.status, 200, "{}", text(&me.body));
    let me = me.json();
    assert_eq!(me["user"]["email"], "person@corp.example");
    assert_eq!(me["role"], "member");
    assert_eq!(me["org"]["id"], org.as_str());
}

/// Follows the provider from Lookout's redirect to it: redirects, its sign-in form (as
/// `login`), its consent form, until it sends the browser back to Lookout. Each page is one
/// step; a sign-in takes well under twenty. A fresh cookie jar each time: a new person.
fn through_provider(issuer: &str, start_location: &str, login: &str) -> url::Url {
    let mut location = start_location.to_string();
    let mut jar = Jar::default();
    let issuer = url::Url::parse(issuer).unwrap();
    for _ in 0..20 {
        let target = issuer.join(&location).unwrap();
        if target.path() == "/api/v1/auth/sso/oidc/callback" {
            return target;
        }
        let page = send(http().get(target.as_str()).header("cookie", jar.header()));
        jar.take(&page);
        if (300..400).contains(&page.status) {
            location = page.header("location").to_string();
            continue;
        }
        assert_eq!(page.status, 200, "{}: {}", target, text(&page.body));
        let (action, fields) = form_of(&text(&page.body));
        let filled: Vec<(String, String)> = fields
            .into_iter()
            .map(|(name, value)| match name.as_str() {
                "login" => (name, login.to_string()),
                "password" => (name, "any password".to_string()),
                _ => (name, value),
            })
            .collect();
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&filled)
            .finish();
        let posted = send(
            http()
                .post(target.join(&action).unwrap().as_str())
                .header("cookie", jar.header())
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body),
        );
        jar.take(&posted);
        assert!(
            (300..400).contains(&posted.status),
            "{}",
            text(&posted.body)
        );
        location = posted.header("location").to_string();
    }
    panic!("the provider never sent the browser back to Lookout");
}

/// A server (with `env` besides the test defaults and the switch that lets it reach loopback
/// providers), the provider sending browsers back to it, and an enterprise organisation whose
/// owner is signed in and which uses that provider: server, provider, owner, org id.
fn with_provider(env: &[(&str, &str)]) -> (TestServer, NodeProvider, Session, String) {
    let mut all = vec![
        ("API_RATE_PER_MIN", "100000"),
        ("WEBHOOK_ALLOW_PRIVATE", "true"),
    ];
    all.extend_from_slice(env);
    let server = server(&all);
    let provider = start_provider(&server.url("/api/v1/auth/sso/oidc/callback"));
    add_user(&server, "owner@example.com", "owner");
    let output = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let owner = sign_in(&server, "owner@example.com");
    let org = owner.body["org"]["id"].as_str().unwrap().to_string();
    configure(&server, &owner, &provider.issuer, CLIENT_ID);
    (server, provider, owner, org)
}

fn configure(server: &TestServer, owner: &Session, issuer: &str, client_id: &str) {
    let config = json!({
        "oidc": {"issuer": issuer, "client_id": client_id, "client_secret": CLIENT_SECRET},
        "saml": null, "default_role": "member", "domains": ["corp.example"], "required": false,
    });
    let saved = owner.write(server, reqwest::Method::PUT, "/api/v1/orgs/me/sso", &config);
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
}

/// A sign-in started at Lookout and walked through the provider as `login`: the callback URL
/// the provider sent the browser to, and the attempt cookie.
fn walk(server: &TestServer, issuer: &str, org: &str, login: &str) -> (url::Url, String) {
    let start = send(http().get(server.url(&format!("/api/v1/auth/sso/oidc/start?org={org}"))));
    assert_eq!(start.status, 302, "{}", text(&start.body));
    let attempt = set_cookie(&start, "lookout_sso").expect("attempt").value;
    (
        through_provider(issuer, start.header("location"), login),
        attempt,
    )
}

fn come_back(server: &TestServer, target: &url::Url, attempt: &str) -> Reply {
    let path = format!("{}?{}", target.path(), target.query().unwrap_or(""));
    send(
        http()
            .get(server.url(&path))
            .header("cookie", format!("lookout_sso={attempt}")),
    )
}

/// Refused with `code` on the sign-in page, and no session.
fn refused(reply: &Reply, code: &str) {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), format!("/login?sso_error={code}"));
    assert!(set_cookie(reply, "lookout_session").is_none());
}

fn no_member(server: &TestServer, owner: &Session, email: &str) {
    let members = owner.get(server, "/api/v1/orgs/me/members");
    assert_eq!(members.status, 200, "{}", text(&members.body));
    assert!(
        !text(&members.body).contains(email),
        "{}",
        text(&members.body)
    );
}

#[test]
fn the_real_providers_wrong_answers_are_refused() {
    let (server, provider, owner, org) = with_provider(&[]);

    // A tampered state.
    let (target, attempt) = walk(&server, &provider.issuer, &org, "sam@corp.example");
    let mut tampered = target.clone();
    let pairs: Vec<(String, String)> = target
        .query_pairs()
        .into_owned()
        .map(|(k, v)| {
            if k == "state" {
                (k, format!("{v}x"))
            } else {
                (k, v)
            }
        })
        .collect();
    tampered.query_pairs_mut().clear().extend_pairs(&pairs);
    refused(
        &come_back(&server, &tampered, &attempt),
        "sso_state_invalid",
    );
    no_member(&server, &owner, "sam@corp.example");
    // The untampered answer signs in once; the same callback again is refused (the provider
    // refuses the used code, so no second ID token with that nonce is even issued).
    let first = come_back(&server, &target, &attempt);
    assert_eq!(first.status, 303, "{}", text(&first.body));
    assert_eq!(first.header("location"), "/");
    assert!(set_cookie(&first, "lookout_session").is_some());
    refused(&come_back(&server, &target, &attempt), "sso_rejected");

    // An account whose claims say email_verified: false.
    let (target, attempt) = walk(&server, &provider.issuer, &org, "unverified@corp.example");
    refused(
        &come_back(&server, &target, &attempt),
        "sso_email_unverified",
    );
    no_member(&server, &owner, "unverified@corp.example");

    // An ID token signed with the client secret (HS256), not with a key of the provider's set.
    configure(
        &server,
        &owner,
        &provider.issuer,
        &format!("{CLIENT_ID}-hs256"),
    );
    let (target, attempt) = walk(&server, &provider.issuer, &org, "hmac@corp.example");
    refused(&come_back(&server, &target, &attempt), "sso_rejected");
    no_member(&server, &owner, "hmac@corp.example");

    // Configured with an issuer other than the one the provider announces (the same server as
    // `localhost`): its discovery document is refused before anyone is sent there.
    let port = url::Url::parse(&provider.issuer).unwrap().port().unwrap();
    configure(
        &server,
        &owner,
        &format!("http://localhost:{port}"),
        CLIENT_ID,
    );
    let start = format!("/api/v1/auth/sso/oidc/start?org={org}");
    let reply = send(http().get(server.url(&start)));
    reply.problem(502, "sso_provider_unavailable");
    assert!(set_cookie(&reply, "lookout_sso").is_none());
    let browser = send(http().get(server.url(&start)).header("accept", "text/html"));
    refused(&browser, "sso_provider_unavailable");
}

#[test]
fn an_expired_id_token_from_the_real_provider_is_refused() {
    // oidc-provider's ID tokens live an hour; Lookout's clock runs two hours ahead.
    let (server, provider, owner, org) = with_provider(&[("LOOKOUT_CLOCK_OFFSET_SECONDS", "7200")]);
    let (target, attempt) = walk(&server, &provider.issuer, &org, "late@corp.example");
    refused(&come_back(&server, &target, &attempt), "sso_rejected");
    no_member(&server, &owner, "late@corp.example");
}
