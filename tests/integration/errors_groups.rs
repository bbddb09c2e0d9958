//! Error groups and source maps through the real binary: stacks parsed into frames, grouping
//! (numbers and ids in messages do not split a group; a different stack does), counts, users,
//! releases and the histogram, status changes and regression, and frames resolved through a
//! map produced by esbuild, both at ingest and on read for events that came before their map.

use reqwest::Method;
use serde_json::{Value, json};

use crate::http_basics::send;
use crate::ingest_support::{accepted, bearer, ingest_server, owner_key, post, read};

const STACK_A: &str = "TypeError: Cannot read properties of undefined (reading 'id')\n    at loadUser (https://shop.example.com/assets/app.3f9a1c2b.js:1:200)\n    at async render (https://shop.example.com/assets/app.3f9a1c2b.js:1:90)";
/// The same code in the next deployment: new host, hash and columns, same functions.
const STACK_A_NEXT: &str = "TypeError: Cannot read properties of undefined (reading 'id')\n    at loadUser (https://cdn.example.net/assets/app.77aa00ff.js?v=2:1:210)\n    at async render (https://cdn.example.net/assets/app.77aa00ff.js?v=2:1:95)";
const STACK_B: &str = "pay@https://shop.example.com/assets/app.3f9a1c2b.js:1:999\n@https://shop.example.com/assets/app.3f9a1c2b.js:1:10\n";

fn error(message: &str, stack: &str, release: &str, user: &str) -> Value {
    json!({"level": "error", "name": "TypeError", "message": message, "stack": stack,
        "url": "https://shop.example.com/cart", "release": release, "user_id": user,
        "service": "shop"})
}

fn groups(server: &crate::harness::TestServer, key: &str) -> Vec<Value> {
    read(server, key, "/api/v1/error-groups")["items"]
        .as_array()
        .expect("items")
        .clone()
}

