//! One throw site as real Chromium, Firefox and WebKit reported it (tests/fixtures/stacks/
//! cross-engine.json, captured by tests/fixtures/stacks/capture/capture.sh) through the real
//! binary: Chromium's and Firefox's stacks are one group, WebKit's (without the frame a proper
//! tail call removed, see the fixtures' README) another, and, without in-app frames, the
//! engines' three wordings of the message are one group. The minified-bundle case, where all
//! three engines are one group, is `errors_regroup`.

use serde_json::{Value, json};

use crate::ingest_support::{accepted, ingest_server, owner_key, post, read};

const ENGINES: [&str; 3] = ["chromium", "firefox", "webkit"];

fn site() -> Value {
    let text = include_str!("../fixtures/stacks/cross-engine.json");
    let cases: Vec<Value> = serde_json::from_str(text).expect("the fixture");
    cases[0].clone()
}

#[test]
fn one_throw_site_in_three_real_engines_groups_as_their_frames_allow() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let site = site();
    let with_stacks: Vec<Value> = ENGINES
        .iter()
        .map(|engine| {
            let report = &site[engine];
            json!({"level": "error", "name": report["name"], "message": report["message"],
                "stack": report["stack"], "url": "http://127.0.0.1:8765/page.html",
                "service": "shop", "tags": {"engine": engine}})
        })
        .collect();
    // The same mistake in a page with no script of its own: only the message is sent.
    let messages_only: Vec<Value> = ENGINES
        .iter()
        .map(|engine| {
            json!({"level": "error", "name": "TypeError", "message": site[engine]["message"],
                "url": "http://127.0.0.1:8765/inline.html",
                "service": "inline", "tags": {"engine": engine}})
        })
        .collect();
    let events: Vec<Value> = with_stacks.into_iter().chain(messages_only).collect();
    let sent = post(&server, "/ingest/web-errors", &json!({ "events": events }));
    assert_eq!(accepted(&sent)["accepted"], 6);

    let listed = read(&server, &key, "/api/v1/error-groups")["items"]
        .as_array()
        .expect("items")
        .clone();
    assert_eq!(listed.len(), 3, "{listed:#?}");
    let by_basis = |basis: &str, count: u64| {
        listed
            .iter()
            .find(|group| group["fingerprint_basis"] == basis && group["count"] == count)
            .unwrap_or_else(|| panic!("a {basis} group of {count} in {listed:#?}"))
    };
    assert_eq!(by_basis("message", 3)["service"], "inline");
    let chromium_and_firefox = by_basis("stack", 2)["id"].as_str().unwrap();
    let webkit = by_basis("stack", 1)["id"].as_str().unwrap();
    let engines_of = |group: &str| {
        let events = read(&server, &key, &format!("/api/v1/errors?group={group}"));
        let mut engines: Vec<String> = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["tags"]["engine"].as_str().unwrap().to_string())
            .collect();
        engines.sort();
        engines
    };
    assert_eq!(engines_of(chromium_and_firefox), ["chromium", "firefox"]);
    assert_eq!(engines_of(webkit), ["webkit"]);
}
