//! Every list of the API honours CONTRACT section 1 (`?limit=`, `?cursor=`, `next_cursor`): the
//! list routes are read from the server's own OpenAPI document (every GET whose answer has
//! `items`), at least three records of each kind are made through the public interfaces, and
//! each list is walked one item per page.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::agents_support::{
    AgentProcess, online_agent, open_websocket, read_close, runtime, ticket, type_bytes,
};
use crate::alerting_support::{inbound_secret, post_inbound};
use crate::auth_support::{Session, add_user, sign_in};
use crate::harness::{TestServer, text, wait_for};
use crate::ingest_support::{KEY, accepted, post};
use crate::webhooks_support::{Answer, Receiver, create_channel, send_test, wait_state};

const OWNER: &str = "owner@example.com";
/// Records made of each kind: enough for three pages of one.
const RECORDS: usize = 3;
/// Most pages one walk may take (the audit log holds an entry for every record made here).
const MAX_PAGES: usize = 1000;

/// A server with an ingest key, loopback webhooks that give up after one retry, and a rate
/// limit high enough for a few hundred reads.
fn server() -> TestServer {
    TestServer::builder()
        .env("WEB_INGEST_KEY", KEY)
        .env("WEBHOOK_ALLOW_PRIVATE", "true")
        .env("WEBHOOK_RETRY_DELAYS_SECONDS", "1")
        .env("API_RATE_PER_MIN", "100000")
        .start()
}

/// The path of every GET route whose 200 answer is an object with `items`.
fn list_routes(server: &TestServer, session: &Session) -> Vec<String> {
    let document = session.get(server, "/api/v1/openapi.json").json();
    let schemas = &document["components"]["schemas"];
    let resolve = |schema: &Value| match schema["$ref"].as_str() {
        Some(reference) => schemas[reference.rsplit('/').next().unwrap()].clone(),
        None => schema.clone(),
    };
    let paths = document["paths"].as_object().expect("paths");
    let mut routes: Vec<String> = paths
        .iter()
        .filter(|(_, operations)| {
            let schema =
                &operations["get"]["responses"]["200"]["content"]["application/json"]["schema"];
            !schema.is_null() && !resolve(schema)["properties"]["items"].is_null()
        })
        .map(|(path, _)| path.clone())
        .collect();
    routes.sort();
    routes
}

