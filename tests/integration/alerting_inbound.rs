//! Inbound tokens and the Jenkins endpoint: tokens are shown once and stored hashed, each
//! opens only its own endpoint (401 without a live one, 403 for another kind), revocation
//! takes effect at once, and real Notification plugin bodies fold into one build per job and
//! number.

use serde_json::json;

use crate::alerting_support::*;
use crate::auth_support::{add_user, sign_in};
use crate::harness::text;
use crate::webhooks_support::{owner, webhook_server};

/// What the Jenkins Notification plugin sends, phase by phase (its documented shape).
fn jenkins_body(phase: &str, status: Option<&str>) -> serde_json::Value {
    let mut build = json!({
        "full_url": "http://jenkins.example.com/job/asgard/18/",
        "number": 18,
        "queue_id": 1,
        "phase": phase,
        "url": "job/asgard/18/",
        "scm": {"url": "https://github.com/example/asgard.git", "branch": "origin/main",
                "commit": "c6d86dc7b5a0c6f0d9b4a9f2e1d3c4b5a6f7e8d9"},
        "log": "",
        "notes": "",
        "artifacts": {}
    });
    if let Some(status) = status {
        build["status"] = json!(status);
    }
    json!({"name": "asgard", "display_name": "asgard", "url": "job/asgard/", "build": build})
}

#[test]
fn tokens_are_shown_once_open_only_their_endpoint_and_die_when_revoked() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let created = create_inbound_token(&server, &session, "jenkins");
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("tok_"), "{id}");
    assert_eq!(created["kind"], "jenkins");
    let secret = created["token"].as_str().unwrap().to_string();
    assert!(secret.len() >= 40, "{secret}");

    // Lists never show the secret.
    let listed = session.get(&server, "/api/v1/orgs/me/inbound-tokens");
    assert_eq!(listed.status, 200);
    assert!(!text(&listed.body).contains(&secret), "secret listed");
    assert_eq!(listed.json()["items"][0]["id"], id);

    // Missing, wrong and right tokens; header and query.
    let body = jenkins_body("STARTED", None);
    let missing = post_inbound(&server, "/api/v1/jenkins/notify", "", &body);
    assert_eq!(
        (missing.status, code(&missing)),
        (401, "invalid_inbound_token".into())
    );
    let wrong = post_inbound(&server, "/api/v1/jenkins/notify", "lkin_nope", &body);
    assert_eq!(
        (wrong.status, code(&wrong)),
        (401, "invalid_inbound_token".into())
    );
    let ok = post_inbound(&server, "/api/v1/jenkins/notify", &secret, &body);
    assert_eq!(ok.status, 200, "{}", text(&ok.body));
    let by_query = post_inbound_query(&server, "/api/v1/jenkins/notify", &secret, &body);
    assert_eq!(by_query.status, 200, "{}", text(&by_query.body));

    // A token of another kind is refused with 403, on every inbound endpoint.
    let deploy_body =
        json!({"service": "web", "environment": "production", "version": "1", "status": "started"});
    let foreign = post_inbound(
        &server,
        "/api/v1/deployments/webhook",
        &secret,
        &deploy_body,
    );
    assert_eq!(
        (foreign.status, code(&foreign)),
        (403, "wrong_token_kind".into())
    );
    let deployments = inbound_secret(&server, &session, "deployments");
    let foreign = post_inbound(&server, "/api/v1/jenkins/notify", &deployments, &body);
    assert_eq!(
        (foreign.status, code(&foreign)),
        (403, "wrong_token_kind".into())
    );

    // The token check runs before the body is read: a bad body with no token is still 401.
    let unauthenticated = post_inbound(&server, "/api/v1/jenkins/notify", "", &json!({"x": 1}));
    assert_eq!(unauthenticated.status, 401);

    // Revocation takes effect on the next request.
    let revoked = session.write(
        &server,
        reqwest::Method::DELETE,
        &format!("/api/v1/orgs/me/inbound-tokens/{id}"),
        &json!({}),
    );
    assert_eq!(revoked.status, 204, "{}", text(&revoked.body));
    let after = post_inbound(&server, "/api/v1/jenkins/notify", &secret, &body);
    assert_eq!(
        (after.status, code(&after)),
        (401, "invalid_inbound_token".into())
    );

    // Neither the database nor the log holds the secret in the clear.
    for entry in std::fs::read_dir(&server.data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "secret in {}", path.display());
        }
    }
    assert!(!server.log().contains(&secret), "token logged");
}

