//! OIDC sign-in through the real binary against the in-test provider (`oidc_provider.rs`):
//! configuration (owners, plan, validation, the write-only secret), just-in-time members,
//! every refusal of a misbehaving provider, key rotation, accounts never taken over, linking
//! while signed in, and "SSO required" with the owners' audited break-glass path.

use std::collections::HashMap;

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, login, server, set_cookie, sign_in,
};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};
use crate::oidc_provider::{Behaviour, CLIENT_ID, CLIENT_SECRET, Provider};

pub(crate) fn set_plan(server: &TestServer, org: &str, plan: &str) {
    let output = server.cli(&["org", "set-plan", org, plan], "");
    assert!(
        output.status.success(),
        "set-plan: {}",
        text(&output.stderr)
    );
}

fn org_id(session: &Session) -> String {
    session.body["org"]["id"]
        .as_str()
        .expect("org id")
        .to_string()
}

fn configure(server: &TestServer, owner: &Session, provider: &Provider, extra: Value) -> Reply {
    let mut body = json!({
        "oidc": {"issuer": provider.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET},
        "saml": null,
        "default_role": "viewer",
        "domains": ["example.com"],
        "required": false,
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    owner.write(server, Method::PUT, "/api/v1/orgs/me/sso", &body)
}

/// An enterprise org with its owner signed in and OIDC configured against `provider`.
fn setup(provider: &Provider) -> (TestServer, Session) {
    let server = server(&[
        ("API_RATE_PER_MIN", "100000"),
        ("WEBHOOK_ALLOW_PRIVATE", "true"),
    ]);
    add_user(&server, "owner@example.com", "owner");
    set_plan(&server, "default", "enterprise");
    let owner = sign_in(&server, "owner@example.com");
    let reply = configure(&server, &owner, provider, json!({}));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    (server, owner)
}

/// One browser round: start (with a session cookie when linking), the provider's
/// authorization, and the callback with the attempt cookie. Returns the callback's answer.
fn sso_round(
    server: &TestServer,
    provider: &Provider,
    org: &str,
    linking: Option<&Session>,
) -> Reply {
    let (start, cookie) = start(server, org, linking);
    let back = provider.authorize(start.header("location"));
    callback(server, &back, &cookie)
}

fn start(server: &TestServer, org: &str, linking: Option<&Session>) -> (Reply, String) {
    let mut path = format!("/api/v1/auth/sso/oidc/start?org={org}");
    let mut request = http().get(server.url(&path));
    if let Some(session) = linking {
        path.push_str("&link=1");
        request = session.request(server, Method::GET, &path);
    }
    let reply = send(request);
    assert_eq!(reply.status, 302, "{}", text(&reply.body));
    let cookie = set_cookie(&reply, "lookout_sso").expect("attempt cookie");
    assert!(cookie.has("httponly"), "{}", cookie.raw);
    assert_eq!(cookie.attribute("samesite"), Some("Lax"));
    (reply, cookie.value)
}

fn callback(server: &TestServer, back: &str, attempt: &str) -> Reply {
    let url = url::Url::parse(back).unwrap();
    let path = format!("{}?{}", url.path(), url.query().unwrap_or(""));
    send(
        http()
            .get(server.url(&path))
            .header("cookie", format!("lookout_sso={attempt}")),
    )
}

/// The session a successful callback opened (303 to `/` with the session cookie).
fn signed_in(reply: &Reply) -> String {
    landed(reply, "/")
}

/// The session a successful callback opened, landing on `location`.
fn landed(reply: &Reply, location: &str) -> String {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), location);
    set_cookie(reply, "lookout_session")
        .expect("session cookie")
        .value
}

fn refused(reply: &Reply, code: &str) {
    assert_eq!(reply.status, 303, "{}", text(&reply.body));
    assert_eq!(reply.header("location"), format!("/login?sso_error={code}"));
    assert!(set_cookie(reply, "lookout_session").is_none());
}

fn me(server: &TestServer, session_token: &str) -> Value {
    let reply = send(
        http()
            .get(server.url("/api/v1/auth/me"))
            .header("cookie", format!("lookout_session={session_token}")),
    );
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()
}

fn audit_actions(server: &TestServer, owner: &Session) -> Vec<Value> {
    let reply = owner.get(server, "/api/v1/audit?limit=500");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()["items"].as_array().unwrap().clone()
}

