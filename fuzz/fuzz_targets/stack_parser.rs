//! Fuzz target for `lookout::errors::parse_stack`: any text, as a browser could send in an
//! error's `stack` field.
//!
//! Properties, beyond "never panics": at most `MAX_FRAMES` frames and no more than the text has
//! lines; every frame is made of the text's own pieces (file and function are substrings of one
//! line; the file is never blank, the function never empty), has a column only with a line, and
//! keeps its wire shape; and a frame with plain fields, printed again as V8 and as Gecko would print it, parses
//! back to itself (the round trips of the proptests in src/errors/stack_tests.rs, from
//! whatever frames the fuzzer reaches).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lookout::errors::{Frame, MAX_FRAMES, parse_stack as parse};

fuzz_target!(|data: &[u8]| {
    // The stack arrives inside a JSON string, so it is always UTF-8.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let frames = parse(text);
    assert!(frames.len() <= MAX_FRAMES, "{} frames", frames.len());
    assert!(frames.len() <= text.lines().count());
    for frame in &frames {
        check_fields(text, frame);
        check_wire_shape(frame);
        if is_plain(frame) {
            assert_eq!(
                parse(&as_v8_line(frame)),
                std::slice::from_ref(frame),
                "v8 round trip"
            );
            assert_eq!(
                parse(&as_gecko_line(frame)),
                std::slice::from_ref(frame),
                "gecko round trip"
            );
        }
    }
});

/// The parser only cuts lines into pieces: it never invents text, never joins lines, and never
/// keeps a frame without a file or with an empty function name.
fn check_fields(text: &str, frame: &Frame) {
    assert!(!frame.file.trim().is_empty(), "no file in {frame:?}");
    assert!(!frame.file.contains('\n'), "{frame:?}");
    assert!(text.contains(frame.file), "invented file {frame:?}");
    if let Some(function) = &frame.function {
        assert!(!function.is_empty(), "empty function in {frame:?}");
        assert!(!function.contains('\n'), "{frame:?}");
        assert!(text.contains(*function), "invented function {frame:?}");
    }
    assert!(
        frame.column.is_none() || frame.line.is_some(),
        "a column without a line: {frame:?}"
    );
}

/// `Frame::to_json` is what ingest stores: its fields mirror the frame's exactly.
fn check_wire_shape(frame: &Frame) {
    let json = frame.to_json();
    assert_eq!(json["file"].as_str(), Some(frame.file));
    assert_eq!(
        json.get("line").and_then(|v| v.as_u64()),
        frame.line.map(u64::from)
    );
    assert_eq!(
        json.get("column").and_then(|v| v.as_u64()),
        frame.column.map(u64::from)
    );
    assert_eq!(
        json.get("function").and_then(|v| v.as_str()),
        frame.function.as_deref()
    );
    assert_eq!(json.get("async").is_some(), frame.is_async);
    assert_eq!(json.get("eval").is_some(), frame.is_eval);
}

/// A frame whose fields a browser could print unambiguously: a full position, no white space,
/// parentheses or `@` in the names, a function other than the `async` keyword, and no eval.
fn is_plain(frame: &Frame) -> bool {
    let plain = |text: &str| {
        !text.is_empty()
            && !text
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '(' | ')' | '@'))
    };
    let plain_function = frame
        .function
        .as_deref()
        .is_none_or(|name| plain(name) && name != "async" && !name.starts_with("async*"));
    frame.line.is_some()
        && frame.column.is_some()
        && !frame.is_eval
        && plain(&frame.file)
        && plain_function
}

fn position(frame: &Frame) -> String {
    let (line, column) = (frame.line.unwrap_or(0), frame.column.unwrap_or(0));
    format!("{}:{line}:{column}", frame.file)
}

/// `    at [async ][function (]file:line:column[)]`.
fn as_v8_line(frame: &Frame) -> String {
    let prefix = if frame.is_async { "async " } else { "" };
    match &frame.function {
        Some(function) => format!("    at {prefix}{function} ({})", position(frame)),
        None => format!("    at {prefix}{}", position(frame)),
    }
}

/// `[async*][function]@file:line:column`.
fn as_gecko_line(frame: &Frame) -> String {
    let prefix = if frame.is_async { "async*" } else { "" };
    let function = frame.function.as_deref().unwrap_or("");
    format!("{prefix}{function}@{}", position(frame))
}
