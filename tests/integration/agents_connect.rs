//! Agents through the real binary: enrolment tokens, `lookout agent` connecting, metrics,
//! online then offline when the process dies, and the agent endpoint refusing every credential
//! that is not an enrolment token (a session JWT, an API key, a revoked token).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::agents_support::{
    AgentProcess, OWNER, enrol, online_agent, open_refused, runtime, server_with_owner, wait_agent,
};
use crate::auth_support::{add_user, bearer, create_key, sign_in};
use crate::harness::{http, text};
use crate::http_basics::send;

#[test]
fn an_enrolled_agent_reports_metrics_and_goes_offline_when_killed() {
    let (server, session) = server_with_owner();
    let (mut process, agent) = online_agent(&server, &session, "web-1", &[]);
    let id = agent["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("agt_"), "{agent}");
    assert_eq!(agent["name"], "web-1");
    assert_eq!(agent["os"], "linux");
    assert_eq!(agent["version"], env!("CARGO_PKG_VERSION"));
    assert!(!agent["hostname"].as_str().unwrap().is_empty());
    assert!(agent["last_seen"].as_str().unwrap().ends_with('Z'));

    // The first heartbeat follows the welcome at once.
    let token_id = agent["enrolment_token_id"].as_str().unwrap().to_string();
    let reported = wait_agent(&server, &session, &token_id, "metrics", |agent| {
        agent["metrics"]["memory_total_bytes"]
            .as_u64()
            .is_some_and(|b| b > 0)
    });
    assert!(reported["metrics"]["disk_total_bytes"].as_u64().unwrap() > 0);
    assert!(reported["metrics"]["load1"].is_number());

    let one = session.get(&server, &format!("/api/v1/agents/{id}"));
    assert_eq!(one.status, 200, "{}", text(&one.body));
    assert_eq!(one.json()["status"], "online");
    let tokens = session
        .get(&server, "/api/v1/agents/enrolment-tokens")
        .json();
    let token = &tokens["items"][0];
    assert_eq!(token["id"], token_id.as_str());
    assert!(token["last_used_at"].is_string(), "{tokens}");
    assert!(
        token.get("token").is_none(),
        "a listed token shows its secret: {tokens}"
    );

    process.kill9();
    wait_agent(&server, &session, &token_id, "agent offline", |agent| {
        agent["status"] == "offline"
    });
    let missing = session.get(&server, "/api/v1/agents/agt_01JAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(missing.status, 404);
}

#[test]
fn the_agent_endpoint_takes_only_an_enrolment_token() {
    let (server, session) = server_with_owner();
    let key = create_key(&server, &session, "ci")["key"]
        .as_str()
        .unwrap()
        .to_string();
    let url = server
        .url("/api/v1/agent/connect")
        .replace("http://", "ws://");
    let runtime = runtime();
    let expect_401 = |bearer: Option<&str>| {
        let refusal = runtime.block_on(open_refused(&url, None, bearer));
        assert_eq!(refusal.status, 401, "{bearer:?}");
    };
    expect_401(None);
    expect_401(Some(&session.token));
    expect_401(Some(&key));
    expect_401(Some("not-a-token"));
    // A cookie session is not read at all.
    let cookie = http()
        .get(server.url("/api/v1/agent/connect"))
        .header("cookie", format!("lookout_session={}", session.token));
    assert_eq!(send(cookie).status, 401);
    let plain = bearer(&server, &key, Method::GET, "/api/v1/agent/connect");
    assert_eq!(send(plain).status, 401);

    // A revoked token is refused, and an agent holding it gives up instead of retrying.
    let (token_id, token) = enrol(&server, &session, "db-1");
    let mut process = AgentProcess::start(&server, &token, &[]);
    wait_agent(&server, &session, &token_id, "agent online", |a| {
        a["status"] == "online"
    });
    let revoke = session.write(
        &server,
        Method::DELETE,
        &format!("/api/v1/agents/enrolment-tokens/{token_id}"),
        &json!({}),
    );
    assert_eq!(revoke.status, 204, "{}", text(&revoke.body));
    wait_agent(&server, &session, &token_id, "agent offline", |a| {
        a["status"] == "offline"
    });
    assert_eq!(process.wait_exit(Duration::from_secs(20)), Some(1));
    assert!(
        process.log().contains("refused the enrolment token"),
        "{}",
        process.log()
    );
    let token_not_secret = process.log().contains(&token);
    assert!(!token_not_secret, "the agent logged its token");
    expect_401(Some(&token));
}

#[test]
fn only_admins_manage_enrolment_tokens() {
    let (server, _owner) = server_with_owner();
    add_user(&server, "viewer@example.com", "viewer");
    let viewer = sign_in(&server, "viewer@example.com");
    let create = viewer.post(
        &server,
        "/api/v1/agents/enrolment-tokens",
        &json!({"name": "x"}),
    );
    assert_eq!(create.status, 403, "{}", text(&create.body));
    assert_eq!(viewer.get(&server, "/api/v1/agents").status, 200);
    let owner = sign_in(&server, OWNER);
    let empty = owner.post(
        &server,
        "/api/v1/agents/enrolment-tokens",
        &json!({"name": " "}),
    );
    assert_eq!(empty.status, 400);
}
