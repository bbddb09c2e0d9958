//! Grouping on source-mapped frames, through the real binary, with the stacks real Chromium,
//! Firefox and WebKit printed for one throw site of a minified bundle
//! (tests/fixtures/stacks/real-engines.json, captured by tests/fixtures/stacks/capture/):
//! one group with or without the map; an event that arrives after its map is grouped by its
//! original functions; events stored before their map are moved to that group when the map
//! arrives, the emptied groups merged into it and their ids answering for it.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{TestServer, wait_for};
use crate::http_basics::send;
use crate::ingest_support::{accepted, bearer, ingest_server, owner_key, post, read};

const ENGINES: [&str; 3] = ["chromium", "firefox", "webkit"];
const MAP: &str = include_str!("../fixtures/stacks/real-engines.min.js.map");
const WAIT: Duration = Duration::from_secs(30);

fn captured() -> Value {
    serde_json::from_str(include_str!("../fixtures/stacks/real-engines.json")).expect("fixture")
}

/// The three engines' reports as events of `release`, the bundle served from `path` (the
/// captured stacks name `/assets/app.min.js`).
fn reports(release: &str, path: &str) -> Vec<Value> {
    let captured = captured();
    ENGINES
        .iter()
        .map(|engine| {
            let report = &captured["engines"][engine];
            let stack = report["stack"]
                .as_str()
                .unwrap()
                .replace("/assets/app.min.js", path);
            json!({"level": "error", "name": report["name"], "message": report["message"],
                "stack": stack, "url": captured["url"], "release": release,
                "service": "shop", "tags": {"engine": engine}})
        })
        .collect()
}

fn send_events(server: &TestServer, events: Vec<Value>) {
    let count = events.len();
    let sent = post(server, "/ingest/web-errors", &json!({ "events": events }));
    assert_eq!(accepted(&sent)["accepted"], count);
}

fn upload_map(server: &TestServer, release: &str, file: &str) {
    let upload = json!({"release": release, "file": file, "sourcemap": MAP});
    assert_eq!(post(server, "/ingest/sourcemaps", &upload).status, 201);
}

fn groups(server: &TestServer, key: &str) -> Vec<Value> {
    read(server, key, "/api/v1/error-groups")["items"]
        .as_array()
        .expect("items")
        .clone()
}

/// The groups once the list holds exactly `counts` (in any order).
fn groups_counting(server: &TestServer, key: &str, counts: &[u64]) -> Vec<Value> {
    let mut wanted = counts.to_vec();
    wanted.sort_unstable();
    wait_for(&format!("groups of {counts:?}"), WAIT, || {
        let listed = groups(server, key);
        let mut found: Vec<u64> = listed.iter().filter_map(|g| g["count"].as_u64()).collect();
        found.sort_unstable();
        (found == wanted).then_some(listed)
    })
}

#[test]
fn real_engine_stacks_are_one_group_with_and_without_their_map() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    // Without a map: the engine-neutral rule over the minified frames.
    send_events(&server, reports("1.0", "/assets/app.min.js"));
    let without = groups_counting(&server, &key, &[3]);
    assert_eq!(without[0]["fingerprint_basis"], "stack");

    // With the map uploaded first, the events resolve at ingest and group by their original
    // functions: another fingerprint, one group for the three engines.
    upload_map(&server, "2.0", "http://127.0.0.1:8765/assets/app.min.js");
    send_events(&server, reports("2.0", "/assets/app.min.js"));
    let listed = groups_counting(&server, &key, &[3, 3]);
    let mapped = listed
        .iter()
        .find(|group| group["id"] != without[0]["id"])
        .expect("the release 2.0 group");
    assert_ne!(mapped["fingerprint"], without[0]["fingerprint"]);
    assert_eq!(mapped["culprit"], "lineTotal (../src/cart.js)");
    let events = read(
        &server,
        &key,
        &format!("/api/v1/errors?group={}", mapped["id"].as_str().unwrap()),
    );
    for event in events["items"].as_array().unwrap() {
        assert_eq!(event["release"], "2.0");
        assert_eq!(event["frames"][0]["resolved"]["function"], "lineTotal");
    }
}

