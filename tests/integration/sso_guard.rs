//! Identity-provider URLs pass the outbound destination guard: without
//! `WEBHOOK_ALLOW_PRIVATE=true`, a SAML metadata URL on a loopback or private address is refused
//! when saved (400 `destination_refused`, nothing saved, nothing fetched), and an OIDC issuer
//! on one is refused at the start of a sign-in (400 `destination_refused`, or the sign-in page
//! with that code for a browser) before any request reaches it.

use reqwest::Method;
use serde_json::json;

use crate::auth_support::{add_user, server, sign_in};
use crate::harness::{http, text};
use crate::http_basics::send;
use crate::oidc_provider::{Behaviour, CLIENT_ID, CLIENT_SECRET, Provider};

#[test]
fn private_identity_providers_are_refused_unless_the_operator_allows_them() {
    let provider = Provider::start(Behaviour::person("a@example.com", "a"));
    let server = server(&[("API_RATE_PER_MIN", "100000")]);
    add_user(&server, "owner@example.com", "owner");
    let output = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let owner = sign_in(&server, "owner@example.com");
    let org = owner.body["org"]["id"].as_str().unwrap().to_string();
    let put =
        |body: serde_json::Value| owner.write(&server, Method::PUT, "/api/v1/orgs/me/sso", &body);

    // SAML metadata by URL: the loopback provider, in every spelling the guard knows.
    let port = url::Url::parse(&provider.issuer).unwrap().port().unwrap();
    for host in ["127.0.0.1", "localhost", "[::1]", "127.1"] {
        let url = format!("http://{host}:{port}/saml-metadata");
        let body = json!({"saml": {"idp_metadata_url": url}, "default_role": "member", "domains": [], "required": false});
        let reply = put(body);
        reply.problem(400, "destination_refused");
    }
    let shown = owner.get(&server, "/api/v1/orgs/me/sso").json();
    assert_eq!(shown["saml"], json!(null), "nothing saved: {shown}");

    // An OIDC issuer on loopback is saved (it is not fetched then) but refused at the start.
    let body = json!({
        "oidc": {"issuer": provider.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET},
        "saml": null, "default_role": "member", "domains": ["example.com"], "required": false,
    });
    let saved = put(body);
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
    let start = format!("/api/v1/auth/sso/oidc/start?org={org}");
    let reply = send(http().get(server.url(&start)));
    reply.problem(400, "destination_refused");
    assert!(reply.header("set-cookie").is_empty(), "no attempt cookie");
    let browser = send(http().get(server.url(&start)).header("accept", "text/html"));
    assert_eq!(browser.status, 303, "{}", text(&browser.body));
    assert_eq!(
        browser.header("location"),
        "/login?sso_error=destination_refused"
    );
    // Nothing was fetched from the provider (its key set is fetched right after discovery).
    assert_eq!(provider.jwks_fetches(), 0);
}
