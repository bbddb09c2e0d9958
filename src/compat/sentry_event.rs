//! A Sentry event (an envelope's `event` item or a `/store/` body) read into the item of
//! `/ingest/web-errors` (CONTRACT section 3), which ingest then scrubs, checks and groups.
//!
//! Invariants: pure and total (no input panics, anything missing stays missing so the native
//! checks name it); frames are turned innermost first, as native stacks are, with
//! `file`/`line`/`column`/`function`/`in_app`, so the same throw site reported by a Sentry SDK
//! and by Lookout's SDK gets the same fingerprint; a frame whose file is the `code_file` of a
//! `sourcemap` image of `debug_meta` carries that image's `debug_id` (normalised), which
//! source map resolution tries first; Sentry's `{{ default }}` fingerprint means Lookout's own
//! grouping.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// The most `debug_meta` images read from one event.
const MAX_DEBUG_IMAGES: usize = 256;

/// What a server SDK's event (no request URL, no transaction) gets as its `url`.
pub const NO_URL: &str = "(none)";

/// The native error item of a Sentry event.
pub fn error_item(event: &Map<String, Value>) -> Value {
    let exception = main_exception(event);
    let mut item = Map::new();
    let (level, original_level) = level(event.get("level").and_then(Value::as_str));
    item.insert("level".into(), json!(level));
    let name = exception.and_then(|e| text(e.get("type")));
    let message = exception
        .and_then(|e| text(e.get("value")))
        .or_else(|| message_text(event))
        .or_else(|| name.clone())
        .unwrap_or_else(|| "(no message)".to_string());
    item.insert("message".into(), json!(message));
    let images = debug_ids(event);
    let frames = exception
        .and_then(|e| e.get("stacktrace"))
        .or_else(|| event.get("stacktrace"))
        .map(|stacktrace| frames(stacktrace, &images))
        .unwrap_or_default();
    if !frames.is_empty() {
        item.insert(
            "stack".into(),
            json!(stack_text(name.as_deref(), &message, &frames)),
        );
        item.insert("frames".into(), Value::Array(frames));
    }
    if let Some(name) = name {
        item.insert("name".into(), json!(name));
    }
    let request = event.get("request").and_then(Value::as_object);
    let url = request
        .and_then(|r| text(r.get("url")))
        .or_else(|| text(event.get("transaction")))
        .unwrap_or_else(|| NO_URL.to_string());
    item.insert("url".into(), json!(url));
    if let Some(agent) = request.and_then(|r| header(r.get("headers"), "user-agent")) {
        item.insert("user_agent".into(), json!(agent));
    }
    copy_text(event, &mut item, "release", "release");
    copy_text(event, &mut item, "environment", "environment");
    copy_text(event, &mut item, "event_id", "event_id");
    if let Some(user) = event.get("user").and_then(Value::as_object) {
        let id = ["id", "username", "email"]
            .iter()
            .find_map(|field| scalar_text(user.get(*field)));
        if let Some(id) = id {
            item.insert("user_id".into(), json!(id));
        }
    }
    if let Some(timestamp) = event.get("timestamp").and_then(timestamp_value) {
        item.insert("timestamp".into(), timestamp);
    }
    let mut tags = tags(event.get("tags"));
    if let Some(service) = tags.get("service").and_then(Value::as_str) {
        item.insert("service".into(), json!(service));
    }
    if let Some(sdk) = event.get("sdk").and_then(|sdk| text(sdk.get("name"))) {
        tags.insert("sdk".into(), json!(sdk));
    }
    if let Some(original) = original_level {
        tags.insert("sentry.level".into(), json!(original));
    }
    item.insert("tags".into(), Value::Object(tags));
    if let Some(fingerprint) = fingerprint(event.get("fingerprint")) {
        item.insert("fingerprint".into(), fingerprint);
    }
    if let Some(crumbs) = breadcrumbs(event.get("breadcrumbs")) {
        item.insert("breadcrumbs".into(), crumbs);
    }
    Value::Object(item)
}

