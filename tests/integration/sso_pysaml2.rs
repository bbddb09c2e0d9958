//! SAML interoperability: pysaml2 (PyPI, pinned by `tests/fixtures/pysaml2/requirements.txt`,
//! signing with Debian's `xmlsec1`) is the identity provider. The test installs it into a venv
//! under `target/pysaml2/` when needed, trusts its metadata, answers Lookout's AuthnRequest with
//! pysaml2's signed Response through `tests/fixtures/pysaml2/idp.py`, and posts it to the ACS as
//! the browser would: the person is signed in; the same Response again, an unsigned one, one
//! for another audience or recipient and a wrapped one are refused. An owner's test sign-in
//! (`test=1`) shows what pysaml2 asserted on the settings page and changes nothing. Without
//! python3-venv or xmlsec1 it fails naming them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::Method;
use serde_json::json;

use crate::auth_support::{Session, add_user, server, set_cookie, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const ATTEMPT: &str = "lookout_saml_attempt";
const MISSING: &str = "the pysaml2 test needs python3 with venv and xmlsec1 \
                       (apt-get install -y python3-venv xmlsec1)";

/// The venv's python, with pysaml2 installed (pip only when the pins changed). The tests of
/// this file run in parallel: the first to ask installs, the others wait for it, so no test runs
/// `idp.py` while another is rebuilding the venv under it.
fn python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(install).clone()
}

fn install() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = root.join("tests/fixtures/pysaml2/requirements.txt");
    let dir = root.join("target/pysaml2");
    let venv_python = dir.join("venv/bin/python");
    let installed = dir.join("requirements.txt");
    let wanted = std::fs::read(&pins).expect("requirements.txt");
    assert!(Path::new("/usr/bin/xmlsec1").exists(), "{MISSING}");
    if std::fs::read(&installed).ok().as_deref() == Some(wanted.as_slice()) && venv_python.exists()
    {
        return venv_python;
    }
    std::fs::create_dir_all(&dir).expect("target/pysaml2");
    let run = |program: &Path, args: &[&str]| {
        let output = Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|err| panic!("{MISSING}: {err}"));
        assert!(
            output.status.success(),
            "{MISSING}: {} {args:?}: {}{}",
            program.display(),
            text(&output.stdout),
            text(&output.stderr)
        );
    };
    run(
        Path::new("python3"),
        &["-m", "venv", dir.join("venv").to_str().expect("utf-8 path")],
    );
    run(
        &venv_python,
        &[
            "-m",
            "pip",
            "install",
            "-q",
            "-r",
            pins.to_str().expect("utf-8 path"),
        ],
    );
    std::fs::write(&installed, wanted).expect("note the installed pins");
    venv_python
}

/// `idp.py args…`: its standard output.
fn idp(args: &[&str]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pysaml2/idp.py");
    let output = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("run idp.py");
    assert!(
        output.status.success(),
        "idp.py {args:?}: {}",
        text(&output.stderr)
    );
    text(&output.stdout).trim().to_string()
}

/// Starts a sign-in: the AuthnRequest (as sent, deflated and base64) and the attempt cookie.
fn start(server: &TestServer, org: &str) -> (String, String) {
    let reply = send(http().get(server.url(&format!("/api/v1/auth/sso/saml/start?org={org}"))));
    assert_eq!(reply.status, 302, "{}", text(&reply.body));
    let location = url::Url::parse(reply.header("location")).expect("location");
    assert!(
        location
            .as_str()
            .starts_with("https://idp.pysaml2.test/sso"),
        "{location}"
    );
    let query: HashMap<_, _> = location.query_pairs().into_owned().collect();
    let cookie = set_cookie(&reply, ATTEMPT).expect("attempt cookie").value;
    (query["SAMLRequest"].clone(), cookie)
}