#[test]
fn only_admins_manage_tokens_and_kinds_are_checked() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let bad = session.post(
        &server,
        "/api/v1/orgs/me/inbound-tokens",
        &json!({"kind": "pager", "name": "x"}),
    );
    assert_eq!((bad.status, code(&bad)), (400, "invalid_payload".into()));
    add_user(&server, "member@example.com", "member");
    let member = sign_in(&server, "member@example.com");
    let refused = member.post(
        &server,
        "/api/v1/orgs/me/inbound-tokens",
        &json!({"kind": "alerts", "name": "x"}),
    );
    assert_eq!((refused.status, code(&refused)), (403, "forbidden".into()));
    let listed = member.get(&server, "/api/v1/orgs/me/inbound-tokens");
    assert_eq!(listed.status, 403);
}

#[test]
fn jenkins_phases_fold_into_one_build_per_job_and_number() {
    let server = webhook_server(&[]);
    let session = owner(&server);
    let token = inbound_secret(&server, &session, "jenkins");
    let path = "/api/v1/jenkins/notify";
    for (phase, status) in [
        ("QUEUED", None),
        ("STARTED", None),
        ("COMPLETED", Some("FAILURE")),
        ("FINALIZED", Some("FAILURE")),
    ] {
        let reply = post_inbound(&server, path, &token, &jenkins_body(phase, status));
        assert_eq!(reply.status, 200, "{phase}: {}", text(&reply.body));
        assert_eq!(reply.json()["phase"], phase);
    }
    // A late, repeated STARTED does not reopen the finished build.
    let late = post_inbound(&server, path, &token, &jenkins_body("STARTED", None));
    assert_eq!(late.json()["phase"], "FINALIZED");

    let mut next = jenkins_body("STARTED", None);
    next["build"]["number"] = json!(19);
    assert_eq!(post_inbound(&server, path, &token, &next).status, 200);

    let builds = session.get(&server, "/api/v1/builds");
    assert_eq!(builds.status, 200, "{}", text(&builds.body));
    let items = builds.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2, "{items:?}");
    let first = &items[0];
    assert!(first["id"].as_str().unwrap().starts_with("bld_"));
    assert_eq!(first["job"], "asgard");
    assert_eq!(first["number"], 18);
    assert_eq!(first["phase"], "FINALIZED");
    assert_eq!(first["status"], "FAILURE");
    assert_eq!(first["url"], "http://jenkins.example.com/job/asgard/18/");
    assert_eq!(first["commit"], "c6d86dc7b5a0c6f0d9b4a9f2e1d3c4b5a6f7e8d9");
    assert_eq!(first["branch"], "origin/main");
    assert!(first["started_at"].is_string() && first["finished_at"].is_string());
    assert_eq!(items[1]["number"], 19);
    assert!(items[1]["finished_at"].is_null());

    // Paging: one per page, the cursor leads to the second.
    let page = session.get(&server, "/api/v1/builds?limit=1").json();
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let second = session.get(&server, &format!("/api/v1/builds?limit=1&cursor={cursor}"));
    assert_eq!(second.json()["items"][0]["number"], 19);
    // Newest first, paged the other way.
    let newest = session
        .get(&server, "/api/v1/builds?order=newest&limit=1")
        .json();
    assert_eq!(newest["items"][0]["number"], 19);
    let cursor = newest["next_cursor"].as_str().unwrap().to_string();
    let older_page = format!("/api/v1/builds?order=newest&limit=1&cursor={cursor}");
    let older = session.get(&server, &older_page).json();
    assert_eq!(older["items"][0]["number"], 18);
    assert!(older["next_cursor"].is_null(), "{older}");
    let sideways = session.get(&server, "/api/v1/builds?order=sideways");
    assert_eq!(
        (sideways.status, code(&sideways)),
        (400, "invalid_parameter".into())
    );

    let bad_phase = post_inbound(&server, path, &token, &jenkins_body("EXPLODED", None));
    assert_eq!(
        (bad_phase.status, code(&bad_phase)),
        (400, "invalid_payload".into())
    );
}
