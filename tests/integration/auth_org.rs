//! Organisation security settings (CONTRACT.md section 2, "org 2FA enforcement" and "IP
//! allowlist") and the audit log: who reads and changes the settings, members confined to
//! enrolment while two-factor is enforced, the allowlist inside and outside (IPv4 and IPv6,
//! 401 before 403, `would_lock_out` and `force`), `X-Forwarded-For` believed only from
//! `TRUSTED_PROXIES`, and `GET /api/v1/audit` (newest first, pages, admins only).
//!
//! Tests run on 127.0.0.1, so an allowlist of 10.0.0.0/8 saved with `force` locks loopback
//! clients out, and a trusted-proxy server lets `X-Forwarded-For: 10.1.2.3` stand for a client
//! inside it.

use reqwest::Method;
use reqwest::blocking::RequestBuilder;
use serde_json::{Value, json};

use crate::auth_members::{add_member_with_password, audit_items};
use crate::auth_support::{Session, add_user, bearer, create_key, enrol, server, sign_in};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const SETTINGS: &str = "/api/v1/orgs/me/settings";
const ALLOWLIST: &str = "/api/v1/orgs/me/ip-allowlist";

fn owner_of(server: &TestServer) -> Session {
    add_user(server, "owner@example.com", "owner");
    sign_in(server, "owner@example.com")
}

fn put_allowlist(server: &TestServer, session: &Session, body: Value) -> Reply {
    session.write(server, Method::PUT, ALLOWLIST, &body)
}

/// A session request that claims to come from `address` through `X-Forwarded-For`.
fn forwarded(
    server: &TestServer,
    session: &Session,
    method: Method,
    path: &str,
    address: &str,
) -> RequestBuilder {
    let request = session.request(server, method, path);
    request
        .header("x-forwarded-for", address)
        .header("x-csrf-token", &session.csrf)
}

#[test]
fn settings_are_read_by_viewers_and_changed_by_admins() {
    let server = server(&[]);
    let owner = owner_of(&server);
    add_member_with_password(&server, &owner, "vic@example.com", "viewer");
    add_member_with_password(&server, &owner, "mo@example.com", "member");
    let viewer = sign_in(&server, "vic@example.com");
    let member = sign_in(&server, "mo@example.com");
    let settings = viewer.get(&server, SETTINGS);
    assert_eq!(settings.status, 200, "{}", text(&settings.body));
    assert_eq!(
        settings.json(),
        json!({"two_factor_required": false, "ip_allowlist": []})
    );
    for session in [&viewer, &member] {
        let patch = json!({"two_factor_required": true});
        session
            .write(&server, Method::PATCH, SETTINGS, &patch)
            .problem(403, "forbidden");
        session.get(&server, ALLOWLIST).problem(403, "forbidden");
        put_allowlist(&server, session, json!({"cidrs": []})).problem(403, "forbidden");
    }
    let unknown = json!({"ip_allowlist": ["10.0.0.0/8"]});
    owner
        .write(&server, Method::PATCH, SETTINGS, &unknown)
        .problem(400, "invalid_payload");
    let wrong_type = json!({"two_factor_required": "yes"});
    owner
        .write(&server, Method::PATCH, SETTINGS, &wrong_type)
        .problem(400, "invalid_payload");
    // An empty patch changes nothing and answers the settings.
    let reply = owner.write(&server, Method::PATCH, SETTINGS, &json!({}));
    assert_eq!(reply.json()["two_factor_required"], false);
}

