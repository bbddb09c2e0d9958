//! Engine normalisation tests: each spelling one engine or SDK uses, and the same throw site
//! as three real engines reported it (tests/fixtures/stacks/cross-engine.json).

use serde_json::{Value, json};

use super::*;
use crate::errors::fingerprint::{Basis, Inputs, fingerprint};
use crate::errors::stack;

#[test]
fn anonymous_spellings_are_one_empty_name() {
    for spelling in [
        "",
        "<anonymous>",
        "?",
        "Anonymous function",
        "anonymous",
        "Object.<anonymous>",
        "global code",
        "module code",
        "eval code",
        "render/<",
        "render/</<",
        "setTimeout handler*",
    ] {
        assert_eq!(function_key(spelling), "", "{spelling:?}");
    }
}

#[test]
fn method_and_prefix_spellings_are_the_bare_name() {
    let table = [
        ("Cart.checkout", "checkout"),
        ("Cart.prototype.checkout", "checkout"),
        ("Object.checkout", "checkout"),
        ("window.run", "run"),
        ("async checkout", "checkout"),
        ("new Cart", "Cart"),
        (
            "Function.executeUserEntryPoint [as runMain]",
            "executeUserEntryPoint",
        ),
        ("async*checkout", "checkout"),
        ("promise callback*checkout", "checkout"),
        ("outer/inner", "inner"),
        ("checkout", "checkout"),
    ];
    for (spelling, key) in table {
        assert_eq!(function_key(spelling), key, "{spelling:?}");
    }
}

#[test]
fn wrapper_and_eval_frames_are_recognised() {
    let wrappers = [
        json!({"file": "<anonymous>", "function": "Array.map"}),
        json!({"file": "[native code]", "function": "forEach"}),
        json!({"file": "self-hosted", "line": 1, "function": "map"}),
        json!({"file": "https://a.test/app.js", "line": 3, "eval": true}),
        json!({"file": "https://a.test/app.js", "line": 3, "function": "eval"}),
        json!({"file": "[native code]", "line": 1, "in_app": true}),
    ];
    for frame in wrappers {
        assert!(is_wrapper(&frame), "{frame}");
    }
    let own = json!({"file": "https://a.test/app.js", "line": 3, "function": "evaluate"});
    assert!(!is_wrapper(&own));
}

#[test]
fn async_continuations_end_the_synchronous_part() {
    for frame in [
        json!({"file": "a.js", "line": 1, "function": "f", "async": true}),
        json!({"file": "a.js", "line": 1, "function": "async f"}),
        json!({"file": "a.js", "line": 1, "function": "promise callback*f"}),
        json!({"file": "a.js", "line": 1, "function": "setTimeout handler*"}),
    ] {
        assert!(is_async_boundary(&frame), "{frame}");
    }
    let synchronous = json!({"file": "a.js", "line": 1, "function": "Cart.checkout"});
    assert!(!is_async_boundary(&synchronous));
}

#[test]
fn engine_wordings_of_one_mistake_share_a_key() {
    let table = [
        (
            "Cannot read properties of undefined (reading 'x')",
            "<read of undefined>",
        ),
        (
            "Uncaught TypeError: Cannot read properties of undefined (reading 'id')",
            "<read of undefined>",
        ),
        (
            "Cannot read property 'x' of undefined",
            "<read of undefined>",
        ),
        (
            "undefined is not an object (evaluating 'a.x')",
            "<read of undefined>",
        ),
        ("a is undefined", "<read of undefined>"),
        ("TypeError: a.b is undefined", "<read of undefined>"),
        (
            "can't access property \"x\", a is undefined",
            "<read of undefined>",
        ),
        (
            "Cannot read properties of null (reading 'x')",
            "<read of null>",
        ),
        ("null is not an object (evaluating 'a.x')", "<read of null>"),
        ("a is null", "<read of null>"),
        ("a.b is not a function", "<not a function>"),
        (
            "a.b is not a function. (In 'a.b()', 'a.b' is undefined)",
            "<not a function>",
        ),
        ("foo is not defined", "<not defined: foo>"),
        ("Can't find variable: foo", "<not defined: foo>"),
    ];
    for (message, key) in table {
        assert_eq!(message_key(message).as_deref(), Some(key), "{message}");
    }
    for other in [
        "the cart is empty",
        "x is not defined here",
        "price is undefined for item 3",
    ] {
        assert_eq!(message_key(other), None, "{other}");
    }
}

