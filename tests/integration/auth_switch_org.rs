//! The organisations of the signed-in person (CONTRACT section 9): the list names only joined
//! memberships, a switch answers like a sign-in and ends the old session, another org's id
//! (or a pending invitation's) is 404, an API key lists its own org and cannot switch, and the
//! target's IP allowlist and 2FA enforcement apply.

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_members::{add_member, audit_items};
use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, bearer, create_key, server, set_cookie, sign_in,
};
use crate::harness::{TestServer, http, text};
use crate::http_basics::send;

const ORGS: &str = "/api/v1/auth/orgs";
const SWITCH: &str = "/api/v1/auth/switch-org";

fn org_ids(server: &TestServer, session: &Session) -> Vec<(String, String, String)> {
    let reply = session.get(server, ORGS);
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let items = reply.json()["items"].as_array().expect("items").clone();
    items
        .iter()
        .map(|item| {
            let field = |name: &str| item[name].as_str().expect(name).to_string();
            (field("id"), field("name"), field("role"))
        })
        .collect()
}

fn invitation_token(reply: &crate::http_basics::Reply) -> String {
    assert_eq!(reply.status, 201, "{}", text(&reply.body));
    let url = reply.json()["invite_url"]
        .as_str()
        .expect("invite_url")
        .to_string();
    url.split("token=").nth(1).expect("a token").to_string()
}

/// Accepts an invitation with the account's password (`PASSWORD`).
fn accept_invitation(server: &TestServer, token: &str) {
    let accept = json!({"token": token, "password": PASSWORD});
    let path = "/api/v1/auth/invitations/accept";
    let accepted = send(http().post(server.url(path)).json(&accept));
    assert_eq!(accepted.status, 200, "{}", text(&accepted.body));
}

/// Makes the existing account `email` (password `PASSWORD`) a member of a new organisation
/// `org`, whose owner invites it and which it joins by accepting.
pub(crate) fn join_new_org(server: &TestServer, email: &str, org: &str) {
    let owner = format!("owner-of-{org}@example.com");
    add_user_in(server, &owner, "owner", Some(org));
    let session = sign_in(server, &owner);
    let invited = add_member(server, &session, email, "member", None);
    accept_invitation(server, &invitation_token(&invited));
}

/// Vic is owner of `home` and invited as member into `default` (where boss is owner).
fn two_org_person(server: &TestServer) -> (Session, Session, String) {
    add_user(server, "boss@example.com", "owner");
    add_user_in(server, "vic@example.com", "owner", Some("home"));
    let boss = sign_in(server, "boss@example.com");
    let invited = add_member(server, &boss, "vic@example.com", "member", None);
    let vic = sign_in(server, "vic@example.com");
    let default_id = boss.body["org"]["id"].as_str().unwrap().to_string();
    (
        boss,
        vic,
        format!("{default_id}|{}", invitation_token(&invited)),
    )
}

#[test]
fn a_person_in_two_orgs_switches_and_the_old_session_ends() {
    let server = server(&[]);
    let (boss, vic, joined) = two_org_person(&server);
    let (default_id, token) = joined.split_once('|').unwrap();
    let home_id = vic.body["org"]["id"].as_str().unwrap().to_string();

    // Invited, not yet joined: the list names home only, and a switch is the same 404 as an
    // org the person has nothing to do with (or an id that is no org at all).
    assert_eq!(
        org_ids(&server, &vic),
        [(home_id.clone(), "home".into(), "owner".into())]
    );
    let pending = vic.post(&server, SWITCH, &json!({"org_id": default_id}));
    let pending = pending.problem(404, "not_found");
    add_user_in(&server, "stranger@example.com", "owner", Some("elsewhere"));
    let stranger = sign_in(&server, "stranger@example.com");
    let other = stranger.body["org"]["id"].as_str().unwrap();
    let foreign = vic.post(&server, SWITCH, &json!({"org_id": other}));
    assert_eq!(
        foreign.problem(404, "not_found")["detail"],
        pending["detail"]
    );
    let garbage = vic.post(&server, SWITCH, &json!({"org_id": "org_nope"}));
    assert_eq!(
        garbage.problem(404, "not_found")["detail"],
        pending["detail"]
    );

    accept_invitation(&server, token);
    // In the organisations' creation order: `default` came first.
    let listed = org_ids(&server, &vic);
    assert_eq!(
        listed,
        [
            (default_id.to_string(), "default".into(), "member".into()),
            (home_id.clone(), "home".into(), "owner".into()),
        ]
    );

    // CSRF like every cookie route.
    let bare = vic
        .request(&server, Method::POST, SWITCH)
        .json(&json!({"org_id": default_id}));
    send(bare).problem(403, "csrf_failed");

    let switched = vic.post(&server, SWITCH, &json!({"org_id": default_id}));
    assert_eq!(switched.status, 200, "{}", text(&switched.body));
    for name in ["lookout_session", "lookout_csrf"] {
        assert!(set_cookie(&switched, name).is_some(), "{name} set");
    }
    let body: Value = switched.json();
    assert_eq!(body["org"]["id"], default_id);
    assert_eq!(body["role"], "member");
    assert_eq!(body["user"]["email"], "vic@example.com");
    let in_default = Session::from_reply(&switched);
    // The second org's data: its members, boss among them.
    let members = in_default.get(&server, "/api/v1/orgs/me/members?limit=500");
    assert_eq!(members.status, 200, "{}", text(&members.body));
    assert!(
        members.json()["items"]
            .to_string()
            .contains("boss@example.com")
    );
    assert_eq!(
        in_default.get(&server, "/api/v1/auth/me").json()["org"]["name"],
        "default"
    );

    vic.get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let switched_back = in_default.post(&server, SWITCH, &json!({"org_id": home_id}));
    let home = Session::from_reply(&switched_back);
    assert_eq!(
        home.get(&server, "/api/v1/auth/me").json()["org"]["name"],
        "home"
    );
    in_default
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");

    let entries = audit_items(&server, &boss);
    let switch = entries
        .iter()
        .find(|entry| entry["action"] == "auth.switch_org");
    let switch = switch.unwrap_or_else(|| panic!("no auth.switch_org in {entries:#?}"));
    assert_eq!(switch["detail"]["from_org"], home_id.as_str());
}

