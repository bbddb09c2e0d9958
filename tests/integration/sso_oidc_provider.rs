//! OIDC sign-in end to end against the real `oidc-provider` npm package (`oidc_node.rs`
//! installs and starts it): the test walks its development sign-in and consent pages with a plain HTTP
//! client and its own cookie jar, as a browser would, until Lookout's callback signs the person
//! in.

use std::collections::HashMap;

use serde_json::json;

use crate::auth_support::{add_user, server, set_cookie, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};
use crate::oidc_node::{CLIENT_ID, CLIENT_SECRET, start_provider};

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
    let server: TestServer = server(&[
        ("API_RATE_PER_MIN", "100000"),
        ("WEBHOOK_ALLOW_PRIVATE", "true"),
    ]);
    let provider = start_provider(&server.url("/api/v1/auth/sso/oidc/callback"));
    add_user(&server, "owner@example.com", "owner");
    let output = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let owner = sign_in(&server, "owner@example.com");
    let org = owner.body["org"]["id"].as_str().unwrap().to_string();
    let config = json!({
        "oidc": {"issuer": provider.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET},
        "saml": null, "default_role": "member", "domains": ["corp.example"], "required": false,
    });
    let saved = owner.write(
        &server,
        reqwest::Method::PUT,
        "/api/v1/orgs/me/sso",
        &config,
    );
    assert_eq!(saved.status, 200, "{}", text(&saved.body));

    let start = send(http().get(server.url(&format!("/api/v1/auth/sso/oidc/start?org={org}"))));
    assert_eq!(start.status, 302, "{}", text(&start.body));
    let attempt = set_cookie(&start, "lookout_sso")
        .expect("attempt cookie")
        .value;
    let mut location = start.header("location").to_string();
    let mut jar = Jar::default();
    let issuer = url::Url::parse(&provider.issuer).unwrap();
    // Follow the provider: redirects, its sign-in form, its consent form, until it sends the
    // browser back to Lookout. Each page is one step; a sign-in takes well under twenty.
    for _ in 0..20 {
        let target = issuer.join(&location).unwrap();
        if target.path() == "/api/v1/auth/sso/oidc/callback" {
            let path = format!("{}?{}", target.path(), target.query().unwrap_or(""));
            let back = send(
                http()
                    .get(server.url(&path))
                    .header("cookie", format!("lookout_sso={attempt}")),
            );
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
            return;
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
                "login" => (name, "person@corp.example".to_string()),
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
