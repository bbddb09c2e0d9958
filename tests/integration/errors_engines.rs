//! One throw site reported by Chromium, Firefox and Safari (tests/fixtures/stacks/
//! cross-engine.json: Chromium's stack captured from the real browser, the others written
//! from the engines' documented formats) is one group through the real binary, with the
//! stack and, without in-app frames, with the engines' wordings of the message alone.

use serde_json::{Value, json};

use crate::ingest_support::{accepted, ingest_server, owner_key, post, read};

const ENGINES: [&str; 3] = ["chromium", "firefox", "webkit"];

fn site() -> Value {
    let text = include_str!("../fixtures/stacks/cross-engine.json");
    let cases: Vec<Value> = serde_json::from_str(text).expect("the fixture");
    cases[0].clone()
}

#[test]
fn one_throw_site_in_three_engines_is_one_group() {
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
    assert_eq!(listed.len(), 2, "{listed:#?}");
    let by_basis = |basis: &str| {
        listed
            .iter()
            .find(|group| group["fingerprint_basis"] == basis)
            .unwrap_or_else(|| panic!("a {basis} group in {listed:#?}"))
    };
    assert_eq!(by_basis("stack")["count"], 3);
    assert_eq!(by_basis("message")["count"], 3);
    let id = by_basis("stack")["id"].as_str().unwrap();
    let detail = read(&server, &key, &format!("/api/v1/error-groups/{id}"));
    assert_eq!(detail["count"], 3);
}
