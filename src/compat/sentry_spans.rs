//! Sentry's streamed spans: the `span` envelope item (`application/vnd.sentry.items.span.v2+json`,
//! `{"version":2,"items":[…]}`) that @sentry/browser 10 and 11 send instead of a `transaction`
//! when spans stream, read into the items of `/ingest/spans`.
//!
//! Invariants: pure and total; each streamed span is one native span in its own trace; its
//! attributes arrive typed (`{"value","type"}`) and are kept as their values; `sentry.op` is the
//! span's kind, `sentry.release` and `sentry.environment` name its release and environment, and
//! its service is the `service` attribute, else the release's name before `@`, else the SDK's
//! platform (`javascript`), as for transactions. How many spans an item holds is checked by
//! ingest's item limit, like any other decoded batch.

use serde_json::{Map, Value, json};

use super::sentry_event::{seconds_to_millis, text};

/// The spans of a `span` item's payload (none when it is not the version 2 shape).
pub fn streamed_spans(payload: &Map<String, Value>) -> Vec<Value> {
    let items = payload.get("items").and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(native_span)
        .collect()
}

fn native_span(span: &Map<String, Value>) -> Value {
    let attributes = plain_attributes(span.get("attributes"));
    let attribute = |name: &str| attributes.get(name).and_then(Value::as_str);
    let release = attribute("sentry.release").map(str::to_string);
    let service = attribute("service")
        .map(str::to_string)
        .or_else(|| {
            release
                .as_deref()
                .and_then(|release| release.split('@').next())
                .filter(|name| !name.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "javascript".to_string());
    let mut native = Map::new();
    for (field, value) in [
        ("trace_id", text(span.get("trace_id"))),
        ("span_id", text(span.get("span_id"))),
        ("parent_span_id", text(span.get("parent_span_id"))),
        ("name", text(span.get("name"))),
        ("kind", attribute("sentry.op").map(str::to_string)),
        ("status", text(span.get("status"))),
        (
            "environment",
            attribute("sentry.environment").map(str::to_string),
        ),
        ("service", Some(service)),
    ] {
        if let Some(value) = value {
            native.insert(field.into(), json!(value));
        }
    }
    let start = span.get("start_timestamp");
    if let Some(start_ms) = start.and_then(seconds_to_millis) {
        native.insert("start_time".into(), json!(start_ms));
    }
    if let (Some(start), Some(end)) = (
        start.and_then(Value::as_f64),
        span.get("end_timestamp").and_then(Value::as_f64),
    ) {
        let duration = (end - start) * 1000.0;
        if duration.is_finite() && duration >= 0.0 {
            native.insert("duration_ms".into(), json!(duration));
        }
    }
    native.insert("attributes".into(), Value::Object(attributes));
    Value::Object(native)
}

/// `{"name": {"value": v, "type": t}}` as `{"name": v}`; a bare value is kept as it is.
fn plain_attributes(attributes: Option<&Value>) -> Map<String, Value> {
    let Some(attributes) = attributes.and_then(Value::as_object) else {
        return Map::new();
    };
    attributes
        .iter()
        .map(|(name, typed)| {
            let value = typed
                .as_object()
                .and_then(|typed| typed.get("value"))
                .unwrap_or(typed);
            (name.clone(), value.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_segment_and_its_child_become_native_spans() {
        let payload = json!({"version": 2, "items": [
            {"name": "price cart", "span_id": "ba5b080c2031739d", "trace_id": "3d3760292e714837a731077a50b50c16",
             "parent_span_id": "a393a4f50fde68c9", "start_timestamp": 1795820900.6902, "end_timestamp": 1795820900.6904,
             "is_segment": false, "status": "ok", "attributes": {
                "sentry.op": {"value": "function", "type": "string"},
                "sentry.release": {"value": "shop@2.0.0", "type": "string"},
                "sentry.environment": {"value": "test", "type": "string"},
                "sentry.is_localhost": {"value": true, "type": "boolean"}}},
            {"name": "checkout", "span_id": "a393a4f50fde68c9", "trace_id": "3d3760292e714837a731077a50b50c16",
             "start_timestamp": 1795820900.6894, "end_timestamp": 1795820900.6954, "is_segment": true, "status": "ok",
             "attributes": {"sentry.op": {"value": "ui.action", "type": "string"}}}
        ]});
        let spans = streamed_spans(payload.as_object().unwrap());
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0]["name"], "price cart");
        assert_eq!(spans[0]["parent_span_id"], "a393a4f50fde68c9");
        assert_eq!(spans[0]["kind"], "function");
        assert_eq!(spans[0]["service"], "shop");
        assert_eq!(spans[0]["environment"], "test");
        assert_eq!(spans[0]["attributes"]["sentry.is_localhost"], true);
        assert_eq!(spans[0]["start_time"], 1_795_820_900_690_i64);
        let duration = spans[0]["duration_ms"].as_f64().unwrap();
        assert!((duration - 0.2).abs() < 0.01, "{duration}");
        assert_eq!(spans[1]["name"], "checkout");
        assert!(spans[1].get("parent_span_id").is_none());
        assert_eq!(
            spans[1]["service"], "javascript",
            "no release: the platform"
        );
    }

    #[test]
    fn other_shapes_give_no_spans() {
        for payload in [
            json!({}),
            json!({"items": "no"}),
            json!({"items": [1, "x", null]}),
        ] {
            assert!(streamed_spans(payload.as_object().unwrap()).is_empty());
        }
    }
}
