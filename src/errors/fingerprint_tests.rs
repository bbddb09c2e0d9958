//! Fingerprint tests: what splits a group and what does not.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn of(name: Option<&str>, frames: &Value, message: &str) -> Fingerprint {
    fingerprint(&Inputs {
        client: None,
        name,
        frames: frames.as_array().unwrap(),
        message,
    })
}

#[test]
fn files_lose_origin_query_and_content_hash() {
    let table = [
        (
            "https://shop.example.com/assets/app.3f9a1c2b.js",
            "/assets/app.[hash].js",
        ),
        (
            "https://cdn.example.net/assets/app.77aa00ff.js?v=2#x",
            "/assets/app.[hash].js",
        ),
        (
            "http://localhost:5173/src/index-BxVz9a3K.js",
            "/src/index-[hash].js",
        ),
        (
            "webpack:///./src/components/Cart.jsx?1f2e",
            "/./src/components/Cart.jsx",
        ),
        ("blob:https://shop.example.com/6b1e9f0a-2d4c-4f11", "blob:"),
        ("app.js", "app.js"),
        ("/static/js/main.chunk.js", "/static/js/main.chunk.js"),
        ("https://shop.example.com", ""),
    ];
    for (file, normalised) in table {
        assert_eq!(normalise_file(file), normalised, "{file}");
    }
}

#[test]
fn functions_lose_engine_decorations() {
    let table = [
        ("async loadCart", "loadCart"),
        (
            "Function.executeUserEntryPoint [as runMain]",
            "Function.executeUserEntryPoint",
        ),
        ("render/<", "render"),
        ("render/</<", "render"),
        ("Cart.pay", "Cart.pay"),
    ];
    for (function, normalised) in table {
        assert_eq!(normalise_function(function), normalised, "{function}");
    }
}

#[test]
fn messages_mask_numbers_hex_and_quotes() {
    let table = [
        ("user 42 not found", "user <n> not found"),
        ("id 0xdeadBEEF failed", "id <hex> failed"),
        (
            "order 6b1e9f0a-2d4c-4f11-9a0e-3c2b1d0e5f77 gone",
            "order <hex> gone",
        ),
        (
            "Cannot read properties of undefined (reading 'total')",
            "Cannot read properties of undefined (reading <quoted>)",
        ),
        (
            "unexpected token \"}\" at 3:14",
            "unexpected token <quoted> at <n>:<n>",
        ),
        ("it's open", "it's open"),
        (
            "timed out after 30s (500ms budget)",
            "timed out after <n>s (<n>ms budget)",
        ),
        ("v2 of abc123", "v2 of abc123"),
        ("", ""),
    ];
    for (message, masked) in table {
        assert_eq!(mask_message(message), masked, "{message}");
    }
}

#[test]
fn in_app_excludes_native_dependencies_and_extensions() {
    let table = [
        (json!({"file": "https://a.test/app.js", "line": 1}), true),
        (json!({"file": "https://a.test/app.js"}), false),
        (json!({"file": "[native code]"}), false),
        (
            json!({"file": "https://a.test/node_modules/react/index.js", "line": 1}),
            false,
        ),
        (
            json!({"file": "chrome-extension://abc/content.js", "line": 1}),
            false,
        ),
        (json!({"file": "node:internal/x", "line": 1}), false),
        (
            json!({"file": "https://a.test/vendor.js", "line": 1, "in_app": false}),
            false,
        ),
        (json!({"line": 1}), false),
    ];
    for (frame, in_app) in table {
        assert_eq!(is_in_app(&frame), in_app, "{frame}");
    }
}

