//! The OpenTelemetry Rust SDK (`opentelemetry_sdk` with `opentelemetry-otlp`'s OTLP/HTTP
//! protobuf exporter on a blocking reqwest client) exports to the real binary's
//! `POST /v1/traces` unchanged but for the endpoint and the key header: the spans come back as
//! one trace, and an exception recorded on a span comes back as an error event.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::harness::{TestServer, wait_for};
use crate::ingest_support::{KEY, all_errors, ingest_server, owner_key, read};

/// A tracer provider exporting each ended span to `server` at once (the simple processor, so
/// nothing waits on a batch interval).
fn provider(server: &TestServer) -> SdkTracerProvider {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(server.url("/v1/traces"))
        .with_headers(HashMap::from([(
            "x-lookout-key".to_string(),
            KEY.to_string(),
        )]))
        .with_timeout(Duration::from_secs(10))
        .build()
        .expect("the OTLP/HTTP exporter");
    let resource = Resource::builder()
        .with_service_name("checkout-rs")
        .with_attribute(KeyValue::new("service.version", "4.2.0"))
        .build();
    SdkTracerProvider::builder()
        .with_simple_exporter(exporter)
        .with_resource(resource)
        .build()
}

#[test]
fn the_rust_sdk_exports_spans_and_an_exception_over_otlp_http() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let provider = provider(&server);
    let tracer = provider.tracer("lookout-integration");

    let trace_id = tracer.in_span("POST /pay", |context| {
        let root = context.span();
        root.set_attribute(KeyValue::new("http.request.method", "POST"));
        let mut charge = tracer.start("charge card");
        charge.add_event(
            "exception",
            vec![
                KeyValue::new("exception.type", "CardDeclined"),
                KeyValue::new("exception.message", "card 4111111111111111 declined"),
                KeyValue::new(
                    "exception.stacktrace",
                    "CardDeclined: declined\n    at charge (https://app.example.com/pay.js:3:9)",
                ),
            ],
        );
        charge.set_status(Status::error("declined"));
        charge.end();
        root.span_context().trace_id().to_string()
    });
    provider.force_flush().expect("flushed");
    provider.shutdown().expect("shut down");

    let trace = wait_for("the trace", Duration::from_secs(10), || {
        let trace = read(&server, &key, &format!("/api/v1/traces/{trace_id}"));
        (trace["spans"].as_array()?.len() == 1).then_some(trace)
    });
    let root = &trace["spans"][0];
    assert_eq!(root["name"], "POST /pay");
    assert_eq!(root["service"], "checkout-rs");
    let children = root["children"].as_array().expect("children");
    assert_eq!(children.len(), 1, "{trace:#}");
    assert_eq!(children[0]["name"], "charge card");

    let events = wait_for("the exception event", Duration::from_secs(10), || {
        let events = all_errors(&server, &key);
        (!events.is_empty()).then_some(events)
    });
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["name"], "CardDeclined");
    assert_eq!(events[0]["message"], "card [card] declined", "scrubbed");
    assert_eq!(events[0]["service"], "checkout-rs");
    assert_eq!(events[0]["release"], "4.2.0");
    assert_eq!(events[0]["frames"][0]["function"], "charge");
}
