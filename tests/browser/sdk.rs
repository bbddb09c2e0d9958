//! The browser SDK on a shop's page served from another origin (issue 16): errors, rejections,
//! requests and the page load arrive with their session, spans and trace, and a minified
//! bundle's error is grouped on its original frames; a visitor keeps an experiment's variant
//! across reloads with one exposure a day, and both served files load under the SRI hashes the
//! test computes. How it sends (back-off, splitting, beacons) is in `sdk/transport.rs`.

mod transport;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::errors_support::{ApiSession, BUNDLE_TITLE, KEY, ingest_server, upload_bundle_map};
use crate::harness::http;
use crate::page::Page;
use crate::sdk_support::{
    Reply, Site, gate_site, groups, shop_page, take_expected_problems, versioned_sdk,
    wait_for_value,
};
use crate::support::OWNER;

const BUNDLE: &str = include_str!("../fixtures/sourcemaps/app.min.js");

#[test]
fn sdk_on_another_origin_reports_errors_requests_and_the_page_load_with_session_and_trace() {
    let lookout = Arc::new(ingest_server());
    upload_bundle_map(&lookout, "shop@1.0.0");
    let api = ApiSession::sign_in(&lookout, OWNER);
    let script = r#"
Lookout.setUser("u-42");
Lookout.setTag("plan", "pro");
Lookout.captureMessage("drop me", "error");
const bundle = document.createElement("script");
bundle.src = "/assets/app.min.js";
document.head.append(bundle);
window.addEventListener("load", () => setTimeout(async () => {
  await fetch("/api/cart?coupon=SPRING");
  await new Promise((done) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/api/stock?sku=7");
    request.onloadend = done;
    request.send("{}");
  });
  Promise.reject(new Error("payment declined"));
  setTimeout(() => window.shop.checkout({ items: [{ quantity: 1 }] }), 0);
}, 50));"#;
    let origin = lookout.url("");
    let page_html = shop_page(
        &lookout,
        origin.trim_end_matches('/'),
        "flushIntervalMs: 250, beforeSend: (event) => event.message.includes(\"drop me\") ? null \
         : Object.assign(event, { tags: Object.assign(event.tags, { checked: \"yes\" }) })",
        script,
    );
    let site = Site::start(move |request| match request.path.split('?').next() {
        Some("/") => Reply::html(&page_html),
        Some("/assets/app.min.js") => Reply::new(200, "text/javascript", BUNDLE),
        Some("/api/stock") => Reply::new(409, "application/json", "{}"),
        Some("/api/cart") => Reply::new(200, "application/json", "{\"items\":[]}"),
        _ => Reply::html("<!doctype html><title>Bye</title><p>bye</p>"),
    });

    let page = Page::open(&lookout);
    page.goto(&site.url("/"));
    let problems = take_expected_problems(&page, 2);
    let joined = problems.join("\n");
    assert!(
        joined.contains("payment declined") && joined.contains("amount"),
        "{joined}"
    );

    // Both errors arrive, the bundle's grouped on its original frames (the uploaded map).
    let found = wait_for_value(
        "both error groups",
        || json!(groups(&api)),
        |listed| {
            let titles = listed.to_string();
            titles.contains(BUNDLE_TITLE) && titles.contains("payment declined")
        },
    );
    let bundle_group = api.group_id(BUNDLE_TITLE);
    let group = api.get(&format!("/api/v1/error-groups/{bundle_group}"));
    let event = &group["latest_event"];
    let frames = event["frames"].as_array().expect("frames").clone();
    let resolved: Vec<&Value> = frames
        .iter()
        .filter_map(|frame| frame.get("resolved"))
        .collect();
    assert!(
        resolved.iter().any(|frame| frame["file"]
            .as_str()
            .is_some_and(|file| file.ends_with("cart.js"))),
        "original frames in {group}"
    );
    assert_eq!(event["release"], "shop@1.0.0", "{event}");
    assert_eq!(event["environment"], "test");
    assert_eq!(event["user_id"], "u-42");
    assert_eq!(event["tags"]["plan"], "pro");
    assert_eq!(
        event["tags"]["checked"], "yes",
        "beforeSend changed it: {event}"
    );
    // The server scrubs the address (`[ip]`); the port still names the shop's origin.
    let port = format!(":{}/", site.addr.port());
    assert!(
        event["url"].as_str().is_some_and(|url| url.contains(&port)),
        "{event}"
    );
    // The failed XHR before the throw is in its breadcrumbs, without its query string.
    let crumbs = event["breadcrumbs"].as_array().expect("breadcrumbs");
    assert!(
        crumbs.iter().any(|crumb| crumb["type"] == "request"
            && crumb["message"]
                .as_str()
                .is_some_and(|text| text.starts_with("POST ") && text.ends_with("/api/stock 409"))),
        "{event}"
    );
    let stack = event["stack"].as_str().unwrap_or_default();
    assert!(
        stack.contains("/assets/app.min.js:1:"),
        "the stack as Chrome wrote it: {stack}"
    );
    assert!(
        !found.to_string().contains("drop me"),
        "beforeSend dropped it: {found}"
    );

    // The session holds both errors and the traces of the page load and the fetch.
    let session_id = event["session_id"]
        .as_str()
        .expect("a session id")
        .to_string();
    let session = wait_for_value(
        "the session with its errors and traces",
        || api.get(&format!("/api/v1/sessions/{session_id}")),
        |session| {
            let traces = session["traces"].to_string();
            session["errors"]
                .as_array()
                .is_some_and(|errors| errors.len() == 2)
                && traces.contains("page load")
                && traces.contains("/api/cart")
                && traces.contains("POST http")
        },
    );
    assert!(session["user_agent"].is_string(), "{session}");
    let traces = session["traces"].as_array().expect("traces");
    let fetch_trace = traces
        .iter()
        .find(|trace| {
            trace["name"]
                .as_str()
                .is_some_and(|name| name.contains("/api/cart"))
        })
        .expect("the fetch's trace");
    let trace_id = fetch_trace["trace_id"].as_str().expect("trace_id");
    let trace = api.get(&format!("/api/v1/traces/{trace_id}"));
    let span = &trace["spans"][0];
    let name = span["name"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("GET http://") && name.ends_with(&format!("{port}api/cart")),
        "{trace}"
    );
    assert!(
        !trace.to_string().contains("SPRING"),
        "no query string: {trace}"
    );
    // The page's own origin is a propagation target: the request carried the span's traceparent.
    let cart = site.seen("GET", "/api/cart");
    let traceparent = cart[0].header("traceparent").expect("a traceparent");
    assert!(
        traceparent.starts_with(&format!("00-{trace_id}-")),
        "{traceparent}"
    );

    // An XMLHttpRequest is timed and traced too; its 409 marks the span as an error.
    let stock = site.seen("POST", "/api/stock");
    let traceparent = stock[0]
        .header("traceparent")
        .expect("a traceparent on the XHR");
    let stock_trace = traceparent.split('-').nth(1).expect("a trace id");
    let trace = api.get(&format!("/api/v1/traces/{stock_trace}"));
    let span = &trace["spans"][0];
    assert!(
        span["name"]
            .as_str()
            .is_some_and(|name| name.starts_with("POST ") && name.ends_with("/api/stock")),
        "{trace}"
    );
    assert_eq!(span["status"], "error", "{trace}");
    assert_eq!(span["attributes"]["http.status_code"], 409, "{trace}");

    // Hidden into the back-forward cache, the visit ends; shown again, a new one starts.
    page.eval(
        "dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })); \
         dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })); true",
    );
    let ended =
        |session: &Value| session["ended_at"].is_string() && session["duration_ms"].is_u64();
    wait_for_value(
        "the first visit's end",
        || api.get(&format!("/api/v1/sessions/{session_id}")),
        ended,
    );
    let listed = wait_for_value(
        "a second visit",
        || api.get("/api/v1/sessions"),
        |list| {
            list["items"]
                .as_array()
                .is_some_and(|items| items.len() == 2)
        },
    );
    let second = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["id"] != session_id.as_str())
        .expect("the second visit")["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Leaving the page ends the visit.
    page.goto(&site.url("/bye"));
    wait_for_value(
        "the second visit's end",
        || api.get(&format!("/api/v1/sessions/{second}")),
        ended,
    );
}

