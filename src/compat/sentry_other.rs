//! Sentry's `transaction`, `session` and `sessions` items read into the items of
//! `/ingest/spans` and `/ingest/web-sessions` (CONTRACT section 3).
//!
//! Invariants: pure and total; a transaction is its root span (from `contexts.trace`) and its
//! child spans, all in its trace; Sentry's seconds become milliseconds; a span's service is the
//! `service` tag, else the release's name before `@`, else the SDK's platform, else `unknown`
//! (native spans require one). Aggregated `sessions` become one native session per counted
//! session, each with its own id, so counts add up; their number is checked by ingest's limit.

use serde_json::{Map, Value, json};

use super::sentry_event::{NO_URL, scalar_text, seconds_to_millis, tags, text};

/// The spans of a transaction: the root first, then its children.
pub fn transaction_spans(event: &Map<String, Value>) -> Vec<Value> {
    let trace = event
        .get("contexts")
        .and_then(|c| c.get("trace"))
        .and_then(Value::as_object);
    let empty = Map::new();
    let trace = trace.unwrap_or(&empty);
    let trace_id = text(trace.get("trace_id"));
    let tags = tags(event.get("tags"));
    let service = service(event, &tags);
    let environment = text(event.get("environment"));
    let mut root = Map::new();
    put(&mut root, "trace_id", trace_id.clone());
    put(&mut root, "span_id", text(trace.get("span_id")));
    put(
        &mut root,
        "parent_span_id",
        text(trace.get("parent_span_id")),
    );
    put(&mut root, "name", text(event.get("transaction")));
    put(&mut root, "kind", text(trace.get("op")));
    put(&mut root, "status", text(trace.get("status")));
    times(
        &mut root,
        event.get("start_timestamp"),
        event.get("timestamp"),
    );
    root.insert("attributes".into(), Value::Object(tags));
    put(&mut root, "service", Some(service.clone()));
    put(&mut root, "environment", environment.clone());
    let mut spans = vec![Value::Object(root)];
    let children = event.get("spans").and_then(Value::as_array);
    for child in children.into_iter().flatten().filter_map(Value::as_object) {
        let mut span = Map::new();
        put(
            &mut span,
            "trace_id",
            text(child.get("trace_id")).or_else(|| trace_id.clone()),
        );
        put(&mut span, "span_id", text(child.get("span_id")));
        put(
            &mut span,
            "parent_span_id",
            text(child.get("parent_span_id")),
        );
        let name = text(child.get("description")).or_else(|| text(child.get("op")));
        put(&mut span, "name", name);
        put(&mut span, "kind", text(child.get("op")));
        put(&mut span, "status", text(child.get("status")));
        times(
            &mut span,
            child.get("start_timestamp"),
            child.get("timestamp"),
        );
        let mut attributes = super::sentry_event::tags(child.get("tags"));
        attributes.extend(super::sentry_event::tags(child.get("data")));
        span.insert("attributes".into(), Value::Object(attributes));
        put(&mut span, "service", Some(service.clone()));
        put(&mut span, "environment", environment.clone());
        spans.push(Value::Object(span));
    }
    spans
}

/// The service a transaction's spans are filed under.
fn service(event: &Map<String, Value>, tags: &Map<String, Value>) -> String {
    let from_release = text(event.get("release"))
        .and_then(|release| release.split('@').next().map(str::to_string))
        .filter(|name| !name.is_empty());
    tags.get("service")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(from_release)
        .or_else(|| text(event.get("platform")))
        .unwrap_or_else(|| "unknown".to_string())
}

/// `start_time` in ms and `duration_ms` (fractions kept) from Sentry's seconds.
fn times(span: &mut Map<String, Value>, start: Option<&Value>, end: Option<&Value>) {
    let start_seconds = start.and_then(Value::as_f64);
    if let Some(start_ms) = start.and_then(seconds_to_millis) {
        span.insert("start_time".into(), json!(start_ms));
    }
    if let (Some(start), Some(end)) = (start_seconds, end.and_then(Value::as_f64)) {
        let duration = (end - start) * 1000.0;
        if duration.is_finite() && duration >= 0.0 {
            span.insert("duration_ms".into(), json!(duration));
        }
    }
}

fn put(map: &mut Map<String, Value>, field: &str, value: Option<String>) {
    if let Some(value) = value {
        map.insert(field.into(), json!(value));
    }
}

/// A `session` item (one session's update) as a native session.
pub fn session(update: &Map<String, Value>) -> Value {
    let attrs = update.get("attrs").and_then(Value::as_object);
    let mut session = Map::new();
    put(&mut session, "id", text(update.get("sid")));
    put(&mut session, "started_at", text(update.get("started")));
    let status = text(update.get("status")).unwrap_or_else(|| "ok".to_string());
    if status != "ok" {
        put(&mut session, "ended_at", text(update.get("timestamp")));
    }
    if let Some(seconds) = update.get("duration").and_then(Value::as_f64)
        && seconds.is_finite()
        && seconds >= 0.0
    {
        session.insert("duration_ms".into(), json!(seconds * 1000.0));
    }
    if let Some(errors) = update.get("errors").and_then(Value::as_u64) {
        session.insert("errors".into(), json!(errors));
    }
    put(&mut session, "user_id", scalar_text(update.get("did")));
    session_attrs(&mut session, attrs);
    Value::Object(session)
}

