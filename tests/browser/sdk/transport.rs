//! How the browser SDK sends (issue 16), through a gate in front of Lookout that can refuse: it
//! waits out a 429's `Retry-After`, retries network failures with growing jittered pauses, keeps
//! the newest 1,000 items while paused and counts the rest, splits a batch refused as too large
//! until every event arrives once, and delivers a closing page's batch by beacon.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::errors_support::{ApiSession, KEY, ingest_server};
use crate::harness::TestServer;
use crate::page::Page;
use crate::sdk_support::{Reply, event_messages, gate_site, refusal, shop_page, wait_for_value};
use crate::support::OWNER;

#[test]
fn sdk_waits_out_a_429_retry_after_before_sending_again() {
    let lookout = Arc::new(ingest_server());
    // The gate's origin is only known once it listens: the page reads its own origin.
    let page_html = shop_page(
        &lookout,
        "\" + location.origin + \"",
        "flushIntervalMs: 200",
        r#"window.ready.then(() => Lookout.captureException(new Error("checkout failed once")));"#,
    );
    let (site, statuses) = gate_site(&lookout, page_html, |request, earlier| {
        (request.path.starts_with("/ingest/web-errors") && earlier == 0).then(|| refusal(429, 2))
    });
    let api = ApiSession::sign_in(&lookout, OWNER);
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));

    wait_for_value(
        "the event, once",
        || json!(event_messages(&api)),
        |messages| messages.as_array().is_some_and(|list| list.len() == 1),
    );
    let posts = site.seen("POST", "/ingest/web-errors");
    assert!(posts.len() >= 2, "{:?}", statuses.lock().unwrap());
    let waited = posts[1].at - posts[0].at;
    assert!(
        waited >= Duration::from_secs(2),
        "sent again after {waited:?}"
    );
    assert_eq!(
        statuses
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, status)| *status == 429)
            .count(),
        1
    );
    assert_eq!(
        event_messages(&api),
        vec!["checkout failed once".to_string()]
    );
}

#[test]
fn sdk_retries_after_network_failures_with_a_growing_pause_and_stores_the_event_once() {
    let lookout = Arc::new(ingest_server());
    let page_html = shop_page(
        &lookout,
        "\" + location.origin + \"",
        "flushIntervalMs: 100",
        // The session goes first, so the error's attempts are the only requests in flight.
        r#"window.ready.then(() => Lookout.flush()).then(() => Lookout.captureException(new Error("flaky network")));"#,
    );
    let (site, _) = gate_site(&lookout, page_html, |request, earlier| {
        (request.path.starts_with("/ingest/web-errors") && earlier < 2).then(Reply::hang_up)
    });
    let api = ApiSession::sign_in(&lookout, OWNER);
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));

    wait_for_value(
        "the event",
        || json!(event_messages(&api)),
        |messages| messages.as_array().is_some_and(|list| !list.is_empty()),
    );
    let posts = site.seen("POST", "/ingest/web-errors");
    assert_eq!(posts.len(), 3, "two failures, then the delivery");
    // Backoff: 2 s then 4 s, each with up to half taken off by jitter; the upper bounds leave
    // room for the flush timer and a busy machine.
    let (first, second) = (posts[1].at - posts[0].at, posts[2].at - posts[1].at);
    assert!(
        first >= Duration::from_millis(1000) && first < Duration::from_millis(3000),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(2000) && second < Duration::from_millis(5000),
        "{second:?}"
    );
    assert_eq!(event_messages(&api), vec!["flaky network".to_string()]);
    // The browser logs each failed attempt; the SDK itself reports none of them.
    let problems = page.take_page_problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .all(|problem| problem.contains("ERR_EMPTY_RESPONSE")),
        "{problems:?}"
    );
}

