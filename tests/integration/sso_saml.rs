//! The SAML service provider through the real binary: the SP metadata with its plan gating;
//! sign-in end to end (start, the IdP's signed Response posted to the ACS, the session), and
//! the refusals of an unsigned, wrapped, replayed, wrongly addressed or foreign Response. The
//! IdP is the unit tests' signer (`src/sso/saml/test_idp.rs`, keys in `tests/fixtures/saml/`).

use std::collections::HashMap;

use reqwest::Method;
use serde_json::json;

use crate::auth_support::{Session, add_user, server, set_cookie, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};
// `test_idp` names these through `super::`.
use lookout::sso::saml::{Attempt, ServiceProvider};

#[allow(dead_code)]
#[path = "../../src/sso/saml/test_idp.rs"]
mod test_idp;

use test_idp::ResponseParts;

const METADATA: &str = "/api/v1/auth/sso/saml/metadata";
const ACS: &str = "/api/v1/auth/sso/saml/acs";
const ATTEMPT: &str = "lookout_saml_attempt";

fn set_plan(server: &TestServer, plan: &str) {
    crate::sso_oidc::set_plan(server, "default", plan);
}

fn org_of(owner: &Session) -> String {
    owner.body["org"]["id"].as_str().expect("org id").to_owned()
}

#[test]
fn saml_metadata_names_the_org_entity_id_and_acs_on_the_enterprise_plan_only() {
    let server = server(&[]);
    add_user(&server, "owner@example.com", "owner");
    let owner = sign_in(&server, "owner@example.com");
    let org = org_of(&owner);
    let path = format!("{METADATA}?org={org}");

    send(http().get(server.url(&path))).problem(403, "plan_required");
    set_plan(&server, "enterprise");
    let reply = send(http().get(server.url(&path)));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(reply.header("content-type"), "application/samlmetadata+xml");
    let xml = text(&reply.body);
    let entity_id = server.url(&format!("{METADATA}?org={org}"));
    assert!(xml.contains(&format!("entityID=\"{entity_id}\"")), "{xml}");
    assert!(
        xml.contains(&format!("Location=\"{}\"", server.url(ACS))),
        "{xml}"
    );
    assert!(xml.contains("WantAssertionsSigned=\"true\""), "{xml}");

    send(http().get(server.url(METADATA))).problem(400, "invalid_parameter");
    let malformed = format!("{METADATA}?org=nonsense");
    send(http().get(server.url(&malformed))).problem(400, "invalid_parameter");
    let unknown = format!("{METADATA}?org=org_01ARZ3NDEKTSV4RRFFQ69G5FAV");
    send(http().get(server.url(&unknown))).problem(404, "not_found");
    let twice = format!("{METADATA}?org={org}&org={org}");
    send(http().get(server.url(&twice))).problem(400, "invalid_parameter");

    set_plan(&server, "free");
    send(http().get(server.url(&path))).problem(403, "plan_required");
}

/// An enterprise org whose SSO configuration trusts the test IdP.
fn setup() -> (TestServer, Session, String) {
    let server = server(&[("API_RATE_PER_MIN", "100000")]);
    add_user(&server, "owner@example.com", "owner");
    set_plan(&server, "enterprise");
    let owner = sign_in(&server, "owner@example.com");
    let body = json!({
        "oidc": null,
        "saml": {"idp_metadata_xml": test_idp::metadata_xml()},
        "default_role": "viewer",
        "domains": ["example.com"],
        "required": false,
    });
    let reply = owner.write(&server, Method::PUT, "/api/v1/orgs/me/sso", &body);
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let org = org_of(&owner);
    (server, owner, org)
}

/// Starts a sign-in: the AuthnRequest's id and the attempt cookie.
fn start(server: &TestServer, org: &str) -> (String, String) {
    let reply = send(http().get(server.url(&format!("/api/v1/auth/sso/saml/start?org={org}"))));
    assert_eq!(reply.status, 302, "{}", text(&reply.body));
    let location = url::Url::parse(reply.header("location")).expect("location");
    assert!(
        location.as_str().starts_with(test_idp::IDP_SSO_URL),
        "{location}"
    );
    let query: HashMap<_, _> = location.query_pairs().into_owned().collect();
    assert_eq!(query.get("RelayState"), Some(&org.to_owned()));
    let request = test_idp::inflate(&query["SAMLRequest"]);
    let id_at = request.find(" ID=\"").expect("ID") + 5;
    let request_id = request[id_at..request[id_at..].find('"').unwrap() + id_at].to_owned();
    let cookie = set_cookie(&reply, ATTEMPT).expect("attempt cookie");
    assert!(cookie.has("httponly"), "{}", cookie.raw);
    (request_id, cookie.value)
}