#[test]
fn events_stored_before_their_map_are_regrouped_when_it_arrives() {
    let mut server = ingest_server(&[]);
    let key = owner_key(&server);
    // The same bundle served from two paths: two groups of three while no map resolves them.
    send_events(&server, reports("3.0", "/assets/app.min.js"));
    send_events(&server, reports("3.0", "/static/app.min.js"));
    let before = groups_counting(&server, &key, &[3, 3]);
    let id_serving = |path: &str| {
        let group = before
            .iter()
            .find(|group| group["culprit"].as_str().is_some_and(|c| c.contains(path)))
            .unwrap_or_else(|| panic!("the {path} group in {before:#?}"));
        group["id"].as_str().unwrap().to_string()
    };
    let (assets, statics) = (id_serving("/assets/"), id_serving("/static/"));

    // The map of one path moves its three events to the source-mapped group.
    upload_map(&server, "3.0", "http://127.0.0.1:8765/assets/app.min.js");
    let survivor = wait_for("the /assets/ group merged", WAIT, || {
        let detail = read(&server, &key, &format!("/api/v1/error-groups/{assets}"));
        (detail["id"] != assets.as_str()).then(|| detail["id"].as_str().unwrap().to_string())
    });
    let halfway = groups_counting(&server, &key, &[3, 3]);
    assert!(halfway.iter().any(|group| group["id"] == survivor.as_str()));
    assert!(halfway.iter().all(|group| group["id"] != assets.as_str()));

    // The other path's map: one group of six, both old ids answer for it.
    upload_map(&server, "3.0", "/static/app.min.js");
    let after = groups_counting(&server, &key, &[6]);
    assert_eq!(after[0]["id"], survivor.as_str());
    assert_eq!(after[0]["culprit"], "lineTotal (../src/cart.js)");
    for old in [&assets, &statics] {
        let detail = read(&server, &key, &format!("/api/v1/error-groups/{old}"));
        assert_eq!(
            (detail["id"].as_str(), detail["count"].as_u64()),
            (Some(survivor.as_str()), Some(6))
        );
        let events = read(&server, &key, &format!("/api/v1/errors?group={old}"));
        assert_eq!(events["items"].as_array().unwrap().len(), 6);
        let tags = read(&server, &key, &format!("/api/v1/error-groups/{old}/tags"));
        assert_eq!(tags["sampled_events"], 6);
    }
    let detail = read(&server, &key, &format!("/api/v1/error-groups/{survivor}"));
    assert_eq!(detail["releases"][0]["count"], 6);
    let events = read(&server, &key, &format!("/api/v1/errors?group={survivor}"));
    for event in events["items"].as_array().unwrap() {
        assert_eq!(event["group_id"], survivor.as_str());
        assert!(event["frames"][0]["resolved"].is_object(), "{event:#}");
    }

    // Search agrees: every event is found under the surviving group, none under the old ones.
    let searched = |group: &str| {
        read(
            &server,
            &key,
            &format!("/api/v1/errors?q=release:3.0&group={group}"),
        )["total"]
            .as_u64()
    };
    wait_for("search under the surviving group", WAIT, || {
        (searched(&survivor) == Some(6)).then_some(())
    });
    assert_eq!(
        searched(&assets),
        Some(6),
        "an old id searches its survivor"
    );

    // A status change through an old id changes the surviving group; all of it survives a restart.
    let patched = send(
        bearer(
            &server,
            &key,
            Method::PATCH,
            &format!("/api/v1/error-groups/{statics}"),
        )
        .json(&json!({"status": "resolved"})),
    );
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["id"], survivor.as_str());
    // In a bulk change an old id and the survivor's are one group, changed once.
    let bulk = send(
        bearer(&server, &key, Method::PATCH, "/api/v1/error-groups")
            .json(&json!({"ids": [assets, survivor], "status": "ignored"})),
    );
    assert_eq!(bulk.status, 200);
    assert_eq!(bulk.json()["updated"], 1);
    assert_eq!(bulk.json()["items"].as_array().unwrap().len(), 1);
    server.restart();
    let detail = read(&server, &key, &format!("/api/v1/error-groups/{assets}"));
    assert_eq!(
        (detail["id"].as_str(), detail["status"].as_str()),
        (Some(survivor.as_str()), Some("ignored"))
    );
    assert_eq!(groups(&server, &key).len(), 1);
}
