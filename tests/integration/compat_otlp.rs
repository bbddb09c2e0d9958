//! OTLP/HTTP trace export to `POST /v1/traces`: JSON and protobuf (hand-encoded here after
//! opentelemetry-proto's `trace.proto`), gzip, the partial-success answer, exception events
//! becoming error events, the key, the size limit and the CORS preflight.

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{TestServer, http, wait_for};
use crate::http_basics::{Reply, send};
use crate::ingest_support::*;

const TRACE: &str = "6cf92f3577b34da6a3ce929d0e0e4738";
const ROOT: &str = "10f067aa0ba902b7";
const CHILD: &str = "20f067aa0ba902b7";

fn post_traces(
    server: &TestServer,
    content_type: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut request =
        keyed(server, Method::POST, "/v1/traces").header("content-type", content_type);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request.body(body))
}

fn attribute(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

/// An export request as the OTLP/JSON exporters send it.
fn json_export(trace: &str, spans: Vec<Value>) -> Value {
    json!({"resourceSpans": [{
        "resource": {"attributes": [
            attribute("service.name", json!({"stringValue": "checkout-api"})),
            attribute("service.version", json!({"stringValue": "3.1.0"}))]},
        "scopeSpans": [{"scope": {"name": "@opentelemetry/instrumentation-http"},
            "spans": spans.into_iter().map(|mut span| { span["traceId"] = json!(trace); span }).collect::<Vec<_>>()}]}]})
}

fn span(id: &str, parent: &str, name: &str, start_ms: u64, end_ms: u64) -> Value {
    json!({"spanId": id, "parentSpanId": parent, "name": name, "kind": 2,
        "startTimeUnixNano": (start_ms * 1_000_000).to_string(), "endTimeUnixNano": (end_ms * 1_000_000).to_string(),
        "attributes": [attribute("http.request.method", json!({"stringValue": "POST"}))], "status": {}})
}

#[test]
fn json_spans_become_a_trace_and_exceptions_error_events() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let mut child = span(
        CHILD,
        ROOT,
        "charge card",
        1_795_348_800_010,
        1_795_348_800_090,
    );
    child["status"] = json!({"code": 2, "message": "declined"});
    child["events"] = json!([{"name": "exception", "timeUnixNano": "1795348800080000000", "attributes": [
        attribute("exception.type", json!({"stringValue": "CardDeclined"})),
        attribute("exception.message", json!({"stringValue": "card 4111111111111111 declined"})),
        attribute("exception.stacktrace", json!({"stringValue": "CardDeclined: declined\n    at charge (https://app.example.com/pay.js:3:9)"}))]}]);
    let body = json_export(
        TRACE,
        vec![
            span(ROOT, "", "POST /pay", 1_795_348_800_000, 1_795_348_800_100),
            child,
        ],
    );
    let reply = post_traces(
        &server,
        "application/json",
        &[],
        body.to_string().into_bytes(),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json(), json!({}));

    let trace = read(&server, &key, &format!("/api/v1/traces/{TRACE}"));
    let root = &trace["spans"][0];
    assert_eq!(root["name"], "POST /pay");
    assert_eq!(root["service"], "checkout-api");
    assert_eq!(root["children"][0]["name"], "charge card");

    let events = wait_for(
        "exception event",
        std::time::Duration::from_secs(10),
        || {
            let events = all_errors(&server, &key);
            (!events.is_empty()).then_some(events)
        },
    );
    assert_eq!(events[0]["name"], "CardDeclined");
    assert_eq!(
        events[0]["message"], "card [card] declined",
        "scrubbed as native ingest does"
    );
    assert_eq!(events[0]["service"], "checkout-api");
    assert_eq!(events[0]["release"], "3.1.0");
    assert_eq!(events[0]["frames"][0]["function"], "charge");

    // A span the native checks refuse is reported back, the others are kept.
    let mut broken = span(
        "30f067aa0ba902b7",
        ROOT,
        "bad",
        1_795_348_800_000,
        1_795_348_800_001,
    );
    broken["spanId"] = json!("not-hex");
    let ok = span(
        "40f067aa0ba902b7",
        ROOT,
        "fine",
        1_795_348_800_000,
        1_795_348_800_001,
    );
    let reply = post_traces(
        &server,
        "application/json",
        &[],
        json_export(TRACE, vec![broken, ok])
            .to_string()
            .into_bytes(),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["partialSuccess"]["rejectedSpans"], "1");
}

/// Protobuf encoding of the fields the test sends.
fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, (number << 3) | 2);
    varint(&mut out, bytes.len() as u64);
    out.extend_from_slice(bytes);
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn fixed64(number: u64, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, (number << 3) | 1);
    out.extend(value.to_le_bytes());
    out
}