#[test]
fn sdk_keeps_a_visitors_variant_across_reloads_with_one_exposure_a_day() {
    let lookout = Arc::new(ingest_server());
    let api = ApiSession::sign_in(&lookout, OWNER);
    let experiment = json!({"key": "checkout-button", "active": true,
        "variants": [{"key": "blue", "weight": 50}, {"key": "green", "weight": 50}]});
    api.post("/api/v1/experiments", &experiment);
    let created = api.post("/api/v1/orgs/me/api-keys", &json!({"name": "flags"}));
    let token = created["key"].as_str().expect("a key");
    let flag = http()
        .put(lookout.url("/api/v1/flags/new-checkout"))
        .bearer_auth(token)
        .json(&json!({"value": true}))
        .send()
        .expect("put a flag");
    assert!(flag.status().is_success(), "{flag:?}");
    // The ES module this time, imported from its versioned path.
    let (module, _) = versioned_sdk(&lookout, "lookout.js");
    let page_html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script type="module">
import Lookout, {{ variant, flag }} from "{module}";
await Lookout.init({{ endpoint: location.origin, key: "{KEY}", service: "shop", flushIntervalMs: 200 }});
window.chosen = variant("checkout-button");
window.again = Lookout.variant("checkout-button");
window.flagged = flag("new-checkout");
await Lookout.flush();
window.done = true;
</script></head><body><h1>Shop</h1></body></html>"#
    );
    let (site, _) = gate_site(&lookout, page_html, |_, _| None);
    let page = Page::open(&lookout);
    let mut chosen = BTreeSet::new();
    for _ in 0..3 {
        page.goto(&site.url("/"));
        wait_for_value(
            "the page's variant",
            || page.eval("window.done === true"),
            |done| done == &json!(true),
        );
        let answer = page.eval("[window.chosen, window.again, window.flagged]");
        assert_eq!(answer[0], answer[1], "{answer}");
        assert_eq!(answer[2], json!(true), "the flag: {answer}");
        chosen.insert(answer[0].as_str().expect("a variant").to_string());
    }
    assert_eq!(chosen.len(), 1, "one variant across reloads: {chosen:?}");
    let variant = chosen.into_iter().next().unwrap_or_default();
    let results = wait_for_value(
        "the exposure counted",
        || api.get("/api/v1/experiments/checkout-button/results"),
        |results| results["days"][0]["variants"][&variant] == json!(1),
    );
    assert_eq!(
        results["days"].as_array().map(Vec::len),
        Some(1),
        "{results}"
    );
    let exposures = site.seen("POST", "/ingest/ab-uniques");
    assert_eq!(exposures.len(), 1, "one exposure sent for the day");
    // Later loads revalidate the configuration with its ETag.
    let configs = site.seen("GET", "/ingest/ab-config");
    assert!(configs.len() >= 3, "{configs:?}");
    assert!(
        configs[1..]
            .iter()
            .any(|config| config.header("if-none-match").is_some()),
        "{configs:?}"
    );
}

