//! SCIM 2.0 provisioning through the real binary, as Okta and Entra ID drive it: plan gating,
//! tokens, the discovery documents, the Users sequence (look up, create, deactivate, activate,
//! delete), role groups, an existing account joined without a second account or a password
//! change, and deactivation ending the member's sessions and API keys at once.

use reqwest::Method;
use serde_json::{Value, json};

use crate::auth_support::{
    PASSWORD, Session, add_user, add_user_in, create_key, login, server, sign_in,
};
use crate::harness::{TestServer, http, text};
use crate::http_basics::{Reply, send};

const SCIM_JSON: &str = "application/scim+json";
const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

fn set_plan(server: &TestServer, plan: &str) {
    let output = server.cli(&["org", "set-plan", "default", plan], "");
    assert!(
        output.status.success(),
        "set-plan: {}",
        text(&output.stderr)
    );
}

fn scim(
    server: &TestServer,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let mut request = http()
        .request(method, server.url(path))
        .header("authorization", format!("Bearer {token}"));
    if let Some(body) = body {
        request = request
            .header("content-type", SCIM_JSON)
            .body(body.to_string());
    }
    let reply = send(request);
    assert_eq!(
        reply.header("content-type"),
        if reply.status == 204 { "" } else { SCIM_JSON },
        "{path}: {}",
        text(&reply.body)
    );
    reply
}

fn ok(reply: Reply, status: u16) -> Value {
    assert_eq!(reply.status, status, "{}", text(&reply.body));
    if status == 204 {
        Value::Null
    } else {
        reply.json()
    }
}

fn find(server: &TestServer, token: &str, email: &str) -> Value {
    let path = format!("/scim/v2/Users?filter=userName%20eq%20%22{email}%22");
    ok(scim(server, token, Method::GET, &path, None), 200)
}

fn patch_active(server: &TestServer, token: &str, id: &str, active: Value) -> Value {
    let body = json!({"schemas": [PATCH_OP], "Operations": [{"op": "Replace", "path": "active", "value": active}]});
    ok(
        scim(
            server,
            token,
            Method::PATCH,
            &format!("/scim/v2/Users/{id}"),
            Some(body),
        ),
        200,
    )
}

fn setup() -> (TestServer, Session) {
    let server = server(&[("API_RATE_PER_MIN", "100000")]);
    add_user(&server, "owner@example.com", "owner");
    let owner = sign_in(&server, "owner@example.com");
    (server, owner)
}

fn new_token(server: &TestServer, owner: &Session) -> String {
    let reply = owner.post(
        server,
        "/api/v1/orgs/me/scim-tokens",
        &json!({"name": "okta"}),
    );
    let body = ok(reply, 201);
    for field in ["id", "name", "token", "created_at"] {
        assert!(body.get(field).is_some(), "{field}: {body}");
    }
    body["token"].as_str().unwrap().to_string()
}

