//! Stack parser tests: every committed fixture (tests/fixtures/stacks) read to the expected
//! frames, and properties over generated frames and arbitrary text.

use proptest::prelude::*;
use serde_json::Value;

use super::*;

fn run_fixture(name: &str, text: &str) {
    let cases: Vec<Value> = serde_json::from_str(text).expect("fixture is JSON");
    assert!(!cases.is_empty(), "{name} has no cases");
    for case in cases {
        let stack = case["stack"].as_str().expect("stack");
        let frames: Vec<Value> = parse(stack).iter().map(Frame::to_json).collect();
        assert_eq!(
            Value::Array(frames),
            case["frames"],
            "{name}: {}",
            case["name"]
        );
    }
}

#[test]
fn v8_fixtures() {
    run_fixture("v8", include_str!("../../tests/fixtures/stacks/v8.json"));
}

#[test]
fn firefox_fixtures() {
    run_fixture(
        "firefox",
        include_str!("../../tests/fixtures/stacks/firefox.json"),
    );
}

#[test]
fn safari_fixtures() {
    run_fixture(
        "safari",
        include_str!("../../tests/fixtures/stacks/safari.json"),
    );
}

#[test]
fn odd_input_is_skipped_not_misread() {
    let table: &[(&str, usize)] = &[
        ("", 0),
        ("\n\n", 0),
        ("Error: nothing here", 0),
        ("at ", 0),
        ("    at f ()", 0),
        ("    at f (", 1),
        ("    at f ())", 1),
        ("@", 0),
        ("f@", 0),
        ("eval code", 0),
        ("x line 3 > eval", 1),
        // Found by fuzzing: these were frames with an empty or blank file.
        ("f@ line 3 > eval", 0),
        ("f@  line 3 > eval", 0),
        ("    at f ( :1:2)", 0),
        ("    at eval (eval at g ( :1:2), <anonymous>:1:1)", 0),
    ];
    for (stack, count) in table {
        assert_eq!(parse(stack).len(), *count, "{stack:?}");
    }
    let many = "    at f (https://a.test/a.js:1:1)\n".repeat(MAX_FRAMES * 2);
    assert_eq!(parse(&many).len(), MAX_FRAMES);
}

fn url() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "https://app.test/",
            "http://localhost:8080/",
            "webpack:///./",
            "blob:https://app.test/",
        ]),
        "[a-z0-9_.-]{1,12}",
        prop::option::of("\\?[a-z0-9=&]{1,8}"),
    )
        .prop_map(|(origin, path, query)| format!("{origin}{path}.js{}", query.unwrap_or_default()))
}

fn function() -> impl Strategy<Value = String> {
    "[A-Za-z_$][A-Za-z0-9_$.<>]{0,16}"
        .prop_filter("`async` is read as the keyword", |name| name != "async")
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics_and_is_bounded(text in "\\PC{0,400}") {
        prop_assert!(parse(&text).len() <= MAX_FRAMES);
    }

    #[test]
    fn lines_of_frame_like_pieces_never_panic(
        lines in prop::collection::vec("(at |async |@|\\(|\\)|:|[0-9]{1,3}|eval at | line | > eval|[a-z/.]{1,5}){0,12}", 0..20)
    ) {
        let _ = parse(&lines.join("\n"));
    }

    #[test]
    fn v8_frames_round_trip(
        frames in prop::collection::vec((prop::option::of(function()), url(), 1u32..100_000, 1u32..100_000, any::<bool>()), 1..20)
    ) {
        let mut stack = String::from("Error: message with (parens) and at words");
        for (function, url, line, column, is_async) in &frames {
            let prefix = if *is_async && function.is_some() { "async " } else { "" };
            match function {
                Some(name) => stack.push_str(&format!("\n    at {prefix}{name} ({url}:{line}:{column})")),
                None => stack.push_str(&format!("\n    at {url}:{line}:{column}")),
            }
        }
        let parsed = parse(&stack);
        prop_assert_eq!(parsed.len(), frames.len());
        for (frame, (function, url, line, column, is_async)) in parsed.iter().zip(&frames) {
            prop_assert_eq!(&frame.file, url);
            prop_assert_eq!(frame.line, Some(*line));
            prop_assert_eq!(frame.column, Some(*column));
            prop_assert_eq!(frame.function, function.as_deref());
            prop_assert_eq!(frame.is_async, *is_async && function.is_some());
        }
    }

    #[test]
    fn gecko_frames_round_trip(
        frames in prop::collection::vec((prop::option::of(function()), url(), 1u32..100_000, 1u32..100_000), 1..20)
    ) {
        let stack: String = frames
            .iter()
            .map(|(function, url, line, column)| {
                format!("{}@{url}:{line}:{column}\n", function.as_deref().unwrap_or(""))
            })
            .collect();
        let parsed = parse(&stack);
        prop_assert_eq!(parsed.len(), frames.len());
        for (frame, (function, url, line, column)) in parsed.iter().zip(&frames) {
            prop_assert_eq!(&frame.file, url);
            prop_assert_eq!((frame.line, frame.column), (Some(*line), Some(*column)));
            prop_assert_eq!(frame.function, function.as_deref());
        }
    }
}
