//! Performance in the browser: spans the test ingests (two traces, nested spans, one failed)
//! show per name with their percentiles; choosing a name draws its percentiles over time and
//! lists its traces; a trace opens as a waterfall with its rows in tree order and depth.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::errors_support::{ingest, ingest_server, wait_until};
use crate::page::{Page, Query};
use crate::support::owner_page;

const FIRST: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SECOND: &str = "5ce03f4688c45eb7b4df030e1f1f5847";

fn span(trace: &str, id: u32, parent: Option<u32>, name: &str, start: u64, ms: u32) -> Value {
    let mut span = json!({"trace_id": trace, "span_id": format!("{id:016x}"), "name": name,
        "start_time": start, "duration_ms": ms, "service": "shop", "environment": "production",
        "status": "ok", "attributes": {"http.route": name}});
    if let Some(parent) = parent {
        span["parent_span_id"] = json!(format!("{parent:016x}"));
    }
    span
}

/// The rows of the table `selector` as the text of their cells.
fn rows(page: &Page, selector: &str) -> Vec<Vec<String>> {
    let script = format!(
        "[...document.querySelectorAll('{selector} tbody tr')].map((row) => [...row.cells].map((cell) => cell.innerText.trim()))"
    );
    serde_json::from_value(page.eval(&script)).expect("rows of cells")
}

#[test]
fn spans_show_percentiles_a_chart_their_traces_and_a_waterfall() {
    let server = ingest_server();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let (first, second) = (now - 600_000, now - 300_000);
    let mut failed = span(FIRST, 3, Some(2), "fetch /api/cart", first + 100, 150);
    failed["status"] = json!({"code": "error", "message": "503"});
    let mut root = span(FIRST, 1, None, "page load", first, 400);
    root["session_id"] = json!("visit-9");
    let spans = json!({"spans": [
        root,
        span(FIRST, 2, Some(1), "render", first + 50, 300),
        failed,
        span(SECOND, 4, None, "page load", second, 200),
        span(SECOND, 5, Some(4), "fetch /api/cart", second + 10, 20),
    ]});
    ingest(&server, "/ingest/spans", &spans);

    let page = owner_page(&server);
    page.goto("/performance");
    page.wait(&Query::heading(1, "Performance"));
    page.wait_role("link", "page load");
    let table = rows(&page, "table.span-table");
    assert_eq!(
        table,
        [
            ["fetch /api/cart", "2", "20 ms", "150 ms", "150 ms"],
            ["page load", "2", "200 ms", "400 ms", "400 ms"],
            ["render", "1", "300 ms", "300 ms", "300 ms"],
        ],
        "most spans first, then by name"
    );
    page.check_accessibility();

    page.click_role("link", "page load");
    page.wait(&Query::heading(2, "Percentiles over time: page load"));
    wait_until("the chart", || {
        page.eval("!!document.querySelector('.chart canvas')") == json!(true)
    });
    page.wait_role("link", SECOND);
    let traces = rows(&page, "section[aria-labelledby=panel-traces] table");
    let ids: Vec<&str> = traces.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(ids, [SECOND, FIRST], "newest first");
    assert_eq!(traces[1][1..6], ["page load", "shop", "400 ms", "3", "1"]);
    page.check_accessibility();
    page.screenshot("performance");

    page.click_role("link", FIRST);
    page.wait(&Query::heading(1, &format!("Trace {FIRST}")));
    page.wait_role("link", "visit-9");
    let order = page.eval(
        "[...document.querySelectorAll('table.waterfall tbody tr')].map((row) => [Number(row.dataset.depth), row.cells[0].innerText.trim()])",
    );
    assert_eq!(
        order,
        json!([[0, "page load"], [1, "render"], [2, "fetch /api/cart"]])
    );
    let bars = page.eval(
        "[...document.querySelectorAll('.waterfall-bar')].map((bar) => [Math.round(parseFloat(bar.style.left)), Math.round(parseFloat(bar.style.width))])",
    );
    assert_eq!(
        bars,
        json!([[0, 100], [13, 75], [25, 38]]),
        "placed by start and duration"
    );
    page.click_role("button", "render");
    page.wait(&Query::heading(2, "Span: render"));
    page.wait_text("http.route");
    page.check_accessibility();
    page.screenshot("trace");
    page.press("j");
    page.wait(&Query::heading(2, "Span: fetch /api/cart"));
}

/// Before the first span, the page teaches how to send one.
#[test]
fn before_the_first_span_the_page_shows_how_to_send_one() {
    let server = ingest_server();
    let page = owner_page(&server);
    page.goto("/performance");
    page.wait(&Query::heading(2, "No spans yet: send the first one"));
    page.wait_role("button", "Copy curl command");
    let ingest_url = format!("{}/ingest/spans", server.url("").trim_end_matches('/'));
    let shown = page.eval("document.querySelector('.guide code').innerText");
    assert_eq!(shown, json!(ingest_url));
    page.wait_text("one of the server's WEB_INGEST_KEYS");
    page.check_accessibility();
}
