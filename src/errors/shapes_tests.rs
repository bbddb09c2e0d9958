//! The fingerprints found by shape are those computed afresh, for every kind of event; what
//! differs only where a fingerprint does not look is found by shape; the cache stays bounded.

use serde_json::{Value, json};

use super::*;
// Marked so the arrow check (tests/integration/tidy.rs) reads it as test-only, as it is.
#[cfg(test)]
use crate::ingest::web_errors::parse_event;

const NOW: i64 = 1_795_348_800_000;

fn event(item: Value) -> ErrorEvent {
    let mut item = item;
    item["level"] = json!("error");
    item["url"] = json!("https://shop.example.com/cart");
    item["timestamp"] = json!(NOW);
    parse_event(&item.clone().into(), crate::clock::Timestamp(NOW), None).unwrap()
}

/// A V8 stack whose frames name `site`, at the given line.
fn v8(site: &str, line: u32) -> String {
    format!(
        "TypeError: boom {line}\n    at {site}Totals (https://shop.example.com/assets/app.4e1f9a2c.js:{line}:17)\n    \
         at Array.forEach (<anonymous>)\n    at {site}Render (https://shop.example.com/assets/app.4e1f9a2c.js:{}:3)\n    \
         at async run (https://shop.example.com/node_modules/react-dom.js?v=8c2d:1:2)",
        line + 40
    )
}

fn variety(site: &str) -> Vec<ErrorEvent> {
    vec![
        event(json!({"name": "TypeError", "message": "boom 1", "stack": v8(site, 10)})),
        event(json!({"name": "TypeError", "message": "boom 2", "stack": v8(site, 99)})),
        event(json!({"name": "RangeError", "message": "boom", "stack": v8(site, 10)})),
        // Gecko, with an eval frame and an async cause.
        event(
            json!({"name": "TypeError", "message": "x is undefined", "stack": format!(
            "{site}Totals@https://shop.example.com/app.js:3:9\neval@https://shop.example.com/app.js line 2 > eval:1:1\n\
             async*{site}Run@https://shop.example.com/app.js:9:1")}),
        ),
        // Only frames outside the application: the message decides.
        event(
            json!({"name": "Error", "message": format!("{site} could not load"),
            "stack": "Error\n    at f (https://cdn.example.com/node_modules/lib.js:1:1)"}),
        ),
        event(
            json!({"name": "Error", "message": format!("{site} could not save"),
            "stack": "Error\n    at f (https://cdn.example.com/node_modules/lib.js:1:1)"}),
        ),
        // Frames sent as JSON, with and without `in_app`.
        event(json!({"name": "TypeError", "message": "m", "frames": [
            {"file": "https://shop.example.com/a.js", "line": 1, "function": format!("{site}A")},
            {"file": "https://shop.example.com/b.js", "line": 2, "function": "b", "in_app": false}]})),
        event(json!({"name": "TypeError", "message": "m", "frames": [
            {"file": "https://shop.example.com/a.js", "line": 1, "function": format!("{site}A"), "in_app": false},
            {"file": "https://shop.example.com/b.js", "line": 2, "function": "b", "in_app": false}]})),
        // A client fingerprint, and no stack at all.
        event(json!({"name": "TypeError", "message": "m", "fingerprint": ["checkout", site]})),
        event(json!({"name": "TypeError", "message": format!("{site} 42 not found")})),
    ]
}

fn plain(found: Vec<Arc<Fingerprint>>) -> Vec<Fingerprint> {
    found.iter().map(|found| (**found).clone()).collect()
}

#[test]
fn found_by_shape_or_not_a_fingerprint_is_the_one_computed_afresh() {
    let events = variety("shapesEquality");
    let afresh: Vec<Fingerprint> = events.iter().map(fingerprint_of).collect();
    // Twice: the first time shapes are learned, the second they are found.
    assert_eq!(plain(fingerprints(&events)), afresh);
    assert_eq!(plain(fingerprints(&events)), afresh);
    // Events that differ only in lines and message share one fingerprint, and another name
    // does not.
    assert_eq!(afresh[0], afresh[1]);
    assert_ne!(afresh[0].hash, afresh[2].hash);
    assert_ne!(afresh[4].hash, afresh[5].hash);
}

#[test]
fn a_known_shape_is_found_not_computed() {
    let first = vec![event(json!({"name": "TypeError", "message": "a 1",
        "stack": v8("shapesFound", 10)}))];
    let again: Vec<ErrorEvent> = (0..5)
        .map(|n| {
            event(json!({"name": "TypeError", "message": format!("a {n}"),
                "stack": v8("shapesFound", 100 + n)}))
        })
        .collect();
    fingerprints(&first);
    let before = hits();
    let found = fingerprints(&again);
    assert!(hits() >= before + 5, "{} then {}", before, hits());
    assert!(
        found
            .iter()
            .all(|found| **found == fingerprint_of(&first[0]))
    );
}

#[test]
fn the_shapes_kept_stay_within_their_bound() {
    for round in 0..2_000 {
        fingerprints(&[event(json!({"name": "TypeError", "message": "m",
            "stack": v8(&format!("shapesBound{round}{}", "x".repeat(2_000)), 1)}))]);
        let shapes = SHAPES.lock().unwrap();
        assert!(shapes.bytes <= MAX_SHAPE_BYTES);
        assert!(shapes.known.len() * ENTRY_OVERHEAD <= MAX_SHAPE_BYTES);
    }
}

#[test]
fn a_shape_longer_than_the_longest_kept_is_computed_each_time() {
    let frames: Vec<Value> = (0..400)
        .map(|n| {
            json!({"file": format!("https://shop.example.com/{}.js", "f".repeat(200)),
            "line": n + 1, "function": format!("shapesLong{n}")})
        })
        .collect();
    let long = event(json!({"name": "TypeError", "message": "m", "frames": frames}));
    // Twice: right both times, and never remembered.
    for _ in 0..2 {
        assert_eq!(
            plain(fingerprints(std::slice::from_ref(&long))),
            vec![fingerprint_of(&long)]
        );
    }
    let mut key = Vec::new();
    assert!(
        shape_of(&long, &mut key),
        "frames without a resolved one have a shape"
    );
    assert!(key.len() > MAX_SHAPE_KEY);
    assert!(!SHAPES.lock().unwrap().known.contains_key(key.as_slice()));
}