#[test]
fn enforced_two_factor_confines_members_without_it_to_enrolment() {
    let server = server(&[]);
    let owner = owner_of(&server);
    add_member_with_password(&server, &owner, "mo@example.com", "member");
    let member = sign_in(&server, "mo@example.com");
    let key = create_key(&server, &owner, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(member.get(&server, "/api/v1/services").status, 200);

    let on = json!({"two_factor_required": true});
    let reply = owner.write(&server, Method::PATCH, SETTINGS, &on);
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(reply.json()["two_factor_required"], true);

    // Without a second factor: only the enrolment routes, for sessions and keys alike.
    let confined = "two_factor_enrolment_required";
    member
        .get(&server, "/api/v1/services")
        .problem(403, confined);
    member.get(&server, SETTINGS).problem(403, confined);
    owner
        .get(&server, "/api/v1/services")
        .problem(403, confined);
    send(bearer(&server, &key, Method::GET, "/api/v1/services")).problem(403, confined);
    let me = member.get(&server, "/api/v1/auth/me");
    assert_eq!(me.status, 200, "{}", text(&me.body));
    assert_eq!(me.json()["org"]["two_factor_required"], true);
    enrol(&server, &member);
    assert_eq!(member.get(&server, "/api/v1/services").status, 200);

    // Once the owner has a second factor too, the owner may turn enforcement off again.
    enrol(&server, &owner);
    assert_eq!(
        send(bearer(&server, &key, Method::GET, "/api/v1/services")).status,
        200
    );
    let items = audit_items(&server, &owner);
    let event = items
        .iter()
        .find(|item| item["action"] == "org.settings_changed")
        .expect("event");
    assert_eq!(event["target"], Value::Null, "{event}");
    assert_eq!(
        event["detail"]["two_factor_required"],
        json!({"from": false, "to": true})
    );
    let off = json!({"two_factor_required": false});
    assert_eq!(
        owner.write(&server, Method::PATCH, SETTINGS, &off).json()["two_factor_required"],
        false
    );
    add_member_with_password(&server, &owner, "new@example.com", "member");
    let newcomer = sign_in(&server, "new@example.com");
    assert_eq!(newcomer.get(&server, "/api/v1/services").status, 200);
}

#[test]
fn the_allowlist_admits_inside_and_refuses_outside() {
    let server = server(&[]);
    let owner = owner_of(&server);
    let key = create_key(&server, &owner, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(owner.get(&server, ALLOWLIST).json(), json!({"cidrs": []}));
    for bad in ["not-an-ip", "10.0.0.0/33", "::1/129", ""] {
        put_allowlist(&server, &owner, json!({"cidrs": ["127.0.0.1", bad]}))
            .problem(400, "invalid_payload");
    }
    put_allowlist(&server, &owner, json!({"cidrs": "10.0.0.0/8"})).problem(400, "invalid_payload");

    // IPv4 and IPv6 CIDRs and bare addresses, shown back normalised.
    let mixed =
        json!({"cidrs": ["127.0.0.0/8", "2001:db8::1/32", "::1", "10.1.2.3/8", "192.0.2.7"]});
    let reply = put_allowlist(&server, &owner, mixed);
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let saved = json!([
        "127.0.0.0/8",
        "2001:db8::/32",
        "::1/128",
        "10.0.0.0/8",
        "192.0.2.7/32"
    ]);
    assert_eq!(reply.json()["cidrs"], saved);
    assert_eq!(owner.get(&server, SETTINGS).json()["ip_allowlist"], saved);
    assert_eq!(owner.get(&server, "/api/v1/services").status, 200, "inside");
    assert_eq!(
        send(bearer(&server, &key, Method::GET, "/api/v1/services")).status,
        200
    );

    // A list without 127.0.0.1 would lock this client out: refused unless forced.
    for cidrs in [json!(["10.0.0.0/8"]), json!(["2001:db8::/32"])] {
        put_allowlist(&server, &owner, json!({"cidrs": cidrs})).problem(409, "would_lock_out");
    }
    assert_eq!(
        owner.get(&server, ALLOWLIST).json()["cidrs"],
        saved,
        "unchanged"
    );
    let forced = put_allowlist(
        &server,
        &owner,
        json!({"cidrs": ["10.0.0.0/8"], "force": true}),
    );
    assert_eq!(forced.status, 200, "{}", text(&forced.body));

    // Outside: a credential first (401), then the address (403), for sessions and keys.
    owner
        .get(&server, "/api/v1/services")
        .problem(403, "ip_not_allowed");
    owner.get(&server, ALLOWLIST).problem(403, "ip_not_allowed");
    send(bearer(&server, &key, Method::GET, "/api/v1/services")).problem(403, "ip_not_allowed");
    send(http().get(server.url("/api/v1/services"))).problem(401, "unauthorized");
    let forged_key = format!("lk_{}", "A".repeat(43));
    send(bearer(
        &server,
        &forged_key,
        Method::GET,
        "/api/v1/services",
    ))
    .problem(401, "invalid_api_key");
    // The peer is no trusted proxy, so a claimed inside address changes nothing.
    let spoofed = forwarded(&server, &owner, Method::GET, "/api/v1/services", "10.1.2.3");
    send(spoofed).problem(403, "ip_not_allowed");
    let undo =
        forwarded(&server, &owner, Method::PUT, ALLOWLIST, "10.1.2.3").json(&json!({"cidrs": []}));
    send(undo).problem(403, "ip_not_allowed");
}

#[test]
fn forwarded_for_is_believed_from_a_trusted_proxy() {
    let server = server(&[("TRUSTED_PROXIES", "127.0.0.1/32")]);
    let owner = owner_of(&server);
    let inside = "10.1.2.3";
    // Saved from loopback, 10.0.0.0/8 would lock this client out; from 10.1.2.3 it does not.
    let list = json!({"cidrs": ["10.0.0.0/8"]});
    put_allowlist(&server, &owner, list.clone()).problem(409, "would_lock_out");
    let reply = send(forwarded(&server, &owner, Method::PUT, ALLOWLIST, inside).json(&list));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));

    owner
        .get(&server, "/api/v1/services")
        .problem(403, "ip_not_allowed");
    let via = |address: &str| {
        send(forwarded(
            &server,
            &owner,
            Method::GET,
            "/api/v1/services",
            address,
        ))
    };
    assert_eq!(via(inside).status, 200);
    via("192.0.2.1").problem(403, "ip_not_allowed");
    via("2001:db8::1").problem(403, "ip_not_allowed");
    let anonymous = http()
        .get(server.url("/api/v1/services"))
        .header("x-forwarded-for", inside);
    send(anonymous).problem(401, "unauthorized");
    let from_outside = forwarded(&server, &owner, Method::PUT, ALLOWLIST, inside);
    let reply = send(from_outside.json(&json!({"cidrs": ["192.0.2.0/24"]})));
    reply.problem(409, "would_lock_out");

    // The change is audited with the address it came from; an empty list turns it off.
    let audit = send(forwarded(
        &server,
        &owner,
        Method::GET,
        "/api/v1/audit",
        inside,
    ))
    .json();
    let items = audit["items"].as_array().unwrap();
    let event = items
        .iter()
        .find(|item| item["action"] == "ip_allowlist.changed")
        .expect("event");
    assert_eq!(event["ip"], inside, "{event}");
    assert_eq!(
        event["detail"],
        json!({"from": [], "to": ["10.0.0.0/8"], "force": false})
    );
    let off = send(
        forwarded(&server, &owner, Method::PUT, ALLOWLIST, inside).json(&json!({"cidrs": []})),
    );
    assert_eq!(off.json(), json!({"cidrs": []}));
    assert_eq!(owner.get(&server, "/api/v1/services").status, 200);
}