#[test]
fn events_group_by_stack_and_groups_count_regress_and_change_status() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let batch = json!({"events": [
        error("user 42 not found", STACK_A, "1.0", "u-1"),
        error("user 7 not found", STACK_A_NEXT, "1.1", "u-2"),
        error("user 9 not found", STACK_A, "1.1", "u-1"),
        error("payment 0xdeadbeef failed", STACK_B, "1.1", "u-3"),
    ]});
    assert_eq!(
        accepted(&post(&server, "/ingest/web-errors", &batch))["accepted"],
        4
    );

    let listed = groups(&server, &key);
    assert_eq!(listed.len(), 2, "{listed:#?}");
    let a = listed
        .iter()
        .find(|g| g["count"] == 3)
        .expect("the stack A group");
    assert_eq!(a["users"], 2);
    assert_eq!(a["status"], "unresolved");
    assert_eq!(a["fingerprint_basis"], "stack");
    assert_eq!(a["culprit"], "loadUser (/assets/app.[hash].js)");
    assert!(a["id"].as_str().unwrap().starts_with("grp_"));

    let id = a["id"].as_str().unwrap();
    let detail = read(&server, &key, &format!("/api/v1/error-groups/{id}"));
    let releases: Vec<(&str, u64)> = detail["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["release"].as_str().unwrap(), r["count"].as_u64().unwrap()))
        .collect();
    assert!(
        releases.contains(&("1.0", 1)) && releases.contains(&("1.1", 2)),
        "{releases:?}"
    );
    let hours: u64 = detail["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["count"].as_u64().unwrap())
        .sum();
    assert_eq!(hours, 3);
    // Frames were derived from the stack, innermost first, with the async frame marked.
    let frames = &detail["latest_event"]["frames"];
    assert_eq!(frames[0]["function"], "loadUser");
    assert_eq!(frames[1]["async"], true);
    assert_eq!(detail["latest_event"]["group_id"], id);
    let events = read(&server, &key, &format!("/api/v1/errors?group={id}"));
    assert_eq!(events["items"].as_array().unwrap().len(), 3);

    // Resolve, then a new event reopens the group (regression); ignored stays ignored.
    let patch = |status: &str| {
        send(
            bearer(
                &server,
                &key,
                Method::PATCH,
                &format!("/api/v1/error-groups/{id}"),
            )
            .json(&json!({"status": status})),
        )
    };
    let resolved = patch("resolved");
    assert_eq!(resolved.status, 200);
    assert_eq!(resolved.json()["status"], "resolved");
    patch("closed").problem(400, "invalid_payload");
    let again = json!({"events": [error("user 1 not found", STACK_A, "1.2", "u-9")]});
    accepted(&post(&server, "/ingest/web-errors", &again));
    let detail = read(&server, &key, &format!("/api/v1/error-groups/{id}"));
    assert_eq!(
        (detail["status"].as_str(), detail["regressions"].as_u64()),
        (Some("unresolved"), Some(1))
    );
    assert_eq!(
        (detail["count"].as_u64(), detail["users"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(patch("ignored").status, 200);
    accepted(&post(&server, "/ingest/web-errors", &again));
    let listed = read(&server, &key, "/api/v1/error-groups?status=ignored");
    assert_eq!(listed["items"][0]["id"], id);
    assert_eq!(listed["items"][0]["count"], 5);
    send(bearer(
        &server,
        &key,
        Method::GET,
        "/api/v1/error-groups/grp_nope",
    ))
    .problem(404, "not_found");
}

#[test]
fn without_frames_the_masked_message_groups_and_a_client_fingerprint_wins() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let plain =
        |message: &str| json!({"level": "error", "message": message, "url": "https://a.test/"});
    let mut custom = plain("anything 1");
    custom["fingerprint"] = json!(["checkout-flow"]);
    let mut custom_too = plain("something else entirely");
    custom_too["fingerprint"] = json!(["checkout-flow"]);
    let batch = json!({"events": [plain("order 6b1e9f0a-2d4c-4f11-9a0e-3c2b1d0e5f77 timed out after 30s"),
        plain("order 0c2e9f0a-2d4c-4f11-9a0e-3c2b1d0e5f78 timed out after 31s"),
        plain("cart 'abc' is empty"), plain("cart 'xyz' is empty"), custom, custom_too]});
    accepted(&post(&server, "/ingest/web-errors", &batch));
    let mut counts: Vec<(String, u64)> = groups(&server, &key)
        .iter()
        .map(|g| {
            (
                g["fingerprint_basis"].as_str().unwrap().to_string(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("client".into(), 2),
            ("message".into(), 2),
            ("message".into(), 2)
        ]
    );
}

const MAP: &str = include_str!("../fixtures/sourcemaps/app.min.js.map");
const BUNDLE_STACK: &str = include_str!("../fixtures/sourcemaps/stack.txt");

#[test]
fn frames_resolve_through_an_esbuild_map_at_ingest_and_on_read() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let event = |release: &str| {
        json!({"level": "error", "message": "Cannot read properties of undefined (reading 'amount')",
            "name": "TypeError", "stack": BUNDLE_STACK, "url": "https://shop.example.com/",
            "release": release})
    };
    // Before its map: stored unresolved. A release 3.0 event of the same minified frames
    // shares the group, so that group keeps an event when the release 2.0 one moves out.
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [event("2.0"), event("3.0")]}),
    ));
    let first = |items: &Value, release: &str| {
        let items = items.as_array().unwrap();
        let found = items.iter().find(|e| e["release"] == release);
        found.unwrap().clone()
    };
    let before = read(&server, &key, "/api/v1/errors");
    assert!(
        first(&before["items"], "2.0")["frames"][0]
            .get("resolved")
            .is_none()
    );

    // The map is uploaded by path; the event read again is resolved on read.
    let upload = json!({"release": "2.0", "file": "/assets/app.min.js", "sourcemap": MAP});
    assert_eq!(post(&server, "/ingest/sourcemaps", &upload).status, 201);
    let after = first(&read(&server, &key, "/api/v1/errors")["items"], "2.0");
    let resolved = &after["frames"][0]["resolved"];
    assert_eq!(resolved["file"], "src/cart.js");
    assert_eq!(resolved["line"], 5);
    assert_eq!(resolved["function"], "total");
    assert!(
        resolved["context"]["line"]
            .as_str()
            .unwrap()
            .contains("item.price.amount")
    );
    assert_eq!(after["frames"][1]["resolved"]["function"], "checkout");

    // After its map: resolved at ingest (the newest 2.0 event); another release's map does not
    // apply.
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": [event("2.0")]}),
    ));
    let items = read(&server, &key, "/api/v1/errors")["items"].clone();
    let by_release = |release: &str| first(&items, release);
    assert_eq!(by_release("2.0")["frames"][0]["resolved"]["line"], 5);
    assert!(by_release("3.0")["frames"][0].get("resolved").is_none());
    // Grouped through the map where one exists: the release 2.0 events share a group (the first
    // is moved to it when the map arrives); the release 3.0 event keeps its minified frames' group.
    let other = by_release("3.0")["group_id"].clone();
    let mapped = crate::harness::wait_for(
        "the first event regrouped",
        std::time::Duration::from_secs(30),
        || {
            let items = read(&server, &key, "/api/v1/errors")["items"].clone();
            let groups: Vec<Value> = items
                .as_array()?
                .iter()
                .filter(|e| e["release"] == "2.0")
                .map(|e| e["group_id"].clone())
                .collect();
            (groups.len() == 2 && groups[0] == groups[1]).then(|| groups[0].clone())
        },
    );
    assert_ne!(mapped, other);
}