fn protobuf_export(trace: &str) -> Vec<u8> {
    let string_value = |text: &str| field(1, text.as_bytes());
    let key_value =
        |key: &str, value: Vec<u8>| [field(1, key.as_bytes()), field(2, &value)].concat();
    let resource = field(1, &key_value("service.name", string_value("inventory")));
    let mut root = [
        field(1, &hex::decode(trace).unwrap()),
        field(2, &hex::decode(ROOT).unwrap()),
        field(5, b"GET /stock"),
        fixed64(7, 1_795_348_800_000_000_000),
        fixed64(8, 1_795_348_800_040_000_000),
        field(9, &key_value("http.route", string_value("/stock"))),
    ]
    .concat();
    root.extend([6 << 3, 2]); // kind = SERVER
    let child = [
        field(1, &hex::decode(trace).unwrap()),
        field(2, &hex::decode(CHILD).unwrap()),
        field(4, &hex::decode(ROOT).unwrap()),
        field(5, b"SELECT stock"),
        fixed64(7, 1_795_348_800_005_000_000),
        fixed64(8, 1_795_348_800_025_000_000),
    ]
    .concat();
    let scope_spans = [field(2, &root), field(2, &child)].concat();
    let resource_spans = [field(1, &resource), field(2, &scope_spans)].concat();
    field(1, &resource_spans)
}

#[test]
fn protobuf_and_gzip_exports_are_read() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let trace_a = "7cf92f3577b34da6a3ce929d0e0e4739";
    let reply = post_traces(
        &server,
        "application/x-protobuf",
        &[],
        protobuf_export(trace_a),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.header("content-type"), "application/x-protobuf");
    assert!(
        reply.body.is_empty(),
        "everything accepted: no partial_success"
    );
    let trace = read(&server, &key, &format!("/api/v1/traces/{trace_a}"));
    assert_eq!(trace["spans"][0]["name"], "GET /stock");
    assert_eq!(trace["spans"][0]["service"], "inventory");
    assert_eq!(trace["spans"][0]["children"][0]["name"], "SELECT stock");

    let trace_b = "8cf92f3577b34da6a3ce929d0e0e473a";
    let zipped = gzip(&protobuf_export(trace_b));
    let reply = post_traces(
        &server,
        "application/x-protobuf",
        &[("content-encoding", "gzip")],
        zipped,
    );
    assert_eq!(reply.status, 200);
    let trace = read(&server, &key, &format!("/api/v1/traces/{trace_b}"));
    assert_eq!(trace["spans"][0]["children"][0]["name"], "SELECT stock");
    let json_zipped = gzip(
        json_export(
            TRACE,
            vec![span(
                ROOT,
                "",
                "zipped",
                1_795_348_800_000,
                1_795_348_800_002,
            )],
        )
        .to_string()
        .as_bytes(),
    );
    let reply = post_traces(
        &server,
        "application/json",
        &[("content-encoding", "gzip")],
        json_zipped,
    );
    assert_eq!(reply.status, 200);

    let broken = post_traces(
        &server,
        "application/x-protobuf",
        &[],
        vec![0x0a, 0x09, 0x01],
    );
    assert_eq!(broken.status, 400);
    assert_eq!(broken.json()["code"], "invalid_payload");
    let other = post_traces(&server, "text/xml", &[], b"<x/>".to_vec());
    assert_eq!(other.status, 415);
}

#[test]
fn keys_limits_and_preflight() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let body = json_export(
        TRACE,
        vec![span(ROOT, "", "x", 1_795_348_800_000, 1_795_348_800_002)],
    )
    .to_string();
    let wrong = send(
        http()
            .post(server.url("/v1/traces?key=wrong-key-00000000"))
            .header("content-type", "application/json")
            .body(body.clone()),
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["code"], "invalid_ingest_key");
    let by_query = send(
        http()
            .post(server.url(&format!("/v1/traces?key={KEY}")))
            .header("content-type", "application/json")
            .body(body),
    );
    assert_eq!(by_query.status, 200);

    // 4 MiB as sent fits; one byte more is refused from its declared length.
    let padded = |size: usize, trace: &str| {
        let mut export = json_export(
            trace,
            vec![span(
                ROOT,
                "",
                "padded",
                1_795_348_800_000,
                1_795_348_800_002,
            )],
        )
        .to_string()
        .into_bytes();
        export.extend(std::iter::repeat_n(b' ', size - export.len()));
        export
    };
    crate::compat_support::declared_post(&server, "/v1/traces", (4 << 20) + 1)
        .problem(413, "body_too_large");
    let edge = post_traces(
        &server,
        "application/json",
        &[],
        padded(4 << 20, "acf92f3577b34da6a3ce929d0e0e473c"),
    );
    assert_eq!(edge.status, 200);
    let stored = read(
        &server,
        &key,
        "/api/v1/traces/acf92f3577b34da6a3ce929d0e0e473c",
    );
    assert_eq!(stored["spans"][0]["name"], "padded");

    let preflight = crate::compat_support::preflight_allows(&server, "/v1/traces", "x-lookout-key");
    assert_eq!(preflight.header("access-control-allow-origin"), "*");
}
