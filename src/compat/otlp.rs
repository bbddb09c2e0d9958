//! An OTLP `ExportTraceServiceRequest` in its JSON form (protobuf bodies are first turned into
//! the same form by `otlp_proto.rs`) read into native spans, and `exception` span events into
//! native error items (CONTRACT section 3).
//!
//! Invariants: pure and total; ids are lower-case hex (OTLP/JSON sends hex; protobuf bytes are
//! hex-encoded on the way); nanoseconds become milliseconds (fractions kept in `duration_ms`);
//! a span's service is its resource's `service.name` (`unknown_service` when absent, as the
//! OpenTelemetry SDKs name it); an exception event's id is derived from its span and position,
//! so a retried export stores it once.

use serde_json::{Map, Value, json};

use super::sentry_event::NO_URL;
use crate::ingest::api_decoded::DecodedTelemetry;

/// Native spans and error items of one export request.
pub fn telemetry(request: &Value) -> DecodedTelemetry {
    let mut telemetry = DecodedTelemetry::default();
    for resource_spans in list(request, "resourceSpans") {
        let resource = attributes(
            resource_spans
                .get("resource")
                .and_then(|r| r.get("attributes")),
        );
        let service = resource
            .get("service.name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .unwrap_or("unknown_service")
            .to_string();
        let environment = ["deployment.environment.name", "deployment.environment"]
            .iter()
            .find_map(|key| resource.get(*key).and_then(Value::as_str))
            .map(str::to_string);
        let release = resource.get("service.version").and_then(Value::as_str);
        let scopes = list(resource_spans, "scopeSpans");
        for span in scopes.iter().flat_map(|scope| list(scope, "spans")) {
            let context = SpanContext {
                service: &service,
                environment: environment.as_deref(),
                release,
            };
            let (native, exceptions) = read_span(span, &context);
            telemetry.spans.push(native);
            telemetry.errors.extend(exceptions);
        }
    }
    telemetry
}

/// What a span takes from its resource.
struct SpanContext<'a> {
    service: &'a str,
    environment: Option<&'a str>,
    release: Option<&'a str>,
}

/// A span in the native shape, and its `exception` events as native error items.
fn read_span(span: &Value, context: &SpanContext<'_>) -> (Value, Vec<Value>) {
    let mut native = Map::new();
    let trace_id = hex_text(span.get("traceId"));
    let span_id = hex_text(span.get("spanId"));
    put(&mut native, "trace_id", trace_id.clone());
    put(&mut native, "span_id", span_id.clone());
    put(
        &mut native,
        "parent_span_id",
        hex_text(span.get("parentSpanId")),
    );
    put(&mut native, "name", text(span.get("name")));
    put(&mut native, "kind", kind(span.get("kind")));
    let start = nanos(span.get("startTimeUnixNano"));
    let end = nanos(span.get("endTimeUnixNano"));
    if let Some(start) = start {
        native.insert("start_time".into(), json!(start / 1_000_000));
        if let Some(end) = end.filter(|end| *end >= start) {
            native.insert("duration_ms".into(), json!((end - start) as f64 / 1e6));
        }
    }
    if let Some(status) = status(span.get("status")) {
        native.insert("status".into(), status);
    }
    let attributes = attributes(span.get("attributes"));
    native.insert("attributes".into(), Value::Object(attributes.clone()));
    put(&mut native, "service", Some(context.service.to_string()));
    put(
        &mut native,
        "environment",
        context.environment.map(str::to_string),
    );
    let exceptions = list(span, "events")
        .iter()
        .enumerate()
        .filter(|(_, event)| event.get("name").and_then(Value::as_str) == Some("exception"))
        .map(|(index, event)| {
            let id = match (&trace_id, &span_id) {
                (Some(trace), Some(span)) => Some(format!("{trace}-{span}-{index}")),
                _ => None,
            };
            exception_item(event, &attributes, context, id)
        })
        .collect();
    (Value::Object(native), exceptions)
}

/// An `exception` span event (semantic conventions: `exception.type`, `exception.message`,
/// `exception.stacktrace`) as a native error item.
fn exception_item(
    event: &Value,
    span_attributes: &Map<String, Value>,
    context: &SpanContext<'_>,
    event_id: Option<String>,
) -> Value {
    let fields = attributes(event.get("attributes"));
    let field = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    let name = field("exception.type");
    let message = field("exception.message")
        .or(name)
        .unwrap_or("(no message)");
    let url = ["url.full", "http.url"]
        .iter()
        .find_map(|key| span_attributes.get(*key).and_then(Value::as_str))
        .unwrap_or(NO_URL);
    let mut item = Map::new();
    item.insert("level".into(), json!("error"));
    item.insert("message".into(), json!(message));
    item.insert("url".into(), json!(url));
    item.insert("service".into(), json!(context.service));
    put(&mut item, "name", name.map(str::to_string));
    put(
        &mut item,
        "stack",
        field("exception.stacktrace").map(str::to_string),
    );
    put(
        &mut item,
        "environment",
        context.environment.map(str::to_string),
    );
    put(&mut item, "release", context.release.map(str::to_string));
    put(&mut item, "event_id", event_id);
    if let Some(time) = nanos(event.get("timeUnixNano")) {
        item.insert("timestamp".into(), json!(time / 1_000_000));
    }
    Value::Object(item)
}

/// An array field, or nothing.
fn list<'a>(value: &'a Value, field: &str) -> Vec<&'a Value> {
    value
        .get(field)
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

/// OTLP `KeyValue`s as an object of plain JSON values.
fn attributes(sent: Option<&Value>) -> Map<String, Value> {
    let mut map = Map::new();
    for pair in sent.and_then(Value::as_array).into_iter().flatten() {
        if let (Some(key), Some(value)) =
            (text(pair.get("key")), pair.get("value").and_then(any_value))
        {
            map.insert(key, value);
        }
    }
    map
}