#[test]
fn api_keys_list_their_org_and_cannot_switch_and_the_targets_policies_apply() {
    let server = server(&[("TRUSTED_PROXIES", "127.0.0.1/32")]);
    let (boss, vic, joined) = two_org_person(&server);
    let (default_id, token) = joined.split_once('|').unwrap();
    accept_invitation(&server, token);

    let key = create_key(&server, &vic, "home key")["key"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = send(bearer(&server, &key, Method::GET, ORGS));
    assert_eq!(listed.status, 200, "{}", text(&listed.body));
    let items = listed.json()["items"].clone();
    assert_eq!(items.as_array().unwrap().len(), 1, "{items}");
    assert_eq!(items[0]["name"], "home");
    let by_key = bearer(&server, &key, Method::POST, SWITCH).json(&json!({"org_id": default_id}));
    send(by_key).problem(403, "forbidden");

    // The target's allowlist applies (from 127.0.0.1, outside 10.0.0.0/8), and a refused
    // switch ends nothing.
    let list = json!({"cidrs": ["10.0.0.0/8"], "force": true});
    let saved = boss.write(&server, Method::PUT, "/api/v1/orgs/me/ip-allowlist", &list);
    assert_eq!(saved.status, 200, "{}", text(&saved.body));
    let to_default = json!({"org_id": default_id});
    vic.post(&server, SWITCH, &to_default)
        .problem(403, "ip_not_allowed");
    assert_eq!(vic.get(&server, "/api/v1/auth/me").status, 200);
    let inside = |session: &Session, method: Method, path: &str, body: &Value| {
        let request = session.request(&server, method, path);
        let request = request.header("x-csrf-token", &session.csrf);
        send(request.header("x-forwarded-for", "10.1.2.3").json(body))
    };
    let switched = inside(&vic, Method::POST, SWITCH, &to_default);
    assert_eq!(switched.status, 200, "{}", text(&switched.body));
    let vic = Session::from_reply(&switched);
    let off = json!({"cidrs": []});
    let cleared = inside(&boss, Method::PUT, "/api/v1/orgs/me/ip-allowlist", &off);
    assert_eq!(cleared.status, 200, "{}", text(&cleared.body));
    let home_id = org_ids(&server, &vic)[1].0.clone();
    let vic = Session::from_reply(&vic.post(&server, SWITCH, &json!({"org_id": home_id})));

    // The target enforces 2FA and vic has none: the same answer as a sign-in there, a session
    // that reaches only the enrolment routes.
    let enforce = json!({"two_factor_required": true});
    let reply = boss.write(&server, Method::PATCH, "/api/v1/orgs/me/settings", &enforce);
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let direct = send(
        http()
            .post(server.url("/api/v1/auth/login"))
            .json(&json!({"email": "vic@example.com", "password": PASSWORD, "org": default_id})),
    );
    let switched = vic.post(&server, SWITCH, &to_default);
    assert_eq!(
        (switched.status, direct.status),
        (200, 200),
        "{}",
        text(&switched.body)
    );
    let keys: Vec<String> = switched
        .json()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let login_keys: Vec<String> = direct.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, login_keys);
    let enforced = Session::from_reply(&switched);
    let members = enforced.get(&server, "/api/v1/orgs/me/members");
    members.problem(403, "two_factor_enrolment_required");
    assert_eq!(enforced.get(&server, "/api/v1/auth/me").status, 200);
    // Leaving an enforcing org for another of one's own needs no enrolment.
    assert_eq!(org_ids(&server, &enforced).len(), 2);
    let back = enforced.post(&server, SWITCH, &json!({"org_id": home_id}));
    let home = Session::from_reply(&back);
    assert_eq!(home.get(&server, "/api/v1/orgs/me/members").status, 200);
}