#[test]
fn the_audit_log_lists_security_events_newest_first_to_admins() {
    let server = server(&[]);
    let owner = owner_of(&server);
    let member_id = add_member_with_password(&server, &owner, "mo@example.com", "member");
    let roles = json!({"role": "viewer"});
    let path = format!("/api/v1/orgs/me/members/{member_id}");
    assert_eq!(
        owner.write(&server, Method::PATCH, &path, &roles).status,
        200
    );
    let list = json!({"cidrs": ["127.0.0.1"]});
    assert_eq!(put_allowlist(&server, &owner, list).status, 200);
    let remove = owner
        .request(&server, Method::DELETE, &path)
        .header("x-csrf-token", &owner.csrf);
    assert_eq!(send(remove).status, 204);

    let items = audit_items(&server, &owner);
    let actions: Vec<&str> = items
        .iter()
        .map(|item| item["action"].as_str().unwrap())
        .collect();
    let expected = [
        "member.removed",
        "ip_allowlist.changed",
        "member.role_changed",
        "member.added",
        "login.succeeded",
    ];
    assert_eq!(&actions[..5], expected, "newest first: {actions:?}");
    let added = &items[3];
    assert_eq!(added["target"], member_id.as_str());
    assert_eq!(added["actor_user_id"], owner.user_id().as_str());
    assert_eq!(added["actor_email"], "owner@example.com");
    assert_eq!(added["ip"], "127.0.0.1");
    assert_eq!(added["detail"]["role"], "member");
    for item in &items {
        assert!(item["id"].as_str().unwrap().starts_with("aud_"), "{item}");
        assert!(item["at"].as_str().unwrap().ends_with('Z'), "{item}");
    }

    // Pages of two walk the same list without overlap.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(cursor) => format!("/api/v1/audit?limit=2&cursor={cursor}"),
            None => "/api/v1/audit?limit=2".to_string(),
        };
        let page = owner.get(&server, &query).json();
        let page_items = page["items"].as_array().unwrap().clone();
        assert!(page_items.len() <= 2, "{page}");
        paged.extend(page_items);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(paged, items);
    owner
        .get(&server, "/api/v1/audit?cursor=usr_x")
        .problem(400, "invalid_parameter");
    owner
        .get(&server, "/api/v1/audit?limit=many")
        .problem(400, "invalid_parameter");

    // Admins only.
    add_member_with_password(&server, &owner, "vic@example.com", "member");
    sign_in(&server, "vic@example.com")
        .get(&server, "/api/v1/audit")
        .problem(403, "forbidden");
    send(http().get(server.url("/api/v1/audit"))).problem(401, "unauthorized");
}

#[test]
fn the_openapi_document_lists_the_member_settings_and_audit_routes() {
    let server = server(&[]);
    let document = send(http().get(server.url("/api/v1/openapi.json"))).json();
    let routes = [
        ("/api/v1/orgs/me/members", &["get", "post"][..]),
        ("/api/v1/orgs/me/members/{user_id}", &["patch", "delete"]),
        ("/api/v1/orgs/me/members/{user_id}/two-factor", &["delete"]),
        ("/api/v1/auth/invitations/accept", &["post"]),
        (SETTINGS, &["get", "patch"]),
        (ALLOWLIST, &["get", "put"]),
        ("/api/v1/audit", &["get"]),
    ];
    for (path, methods) in routes {
        for method in methods {
            let operation = &document["paths"][path][method];
            assert!(
                operation.is_object(),
                "{method} {path} missing from the OpenAPI document"
            );
        }
    }
}