/// Makes `RECORDS` records of every listed kind through the public interfaces; returns the
/// ids that fill path parameters (`{id}` of an agent, of a channel) and the processes to keep.
fn make_records(
    server: &TestServer,
    session: &Session,
) -> (BTreeMap<String, String>, Vec<AgentProcess>) {
    let created = |reply: crate::http_basics::Reply, what: &str| {
        assert!(
            reply.status < 300,
            "{what}: {} {}",
            reply.status,
            text(&reply.body)
        );
    };
    // The owner's organisations (`GET /api/v1/auth/orgs`): `default` and two it joins.
    for org in ["second", "third"] {
        crate::auth_switch_org::join_new_org(server, OWNER, org);
    }
    for n in 0..RECORDS {
        created(
            session.post(
                server,
                "/api/v1/orgs/me/api-keys",
                &json!({"name": format!("key {n}")}),
            ),
            "api key",
        );
        created(
            session.post(
                server,
                "/api/v1/orgs/me/members",
                &json!({"email": format!("member{n}@example.com"), "role": "viewer",
                "password": "a long enough password"}),
            ),
            "member",
        );
        created(
            session.post(
                server,
                "/api/v1/alert-rules",
                &json!({"name": format!("rule {n}"), "kind": "new_error_group"}),
            ),
            "rule",
        );
        created(
            session.post(
                server,
                "/api/v1/incidents",
                &json!({"title": format!("incident {n}")}),
            ),
            "incident",
        );
        created(
            session.write(
                server,
                Method::PUT,
                &format!("/api/v1/flags/flag-{n}"),
                &json!({"value": n}),
            ),
            "flag",
        );
        created(
            session.post(
                server,
                "/api/v1/experiments",
                &json!({"key": format!("experiment-{n}"),
            "active": true, "variants": [{"key": "a", "weight": 1}, {"key": "b", "weight": 1}]}),
            ),
            "experiment",
        );
    }
    // SCIM tokens, on the enterprise plan that SCIM needs.
    let plan = server.cli(&["org", "set-plan", "default", "enterprise"], "");
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    for n in 0..RECORDS {
        created(
            session.post(
                server,
                "/api/v1/orgs/me/scim-tokens",
                &json!({"name": format!("scim {n}")}),
            ),
            "scim token",
        );
    }
    // Inbound tokens, one of each kind, and what each of them reports.
    let jenkins = inbound_secret(server, session, "jenkins");
    let deployments = inbound_secret(server, session, "deployments");
    let alerts = inbound_secret(server, session, "alerts");
    for n in 0..RECORDS {
        let build = json!({"name": format!("job-{n}"), "build": {"phase": "STARTED", "number": n + 1,
            "full_url": "https://ci.example.com/job/1/"}});
        created(
            post_inbound(server, "/api/v1/jenkins/notify", &jenkins, &build),
            "build",
        );
        let deployment = json!({"service": "web", "environment": "production", "version": format!("1.{n}"),
            "status": "started", "external_id": format!("deploy-{n}")});
        created(
            post_inbound(
                server,
                "/api/v1/deployments/webhook",
                &deployments,
                &deployment,
            ),
            "deployment",
        );
        let alert = json!({"title": format!("alert {n}"), "severity": "warning", "status": "firing",
            "dedup_key": format!("alert-{n}")});
        created(
            post_inbound(server, "/api/v1/alerts/webhook", &alerts, &alert),
            "alert",
        );
    }
    // Telemetry: three services, fingerprints (error groups), sessions and span names.
    let events: Vec<Value> = (0..RECORDS)
        .map(|n| json!({"level": "error", "message": format!("failure {n}"), "url": "https://app.example.com/",
            "service": format!("service-{n}"), "fingerprint": [format!("group-{n}")],
            "user_agent": "curl/8.5.0"}))
        .collect();
    accepted(&post(
        server,
        "/ingest/web-errors",
        &json!({"events": events}),
    ));
    let sessions: Vec<Value> = (0..RECORDS)
        .map(|n| {
            json!({"id": format!("s-{n}"), "started_at": "2026-11-22T10:00:00.000Z",
            "url": "https://app.example.com/"})
        })
        .collect();
    accepted(&post(
        server,
        "/ingest/web-sessions",
        &json!({"sessions": sessions}),
    ));
    // One trace per span, so the trace list has as many records as the span list.
    let spans: Vec<Value> = (0..RECORDS)
        .map(|n| json!({"trace_id": format!("0af7651916cd43dd8448eb211c80319{n}"), "span_id": format!("00000000000000a{n}"),
            "name": format!("span {n}"), "start_time": 0, "duration_ms": 5, "service": "web"}))
        .collect();
    accepted(&post(server, "/ingest/spans", &json!({"spans": spans})));
    wait_for("the events searchable", Duration::from_secs(10), || {
        let found = session.get(server, "/api/v1/errors").json();
        (found["items"].as_array().map_or(0, Vec::len) == RECORDS).then_some(())
    });

    // A channel whose receiver always fails: its test deliveries end as dead letters.
    let receiver = Receiver::start(|_| Answer::Status(503));
    let channel = create_channel(server, session, json!({"url": receiver.url("/")}));
    let channel_id = channel["id"].as_str().unwrap().to_string();
    for n in 1..RECORDS {
        create_channel(
            server,
            session,
            json!({"name": format!("channel {n}"), "url": receiver.url("/")}),
        );
    }
    let deliveries: Vec<String> = (0..RECORDS)
        .map(|_| send_test(server, session, &channel_id))
        .collect();
    for id in &deliveries {
        wait_state(server, session, id, "dead", Duration::from_secs(20));
    }

    // Agents (enrolment tokens come with them) and three ended shell sessions on the first.
    let mut agents = Vec::new();
    let mut agent_ids = Vec::new();
    for n in 0..RECORDS {
        let (process, agent) = online_agent(server, session, &format!("host-{n}"), &[]);
        agents.push(process);
        agent_ids.push(agent["id"].as_str().unwrap().to_string());
    }
    for _ in 0..RECORDS {
        let url = ticket(server, session, &agent_ids[0])["url"]
            .as_str()
            .unwrap()
            .to_string();
        runtime().block_on(async {
            let mut terminal = open_websocket(&url, None, None).await.expect("terminal");
            type_bytes(&mut terminal, "exit\n").await;
            read_close(&mut terminal).await;
        });
    }
    let shell_sessions = format!("/api/v1/agents/{}/sessions", agent_ids[0]);
    wait_for("the shell sessions listed", Duration::from_secs(10), || {
        let listed = session.get(server, &shell_sessions).json();
        (listed["items"].as_array().map_or(0, Vec::len) == RECORDS).then_some(())
    });

    // An error group's tags: service, url, browser and os.
    let group = session.get(server, "/api/v1/error-groups").json()["items"][0]["id"].clone();
    let ids = BTreeMap::from([
        (
            "/api/v1/agents/{id}/sessions".to_string(),
            agent_ids[0].clone(),
        ),
        (
            "/api/v1/error-groups/{id}/tags".to_string(),
            group.as_str().expect("a group").to_string(),
        ),
        ("/api/v1/channels/{id}/deliveries".to_string(), channel_id),
    ]);
    (ids, agents)
}