fn post(server: &TestServer, cookie: &str, saml_response: &str, org: &str) -> Reply {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("SAMLResponse", saml_response)
        .append_pair("RelayState", org)
        .finish();
    send(
        http()
            .post(server.url("/api/v1/auth/sso/saml/acs"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", format!("{ATTEMPT}={cookie}"))
            .body(form),
    )
}

fn refused(reply: &Reply) {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert!(
        reply.header("location").starts_with("/login?sso_error="),
        "{}",
        reply.header("location")
    );
    assert!(set_cookie(reply, "lookout_session").is_none());
}

/// An enterprise organisation trusting pysaml2, its owner signed in, and our SP metadata in a
/// file for `idp.py`.
fn setup() -> (TestServer, Session, String, tempfile::NamedTempFile) {
    let server = server(&[("API_RATE_PER_MIN", "100000")]);
    add_user(&server, "owner@example.com", "owner");
    let output = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let owner = sign_in(&server, "owner@example.com");
    let org = owner.body["org"]["id"]
        .as_str()
        .expect("org id")
        .to_string();
    let body = json!({
        "oidc": null,
        "saml": {"idp_metadata_xml": idp(&["metadata"])},
        "default_role": "member",
        "domains": ["saml.example"],
        "required": false,
    });
    let saved = owner.write(&server, Method::PUT, "/api/v1/orgs/me/sso", &body);
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
    let sp_metadata =
        send(http().get(server.url(&format!("/api/v1/auth/sso/saml/metadata?org={org}"))));
    assert_eq!(sp_metadata.status, 200);
    let sp_file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(sp_file.path(), &sp_metadata.body).expect("SP metadata");
    (server, owner, org, sp_file)
}

#[test]
fn pysaml2_signs_people_in_and_its_replayed_unsigned_wrapped_or_misaddressed_answers_are_refused() {
    let (server, owner, org, sp_file) = setup();
    let sp_path = sp_file.path().to_str().expect("utf-8 path");

    // Signed in as a new member, from pysaml2's signed Response.
    let (request, cookie) = start(&server, &org);
    let response = idp(&["respond", sp_path, &request, "erin@saml.example"]);
    let signed_in = post(&server, &cookie, &response, &org);
    assert_eq!(signed_in.status, 303, "{}", text(&signed_in.body));
    assert_eq!(signed_in.header("location"), "/");
    let session = set_cookie(&signed_in, "lookout_session")
        .expect("a session")
        .value;
    let me = send(
        http()
            .get(server.url("/api/v1/auth/me"))
            .header("cookie", format!("lookout_session={session}")),
    );
    let me: serde_json::Value = serde_json::from_slice(&me.body).expect("me");
    assert_eq!(me["user"]["email"], "erin@saml.example");
    assert_eq!(me["role"], "member");

    // The same Response again, even with a fresh attempt of its own, is a replay.
    refused(&post(&server, &cookie, &response, &org));

    // A fresh attempt answered by pysaml2 with `options`, posted to the ACS.
    let answered_with = |options: &[&str]| {
        let (request, cookie) = start(&server, &org);
        let mut args = vec!["respond", sp_path, &request, "erin@saml.example"];
        args.extend_from_slice(options);
        post(&server, &cookie, &idp(&args), &org)
    };
    // Unsigned, and addressed to another service provider: refused.
    refused(&answered_with(&["--unsigned"]));
    refused(&answered_with(&[
        "--audience",
        "https://another-sp.example/metadata",
    ]));
    // Signed for another recipient (Destination and SubjectConfirmationData Recipient).
    refused(&answered_with(&[
        "--recipient",
        "https://another-sp.example/acs",
    ]));
    // pysaml2's signed assertion wrapped by an unsigned copy naming mallory, beside it or
    // around it: refused, and mallory never becomes a member.
    refused(&answered_with(&["--wrap", "before"]));
    refused(&answered_with(&["--wrap", "inside"]));
    let members = owner.get(&server, "/api/v1/orgs/me/members");
    assert_eq!(members.status, 200, "{}", text(&members.body));
    assert!(
        !text(&members.body).contains("mallory"),
        "{}",
        text(&members.body)
    );
}

/// The owner's test start: the AuthnRequest and the attempt cookie.
fn start_test(server: &TestServer, owner: &Session, org: &str) -> (String, String) {
    let path = format!("/api/v1/auth/sso/saml/start?org={org}&test=1");
    let reply = send(owner.request(server, Method::GET, &path));
    assert_eq!(reply.status, 302, "{}", text(&reply.body));
    let location = url::Url::parse(reply.header("location")).expect("location");
    let query: HashMap<_, _> = location.query_pairs().into_owned().collect();
    let cookie = set_cookie(&reply, ATTEMPT).expect("attempt cookie").value;
    (query["SAMLRequest"].clone(), cookie)
}

/// A test's answer: back on the settings page with `query`, and no session.
fn landed_on_settings(reply: &Reply, query: &str) {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), format!("/settings/sso?{query}"));
    assert!(set_cookie(reply, "lookout_session").is_none());
}

#[test]
fn a_saml_test_sign_in_shows_what_pysaml2_asserted_and_changes_nothing() {
    let (server, owner, org, sp_file) = setup();
    let sp_path = sp_file.path().to_str().expect("utf-8 path");
    // Owners only, signed in: nobody else may start a test.
    let path = format!("/api/v1/auth/sso/saml/start?org={org}&test=1");
    send(http().get(server.url(&path))).problem(401, "unauthorized");
    let browser = send(http().get(server.url(&path)).header("accept", "text/html"));
    assert_eq!(browser.status, 303, "{}", text(&browser.body));
    assert_eq!(
        browser.header("location"),
        "/settings/sso?sso_test=failed&code=unauthorized"
    );
    let bad = format!("/api/v1/auth/sso/saml/start?org={org}&test=yes");
    send(owner.request(&server, Method::GET, &bad)).problem(400, "invalid_parameter");

    let (request, cookie) = start_test(&server, &owner, &org);
    let response = idp(&["respond", sp_path, &request, "tess@saml.example"]);
    let tested = post(&server, &cookie, &response, &org);
    landed_on_settings(&tested, "sso_test=ok&email=tess%40saml.example&mfa=0");
    let members = owner.get(&server, "/api/v1/orgs/me/members");
    assert_eq!(members.status, 200, "{}", text(&members.body));
    assert!(
        !text(&members.body).contains("tess@saml.example"),
        "a test makes no member: {}",
        text(&members.body)
    );
    // The owner's session is unchanged.
    assert_eq!(owner.get(&server, "/api/v1/auth/me").status, 200);

    // A refused answer comes back to the settings page with its code.
    let (request, cookie) = start_test(&server, &owner, &org);
    let unsigned = idp(&[
        "respond",
        sp_path,
        &request,
        "tess@saml.example",
        "--unsigned",
    ]);
    let failed = post(&server, &cookie, &unsigned, &org);
    landed_on_settings(&failed, "sso_test=failed&code=sso_rejected");
}