/// The exception the event is about: the last of `exception.values` (Sentry lists chained
/// causes first).
fn main_exception(event: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let exception = event.get("exception")?;
    let values = exception.get("values").unwrap_or(exception).as_array()?;
    values.iter().rev().find_map(Value::as_object)
}

/// Native levels are `error` and `warning`: `fatal` is an error, everything else (`info`,
/// `debug`, `log`) a warning; a level changed on the way is kept as a tag.
fn level(sent: Option<&str>) -> (&'static str, Option<String>) {
    match sent {
        None | Some("error") => ("error", None),
        Some("warning") => ("warning", None),
        Some("fatal") => ("error", Some("fatal".into())),
        Some(other) => ("warning", Some(other.chars().take(32).collect())),
    }
}

/// `message` as text or `{formatted|message}`, else `logentry`'s.
fn message_text(event: &Map<String, Value>) -> Option<String> {
    let formatted =
        |value: &Value| text(value.get("formatted")).or_else(|| text(value.get("message")));
    match event.get("message") {
        Some(Value::String(text)) if !text.is_empty() => return Some(text.clone()),
        Some(value @ Value::Object(_)) => return formatted(value),
        _ => {}
    }
    event.get("logentry").and_then(formatted)
}

/// The debug id of each minified file named by a `sourcemap` image of `debug_meta`
/// (`code_file` → normalised `debug_id`); images of other types or with a malformed id are
/// skipped.
fn debug_ids(event: &Map<String, Value>) -> HashMap<&str, String> {
    let images = event
        .get("debug_meta")
        .and_then(|meta| meta.get("images"))
        .and_then(Value::as_array);
    images
        .into_iter()
        .flatten()
        .take(MAX_DEBUG_IMAGES)
        .filter(|image| image.get("type").and_then(Value::as_str) == Some("sourcemap"))
        .filter_map(|image| {
            let file = image.get("code_file")?.as_str()?;
            let id = crate::errors::debug_id(image.get("debug_id")?.as_str()?)?;
            Some((file, id))
        })
        .collect()
}

/// A stacktrace's frames, innermost first, in the native frame shape.
fn frames(stacktrace: &Value, debug_ids: &HashMap<&str, String>) -> Vec<Value> {
    let Some(frames) = stacktrace.get("frames").and_then(Value::as_array) else {
        return Vec::new();
    };
    frames
        .iter()
        .rev()
        .filter_map(Value::as_object)
        .map(|frame| {
            let mut native = Map::new();
            let file = text(frame.get("abs_path")).or_else(|| text(frame.get("filename")));
            if let Some(debug_id) = file.as_deref().and_then(|file| debug_ids.get(file)) {
                native.insert("debug_id".into(), json!(debug_id));
            }
            if let Some(file) = file {
                native.insert("file".into(), json!(file));
            }
            for (from, to) in [("lineno", "line"), ("colno", "column")] {
                if let Some(number) = frame.get(from).and_then(Value::as_u64) {
                    native.insert(to.into(), json!(number));
                }
            }
            if let Some(function) = text(frame.get("function")).filter(|f| f != "?") {
                native.insert("function".into(), json!(function));
            }
            if let Some(in_app) = frame.get("in_app").and_then(Value::as_bool) {
                native.insert("in_app".into(), json!(in_app));
            }
            Value::Object(native)
        })
        .collect()
}

/// A V8-style stack text of the frames, for search and for reading.
fn stack_text(name: Option<&str>, message: &str, frames: &[Value]) -> String {
    let mut stack = match name {
        Some(name) => format!("{name}: {message}"),
        None => message.to_string(),
    };
    for frame in frames {
        let file = frame["file"].as_str().unwrap_or("<unknown>");
        let line = frame["line"].as_u64().unwrap_or(0);
        let column = frame["column"].as_u64().unwrap_or(0);
        match frame["function"].as_str() {
            Some(function) => {
                stack.push_str(&format!("\n    at {function} ({file}:{line}:{column})"))
            }
            None => stack.push_str(&format!("\n    at {file}:{line}:{column}")),
        }
    }
    stack
}

