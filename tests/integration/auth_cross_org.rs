//! An org's admins stay inside their org (issue 13, finding 3): adding an e-mail that already
//! has an account is an invitation the account accepts as itself, the admin's answer is the
//! same whether the account exists or not (password given or not), nothing about a non-member
//! shows, and the credentials of an account that belongs to another org too are the
//! operator's business only.

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_members::{add_member, member_rows};
use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, code_at_step, complete, enrol, fresh_step, login,
    login_token, server, sign_in,
};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const MEMBERS: &str = "/api/v1/orgs/me/members";
const ACCEPT: &str = "/api/v1/auth/invitations/accept";

/// The answer to an add with what legitimately differs (random ids, tokens, instants) removed.
fn comparable(reply: &Reply) -> Value {
    assert_eq!(reply.status, 201, "{}", text(&reply.body));
    let mut body = reply.json();
    let object = body.as_object_mut().expect("an object");
    for random in ["user_id", "invite_url", "joined_at", "invite_expires_at"] {
        if let Some(value) = object.get_mut(random) {
            *value = json!(format!("<{random}>"));
        }
    }
    body
}

fn token_of(reply: &Reply) -> String {
    let url = reply.json()["invite_url"]
        .as_str()
        .expect("invite_url")
        .to_string();
    url.split("token=").nth(1).expect("a token").to_string()
}

fn accept(server: &TestServer, body: &Value) -> Reply {
    send(http().post(server.url(ACCEPT)).json(body))
}

/// Signs in with the password (and the TOTP code of a fresh step when 2FA is on) into `org`.
fn sign_in_to(server: &TestServer, email: &str, org: &str) -> Reply {
    let body = json!({"email": email, "password": PASSWORD, "org": org});
    send(http().post(server.url("/api/v1/auth/login")).json(&body))
}

fn member_row(server: &TestServer, session: &Session, email: &str) -> Value {
    let list = session.get(server, &format!("{MEMBERS}?limit=500")).json();
    let items = list["items"].as_array().expect("items").clone();
    let row = items.into_iter().find(|item| item["email"] == email);
    row.unwrap_or_else(|| panic!("{email} not listed in {list}"))
}

