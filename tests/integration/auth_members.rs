//! Members (CONTRACT.md section 2, "roles" and "members"): listing and adding, who may change
//! or remove whom (every pair of roles), the last owner, RegisterUserLogout on a role change,
//! a removal and a second-factor reset, API keys of a demoted or removed issuer, and
//! invitations (existing accounts across organisations: `auth_cross_org.rs`). `member_rows`, `add_member` and `audit_items` are shared with `auth_org.rs`.

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, bearer, create_key, enrol, login, server, sign_in,
};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const MEMBERS: &str = "/api/v1/orgs/me/members";
const ROLES: [&str; 4] = ["owner", "admin", "member", "viewer"];

/// A server whose `default` org has `owner@example.com`, signed in.
fn server_with_owner() -> (TestServer, Session) {
    let server = server(&[]);
    add_user(&server, "owner@example.com", "owner");
    let owner = sign_in(&server, "owner@example.com");
    (server, owner)
}

/// `POST /api/v1/orgs/me/members` through `session`.
pub(crate) fn add_member(
    server: &TestServer,
    session: &Session,
    email: &str,
    role: &str,
    password: Option<&str>,
) -> Reply {
    let mut body = json!({"email": email, "role": role});
    if let Some(password) = password {
        body["password"] = json!(password);
    }
    session.post(server, MEMBERS, &body)
}

/// Adds a member with `PASSWORD` (asserting 201) and returns its user id.
pub(crate) fn add_member_with_password(
    server: &TestServer,
    session: &Session,
    email: &str,
    role: &str,
) -> String {
    let reply = add_member(server, session, email, role, Some(PASSWORD));
    assert_eq!(reply.status, 201, "add {email}: {}", text(&reply.body));
    reply.json()["user_id"]
        .as_str()
        .expect("user_id")
        .to_string()
}

/// Every member as `(email, role, status)`, from one page of up to 500.
pub(crate) fn member_rows(server: &TestServer, session: &Session) -> Vec<(String, String, String)> {
    let reply = session.get(server, &format!("{MEMBERS}?limit=500"));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let body = reply.json();
    assert_eq!(body["next_cursor"], Value::Null, "{body}");
    let items = body["items"].as_array().expect("items").iter();
    let field = |item: &Value, name: &str| item[name].as_str().unwrap_or("").to_string();
    items
        .map(|item| {
            (
                field(item, "email"),
                field(item, "role"),
                field(item, "status"),
            )
        })
        .collect()
}

/// The newest audit events of the caller's org (up to 500).
pub(crate) fn audit_items(server: &TestServer, session: &Session) -> Vec<Value> {
    let reply = session.get(server, "/api/v1/audit?limit=500");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()["items"].as_array().expect("items").clone()
}

/// The first (newest) audit event with `action` and `target`.
pub(crate) fn audit_event(
    server: &TestServer,
    session: &Session,
    action: &str,
    target: &str,
) -> Value {
    let items = audit_items(server, session);
    let found = items
        .iter()
        .find(|item| item["action"] == action && item["target"] == target);
    found
        .unwrap_or_else(|| panic!("no {action} of {target} in {items:#?}"))
        .clone()
}

fn member_path(user_id: &str) -> String {
    format!("{MEMBERS}/{user_id}")
}

fn patch_role(server: &TestServer, session: &Session, user_id: &str, role: &str) -> Reply {
    session.write(
        server,
        Method::PATCH,
        &member_path(user_id),
        &json!({"role": role}),
    )
}

fn delete(server: &TestServer, session: &Session, path: &str) -> Reply {
    send(
        session
            .request(server, Method::DELETE, path)
            .header("x-csrf-token", &session.csrf),
    )
}

fn role_of_me(server: &TestServer, session: &Session) -> String {
    let reply = session.get(server, "/api/v1/auth/me");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    reply.json()["role"].as_str().expect("role").to_string()
}

/// Whether `actor` may manage someone who has, or would get, `role`.
fn manages(actor: &str, role: &str) -> bool {
    actor == "owner" || (actor == "admin" && matches!(role, "member" | "viewer"))
}