/// `tags` as an object, or as Sentry's list of `[key, value]` pairs; values as text.
pub fn tags(sent: Option<&Value>) -> Map<String, Value> {
    let mut tags = Map::new();
    match sent {
        Some(Value::Object(map)) => {
            for (key, value) in map {
                if let Some(value) = scalar_text(Some(value)) {
                    tags.insert(key.clone(), json!(value));
                }
            }
        }
        Some(Value::Array(pairs)) => {
            for pair in pairs {
                if let (Some(key), Some(value)) = (text(pair.get(0)), scalar_text(pair.get(1))) {
                    tags.insert(key, json!(value));
                }
            }
        }
        _ => {}
    }
    tags
}

/// A fingerprint of strings without `{{ default }}`; `None` means the server's own grouping.
fn fingerprint(sent: Option<&Value>) -> Option<Value> {
    let parts = sent?.as_array()?;
    let uses_default = parts
        .iter()
        .any(|part| part.as_str().is_some_and(|p| p.trim() == "{{ default }}"));
    if parts.is_empty() || uses_default {
        return None;
    }
    let parts: Vec<Value> = parts
        .iter()
        .filter_map(|p| scalar_text(Some(p)))
        .map(Value::from)
        .collect();
    Some(Value::Array(parts))
}

/// Breadcrumbs (`{values: […]}` or a list) with the fields the native trail keeps.
fn breadcrumbs(sent: Option<&Value>) -> Option<Value> {
    let sent = sent?;
    let crumbs = sent.get("values").unwrap_or(sent).as_array()?;
    let kept = crumbs
        .iter()
        .filter_map(Value::as_object)
        .map(|crumb| {
            let mut kept = Map::new();
            for field in ["type", "category", "message", "level"] {
                if let Some(value) = text(crumb.get(field)) {
                    kept.insert(field.into(), json!(value));
                }
            }
            if let Some(timestamp) = crumb.get("timestamp").and_then(timestamp_value) {
                kept.insert("timestamp".into(), timestamp);
            }
            if let Some(Value::Object(data)) = crumb.get("data") {
                kept.insert("data".into(), Value::Object(data.clone()));
            }
            Value::Object(kept)
        })
        .collect();
    Some(Value::Array(kept))
}

/// A Sentry timestamp (seconds since the epoch, fractions allowed, or RFC 3339 text) as the
/// native one (epoch milliseconds, or the text as sent).
pub fn timestamp_value(sent: &Value) -> Option<Value> {
    match sent {
        Value::String(text) => Some(json!(text)),
        Value::Number(_) => seconds_to_millis(sent).map(Value::from),
        _ => None,
    }
}

/// Seconds since the epoch as whole milliseconds, when finite and not negative.
pub fn seconds_to_millis(sent: &Value) -> Option<u64> {
    let seconds = sent
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e12)?;
    Some((seconds * 1000.0).round() as u64)
}

/// The value of header `name` from an object or a list of `[name, value]` pairs.
pub fn header(headers: Option<&Value>, name: &str) -> Option<String> {
    match headers? {
        Value::Object(map) => map
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .and_then(|(_, value)| text(Some(value))),
        Value::Array(pairs) => pairs
            .iter()
            .find(|pair| {
                pair.get(0)
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.eq_ignore_ascii_case(name))
            })
            .and_then(|pair| text(pair.get(1))),
        _ => None,
    }
}

fn copy_text(event: &Map<String, Value>, item: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = text(event.get(from)) {
        item.insert(to.into(), json!(value));
    }
}

/// Non-empty text.
pub fn text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