/// What tells two items of a list apart: the id, else the name or key, else the whole item.
fn identity(item: &Value) -> String {
    ["id", "name", "key"]
        .iter()
        .find_map(|field| item[field].as_str().map(str::to_string))
        .unwrap_or_else(|| item.to_string())
}

/// Walks `path` with `limit=1` and returns every item's identity, asserting the page size,
/// that no item shows twice and that the walk ends with a null `next_cursor`.
fn walk_one_by_one(server: &TestServer, session: &Session, path: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut url = format!("{path}?limit=1");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={}", urlencoding(cursor)));
        }
        let reply = session.get(server, &url);
        assert_eq!(reply.status, 200, "{url}: {}", text(&reply.body));
        let page = reply.json();
        let items = page["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{url}: items {page}"));
        assert!(
            items.len() <= 1,
            "{url} ignored limit=1: {} items",
            items.len()
        );
        for item in items {
            let id = identity(item);
            assert!(!seen.contains(&id), "{path}: {id} on two pages");
            seen.push(id);
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => {
                assert!(
                    page.get("next_cursor").is_some(),
                    "{url}: no next_cursor field"
                );
                return seen;
            }
        }
    }
    panic!("{path}: the walk did not end after {MAX_PAGES} pages")
}

/// Percent-encodes a cursor for the query string.
fn urlencoding(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[test]
fn every_list_route_pages_with_limit_and_cursor() {
    let server = server();
    add_user(&server, OWNER, "owner");
    let session = sign_in(&server, OWNER);
    let (ids, _agents) = make_records(&server, &session);

    let routes = list_routes(&server, &session);
    assert!(routes.len() >= 20, "too few list routes found: {routes:?}");
    let mut walked = BTreeSet::new();
    for route in &routes {
        // Routes with a path parameter get the id of a record made above.
        let path = match ids.get(route) {
            Some(id) => route.replace("{id}", id),
            None => route.clone(),
        };
        assert!(!path.contains('{'), "no record for the path of {route}");
        let everything = session.get(&server, &format!("{path}?limit=500")).json();
        let all: BTreeSet<String> = everything["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(identity)
            .collect();
        let paged = walk_one_by_one(&server, &session, &path);
        assert!(
            paged.len() >= RECORDS,
            "{path}: only {} items: {paged:?}",
            paged.len()
        );
        let paged_set: BTreeSet<String> = paged.into_iter().collect();
        assert_eq!(paged_set, all, "{path}: the walk and one big page differ");
        walked.insert(route.clone());
    }
    assert!(walked.contains("/api/v1/orgs/me/api-keys"), "{walked:?}");

    // The case that was reported: two asked for, two given, and the rest on the next page.
    let first = session
        .get(&server, "/api/v1/orgs/me/api-keys?limit=2")
        .json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2, "{first}");
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let second = session
        .get(
            &server,
            &format!(
                "/api/v1/orgs/me/api-keys?limit=2&cursor={}",
                urlencoding(cursor)
            ),
        )
        .json();
    assert_eq!(second["items"].as_array().unwrap().len(), 1, "{second}");
    assert!(second["next_cursor"].is_null());
}