#[test]
fn message_prefixes_are_dropped() {
    assert_eq!(strip_message_prefix("Uncaught Error: boom"), "boom");
    assert_eq!(strip_message_prefix("TypeError: boom"), "boom");
    assert_eq!(strip_message_prefix("note: boom"), "note: boom");
}

fn cross_engine() -> Vec<Value> {
    let text = include_str!("../../tests/fixtures/stacks/cross-engine.json");
    serde_json::from_str::<Vec<Value>>(text).unwrap()
}

fn fingerprint_of(report: &Value, with_frames: bool) -> crate::errors::fingerprint::Fingerprint {
    let frames: Vec<Value> = match with_frames {
        true => stack::parse(report["stack"].as_str().unwrap())
            .iter()
            .map(stack::Frame::to_json)
            .collect(),
        false => Vec::new(),
    };
    fingerprint(&Inputs {
        client: None,
        name: report["name"].as_str(),
        frames: &frames,
        message: report["message"].as_str().unwrap(),
    })
}

#[test]
fn one_throw_site_is_one_fingerprint_where_the_engines_print_the_same_frames() {
    for case in cross_engine() {
        let engines = ["chromium", "firefox", "webkit"];
        let stacks: Vec<_> = engines
            .iter()
            .map(|engine| fingerprint_of(&case[engine], true))
            .collect();
        assert!(stacks.iter().all(|found| found.basis == Basis::Stack));
        // The captured stacks: Chromium and Firefox are one fingerprint. WebKit's lacks the
        // `checkout` frame (a proper tail call in strict code) and prints `window.run` without
        // a name, which no normalisation of names undoes (tests/fixtures/stacks/README.md).
        assert_eq!(stacks[0].hash, stacks[1].hash, "{stacks:?}");
        assert_ne!(stacks[0].hash, stacks[2].hash, "{stacks:?}");
        // Version 1 told them apart: the reason for version 2.
        let legacy: Vec<_> = stacks
            .iter()
            .map(|found| found.legacy.clone().unwrap_or_else(|| found.hash.clone()))
            .collect();
        assert_ne!(legacy[0], legacy[1]);
        // Without frames (no in-app code), the engines' wordings are one group too.
        let messages: Vec<_> = engines
            .iter()
            .map(|engine| fingerprint_of(&case[engine], false))
            .collect();
        assert!(messages.iter().all(|found| found.basis == Basis::Message));
        assert!(
            messages.iter().all(|found| found.hash == messages[0].hash),
            "{messages:?}"
        );
    }
}

#[test]
fn sentry_frames_of_the_site_match_the_parsed_stack() {
    // What @sentry/browser sends for the Chromium stack, as `compat/sentry_event.rs` maps it:
    // `?` dropped, explicit `in_app`, wrapper frames marked in-app by the SDK.
    let url = "http://127.0.0.1:8765";
    let frames = json!([
        {"file": format!("{url}/app.js"), "line": 3, "column": 74, "in_app": true},
        {"file": "<anonymous>", "function": "Array.map", "in_app": true},
        {"file": format!("{url}/app.js"), "line": 3, "column": 34, "function": "Cart.checkout", "in_app": true},
        {"file": format!("{url}/app.js"), "line": 6, "column": 29, "in_app": true},
        {"file": "<anonymous>", "function": "Array.map", "in_app": true},
        {"file": format!("{url}/app.js"), "line": 6, "column": 14, "function": "render", "in_app": true},
        {"file": format!("{url}/app.js"), "line": 9, "column": 9, "function": "window.run", "in_app": true},
        {"file": format!("{url}/page.html"), "line": 2, "column": 46, "in_app": true}
    ]);
    let sent = fingerprint(&Inputs {
        client: None,
        name: Some("TypeError"),
        frames: frames.as_array().unwrap(),
        message: "Cannot read properties of undefined (reading 'amount')",
    });
    let parsed = fingerprint_of(&cross_engine()[0]["firefox"], true);
    assert_eq!(sent.hash, parsed.hash);
}
