//! Sessions in the browser: a session the SDK reported is listed, opens on its own page with
//! the error it met (linked to its error group) and its trace (linked to its waterfall), and both links lead there.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::errors_support::{BUNDLE_TITLE, bundle_error, ingest, ingest_server, send_errors};
use crate::page::Query;
use crate::support::owner_page;

#[test]
fn a_session_is_listed_and_opens_with_its_error() {
    let server = ingest_server();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let session = json!({"id": "visit-7", "started_at": now_ms - 90_000, "duration_ms": 65_000,
        "url": "https://shop.example.com/cart", "service": "shop", "environment": "production",
        "release": "2.0", "page_views": 3, "errors": 1});
    ingest(
        &server,
        "/ingest/web-sessions",
        &json!({"sessions": [session]}),
    );
    let mut error = bundle_error("2.0");
    error["session_id"] = json!("visit-7");
    send_errors(&server, &[error]);
    let span = json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
        "name": "GET /api/cart", "start_time": now_ms - 80_000, "duration_ms": 120,
        "service": "shop", "session_id": "visit-7"});
    ingest(&server, "/ingest/spans", &json!({"spans": [span]}));

    let page = owner_page(&server);
    page.goto("/sessions");
    page.wait(&Query::heading(1, "Sessions"));
    page.wait_role("link", "visit-7");
    page.check_accessibility();
    page.screenshot("sessions");

    page.click_role("link", "visit-7");
    page.wait(&Query::heading(1, "Session visit-7"));
    page.wait_role("link", BUNDLE_TITLE);
    page.wait_role("link", "GET /api/cart");
    page.check_accessibility();
    page.screenshot("session");

    page.click_role("link", BUNDLE_TITLE);
    page.wait(&Query::heading(1, BUNDLE_TITLE));
    assert!(page.path().starts_with("/errors/grp_"), "{}", page.path());

    // The session's trace opens as its waterfall.
    page.goto("/sessions/visit-7");
    page.click_role("link", "GET /api/cart");
    page.wait(&Query::heading(1, "Trace 4bf92f3577b34da6a3ce929d0e0e4736"));
}