#[test]
fn sdk_keeps_the_newest_thousand_items_while_paused_and_counts_what_it_dropped() {
    let lookout = Arc::new(ingest_server());
    // A 429 pauses the SDK for 3 s; meanwhile the page queues 1,100 errors and one more.
    let script = r#"window.ready.then(async () => {
  Lookout.captureMessage("before the flood", "error");
  await Lookout.flush();
  for (let n = 0; n < 1100; n++) Lookout.captureMessage("flood " + n, "error", { tags: { n: String(n) } });
  Lookout.captureMessage("after the flood", "error");
});"#;
    let page_html = shop_page(
        &lookout,
        "\" + location.origin + \"",
        "flushIntervalMs: 200",
        script,
    );
    let (site, _) = gate_site(&lookout, page_html, |request, earlier| {
        (request.path.starts_with("/ingest/web-errors") && earlier == 0).then(|| refusal(429, 3))
    });
    let api = ApiSession::sign_in(&lookout, OWNER);
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));

    let search = |query: &str| api.get(&format!("/api/v1/errors?q={query}&limit=5"));
    let last = wait_for_value(
        "the last error",
        || search("message:after"),
        |found| {
            found["items"]
                .as_array()
                .is_some_and(|items| items.len() == 1)
        },
    );
    let dropped = last["items"][0]["tags"]["lookout.dropped"]
        .as_str()
        .unwrap_or("0");
    let dropped: u64 = dropped.parse().expect("a count");
    assert!(
        (100..=110).contains(&dropped),
        "counted {dropped} dropped items: {last}"
    );
    let newest = wait_for_value(
        "the newest flood item",
        || search("tag.n:1099"),
        |found| {
            found["items"]
                .as_array()
                .is_some_and(|items| items.len() == 1)
        },
    );
    assert_eq!(newest["items"][0]["message"], "flood 1099");
    for oldest in ["tag.n:0", "tag.n:50", "message:before"] {
        let found = search(oldest);
        assert_eq!(found["items"], json!([]), "{oldest} was dropped: {found}");
    }
    drop(site);
}

#[test]
fn sdk_splits_a_batch_refused_as_too_large_and_every_event_arrives_once() {
    let lookout = Arc::new(
        TestServer::builder()
            .env("WEB_INGEST_KEY", KEY)
            .env("WEB_INGEST_MAX_BODY_BYTES", "4000")
            .start(),
    );
    lookout.add_user(OWNER, "owner", crate::support::PASSWORD);
    // Twelve events of about 600 bytes each, queued before the first flush: one batch of ~7 KB.
    let script = r#"window.ready.then(() => {
  for (const word of ["alpha","bravo","charlie","delta","echo","foxtrot","golf","hotel","india","juliet","kilo","lima"])
    Lookout.captureMessage("lost " + word + " " + "x".repeat(300), "error");
});"#;
    let page_html = shop_page(
        &lookout,
        "\" + location.origin + \"",
        "flushIntervalMs: 500",
        script,
    );
    let (site, statuses) = gate_site(&lookout, page_html, |_, _| None);
    let api = ApiSession::sign_in(&lookout, OWNER);
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));

    let messages = wait_for_value(
        "twelve events",
        || json!(event_messages(&api)),
        |messages| messages.as_array().is_some_and(|list| list.len() >= 12),
    );
    let unique: BTreeSet<String> = serde_json::from_value(messages.clone()).expect("messages");
    assert_eq!(
        messages.as_array().map(Vec::len),
        Some(12),
        "each once: {messages}"
    );
    assert_eq!(unique.len(), 12, "{messages}");
    let statuses = statuses.lock().unwrap().clone();
    let errors: Vec<u16> = statuses
        .iter()
        .filter(|(path, _)| path.starts_with("/ingest/web-errors"))
        .map(|(_, status)| *status)
        .collect();
    assert!(
        errors.contains(&413),
        "the first batch was too large: {errors:?}"
    );
    assert!(
        errors.iter().filter(|status| **status == 202).count() >= 2,
        "{errors:?}"
    );
    drop(site);
}

#[test]
fn sdk_delivers_a_closing_pages_batch_by_beacon() {
    let lookout = Arc::new(ingest_server());
    // A long flush interval: nothing leaves before the page closes.
    let script = r#"window.ready.then(() => {
  for (const n of ["one", "two", "three"]) Lookout.captureMessage("left behind " + n, "error");
  window.queued = true;
});"#;
    let page_html = shop_page(
        &lookout,
        "\" + location.origin + \"",
        "flushIntervalMs: 600000",
        script,
    );
    let (site, _) = gate_site(&lookout, page_html, |_, _| None);
    let api = ApiSession::sign_in(&lookout, OWNER);
    let page = Page::open(&lookout);
    page.goto(&site.url("/"));
    wait_for_value(
        "the events queued",
        || page.eval("window.queued === true"),
        |done| done == &json!(true),
    );
    assert!(
        site.seen("POST", "/ingest/web-errors").is_empty(),
        "nothing sent before closing"
    );
    page.goto(&site.url("/bye"));

    let messages = wait_for_value(
        "three events",
        || json!(event_messages(&api)),
        |messages| messages.as_array().is_some_and(|list| list.len() >= 3),
    );
    assert_eq!(messages.as_array().map(Vec::len), Some(3), "{messages}");
    let beacons = site.seen("POST", "/ingest/web-errors?key=");
    assert_eq!(beacons.len(), 1, "one beacon");
    let kind = beacons[0].header("content-type").unwrap_or_default();
    assert!(
        kind.starts_with("text/plain"),
        "a beacon's body type: {kind}"
    );
}