/// Text, or a number or boolean written as text.
pub fn scalar_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_browser_exception_becomes_a_native_item() {
        let event = object(json!({
            "event_id": "9ec79c33ec9942ab8353589fcb2e04dc", "level": "error", "platform": "javascript",
            "timestamp": 1795348800.5, "release": "shop@1.2.3", "environment": "production",
            "exception": {"values": [
                {"type": "Error", "value": "cause"},
                {"type": "TypeError", "value": "x is undefined", "stacktrace": {"frames": [
                    {"filename": "https://a.test/vendor.js", "function": "?", "lineno": 1, "colno": 2, "in_app": true},
                    {"filename": "https://a.test/app.js", "abs_path": "https://a.test/app.js", "function": "pay", "lineno": 10, "colno": 5, "in_app": true}
                ]}}
            ]},
            "request": {"url": "https://a.test/cart", "headers": {"User-Agent": "Mozilla/5.0"}},
            "user": {"id": 42, "email": "a@b.test"},
            "tags": {"plan": "pro", "service": "shop"},
            "sdk": {"name": "sentry.javascript.browser", "version": "10.0.0"},
            "debug_meta": {"images": [
                {"type": "sourcemap", "code_file": "https://a.test/app.js", "debug_id": "68393A25-88EE-5071-AD32-702DF8B402AD"},
                {"type": "sourcemap", "code_file": "https://a.test/vendor.js", "debug_id": "not a uuid"},
                {"type": "elf", "code_file": "https://a.test/vendor.js", "debug_id": "68393a25-88ee-5071-ad32-702df8b402ae"}
            ]},
            "fingerprint": ["{{ default }}"],
            "breadcrumbs": {"values": [{"category": "ui.click", "message": "button", "timestamp": 1795348799.0}]}
        }));
        let item = error_item(&event);
        assert_eq!(item["level"], "error");
        assert_eq!(item["name"], "TypeError");
        assert_eq!(item["message"], "x is undefined");
        assert_eq!(item["frames"][0]["function"], "pay", "innermost first");
        assert_eq!(item["frames"][0]["line"], 10);
        assert_eq!(item["frames"][1].get("function"), None, "? is no name");
        assert_eq!(
            item["frames"][0]["debug_id"], "68393a25-88ee-5071-ad32-702df8b402ad",
            "the image of the frame's file, normalised"
        );
        assert_eq!(
            item["frames"][1].get("debug_id"),
            None,
            "only valid sourcemap images"
        );
        assert_eq!(item["url"], "https://a.test/cart");
        assert_eq!(item["user_agent"], "Mozilla/5.0");
        assert_eq!(item["user_id"], "42");
        assert_eq!(item["timestamp"], 1_795_348_800_500u64);
        assert_eq!(item["service"], "shop");
        assert_eq!(item["tags"]["sdk"], "sentry.javascript.browser");
        assert_eq!(item.get("fingerprint"), None);
        assert_eq!(item["breadcrumbs"][0]["timestamp"], 1_795_348_799_000u64);
        assert!(
            item["stack"]
                .as_str()
                .unwrap()
                .contains("at pay (https://a.test/app.js:10:5)")
        );
    }

    #[test]
    fn messages_and_server_events() {
        let event = object(json!({"level": "info", "message": {"formatted": "hello 1"},
            "tags": [["k", "v"], ["n", 3]], "fingerprint": ["a", "b"]}));
        let item = error_item(&event);
        assert_eq!(item["level"], "warning");
        assert_eq!(item["tags"]["sentry.level"], "info");
        assert_eq!(item["message"], "hello 1");
        assert_eq!(item["url"], NO_URL);
        assert_eq!(item["tags"]["n"], "3");
        assert_eq!(item["fingerprint"], json!(["a", "b"]));
        let bare = error_item(&Map::new());
        assert_eq!(bare["message"], "(no message)");
        let logentry = error_item(&object(
            json!({"logentry": {"message": "m %s"}, "level": "fatal"}),
        ));
        assert_eq!(logentry["message"], "m %s");
        assert_eq!(logentry["level"], "error");
    }

    #[test]
    fn hostile_values_never_panic() {
        for value in [
            json!({"exception": 5}),
            json!({"exception": {"values": [1, null]}}),
            json!({"timestamp": -1, "tags": "x", "breadcrumbs": 3, "user": [], "request": {"headers": 1}}),
            json!({"timestamp": 1e300, "exception": {"values": [{"stacktrace": {"frames": [1, {"lineno": -3}]}}]}}),
        ] {
            let item = error_item(&object(value));
            assert!(item["message"].is_string());
        }
    }
}