/// An OTLP `AnyValue` as plain JSON (`intValue` is text in OTLP/JSON; it becomes a number).
fn any_value(value: &Value) -> Option<Value> {
    let (kind, inner) = value.as_object()?.iter().next()?;
    match kind.as_str() {
        "stringValue" | "boolValue" | "doubleValue" | "bytesValue" => Some(inner.clone()),
        "intValue" => match inner {
            Value::String(text) => text.parse::<i64>().ok().map(Value::from),
            other => Some(other.clone()),
        },
        "arrayValue" => Some(Value::Array(
            list(inner, "values")
                .into_iter()
                .filter_map(any_value)
                .collect(),
        )),
        "kvlistValue" => Some(Value::Object(attributes(inner.get("values")))),
        _ => None,
    }
}

/// `SPAN_KIND_SERVER` or its number as `server`, …; unspecified as nothing.
fn kind(sent: Option<&Value>) -> Option<String> {
    const KINDS: [&str; 6] = ["", "internal", "server", "client", "producer", "consumer"];
    match sent? {
        Value::Number(number) => KINDS
            .get(usize::try_from(number.as_u64()?).ok()?)
            .filter(|kind| !kind.is_empty())
            .map(|kind| kind.to_string()),
        Value::String(text) => {
            let kind = text.trim_start_matches("SPAN_KIND_").to_ascii_lowercase();
            (KINDS.contains(&kind.as_str()) && !kind.is_empty()).then_some(kind)
        }
        _ => None,
    }
}

/// `{"code", "message"?}` with the code as `unset`, `ok` or `error`.
fn status(sent: Option<&Value>) -> Option<Value> {
    let sent = sent?;
    let code = match sent.get("code") {
        Some(Value::Number(number)) => number.as_u64().unwrap_or(0),
        Some(Value::String(text)) => match text.as_str() {
            "STATUS_CODE_OK" => 1,
            "STATUS_CODE_ERROR" => 2,
            _ => 0,
        },
        _ => 0,
    };
    let code = ["unset", "ok", "error"]
        .get(code as usize)
        .unwrap_or(&"unset");
    let mut status = Map::new();
    status.insert("code".into(), json!(code));
    if let Some(message) = text(sent.get("message")) {
        status.insert("message".into(), json!(message));
    }
    Some(Value::Object(status))
}

/// Nanoseconds since the epoch, sent as text (OTLP/JSON's 64-bit integers) or a number.
fn nanos(sent: Option<&Value>) -> Option<u64> {
    match sent? {
        Value::String(text) => text.parse().ok(),
        Value::Number(number) => number.as_u64(),
        _ => None,
    }
}

/// A hex id in lower case; an empty one (a root's parent) is none.
fn hex_text(sent: Option<&Value>) -> Option<String> {
    text(sent).map(|id| id.to_ascii_lowercase())
}

fn text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

fn put(map: &mut Map<String, Value>, field: &str, value: Option<String>) {
    if let Some(value) = value {
        map.insert(field.into(), json!(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_resources_and_exceptions() {
        let request = json!({"resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "checkout"}},
                {"key": "service.version", "value": {"stringValue": "1.2.3"}},
                {"key": "deployment.environment.name", "value": {"stringValue": "prod"}}]},
            "scopeSpans": [{"scope": {"name": "t"}, "spans": [{
                "traceId": "4BF92F3577B34DA6A3CE929D0E0E4736", "spanId": "00f067aa0ba902b7", "parentSpanId": "",
                "name": "GET /cart", "kind": 2, "startTimeUnixNano": "1795348800000000000",
                "endTimeUnixNano": "1795348800250000000", "status": {"code": 2, "message": "boom"},
                "attributes": [{"key": "http.status_code", "value": {"intValue": "500"}},
                    {"key": "url.full", "value": {"stringValue": "https://a.test/cart"}}],
                "events": [{"name": "exception", "timeUnixNano": "1795348800100000000", "attributes": [
                    {"key": "exception.type", "value": {"stringValue": "TypeError"}},
                    {"key": "exception.message", "value": {"stringValue": "x is undefined"}}]},
                    {"name": "log"}]}]}]}]});
        let telemetry = telemetry(&request);
        let span = &telemetry.spans[0];
        assert_eq!(span["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(span.get("parent_span_id"), None);
        assert_eq!(span["kind"], "server");
        assert_eq!(span["start_time"], 1_795_348_800_000u64);
        assert_eq!(span["duration_ms"], 250.0);
        assert_eq!(span["status"]["code"], "error");
        assert_eq!(span["attributes"]["http.status_code"], 500);
        assert_eq!(span["service"], "checkout");
        assert_eq!(span["environment"], "prod");
        assert_eq!(telemetry.errors.len(), 1);
        let error = &telemetry.errors[0];
        assert_eq!(error["name"], "TypeError");
        assert_eq!(error["url"], "https://a.test/cart");
        assert_eq!(error["release"], "1.2.3");
        assert_eq!(
            error["event_id"],
            "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0"
        );
        assert_eq!(
            kind(Some(&json!("SPAN_KIND_CLIENT"))).as_deref(),
            Some("client")
        );
    }

    #[test]
    fn odd_requests_never_panic() {
        for request in [
            json!({}),
            json!({"resourceSpans": 3}),
            json!({"resourceSpans": [{"scopeSpans": [{"spans": [1, {}]}]}]}),
        ] {
            let telemetry = telemetry(&request);
            assert!(telemetry.errors.is_empty());
        }
    }
}