/// A `sessions` item (counts per start minute) as one native session per counted session.
/// `id_prefix` makes the ids unique to this item (the envelope's receipt).
pub fn aggregated_sessions(item: &Map<String, Value>, id_prefix: &str) -> Vec<Value> {
    let attrs = item.get("attrs").and_then(Value::as_object);
    let mut sessions = Vec::new();
    let buckets = item.get("aggregates").and_then(Value::as_array);
    for (bucket_index, bucket) in buckets.into_iter().flatten().enumerate() {
        let Some(started) = text(bucket.get("started")) else {
            continue;
        };
        for status in ["exited", "errored", "abnormal", "crashed"] {
            let count = bucket.get(status).and_then(Value::as_u64).unwrap_or(0);
            // Each counted session stands on its own; a bucket's count past u32 is nonsense.
            for n in 0..count.min(u64::from(u32::MAX)) {
                let mut session = Map::new();
                let id = format!("{id_prefix}-{bucket_index}-{status}-{n}");
                session.insert("id".into(), json!(id));
                session.insert("started_at".into(), json!(started));
                session.insert("ended_at".into(), json!(started));
                let errors = u64::from(status != "exited");
                session.insert("errors".into(), json!(errors));
                session_attrs(&mut session, attrs);
                sessions.push(Value::Object(session));
                // Past the largest batch ingest takes, ingest refuses the request anyway.
                if sessions.len() > 10_000 {
                    return sessions;
                }
            }
        }
    }
    sessions
}

fn session_attrs(session: &mut Map<String, Value>, attrs: Option<&Map<String, Value>>) {
    session.insert("url".into(), json!(NO_URL));
    let Some(attrs) = attrs else {
        return;
    };
    put(session, "release", text(attrs.get("release")));
    put(session, "environment", text(attrs.get("environment")));
    put(session, "user_agent", text(attrs.get("user_agent")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_is_its_root_span_and_children() {
        let event = json!({"type": "transaction", "transaction": "/checkout", "release": "shop@1.0",
            "start_timestamp": 1795348800.0, "timestamp": 1795348800.25, "environment": "prod",
            "contexts": {"trace": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "op": "pageload", "status": "ok"}},
            "spans": [{"span_id": "10f067aa0ba902b7", "parent_span_id": "00f067aa0ba902b7", "op": "http.client",
                "description": "GET /api", "start_timestamp": 1795348800.1, "timestamp": 1795348800.2, "data": {"status_code": 200}}]});
        let spans = transaction_spans(event.as_object().unwrap());
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0]["name"], "/checkout");
        assert_eq!(spans[0]["service"], "shop");
        assert_eq!(spans[0]["start_time"], 1_795_348_800_000u64);
        assert_eq!(spans[0]["duration_ms"], 250.0);
        assert_eq!(spans[1]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(spans[1]["name"], "GET /api");
        assert_eq!(spans[1]["attributes"]["status_code"], "200");
        assert!(transaction_spans(&Map::new())[0]["service"] == "unknown");
    }

    #[test]
    fn sessions_single_and_aggregated() {
        let update = json!({"sid": "7c7b6f3e-1111-2222-3333-444455556666", "did": "u1", "started": "2026-11-22T12:00:00Z",
            "timestamp": "2026-11-22T12:05:00Z", "status": "crashed", "errors": 1, "duration": 300.0,
            "attrs": {"release": "shop@1.0", "environment": "prod"}});
        let session = session(update.as_object().unwrap());
        assert_eq!(session["id"], "7c7b6f3e-1111-2222-3333-444455556666");
        assert_eq!(session["ended_at"], "2026-11-22T12:05:00Z");
        assert_eq!(session["duration_ms"], 300_000.0);
        assert_eq!(session["release"], "shop@1.0");
        let aggregate = json!({"aggregates": [{"started": "2026-11-22T12:00:00Z", "exited": 2, "errored": 1}],
            "attrs": {"release": "r"}});
        let sessions = aggregated_sessions(aggregate.as_object().unwrap(), "p");
        assert_eq!(sessions.len(), 3);
        assert_eq!(sessions[2]["errors"], 1);
        assert_eq!(sessions[0]["id"], "p-0-exited-0");
        let huge = json!({"aggregates": [{"started": "x", "exited": u64::MAX}]});
        assert_eq!(
            aggregated_sessions(huge.as_object().unwrap(), "p").len(),
            10_001
        );
    }
}
