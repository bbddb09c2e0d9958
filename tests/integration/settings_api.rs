//! The reads and writes behind the settings pages: audit log filters (`actor`, `action`,
//! `from`, `to`), when an API key was last used (shown at once, kept across a restart),
//! renaming the organisation, and the ingest settings read (never a key).

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{Session, add_user, bearer, create_key, server, sign_in};
use crate::harness::{TestServer, text};
use crate::http_basics::send;

fn owner_session(server: &TestServer) -> Session {
    add_user(server, "ada@example.com", "owner");
    sign_in(server, "ada@example.com")
}

/// The `items` of `GET path`, asserting a 200.
fn items(server: &TestServer, session: &Session, path: &str) -> Vec<Value> {
    let reply = session.get(server, path);
    assert_eq!(reply.status, 200, "{path}: {}", text(&reply.body));
    reply.json()["items"].as_array().expect("items").clone()
}

fn actions(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_audit_log_filters_by_action_actor_and_time() {
    let server = server(&[]);
    let owner = owner_session(&server);
    add_user(&server, "bob@example.com", "admin");
    let bob = sign_in(&server, "bob@example.com");
    create_key(&server, &owner, "deploy");
    create_key(&server, &bob, "bob's");
    let listed = items(&server, &owner, "/api/v1/audit?limit=500");
    assert!(listed.len() >= 4, "{listed:?}");

    let created = items(&server, &owner, "/api/v1/audit?action=api_key.created");
    assert_eq!(actions(&created), ["api_key.created", "api_key.created"]);
    let family = items(&server, &owner, "/api/v1/audit?action=login.*");
    assert!(
        !family.is_empty()
            && actions(&family)
                .iter()
                .all(|action| action.starts_with("login.")),
        "{family:?}"
    );

    // By e-mail (any case) or by user id, the same entries.
    let by_email = items(
        &server,
        &owner,
        "/api/v1/audit?action=api_key.created&actor=BOB@example.com",
    );
    assert_eq!(by_email.len(), 1, "{by_email:?}");
    assert_eq!(by_email[0]["actor_email"], "bob@example.com");
    let bob_id = bob.user_id();
    let by_id = items(&server, &owner, &format!("/api/v1/audit?actor={bob_id}"));
    assert!(
        by_id
            .iter()
            .all(|entry| entry["actor_user_id"] == bob_id.as_str()),
        "{by_id:?}"
    );
    assert!(actions(&by_id).contains(&"api_key.created".to_string()));

    // A window around the newest key's entry holds it alone; `to` is exclusive.
    let newest_at = created[0]["at"].as_str().unwrap().to_string();
    let window = format!("/api/v1/audit?action=api_key.created&from={newest_at}");
    assert_eq!(items(&server, &owner, &window).len(), 1);
    let before = format!("/api/v1/audit?action=api_key.created&to={newest_at}");
    let older = items(&server, &owner, &before);
    assert_eq!(older.len(), 1, "{older:?}");
    assert_eq!(older[0]["actor_email"], "ada@example.com");

    // Pages of a filtered list neither overlap nor skip.
    let first = owner.get(&server, "/api/v1/audit?action=api_key.created&limit=1");
    let first = first.json();
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let rest = items(
        &server,
        &owner,
        &format!("/api/v1/audit?action=api_key.created&limit=1&cursor={cursor}"),
    );
    assert_eq!(rest.len(), 1);
    assert_ne!(rest[0]["id"], first["items"][0]["id"]);

    for bad in ["from=yesterday", "action=", "actor=a&actor=b"] {
        let reply = owner.get(&server, &format!("/api/v1/audit?{bad}"));
        assert_eq!(reply.status, 400, "{bad}: {}", text(&reply.body));
        assert_eq!(reply.json()["code"], "invalid_parameter", "{bad}");
    }
}

fn last_used_of(server: &TestServer, session: &Session, id: &str) -> Value {
    let keys = items(server, session, "/api/v1/orgs/me/api-keys");
    let key = keys.iter().find(|key| key["id"] == id).expect("key listed");
    key["last_used_at"].clone()
}

#[test]
fn an_api_key_shows_when_it_was_last_used_and_keeps_it_across_a_restart() {
    let mut server = server(&[]);
    let owner = owner_session(&server);
    let created = create_key(&server, &owner, "ci");
    let (id, secret) = (
        created["id"].as_str().unwrap(),
        created["key"].as_str().unwrap(),
    );
    assert_eq!(last_used_of(&server, &owner, id), Value::Null);

    let reply = send(bearer(&server, secret, Method::GET, "/api/v1/auth/me"));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let used = last_used_of(&server, &owner, id);
    let used_at = used.as_str().expect("last_used_at after a use");
    assert!(used_at.ends_with('Z') && used_at >= created["created_at"].as_str().unwrap());

    // Noted once a minute: a second use within it leaves the instant as it was.
    send(bearer(&server, secret, Method::GET, "/api/v1/auth/me"));
    assert_eq!(last_used_of(&server, &owner, id), used);

    // Written to the store by shutdown at the latest.
    server.restart();
    let owner = sign_in(&server, "ada@example.com");
    assert_eq!(last_used_of(&server, &owner, id), used);
}

#[test]
fn an_admin_renames_the_organisation() {
    let server = server(&[]);
    let owner = owner_session(&server);
    add_user(&server, "val@example.com", "viewer");
    let viewer = sign_in(&server, "val@example.com");
    server.cli(&["org", "create", "Taken Ltd"], "");

    let org_name = || owner.get(&server, "/api/v1/auth/me").json()["org"]["name"].clone();
    assert_eq!(org_name(), "default");

    let path = "/api/v1/orgs/me/settings";
    let renamed = owner.write(&server, Method::PATCH, path, &json!({"name": "  Acme  "}));
    assert_eq!(renamed.status, 200, "{}", text(&renamed.body));
    // The settings object keeps its shape; the name is the organisation's, read with `me`.
    assert_eq!(
        renamed.json(),
        json!({"two_factor_required": false, "ip_allowlist": []})
    );
    assert_eq!(org_name(), "Acme");
    let audit = items(&server, &owner, "/api/v1/audit?action=org.settings_changed");
    assert_eq!(
        audit[0]["detail"]["name"],
        json!({"from": "default", "to": "Acme"})
    );

    let taken = owner.write(&server, Method::PATCH, path, &json!({"name": "taken ltd"}));
    assert_eq!(taken.status, 409, "{}", text(&taken.body));
    assert_eq!(taken.json()["code"], "org_name_taken");
    let empty = owner.write(&server, Method::PATCH, path, &json!({"name": "  "}));
    assert_eq!(empty.json()["code"], "invalid_payload");
    let refused = viewer.write(&server, Method::PATCH, path, &json!({"name": "Mine"}));
    assert_eq!(refused.status, 403);
    // Another change of case of its own name is allowed.
    let recased = owner.write(&server, Method::PATCH, path, &json!({"name": "ACME"}));
    assert_eq!(recased.status, 200, "{}", text(&recased.body));
    assert_eq!(org_name(), "ACME");
}

#[test]
fn the_ingest_settings_say_how_to_send_without_any_key() {
    let keys = "first-ingest-key-0001,second-ingest-key-02";
    let server = server(&[
        ("WEB_INGEST_KEYS", keys),
        ("WEB_INGEST_ALLOWED_ORIGINS", "https://app.example.com"),
    ]);
    add_user(&server, "val@example.com", "viewer");
    let viewer = sign_in(&server, "val@example.com");
    let reply = viewer.get(&server, "/api/v1/ingest-settings");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let body_text = text(&reply.body);
    assert!(
        !body_text.contains("first-ingest") && !body_text.contains("second-ingest"),
        "{body_text}"
    );
    let body = reply.json();
    let base = server.url("");
    let base = base.trim_end_matches('/');
    assert_eq!(body["base_url"], base);
    assert_eq!(
        body["urls"]["web_errors"],
        format!("{base}/ingest/web-errors")
    );
    assert_eq!(
        body["urls"]["sourcemaps"],
        format!("{base}/ingest/sourcemaps")
    );
    assert_eq!(body["keys_configured"], 2);
    assert_eq!(body["allowed_origins"], json!(["https://app.example.com"]));
    assert_eq!(body["receives_this_org"], true);
    let unauthenticated = send(crate::harness::http().get(server.url("/api/v1/ingest-settings")));
    assert_eq!(unauthenticated.status, 401);
}
