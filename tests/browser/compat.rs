//! Drop-in compatibility in a real browser: a shop page on another origin loads the real
//! `@sentry/browser` and OpenTelemetry web tracing (`peers.rs`, from the npm registry, pinned)
//! configured only with Lookout's DSN and OTLP URL, as a team moving from Sentry would. An
//! error, a transaction and a session sent by Sentry's SDK, and a trace with its spans sent by
//! the OTLP exporter, all arrive and read back through Lookout's API.

use serde_json::{Value, json};

use crate::errors_support::ApiSession;
use crate::harness::TestServer;
use crate::page::Page;
use crate::peers::peers_js;
use crate::sdk_support::{Reply, Site, groups, wait_for_value};
use crate::support::{OWNER, PASSWORD};

/// An ingest key Sentry's SDKs accept in a DSN (`[A-Za-z0-9_]`).
const DSN_KEY: &str = "shop_web_key_0001";

fn shop_page(dsn: &str, otlp_url: &str) -> String {
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script src="/peers.js"></script>
<script>
window.outcome = (async () => {{
  const {{ Sentry, trace, context, WebTracerProvider, SimpleSpanProcessor, OTLPTraceExporter, resourceFromAttributes }} =
    window.LookoutPeers;
  Sentry.init({{ dsn: "{dsn}", release: "shop@2.0.0", environment: "test", tracesSampleRate: 1.0 }});
  Sentry.startSpan({{ name: "checkout", op: "ui.action" }}, () => {{
    Sentry.startSpan({{ name: "price cart", op: "function" }}, () => {{}});
  }});
  Sentry.captureException(new TypeError("peer checkout failed"));
  await Sentry.flush(5000);

  const exporter = new OTLPTraceExporter({{ url: "{otlp_url}", headers: {{ "X-Lookout-Key": "{DSN_KEY}" }} }});
  const provider = new WebTracerProvider({{
    resource: resourceFromAttributes({{ "service.name": "shop-otel" }}),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  }});
  const tracer = provider.getTracer("shop");
  const parent = tracer.startSpan("load basket");
  const child = tracer.startSpan("read prices", undefined, trace.setSpan(context.active(), parent));
  child.end();
  parent.end();
  await provider.forceFlush();
  return "sent";
}})().catch((error) => "failed: " + error);
</script></head><body><h1>Shop</h1></body></html>"#
    )
}

fn items(api: &ApiSession, path: &str) -> Vec<Value> {
    api.get(path)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn sentry_browser_sdk_and_opentelemetry_web_send_to_lookout_unchanged() {
    let lookout = TestServer::builder().env("WEB_INGEST_KEY", DSN_KEY).start();
    lookout.add_user(OWNER, "owner", PASSWORD);
    let api = ApiSession::sign_in(&lookout, OWNER);
    let ingest = api.get("/api/v1/orgs/me/ingest");
    let dsn = ingest["dsn"]
        .as_str()
        .expect("a DSN for a key Sentry accepts")
        .to_string();
    let otlp_url = ingest["otlp_traces_url"]
        .as_str()
        .expect("the OTLP URL")
        .to_string();
    assert!(dsn.contains(DSN_KEY), "{dsn}");

    let page_html = shop_page(&dsn, &otlp_url);
    let site = Site::start(move |request| match request.path.split('?').next() {
        Some("/") => Reply::html(&page_html),
        Some("/peers.js") => Reply::new(200, "text/javascript", peers_js()),
        _ => Reply::new(404, "text/plain", "not here"),
    });
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));
    // `outcome` settles once both SDKs have flushed: "sent", or why not.
    let settled = wait_for_value(
        "the SDKs to finish sending",
        || page.eval("window.outcome"),
        |value| value.is_string(),
    );
    assert_eq!(settled, json!("sent"));

    // Sentry's error event: one group, its title from the exception.
    let found = wait_for_value(
        "the Sentry error's group",
        || json!(groups(&api)),
        |listed| listed.to_string().contains("peer checkout failed"),
    );
    assert!(found.to_string().contains("TypeError"), "{found}");

    // Sentry's transaction and the OTLP exporter's spans: two traces with their spans.
    let traces = wait_for_value(
        "both traces",
        || json!(items(&api, "/api/v1/traces?limit=50")),
        |listed| {
            let text = listed.to_string();
            text.contains("checkout") && text.contains("load basket")
        },
    );
    let traces = traces.as_array().expect("traces").clone();
    let otel = traces
        .iter()
        .find(|trace| trace["root_name"] == "load basket")
        .expect("the OTLP trace");
    assert_eq!(otel["service"], "shop-otel");
    assert_eq!(otel["span_count"], 2, "{otel}");
    let sentry = traces
        .iter()
        .find(|trace| trace["root_name"] == "checkout")
        .expect("the Sentry transaction");
    assert!(sentry["span_count"].as_u64().unwrap_or(0) >= 2, "{sentry}");

    // Sentry's session for the page view.
    let sessions = wait_for_value(
        "the Sentry session",
        || json!(items(&api, "/api/v1/sessions?limit=10")),
        |listed| !listed.as_array().is_some_and(Vec::is_empty),
    );
    assert_eq!(sessions.as_array().map(Vec::len), Some(1), "{sessions}");
}