/// A valid Response to `request_id` for this server's SP of `org`.
fn parts(server: &TestServer, org: &str, request_id: &str) -> ResponseParts {
    let sp = ServiceProvider {
        entity_id: server.url(&format!("{METADATA}?org={org}")),
        acs_url: server.url(ACS),
    };
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap();
    ResponseParts {
        destination: sp.acs_url.clone(),
        recipient: sp.acs_url.clone(),
        audience: sp.entity_id.clone(),
        in_response_to: request_id.to_owned(),
        ..ResponseParts::valid(now)
    }
}

fn post(server: &TestServer, cookie: &str, saml_response: &str, relay_state: &str) -> Reply {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("SAMLResponse", saml_response)
        .append_pair("RelayState", relay_state)
        .finish();
    send(
        http()
            .post(server.url(ACS))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", format!("{ATTEMPT}={cookie}"))
            .body(form),
    )
}

fn refused(reply: &Reply, code: &str) {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), format!("/login?sso_error={code}"));
    assert!(set_cookie(reply, "lookout_session").is_none());
}

#[test]
fn saml_sign_in_end_to_end_and_its_refusals() {
    let (server, _owner, org) = setup();

    // Refusals first, each with a fresh attempt, so none is a replay of the success.
    let (request_id, cookie) = start(&server, &org);
    let valid = parts(&server, &org, &request_id);
    let unsigned = test_idp::encode(&valid.response_xml(&valid.assertion_xml()));
    refused(&post(&server, &cookie, &unsigned, &org), "sso_rejected");

    // Signed by the IdP, but for another SP, to another ACS, or at another Destination.
    let misaddressed = [
        ResponseParts {
            audience: "https://other.test/sp".into(),
            ..valid.clone()
        },
        ResponseParts {
            recipient: "https://other.test/acs".into(),
            ..valid.clone()
        },
        ResponseParts {
            destination: "https://other.test/acs".into(),
            ..valid.clone()
        },
    ];
    for wrong in &misaddressed {
        let reply = post(&server, &cookie, &test_idp::signed_response(wrong), &org);
        refused(&reply, "sso_rejected");
    }
    let foreign = test_idp::sign(
        &valid.response_xml(&valid.assertion_xml()),
        false,
        test_idp::OTHER_KEY,
        test_idp::OTHER_CERT,
    );
    refused(
        &post(&server, &cookie, &test_idp::encode(&foreign), &org),
        "sso_rejected",
    );

    // Wrapping: the genuine signed Assertion hidden in Extensions behind an evil one.
    let signed = test_idp::sign(
        &valid.response_xml(&valid.assertion_xml()),
        false,
        test_idp::IDP_KEY,
        test_idp::IDP_CERT,
    );
    let genuine = &signed[signed.find("<saml:Assertion").unwrap()
        ..signed.find("</saml:Assertion>").unwrap() + "</saml:Assertion>".len()];
    let evil = ResponseParts {
        name_id_xml: "eve@example.com".into(),
        attributes: vec![("email".into(), "eve@example.com".into())],
        ..valid.clone()
    };
    let wrapped = valid.response_xml(&format!(
        "{}<samlp:Extensions>{genuine}</samlp:Extensions>",
        evil.assertion_xml()
    ));
    refused(
        &post(&server, &cookie, &test_idp::encode(&wrapped), &org),
        "sso_rejected",
    );

    // Without the attempt cookie, or for another browser's attempt: refused.
    let good = test_idp::signed_response(&valid);
    refused(&post(&server, "", &good, &org), "sso_state_invalid");
    let (_other_request, other_cookie) = start(&server, &org);
    refused(
        &post(&server, &other_cookie, &good, &org),
        "sso_state_invalid",
    );

    // The genuine Response signs in: a just-in-time viewer.
    let reply = post(&server, &cookie, &good, &org);
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), "/");
    let session = set_cookie(&reply, "lookout_session")
        .expect("session cookie")
        .value;
    let me = send(
        http()
            .get(server.url("/api/v1/auth/me"))
            .header("cookie", format!("lookout_session={session}")),
    );
    assert_eq!(me.status, 200, "{}", text(&me.body));
    assert_eq!(
        me.json()["user"]["email"],
        "ada@example.com",
        "{}",
        text(&me.body)
    );

    // The same Response again: a replay.
    refused(&post(&server, &cookie, &good, &org), "sso_replayed");
}