#[test]
fn sso_configuration_is_the_owners_on_the_enterprise_plan_and_keeps_its_secret() {
    let provider = Provider::start(Behaviour::person("a@example.com", "a"));
    let server = server(&[
        ("API_RATE_PER_MIN", "100000"),
        ("WEBHOOK_ALLOW_PRIVATE", "true"),
    ]);
    add_user(&server, "owner@example.com", "owner");
    add_user(&server, "admin@example.com", "admin");
    let owner = sign_in(&server, "owner@example.com");
    let org = org_id(&owner);
    // The free plan: configuration and sign-in are refused.
    configure(&server, &owner, &provider, json!({})).problem(403, "plan_required");
    owner
        .get(&server, "/api/v1/orgs/me/sso")
        .problem(403, "plan_required");
    send(http().get(server.url(&format!("/api/v1/auth/sso/oidc/start?org={org}"))))
        .problem(403, "plan_required");
    set_plan(&server, "default", "enterprise");
    let admin = sign_in(&server, "admin@example.com");
    configure(&server, &admin, &provider, json!({})).problem(403, "forbidden");
    admin
        .get(&server, "/api/v1/orgs/me/sso")
        .problem(403, "forbidden");

    let bad = [
        (
            json!({"oidc": {"issuer": "http://idp.example.com", "client_id": "x", "client_secret": "y"}}),
            "invalid_issuer",
        ),
        (
            json!({"oidc": {"issuer": provider.issuer, "client_id": "", "client_secret": "y"}}),
            "invalid_client",
        ),
        (json!({"default_role": "owner"}), "invalid_role"),
        (json!({"default_role": "boss"}), "invalid_role"),
        (json!({"domains": ["Example.com"]}), "invalid_domain"),
        (
            json!({"domains": ["example.com", "example.com"]}),
            "invalid_domain",
        ),
        (
            json!({"saml": {"idp_metadata_xml": "not xml"}}),
            "invalid_saml_metadata",
        ),
    ];
    for (change, code) in bad {
        configure(&server, &owner, &provider, change.clone()).problem(400, code);
    }
    let saved = configure(&server, &owner, &provider, json!({}));
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
    let shown = owner.get(&server, "/api/v1/orgs/me/sso");
    assert_eq!(shown.status, 200);
    assert!(
        !text(&shown.body).contains(CLIENT_SECRET),
        "{}",
        text(&shown.body)
    );
    let shown = shown.json();
    assert!(shown["oidc"].get("client_secret").is_none(), "{shown}");
    assert_eq!(shown["oidc"]["client_secret_set"], true);
    assert_eq!(shown["default_role"], "viewer");
    assert_eq!(shown["domains"], json!(["example.com"]));
    let redirect = shown["service_provider"]["oidc_redirect_uri"]
        .as_str()
        .unwrap();
    assert!(
        redirect.ends_with("/api/v1/auth/sso/oidc/callback"),
        "{redirect}"
    );

    // A PUT without the secret keeps the stored one: a sign-in still exchanges its code.
    let without_secret = json!({"oidc": {"issuer": provider.issuer, "client_id": CLIENT_ID}});
    assert_eq!(
        configure(&server, &owner, &provider, without_secret).status,
        200
    );
    signed_in(&sso_round(&server, &provider, &org, None));

    // A domain belongs to one organisation.
    add_user_in(&server, "other@other.org", "owner", Some("other"));
    set_plan(&server, "other", "enterprise");
    let other = crate::auth_support::sign_in(&server, "other@other.org");
    configure(&server, &other, &provider, json!({})).problem(409, "sso_domain_taken");

    // Discovery by e-mail domain for the sign-in page.
    let found = send(http().get(server.url("/api/v1/auth/sso/discover?email=someone@example.com")));
    assert_eq!(found.status, 200, "{}", text(&found.body));
    assert_eq!(found.json(), json!({"org_id": org, "protocols": ["oidc"]}));
    send(http().get(server.url("/api/v1/auth/sso/discover?email=someone@nowhere.org")))
        .problem(404, "sso_not_configured");
    send(http().get(server.url("/api/v1/auth/sso/discover?email=nobody")))
        .problem(400, "invalid_email");

    // Turning the plan off disables SSO and keeps the configuration.
    set_plan(&server, "default", "free");
    send(http().get(server.url(&format!("/api/v1/auth/sso/oidc/start?org={org}"))))
        .problem(403, "plan_required");
    set_plan(&server, "default", "enterprise");
    assert_eq!(
        owner.get(&server, "/api/v1/orgs/me/sso").json()["domains"],
        json!(["example.com"])
    );
}