#[test]
fn sdk_files_load_under_the_sri_hashes_the_test_computes() {
    let lookout = Arc::new(ingest_server());
    let (module, module_integrity) = versioned_sdk(&lookout, "lookout.js");
    let (script, script_integrity) = versioned_sdk(&lookout, "lookout.iife.js");
    let page_html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script src="{script}" integrity="{script_integrity}" crossorigin="anonymous"></script>
<script type="module" src="{module}" integrity="{module_integrity}" crossorigin="anonymous"></script>
<script type="module">
import * as sdk from "{module}";
window.exported = Object.keys(sdk).sort();
window.global = Object.keys(window.Lookout).sort();
</script></head><body><h1>Shop</h1></body></html>"#
    );
    let site = Site::start(move |_| Reply::html(&page_html));
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));
    let exported = wait_for_value(
        "the module's exports",
        || page.eval("window.exported || null"),
        Value::is_array,
    );
    let expected = [
        "captureException",
        "captureMessage",
        "default",
        "flag",
        "flush",
        "init",
        "setTag",
        "setUser",
        "variant",
    ];
    assert_eq!(exported, json!(expected));
    let global = page.eval("window.global");
    for name in expected.iter().filter(|name| **name != "default") {
        assert!(
            global
                .as_array()
                .is_some_and(|names| names.contains(&json!(name))),
            "{name} in {global}"
        );
    }
    // The budget, on the wire: each file gzipped as the server sends it.
    for url in [&module, &script] {
        let gzipped = http()
            .get(url.as_str())
            .header("accept-encoding", "gzip")
            .send()
            .and_then(|response| response.bytes())
            .expect("the gzipped file");
        assert!(
            gzipped.len() <= 8 * 1024,
            "{url}: {} bytes gzipped",
            gzipped.len()
        );
    }
}