#[test]
fn scim_needs_the_enterprise_plan_and_its_own_token_only() {
    let (server, owner) = setup();
    let refused = owner.post(
        &server,
        "/api/v1/orgs/me/scim-tokens",
        &json!({"name": "okta"}),
    );
    refused.problem(403, "plan_required");
    set_plan(&server, "enterprise");
    let token = new_token(&server, &owner);
    let listed = ok(owner.get(&server, "/api/v1/orgs/me/scim-tokens"), 200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert!(listed["items"][0].get("token").is_none(), "{listed}");

    // The SCIM token works on /scim/v2 only; a session cookie does not.
    let config = ok(
        scim(
            &server,
            &token,
            Method::GET,
            "/scim/v2/ServiceProviderConfig",
            None,
        ),
        200,
    );
    assert_eq!(config["patch"]["supported"], true);
    let types = ok(
        scim(&server, &token, Method::GET, "/scim/v2/ResourceTypes", None),
        200,
    );
    assert_eq!(types["totalResults"], 2);
    let schemas = ok(
        scim(&server, &token, Method::GET, "/scim/v2/Schemas", None),
        200,
    );
    assert_eq!(
        schemas["Resources"][0]["id"],
        "urn:ietf:params:scim:schemas:core:2.0:User"
    );
    let on_api = send(
        http()
            .get(server.url("/api/v1/errors"))
            .header("authorization", format!("Bearer {token}")),
    );
    assert_eq!(on_api.status, 401, "{}", text(&on_api.body));
    let with_cookie = send(owner.request(&server, Method::GET, "/scim/v2/Users"));
    assert_eq!(with_cookie.status, 401);
    assert_eq!(
        with_cookie.json()["schemas"][0],
        "urn:ietf:params:scim:api:messages:2.0:Error"
    );
    let bad_filter = scim(
        &server,
        &token,
        Method::GET,
        "/scim/v2/Users?filter=userName%20sw%20%22a%22",
        None,
    );
    assert_eq!(ok(bad_filter, 400)["scimType"], "invalidFilter");

    // Off the plan, the token is refused but kept; back on, it works again.
    set_plan(&server, "free");
    assert_eq!(
        scim(&server, &token, Method::GET, "/scim/v2/Users", None).status,
        403
    );
    set_plan(&server, "enterprise");
    ok(
        scim(&server, &token, Method::GET, "/scim/v2/Users", None),
        200,
    );

    // A revoked token is refused.
    let id = listed["items"][0]["id"].as_str().unwrap();
    let revoked = owner.write(
        &server,
        Method::DELETE,
        &format!("/api/v1/orgs/me/scim-tokens/{id}"),
        &json!({}),
    );
    assert_eq!(revoked.status, 204);
    assert_eq!(
        scim(&server, &token, Method::GET, "/scim/v2/Users", None).status,
        401
    );
}

#[test]
fn okta_and_entra_sequences_provision_deactivate_and_delete_members() {
    let (server, owner) = setup();
    set_plan(&server, "enterprise");
    let token = new_token(&server, &owner);

    // Okta: look up, create, read back.
    assert_eq!(find(&server, &token, "ada@example.com")["totalResults"], 0);
    let okta = json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "ada@example.com",
        "name": {"givenName": "Ada", "familyName": "Lovelace"},
        "emails": [{"primary": true, "value": "ada@example.com", "type": "work"}],
        "displayName": "Ada Lovelace", "locale": "en-US", "externalId": "00u1", "groups": [], "active": true
    });
    let created = ok(
        scim(
            &server,
            &token,
            Method::POST,
            "/scim/v2/Users",
            Some(okta.clone()),
        ),
        201,
    );
    let ada = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["name"]["familyName"], "Lovelace");
    assert_eq!(
        find(&server, &token, "ada@example.com")["Resources"][0]["id"],
        ada
    );
    let again = scim(&server, &token, Method::POST, "/scim/v2/Users", Some(okta));
    assert_eq!(ok(again, 409)["scimType"], "uniqueness");
    let members = ok(owner.get(&server, "/api/v1/orgs/me/members"), 200);
    let listed = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "ada@example.com")
        .cloned();
    assert_eq!(listed.expect("ada is a member")["role"], "viewer");

    // Groups: adding to `members` makes a member; Entra's remove makes a viewer again.
    let add = json!({"schemas": [PATCH_OP], "Operations": [{"op": "Add", "path": "members", "value": [{"value": ada}]}]});
    let group = ok(
        scim(
            &server,
            &token,
            Method::PATCH,
            "/scim/v2/Groups/members",
            Some(add),
        ),
        200,
    );
    assert_eq!(group["members"][0]["value"], ada);
    let linked = ok(
        scim(
            &server,
            &token,
            Method::GET,
            "/scim/v2/Groups?filter=displayName%20eq%20%22Members%22",
            None,
        ),
        200,
    );
    assert_eq!(linked["Resources"][0]["id"], "members");
    let remove = json!({"schemas": [PATCH_OP], "Operations": [{"op": "Remove", "path": format!("members[value eq \"{ada}\"]")}]});
    ok(
        scim(
            &server,
            &token,
            Method::PATCH,
            "/scim/v2/Groups/members",
            Some(remove),
        ),
        200,
    );
    let viewers = ok(
        scim(
            &server,
            &token,
            Method::GET,
            "/scim/v2/Groups/viewers",
            None,
        ),
        200,
    );
    assert!(
        viewers["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["value"] == ada)
    );

    // Entra: deactivate with a string boolean, activate again, then delete.
    assert_eq!(
        patch_active(&server, &token, &ada, json!("False"))["active"],
        false
    );
    let gone = ok(owner.get(&server, "/api/v1/orgs/me/members"), 200);
    assert!(
        !gone["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["email"] == "ada@example.com")
    );
    assert_eq!(
        patch_active(&server, &token, &ada, json!(true))["active"],
        true
    );
    ok(
        scim(
            &server,
            &token,
            Method::DELETE,
            &format!("/scim/v2/Users/{ada}"),
            None,
        ),
        204,
    );
    ok(
        scim(
            &server,
            &token,
            Method::GET,
            &format!("/scim/v2/Users/{ada}"),
            None,
        ),
        404,
    );
}

#[test]
fn deactivation_ends_sessions_and_api_keys_and_an_existing_account_only_gains_a_membership() {
    let (server, owner) = setup();
    set_plan(&server, "enterprise");
    let token = new_token(&server, &owner);
    add_user(&server, "dev@example.com", "admin");
    let dev = sign_in(&server, "dev@example.com");
    let key = create_key(&server, &dev, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    let by_key = |key: &str| {
        send(
            http()
                .get(server.url("/api/v1/auth/me"))
                .header("authorization", format!("Bearer {key}")),
        )
        .status
    };
    assert_eq!(by_key(&key), 200);

    // The provider finds the existing member and deactivates it: its session and key stop at once.
    let found = find(&server, &token, "dev@example.com");
    let id = found["Resources"][0]["id"].as_str().unwrap().to_string();
    patch_active(&server, &token, &id, json!(false));
    assert_eq!(dev.get(&server, "/api/v1/auth/me").status, 401);
    assert_eq!(by_key(&key), 401);

    // An account another organisation owns joins as a member: same account, same password.
    let output = server.cli(&["org", "create", "other"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    add_user_in(&server, "eve@example.com", "owner", Some("other"));
    let body = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "eve@example.com", "active": true});
    let eve = ok(
        scim(&server, &token, Method::POST, "/scim/v2/Users", Some(body)),
        201,
    );
    assert_eq!(login(&server, "eve@example.com", PASSWORD).status, 200);
    let orgs = ok(
        sign_in(&server, "eve@example.com").get(&server, "/api/v1/auth/orgs"),
        200,
    );
    assert_eq!(orgs["items"].as_array().unwrap().len(), 2, "{orgs}");
    assert!(eve["id"].as_str().unwrap().starts_with("usr_"));
}
