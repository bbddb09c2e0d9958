//! OIDC sign-in end to end against the real `oidc-provider` npm package
//! (`tests/fixtures/oidc-provider/`, pinned by its committed `package-lock.json`): the test
//! installs it into `target/oidc-provider/` with `npm ci --offline-first` when needed, starts it
//! on a loopback port, and walks its development sign-in and consent pages with a plain HTTP
//! client and its own cookie jar, as a browser would, until Lookout's callback signs the person
//! in.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::auth_support::{add_user, server, set_cookie, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const CLIENT_ID: &str = "lookout-e2e";
const CLIENT_SECRET: &str = "an e2e client secret";

/// The provider's files, installed under `target/` (npm only when the lockfile changed).
fn installed_provider() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/fixtures/oidc-provider");
    let dir = root.join("target/oidc-provider");
    std::fs::create_dir_all(&dir).expect("target/oidc-provider");
    let lock = std::fs::read(fixture.join("package-lock.json")).expect("committed lockfile");
    let installed_lock = std::fs::read(dir.join("package-lock.json")).ok();
    let has_modules = dir.join("node_modules/oidc-provider/package.json").exists();
    for file in ["package.json", "package-lock.json", "provider.mjs"] {
        std::fs::copy(fixture.join(file), dir.join(file)).expect("copy provider file");
    }
    if has_modules && installed_lock.as_deref() == Some(lock.as_slice()) {
        return dir;
    }
    let output = Command::new("npm")
        .args([
            "ci",
            "--offline-first",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
        ])
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|err| {
            panic!("this test needs npm (Node.js) on PATH to install oidc-provider: {err}")
        });
    assert!(
        output.status.success(),
        "npm ci of oidc-provider failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    dir
}

/// The running provider; killed when dropped.
struct NodeProvider {
    child: Child,
    issuer: String,
}

impl Drop for NodeProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_provider(redirect_uri: &str) -> NodeProvider {
    let dir = installed_provider();
    let mut child = Command::new("node")
        .arg("provider.mjs")
        .current_dir(&dir)
        .env("CLIENT_ID", CLIENT_ID)
        .env("CLIENT_SECRET", CLIENT_SECRET)
        .env("REDIRECT_URI", redirect_uri)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("this test needs node on PATH: {err}"));
    let stdout = child.stdout.take().expect("provider stdout");
    let mut lines = BufReader::new(stdout).lines();
    let issuer = loop {
        let line = lines
            .next()
            .expect("the provider printed its address")
            .expect("provider output");
        if let Some(issuer) = line.strip_prefix("listening on ") {
            break issuer.to_string();
        }
    };
    // Keep reading, so a later line never meets a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    NodeProvider { child, issuer }
}

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
    let server: TestServer = server(&[("API_RATE_PER_MIN", "100000")]);
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