#[test]
fn a_new_person_appears_with_the_default_role_and_cannot_replay_the_token() {
    let provider = Provider::start(Behaviour::person("new.person@example.com", "subject-1"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    let session = signed_in(&sso_round(&server, &provider, &org, None));
    let me = me(&server, &session);
    assert_eq!(me["user"]["email"], "new.person@example.com");
    assert_eq!(me["role"], "viewer");
    assert_eq!(me["org"]["id"], org);
    // The same identity signs in again into the same account.
    let again = signed_in(&sso_round(&server, &provider, &org, None));
    assert_eq!(
        crate::sso_oidc::me(&server, &again)["user"]["id"],
        me["user"]["id"]
    );

    // The provider answers the last ID token again for a new attempt: its nonce is not this
    // attempt's. Replaying the whole callback (same cookie) meets the used nonce.
    let (start_reply, cookie) = start(&server, &org, None);
    let back = provider.authorize(start_reply.header("location"));
    signed_in(&callback(&server, &back, &cookie));
    provider.behave(|b| b.replay_last = true);
    refused(&callback(&server, &back, &cookie), "sso_replayed");
    refused(&sso_round(&server, &provider, &org, None), "sso_rejected");
    let refusals: Vec<Value> = audit_actions(&server, &owner)
        .into_iter()
        .filter(|event| event["action"] == "login.sso_refused")
        .collect();
    assert!(
        refusals
            .iter()
            .any(|event| event["detail"]["reason"] == "sso_replayed"),
        "{refusals:?}"
    );
}

#[test]
fn a_misbehaving_provider_is_refused_every_way() {
    let provider = Provider::start(Behaviour::person("person@example.com", "subject-2"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    type Change = fn(&mut Behaviour);
    let cases: [(&str, Change, &str); 8] = [
        (
            "wrong audience",
            |b| b.audience = "someone-else".into(),
            "sso_rejected",
        ),
        (
            "wrong issuer",
            |b| b.issuer = Some("http://127.0.0.1:1".into()),
            "sso_rejected",
        ),
        ("expired", |b| b.expires_in = -600, "sso_rejected"),
        ("unsigned", |b| b.unsigned = true, "sso_rejected"),
        (
            "unknown key",
            |b| b.signing_key = "rogue".into(),
            "sso_rejected",
        ),
        (
            "unverified e-mail",
            |b| b.email_verified = json!(false),
            "sso_email_unverified",
        ),
        (
            "e-mail verified as text other than true",
            |b| b.email_verified = json!("yes"),
            "sso_email_unverified",
        ),
        (
            // Entra ID's domain-owner flag counts only from login.microsoftonline.com.
            "no email_verified, xms_edov from an issuer that is not Entra ID",
            |b| b.extra = json!({"email_verified": null, "xms_edov": true}),
            "sso_email_unverified",
        ),
    ];
    for (name, change, code) in cases {
        let fresh = Behaviour::person("person@example.com", "subject-2");
        provider.behave(|b| {
            *b = fresh;
            change(b);
        });
        let reply = sso_round(&server, &provider, &org, None);
        assert_eq!(
            reply.header("location"),
            format!("/login?sso_error={code}"),
            "{name}"
        );
        refused(&reply, code);
    }
    // A wrong state, and no attempt cookie at all.
    provider.behave(|b| *b = Behaviour::person("person@example.com", "subject-2"));
    let (start_reply, cookie) = start(&server, &org, None);
    let back = provider.authorize(start_reply.header("location"));
    let (other_start, _) = start(&server, &org, None);
    let other_back = provider.authorize(other_start.header("location"));
    let other_state: HashMap<String, String> = url::Url::parse(&other_back)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let code: HashMap<String, String> = url::Url::parse(&back)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let forged = format!(
        "{}/api/v1/auth/sso/oidc/callback?code={}&state={}",
        server.url(""),
        code["code"],
        other_state["state"]
    );
    refused(&callback(&server, &forged, &cookie), "sso_state_invalid");
    refused(&callback(&server, &back, "garbage"), "sso_state_invalid");
    // Nobody was made by any of these.
    let members = owner.get(&server, "/api/v1/orgs/me/members");
    assert!(
        !text(&members.body).contains("person@example.com"),
        "{}",
        text(&members.body)
    );
    // After all that, the right answer still signs in.
    signed_in(&callback(&server, &back, &cookie));
}

#[test]
fn a_rotated_key_is_fetched_once() {
    let provider = Provider::start(Behaviour::person("rot@example.com", "subject-3"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    signed_in(&sso_round(&server, &provider, &org, None));
    let fetches = provider.jwks_fetches();
    provider.publish(&["key-2"]);
    provider.behave(|b| b.signing_key = "key-2".into());
    signed_in(&sso_round(&server, &provider, &org, None));
    assert_eq!(provider.jwks_fetches(), fetches + 1);
    // A key the set lacks right after that re-fetch is refused without another fetch.
    provider.behave(|b| b.signing_key = "rogue".into());
    refused(&sso_round(&server, &provider, &org, None), "sso_rejected");
    assert_eq!(provider.jwks_fetches(), fetches + 1);
}

#[test]
fn an_account_with_a_password_is_linked_only_by_its_owner() {
    let provider = Provider::start(Behaviour::person("owner@example.com", "owner-at-idp"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    refused(
        &sso_round(&server, &provider, &org, None),
        "sso_account_exists",
    );
    // Signed in, the owner links the identity; from then on it signs them in.
    // A link lands on the profile page, which says so.
    let linked = landed(
        &sso_round(&server, &provider, &org, Some(&owner)),
        "/profile?sso=linked",
    );
    assert_eq!(me(&server, &linked)["user"]["id"], owner.user_id().as_str());
    let session = signed_in(&sso_round(&server, &provider, &org, None));
    let me = me(&server, &session);
    assert_eq!(me["user"]["id"], owner.user_id().as_str());
    assert_eq!(me["role"], "owner");
    // Linking needs a session.
    let reply =
        send(http().get(server.url(&format!("/api/v1/auth/sso/oidc/start?org={org}&link=1"))));
    reply.problem(401, "unauthorized");
}

#[test]
fn sso_required_refuses_member_passwords_and_audits_the_owners_break_glass() {
    let provider = Provider::start(Behaviour::person("m@example.com", "m"));
    let (server, owner) = setup(&provider);
    add_user(&server, "member@example.com", "member");
    assert_eq!(
        configure(&server, &owner, &provider, json!({"required": true})).status,
        200
    );
    login(&server, "member@example.com", PASSWORD).problem(403, "sso_required");
    // A wrong password is still just wrong: nothing tells that SSO is required.
    login(&server, "member@example.com", "wrong").problem(401, "invalid_credentials");
    let owner_again = login(&server, "owner@example.com", PASSWORD);
    assert_eq!(owner_again.status, 200, "{}", text(&owner_again.body));
    let events = audit_actions(&server, &owner);
    let has = |action: &str| events.iter().any(|event| event["action"] == action);
    assert!(has("login.break_glass"), "{events:?}");
    assert!(has("login.refused"), "{events:?}");
    assert!(has("sso.configured"), "{events:?}");
    // Without the enterprise plan the rule does not apply.
    set_plan(&server, "default", "free");
    assert_eq!(login(&server, "member@example.com", PASSWORD).status, 200);
}

#[test]
fn a_second_factor_is_still_asked_unless_the_provider_asserts_mfa() {
    use crate::auth_support::{code_at_step, enrol};
    let provider = Provider::start(Behaviour::person("owner@example.com", "owner-2fa"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    let enrolled = enrol(&server, &owner);
    let second_factor = |reply: &Reply| {
        assert_eq!(reply.status, 303, "{}", text(&reply.body));
        assert_eq!(reply.header("location"), "/login?two_factor=1");
        assert!(set_cookie(reply, "lookout_session").is_none());
        set_cookie(reply, "lookout_login")
            .expect("login cookie")
            .value
    };
    // Linking while signed in, then signing in: both wait for the code.
    second_factor(&sso_round(&server, &provider, &org, Some(&owner)));
    let login_token = second_factor(&sso_round(&server, &provider, &org, None));
    let code = code_at_step(&enrolled.secret, enrolled.enabled_at_step + 1);
    let request = http()
        .post(server.url("/api/v1/auth/2fa/complete"))
        .header("cookie", format!("lookout_login={login_token}"))
        .json(&json!({"code": code}));
    let completed = send(request);
    assert_eq!(completed.status, 200, "{}", text(&completed.body));
    assert_eq!(completed.json()["user"]["id"], owner.user_id().as_str());
    // The provider says the person used more than one factor: no code is asked.
    provider.behave(|b| b.amr = Some(vec!["pwd".into(), "mfa".into()]));
    let session = signed_in(&sso_round(&server, &provider, &org, None));
    assert_eq!(
        me(&server, &session)["user"]["id"],
        owner.user_id().as_str()
    );
}

#[test]
fn asserted_mfa_satisfies_the_organisations_two_factor_enforcement() {
    let provider = Provider::start(Behaviour::person("enforced@example.com", "enforced"));
    let (server, owner) = setup(&provider);
    let org = org_id(&owner);
    let reply = owner.write(
        &server,
        Method::PATCH,
        "/api/v1/orgs/me/settings",
        &json!({"two_factor_required": true}),
    );
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let members = |session: &str| {
        send(
            http()
                .get(server.url("/api/v1/orgs/me/members"))
                .header("cookie", format!("lookout_session={session}")),
        )
    };
    // Without MFA at the provider, the person must enrol a second factor first.
    let plain = signed_in(&sso_round(&server, &provider, &org, None));
    members(&plain).problem(403, "two_factor_enrolment_required");
    provider.behave(|b| b.amr = Some(vec!["mfa".into()]));
    let with_mfa = signed_in(&sso_round(&server, &provider, &org, None));
    assert_eq!(members(&with_mfa).status, 200);
}