#[test]
fn members_are_listed_added_and_paged() {
    let (server, owner) = server_with_owner();
    let active = add_member(&server, &owner, "Ada@Example.com", "member", Some(PASSWORD));
    assert_eq!(active.status, 201, "{}", text(&active.body));
    let body = active.json();
    assert_eq!(
        body["email"], "ada@example.com",
        "stored normalised: {body}"
    );
    assert_eq!(
        (&body["role"], &body["status"]),
        (&json!("member"), &json!("active"))
    );
    assert_eq!(body["two_factor_enabled"], false);
    assert!(body.get("invite_url").is_none(), "{body}");
    assert!(
        body["user_id"].as_str().unwrap().starts_with("usr_"),
        "{body}"
    );
    let invited = add_member(&server, &owner, "bob@example.com", "viewer", None);
    assert_eq!(invited.status, 201, "{}", text(&invited.body));
    assert_eq!(invited.json()["status"], "invited");

    // Refusals: the same person twice, bad input, and a member's role too low to add anyone.
    add_member(&server, &owner, "ADA@example.com", "viewer", None).problem(409, "already_member");
    add_member(&server, &owner, "not-an-address", "member", None).problem(400, "invalid_payload");
    add_member(&server, &owner, "cy@example.com", "root", None).problem(400, "invalid_payload");
    add_member(&server, &owner, "cy@example.com", "member", Some("short"))
        .problem(400, "invalid_payload");
    let ada = sign_in(&server, "ada@example.com");
    add_member(&server, &ada, "cy@example.com", "viewer", None).problem(403, "forbidden");

    // Members (viewers too) read the list, in pages.
    let rows = member_rows(&server, &ada);
    let emails: Vec<&str> = rows.iter().map(|(email, _, _)| email.as_str()).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for email in ["owner@example.com", "ada@example.com", "bob@example.com"] {
        assert!(emails.contains(&email), "{rows:?}");
    }
    let first = ada.get(&server, &format!("{MEMBERS}?limit=2")).json();
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let second = ada
        .get(&server, &format!("{MEMBERS}?limit=2&cursor={cursor}"))
        .json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(second["items"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(second["next_cursor"], Value::Null);
    let paged: Vec<Value> = [&first, &second]
        .iter()
        .flat_map(|page| page["items"].as_array().unwrap().clone())
        .map(|item| item["email"].clone())
        .collect();
    assert_eq!(paged.len(), 3);
    assert!(
        emails.iter().all(|email| paged.contains(&json!(email))),
        "{paged:?}"
    );
    ada.get(&server, &format!("{MEMBERS}?cursor=nonsense"))
        .problem(400, "invalid_parameter");
    ada.get(&server, &format!("{MEMBERS}?limit=0"))
        .problem(400, "invalid_parameter");
    send(http().get(server.url(MEMBERS))).problem(401, "unauthorized");
}

#[test]
fn an_existing_account_keeps_its_password_and_joins_only_by_accepting() {
    let (server, owner) = server_with_owner();
    add_user_in(&server, "eve@example.com", "owner", Some("elsewhere"));
    // A password sent for an existing account is never applied: it belongs to someone else.
    let reply = add_member(
        &server,
        &owner,
        "eve@example.com",
        "viewer",
        Some("another password"),
    );
    assert_eq!(reply.status, 201, "{}", text(&reply.body));
    assert_eq!(
        reply.json()["status"],
        "active",
        "the same answer as a new account"
    );
    assert!(reply.json().get("invite_url").is_none());
    let sign_in_to = |password: &str| {
        let body = json!({"email": "eve@example.com", "password": password, "org": "default"});
        send(http().post(server.url("/api/v1/auth/login")).json(&body))
    };
    sign_in_to("another password").problem(401, "invalid_credentials");
    // Not a member until eve accepts an invitation as herself.
    sign_in_to(PASSWORD).problem(401, "invalid_credentials");
    let rows = member_rows(&server, &owner);
    assert!(
        rows.contains(&("eve@example.com".into(), "viewer".into(), "invited".into())),
        "{rows:?}"
    );
}

/// Every (actor, target's role, new role) triple, for owners and admins acting through API
/// keys (so the actor's own sessions are not in play), and every removal.
#[test]
fn who_may_change_and_remove_whom() {
    let (server, owner) = server_with_owner();
    // A second owner, so the last-owner rule never decides a case here.
    add_user(&server, "owner2@example.com", "owner");
    add_user(&server, "admin@example.com", "admin");
    let admin = sign_in(&server, "admin@example.com");
    let keys = [
        (
            "owner",
            create_key(&server, &owner, "owner")["key"]
                .as_str()
                .unwrap()
                .to_string(),
        ),
        (
            "admin",
            create_key(&server, &admin, "admin")["key"]
                .as_str()
                .unwrap()
                .to_string(),
        ),
    ];
    let mut next = 0;
    let mut new_member = |role: &str| {
        next += 1;
        let email = format!("target{next}@example.com");
        let reply = add_member(&server, &owner, &email, role, None);
        assert_eq!(reply.status, 201, "{}", text(&reply.body));
        reply.json()["user_id"].as_str().unwrap().to_string()
    };
    for (actor, key) in &keys {
        for current in ROLES {
            for new in ROLES {
                let target = new_member(current);
                let request = bearer(&server, key, Method::PATCH, &member_path(&target));
                let reply = send(request.json(&json!({"role": new})));
                let case = format!("{actor} changes {current} to {new}");
                if manages(actor, current) && manages(actor, new) {
                    assert_eq!(reply.status, 200, "{case}: {}", text(&reply.body));
                    assert_eq!(reply.json()["role"], new, "{case}");
                } else {
                    reply.problem(403, "forbidden");
                    let check = bearer(&server, &keys[0].1, Method::GET, MEMBERS);
                    let list = send(check.query(&[("limit", "500")])).json();
                    let items = list["items"].as_array().unwrap();
                    let row = items.iter().find(|item| item["user_id"] == target.as_str());
                    assert_eq!(row.unwrap()["role"], current, "{case}: role kept");
                }
            }
            let target = new_member(current);
            let reply = send(bearer(&server, key, Method::DELETE, &member_path(&target)));
            let case = format!("{actor} removes {current}");
            if manages(actor, current) {
                assert_eq!(reply.status, 204, "{case}: {}", text(&reply.body));
            } else {
                reply.problem(403, "forbidden");
            }
        }
    }
    // Members and viewers manage nobody.
    let email = "plain@example.com";
    add_member_with_password(&server, &owner, email, "member");
    let plain = sign_in(&server, email);
    let target = new_member("viewer");
    patch_role(&server, &plain, &target, "member").problem(403, "forbidden");
    delete(&server, &plain, &member_path(&target)).problem(403, "forbidden");
    // Unknown members.
    patch_role(&server, &owner, "usr_01JAAAAAAAAAAAAAAAAAAAAAAA", "member")
        .problem(404, "not_found");
    delete(&server, &owner, &member_path("nobody")).problem(404, "not_found");
}

#[test]
fn the_last_owner_can_be_neither_removed_nor_demoted() {
    let (server, first) = server_with_owner();
    let first_id = first.user_id();
    for role in ["admin", "member", "viewer"] {
        patch_role(&server, &first, &first_id, role).problem(409, "last_owner");
    }
    delete(&server, &first, &member_path(&first_id)).problem(409, "last_owner");
    // Re-stating the role changes nothing and is allowed.
    assert_eq!(patch_role(&server, &first, &first_id, "owner").status, 200);
    // An admin hears "forbidden" about an owner, last or not.
    let admin_id = add_member_with_password(&server, &first, "admin@example.com", "admin");
    let admin = sign_in(&server, "admin@example.com");
    patch_role(&server, &admin, &first_id, "member").problem(403, "forbidden");
    delete(&server, &admin, &member_path(&first_id)).problem(403, "forbidden");

    // With a second owner the first may step down; then the second is the last one.
    let second_id = add_member_with_password(&server, &first, "second@example.com", "owner");
    let reply = patch_role(&server, &first, &first_id, "admin");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let second = sign_in(&server, "second@example.com");
    patch_role(&server, &second, &second_id, "admin").problem(409, "last_owner");
    delete(&server, &second, &member_path(&second_id)).problem(409, "last_owner");
    assert_eq!(
        delete(&server, &second, &member_path(&first_id)).status,
        204
    );
    assert_eq!(
        delete(&server, &second, &member_path(&admin_id)).status,
        204
    );
    let rows = member_rows(&server, &second);
    assert_eq!(
        rows,
        [("second@example.com".into(), "owner".into(), "active".into())]
    );
}

#[test]
fn a_role_change_ends_the_targets_sessions_at_once() {
    let (mut server, owner) = server_with_owner();
    add_user(&server, "mia@example.com", "member");
    let before = sign_in(&server, "mia@example.com");
    let mia_id = before.user_id();
    before
        .get(&server, "/api/v1/audit")
        .problem(403, "forbidden");

    let reply = patch_role(&server, &owner, &mia_id, "viewer");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(reply.json()["role"], "viewer");
    before
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let as_viewer = sign_in(&server, "mia@example.com");
    assert_eq!(as_viewer.body["role"], "viewer");
    assert_eq!(role_of_me(&server, &as_viewer), "viewer");
    let event = audit_event(&server, &owner, "member.role_changed", &mia_id);
    assert_eq!(event["detail"], json!({"from": "member", "to": "viewer"}));

    // The end is durable: a restart does not bring the old session back.
    server.restart();
    before
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    assert_eq!(role_of_me(&server, &as_viewer), "viewer");

    // A promotion ends sessions too; the fresh one has the new rights.
    assert_eq!(patch_role(&server, &owner, &mia_id, "admin").status, 200);
    as_viewer
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let as_admin = sign_in(&server, "mia@example.com");
    assert_eq!(as_admin.get(&server, "/api/v1/audit").status, 200);
    // The actor's own session is untouched.
    assert_eq!(role_of_me(&server, &owner), "owner");
}

#[test]
fn a_demoted_issuers_key_acts_with_the_new_role_and_a_removed_issuers_key_stops() {
    let (mut server, owner) = server_with_owner();
    add_user(&server, "ari@example.com", "admin");
    let ari = sign_in(&server, "ari@example.com");
    let ari_id = ari.user_id();
    let key = create_key(&server, &ari, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    let keys_path = "/api/v1/orgs/me/api-keys";
    assert_eq!(
        send(bearer(&server, &key, Method::GET, keys_path)).status,
        200
    );

    assert_eq!(patch_role(&server, &owner, &ari_id, "member").status, 200);
    ari.get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    send(bearer(&server, &key, Method::GET, keys_path)).problem(403, "forbidden");
    assert_eq!(
        send(bearer(&server, &key, Method::GET, "/api/v1/services")).status,
        200
    );
    let as_member = sign_in(&server, "ari@example.com");

    assert_eq!(delete(&server, &owner, &member_path(&ari_id)).status, 204);
    send(bearer(&server, &key, Method::GET, "/api/v1/services")).problem(401, "invalid_api_key");
    as_member
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    login(&server, "ari@example.com", PASSWORD).problem(401, "invalid_credentials");
    server.restart();
    as_member
        .get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let event = audit_event(&server, &owner, "member.removed", &ari_id);
    assert_eq!(
        event["detail"],
        json!({"role": "member", "api_keys_revoked": 1})
    );

    // Re-added, the user accepts with their own password, but the old key stays dead.
    let invited = add_member(&server, &owner, "ari@example.com", "admin", None);
    assert_eq!(invited.status, 201, "{}", text(&invited.body));
    let url = invited.json()["invite_url"].as_str().unwrap().to_string();
    let token = url.split("token=").nth(1).unwrap();
    let body = json!({"token": token, "password": PASSWORD});
    let accepted = http()
        .post(server.url("/api/v1/auth/invitations/accept"))
        .json(&body);
    assert_eq!(send(accepted).status, 200);
    assert_eq!(sign_in(&server, "ari@example.com").body["role"], "admin");
    send(bearer(&server, &key, Method::GET, "/api/v1/services")).problem(401, "invalid_api_key");
}

#[test]
fn a_second_factor_reset_ends_sessions_and_signs_in_with_the_password_alone() {
    let (mut server, owner) = server_with_owner();
    add_user(&server, "max@example.com", "member");
    add_user(&server, "adam@example.com", "admin");
    let max = sign_in(&server, "max@example.com");
    let max_id = max.user_id();
    enrol(&server, &max);
    assert_eq!(
        login(&server, "max@example.com", PASSWORD).json()["two_factor_required"],
        true
    );

    let admin = sign_in(&server, "adam@example.com");
    let reset_path = format!("{}/two-factor", member_path(&max_id));
    let reply = delete(&server, &admin, &reset_path);
    assert_eq!(reply.status, 204, "{}", text(&reply.body));
    max.get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    server.restart();
    max.get(&server, "/api/v1/auth/me")
        .problem(401, "session_revoked");
    let again = sign_in(&server, "max@example.com");
    assert_eq!(
        again.body["user"]["two_factor_enabled"], false,
        "{}",
        again.body
    );
    let event = audit_event(&server, &owner, "two_factor.reset", &max_id);
    assert_eq!(event["actor_email"], "adam@example.com", "{event}");
    // Nothing left to reset; and an admin may not reset an admin's or an owner's.
    delete(&server, &admin, &reset_path).problem(404, "not_found");
    for target in [admin.user_id(), owner.user_id()] {
        let path = format!("{}/two-factor", member_path(&target));
        delete(&server, &admin, &path).problem(403, "forbidden");
    }
}

#[test]
fn an_invitation_sets_the_password_once() {
    let (server, owner) = server_with_owner();
    let reply = add_member(&server, &owner, "ivy@example.com", "member", None);
    assert_eq!(reply.status, 201, "{}", text(&reply.body));
    let body = reply.json();
    let ivy_id = body["user_id"].as_str().unwrap().to_string();
    let url = body["invite_url"].as_str().expect("invite_url").to_string();
    let token = url
        .strip_prefix(&server.url("/invite?token="))
        .unwrap_or_else(|| panic!("{url} is not under BASE_URL"))
        .to_string();
    assert!(token.len() >= 43, "{token}");
    assert!(body["invite_expires_at"].is_string(), "{body}");
    login(&server, "ivy@example.com", "").problem(401, "invalid_credentials");
    // Only the digest is stored.
    let database = std::fs::read(server.data_dir.join("lookout.redb")).expect("database");
    let holds = |needle: &[u8]| {
        database
            .windows(needle.len())
            .any(|window| window == needle)
    };
    assert!(
        !holds(token.as_bytes()),
        "the invitation token is stored in the clear"
    );

    let accept = |token: &str, password: &str| {
        let body = json!({"token": token, "password": password});
        send(
            http()
                .post(server.url("/api/v1/auth/invitations/accept"))
                .json(&body),
        )
    };
    accept(&token, "short").problem(400, "invalid_payload");
    accept("not-a-token", PASSWORD).problem(401, "invalid_invitation");
    let accepted = accept(&token, PASSWORD);
    assert_eq!(accepted.status, 200, "{}", text(&accepted.body));
    let accepted = accepted.json();
    assert_eq!(accepted["user"]["email"], "ivy@example.com");
    assert_eq!(accepted["role"], "member");
    accept(&token, "another password").problem(401, "invalid_invitation");
    let ivy = sign_in(&server, "ivy@example.com");
    assert_eq!(ivy.body["role"], "member");
    assert_eq!(
        audit_event(&server, &owner, "invitation.accepted", &ivy_id)["actor_email"],
        "ivy@example.com"
    );
    let rows = member_rows(&server, &owner);
    assert!(
        rows.contains(&("ivy@example.com".into(), "member".into(), "active".into())),
        "{rows:?}"
    );

    // Removed before accepting: the link is dead, even once the user is added again (who then
    // gets a new link).
    let invite_gus = || {
        let reply = add_member(&server, &owner, "gus@example.com", "viewer", None).json();
        let url = reply["invite_url"].as_str().expect("invite_url");
        let token = url.split("token=").nth(1).unwrap().to_string();
        (reply["user_id"].as_str().unwrap().to_string(), token)
    };
    let (gus_id, first_token) = invite_gus();
    assert_eq!(delete(&server, &owner, &member_path(&gus_id)).status, 204);
    accept(&first_token, PASSWORD).problem(401, "invalid_invitation");
    let (again_id, second_token) = invite_gus();
    assert_ne!(
        again_id, gus_id,
        "an unclaimed account is replaced, its id not handed out"
    );
    accept(&first_token, PASSWORD).problem(401, "invalid_invitation");
    assert_eq!(accept(&second_token, PASSWORD).status, 200);
}