#[test]
fn an_existing_account_is_invited_the_same_way_as_a_new_one_and_joins_only_as_itself() {
    let server = server(&[]);
    add_user(&server, "boss@example.com", "owner");
    add_user_in(&server, "vic@example.com", "owner", Some("home"));
    add_user_in(&server, "val@example.com", "member", Some("home"));
    let vic_home = sign_in(&server, "vic@example.com");
    let vic_id = vic_home.user_id();
    let vic_factor = enrol(&server, &vic_home);
    let boss = sign_in(&server, "boss@example.com");

    // With a password: the same answer for an account that exists and one that does not.
    let chosen = "a password the admin chose";
    let existing = add_member(&server, &boss, "vic@example.com", "member", Some(chosen));
    let new = add_member(&server, &boss, "neo@example.com", "member", Some(chosen));
    let (existing_view, new_view) = (comparable(&existing), comparable(&new));
    assert_eq!(
        existing_view
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        new_view.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert_eq!(existing_view["email"], "vic@example.com", "{existing_view}");
    let mut renamed = existing_view.clone();
    renamed["email"] = json!("neo@example.com");
    assert_eq!(renamed, new_view, "the answers tell the accounts apart");
    let placeholder = existing.json()["user_id"].as_str().unwrap().to_string();
    assert_ne!(
        placeholder, vic_id,
        "an existing account's id is handed out"
    );
    // The new account works with its password; the existing one keeps its own.
    let neo = login(&server, "neo@example.com", chosen);
    assert_eq!(neo.status, 200, "{}", text(&neo.body));
    login(&server, "vic@example.com", chosen).problem(401, "invalid_credentials");
    sign_in_to(&server, "vic@example.com", "default").problem(401, "invalid_credentials");
    // Listed like any invitee: nothing about its second factor or its id.
    let row = member_row(&server, &boss, "vic@example.com");
    assert_eq!(
        (&row["status"], &row["two_factor_enabled"], &row["user_id"]),
        (&json!("invited"), &json!(false), &json!(placeholder)),
        "{row}"
    );

    // Without a password: the same answer again, each with an invitation link.
    let existing = add_member(&server, &boss, "val@example.com", "viewer", None);
    let new = add_member(&server, &boss, "nia@example.com", "viewer", None);
    let mut renamed = comparable(&existing);
    renamed["email"] = json!("nia@example.com");
    assert_eq!(renamed, comparable(&new));
    let token = token_of(&existing);
    let val_row = member_row(&server, &boss, "val@example.com");
    let nia_row = member_row(&server, &boss, "nia@example.com");
    for field in ["status", "two_factor_enabled", "role"] {
        assert_eq!(val_row[field], nia_row[field], "{field}");
    }

    // The link alone proves nothing: a password offered for the existing account is checked,
    // never set, and the account stays out until it proves who it is.
    accept(&server, &json!({"token": token})).problem(401, "invalid_credentials");
    accept(&server, &json!({"token": token, "password": chosen}))
        .problem(401, "invalid_credentials");
    sign_in_to(&server, "val@example.com", "default").problem(401, "invalid_credentials");
    let as_another = json!({"token": token, "email": "nia@example.com", "password": PASSWORD});
    accept(&server, &as_another).problem(401, "invalid_credentials");
    let as_val = json!({"token": token, "email": "Val@Example.com", "password": PASSWORD});
    let accepted = accept(&server, &as_val);
    assert_eq!(accepted.status, 200, "{}", text(&accepted.body));
    assert_eq!(accepted.json()["role"], "viewer");
    let val = sign_in_to(&server, "val@example.com", "default");
    assert_eq!(val.status, 200, "{}", text(&val.body));
    assert_eq!(val.json()["role"], "viewer");
    accept(&server, &json!({"token": token, "password": PASSWORD}))
        .problem(401, "invalid_invitation");

    // An account with a second factor needs its code too. Re-invited without a password, vic
    // accepts with its own password and a current code.
    let reply = boss.write(
        &server,
        Method::DELETE,
        &format!("{MEMBERS}/{placeholder}"),
        &json!({}),
    );
    assert_eq!(reply.status, 204, "{}", text(&reply.body));
    let token = token_of(&add_member(
        &server,
        &boss,
        "vic@example.com",
        "member",
        None,
    ));
    let with_password = json!({"token": token, "password": PASSWORD});
    accept(&server, &with_password).problem(401, "invalid_code");
    let step = fresh_step().max(vic_factor.enabled_at_step + 1);
    let code = code_at_step(&vic_factor.secret, step);
    let accepted = accept(
        &server,
        &json!({"token": token, "password": PASSWORD, "code": code}),
    );
    assert_eq!(accepted.status, 200, "{}", text(&accepted.body));
    assert_eq!(accepted.json()["user"]["id"], vic_id.as_str());
    let row = member_row(&server, &boss, "vic@example.com");
    assert_eq!(
        (&row["status"], &row["user_id"]),
        (&json!("active"), &json!(vic_id))
    );
    // Its password is the one it always had.
    assert!(!login_token(&server, "vic@example.com").is_empty());
}

#[test]
fn admins_change_credentials_only_of_accounts_that_belong_to_their_org_alone() {
    let server = server(&[]);
    add_user(&server, "boss@example.com", "owner");
    add_user(&server, "mo@example.com", "member");
    add_user_in(&server, "vic@example.com", "owner", Some("home"));
    let boss = sign_in(&server, "boss@example.com");
    let vic = sign_in(&server, "vic@example.com");
    let vic_factor = enrol(&server, &vic);
    let mo = sign_in(&server, "mo@example.com");
    enrol(&server, &mo);

    // Vic joins with a session of its own (signed in with password and second factor).
    let token = token_of(&add_member(
        &server,
        &boss,
        "vic@example.com",
        "member",
        None,
    ));
    let pending = member_row(&server, &boss, "vic@example.com");
    let pending_reset = format!("{MEMBERS}/{}/two-factor", text_of(&pending["user_id"]));
    let refused = boss.write(&server, Method::DELETE, &pending_reset, &json!({}));
    let detail = refused.problem(403, "forbidden")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("operator"), "{detail}");
    let step = fresh_step().max(vic_factor.enabled_at_step + 1);
    let code = code_at_step(&vic_factor.secret, step);
    let vic = Session::from_reply(&complete(
        &server,
        &login_token(&server, "vic@example.com"),
        &code,
    ));
    let accepted = vic.post(&server, ACCEPT, &json!({"token": token}));
    assert_eq!(accepted.status, 200, "{}", text(&accepted.body));
    let vic_id = vic.user_id();

    // Now a member here and an owner elsewhere: this org's owner may not touch its 2FA.
    let reset = format!("{MEMBERS}/{vic_id}/two-factor");
    let refused = boss.write(&server, Method::DELETE, &reset, &json!({}));
    let detail = refused.problem(403, "forbidden")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("operator"), "{detail}");
    assert_eq!(
        vic.get(&server, "/api/v1/auth/me").status,
        200,
        "sessions ended"
    );
    assert_eq!(
        login(&server, "vic@example.com", PASSWORD).json()["two_factor_required"],
        true,
        "the second factor is gone"
    );
    // A member of this org alone: as before.
    let reset = format!("{MEMBERS}/{}/two-factor", mo.user_id());
    let reply = boss.write(&server, Method::DELETE, &reset, &json!({}));
    assert_eq!(reply.status, 204, "{}", text(&reply.body));
    let rows = member_rows(&server, &boss);
    assert!(rows.contains(&("vic@example.com".into(), "member".into(), "active".into())));
}

fn text_of(value: &Value) -> String {
    value.as_str().expect("a string").to_string()
}