#[test]
fn the_client_fingerprint_wins_then_the_stack_then_the_message() {
    let frames = json!([{"file": "https://a.test/app.1a2b3c4d.js", "line": 1, "column": 5, "function": "pay"}]);
    let client = [json!("checkout")];
    let with_client = fingerprint(&Inputs {
        client: Some(&client),
        name: Some("TypeError"),
        frames: frames.as_array().unwrap(),
        message: "m",
    });
    assert_eq!(with_client.basis, Basis::Client);
    let stack = of(Some("TypeError"), &frames, "m 1");
    assert_eq!(stack.basis, Basis::Stack);
    assert_eq!(stack.hash.len(), 32);
    // The message does not enter a stack fingerprint; lines, columns and deployments do not either.
    let moved = json!([{"file": "https://b.test/app.9f8e7d6c.js?v=3", "line": 9, "column": 1, "function": "pay"}]);
    assert_eq!(of(Some("TypeError"), &moved, "other 2"), stack);
    // A different function, file or name is a different group.
    let other = json!([{"file": "https://a.test/app.js", "line": 1, "function": "refund"}]);
    assert_ne!(of(Some("TypeError"), &other, "m"), stack);
    assert_ne!(of(Some("RangeError"), &frames, "m"), stack);
    // Without in-app frames the masked message decides.
    let native = json!([{"file": "[native code]", "function": "forEach"}]);
    let by_message = of(None, &native, "user 42 not found");
    assert_eq!(by_message.basis, Basis::Message);
    assert_eq!(of(None, &json!([]), "user 7 not found"), by_message);
    assert_ne!(of(None, &json!([]), "user 7 was deleted"), by_message);
}

proptest! {
    #[test]
    fn numbers_never_split_a_message_group(a in 0u64..u64::MAX, b in 0u64..u64::MAX, word in "[a-z]{1,10}") {
        let first = of(None, &json!([]), &format!("{word} {a} failed"));
        let second = of(None, &json!([]), &format!("{word} {b} failed"));
        prop_assert_eq!(first, second);
    }

    #[test]
    fn any_text_masks_without_panic(text in "\\PC{0,200}") {
        let _ = mask_message(&text);
        let _ = normalise_file(&text);
        let _ = normalise_function(&text);
    }
}

/// A minified frame as an engine printed it, resolved (or not) through its source map.
fn minified(function: &str, column: u64, resolved: Option<(&str, &str, u64)>) -> Value {
    let mut frame = json!({
        "file": "https://shop.example.com/assets/app.3f9a1c2b.js",
        "line": 1,
        "column": column,
        "function": function,
    });
    if let Some((file, function, line)) = resolved {
        frame["resolved"] = json!({"file": file, "line": line, "column": 3, "function": function});
    }
    frame
}

#[test]
fn resolved_frames_group_by_original_file_and_function() {
    // Two engines name the minified functions differently; the map names them alike.
    let chromium = json!([
        minified("Object.t", 120, Some(("../src/cart.js", "total", 5))),
        minified("n", 301, Some(("../src/cart.js", "checkout", 11))),
    ]);
    let firefox = json!([
        minified("t", 121, Some(("../src/cart.js", "total", 5))),
        minified("n/<", 300, Some(("../src/cart.js", "checkout", 12))),
    ]);
    let (chromium, firefox) = (
        of(Some("TypeError"), &chromium, "x"),
        of(Some("TypeError"), &firefox, "y"),
    );
    assert_eq!(chromium.hash, firefox.hash);
    assert_eq!((chromium.basis, chromium.legacy), (Basis::Stack, None));
    // Another original function is another group, whatever the minified names.
    let elsewhere = json!([minified(
        "Object.t",
        120,
        Some(("../src/cart.js", "refund", 5))
    )]);
    assert_ne!(of(Some("TypeError"), &elsewhere, "x").hash, firefox.hash);
}

#[test]
fn unresolved_frames_keep_the_version_2_fingerprint() {
    let unresolved = json!([minified("t", 120, None), minified("n", 301, None)]);
    let found = of(Some("TypeError"), &unresolved, "x");
    let version_2 = engine_neutral(
        &Inputs {
            client: None,
            name: Some("TypeError"),
            frames: unresolved.as_array().unwrap(),
            message: "x",
        },
        |frame| Cow::Borrowed(frame),
    );
    assert_eq!(found.hash, version_2.hash);
    let resolved = json!([
        minified("t", 120, Some(("../src/cart.js", "total", 5))),
        minified("n", 301, Some(("../src/cart.js", "checkout", 11))),
    ]);
    assert_ne!(of(Some("TypeError"), &resolved, "x").hash, found.hash);
}

#[test]
fn a_resolved_frame_in_a_dependency_stays_out() {
    let frames = json!([
        minified("e", 10, Some(("../node_modules/lib/index.js", "boom", 2))),
        minified("t", 120, Some(("../src/cart.js", "total", 5))),
    ]);
    let only_app = json!([minified("t", 120, Some(("../src/cart.js", "total", 5)))]);
    assert_eq!(of(None, &frames, "x").hash, of(None, &only_app, "x").hash);
}