/// A group's events are recorded apart from the group's index until 4,096 wait, then moved
/// there together (a fold): the group's event list, its total and its tags read both, so
/// every event is listed once, newest first, across the fold, its pages and a restart.
#[test]
fn a_group_lists_every_event_once_across_the_fold() {
    let mut server = ingest_server(&[]);
    let key = owner_key(&server);
    // 4,300 events in two groups, one after the other: the 4,096th folds what waits.
    let mut sent = 0;
    for _ in 0..43 {
        let events: Vec<Value> = (0..100)
            .map(|n| match n % 2 {
                0 => error("user 1 not found", STACK_A, "1.0", "u-1"),
                _ => error("payment 1 failed", STACK_B, "1.0", "u-2"),
            })
            .collect();
        let batch = json!({ "events": events });
        sent += accepted(&post(&server, "/ingest/web-errors", &batch))["accepted"]
            .as_u64()
            .unwrap();
    }
    assert_eq!(sent, 4_300);
    let metrics = crate::harness::http()
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("lookout_group_event_folds_total 1"),
        "one fold happened"
    );

    let check = |server: &crate::harness::TestServer| {
        let listed = groups(server, &key);
        assert_eq!(listed.len(), 2, "{listed:#?}");
        for group in &listed {
            let id = group["id"].as_str().unwrap();
            let (mut ids, mut cursor) = (Vec::<String>::new(), None::<String>);
            loop {
                let mut path = format!("/api/v1/errors?group={id}&limit=500");
                if let Some(cursor) = &cursor {
                    path.push_str(&format!("&cursor={cursor}"));
                }
                let page = read(server, &key, &path);
                assert_eq!(page["total"], 2_150, "{id}");
                assert_eq!(page["total_is_estimate"], false);
                for item in page["items"].as_array().unwrap() {
                    assert_eq!(item["group_id"], id);
                    ids.push(item["id"].as_str().unwrap().to_string());
                }
                cursor = page["next_cursor"].as_str().map(str::to_string);
                if cursor.is_none() {
                    break;
                }
            }
            assert_eq!(ids.len(), 2_150, "every event of {id}");
            let mut newest_first = ids.clone();
            newest_first.sort_unstable_by(|a, b| b.cmp(a));
            newest_first.dedup();
            assert_eq!(ids, newest_first, "newest first, each once");
            let tags = read(server, &key, &format!("/api/v1/error-groups/{id}/tags"));
            assert_eq!(tags["sampled_events"], 2_150, "{tags}");
        }
    };
    check(&server);
    server.restart();
    check(&server);
}
