//! The reads behind the performance and experiments pages: span percentiles over time
//! (`GET /api/v1/spans/series`), the trace list (`GET /api/v1/traces`) and archived
//! experiments (`PATCH /api/v1/experiments/{key}` with `archived`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::http_basics::send;
use crate::ingest_support::*;

/// 2026-11-22T12:00:00Z.
const START: i64 = 1_795_348_800_000;
const MINUTE: i64 = 60_000;

fn span(trace: u32, id: u32, parent: Option<u32>, name: &str, start: i64, ms: u32) -> Value {
    let mut span = json!({"trace_id": format!("{trace:032x}"), "span_id": format!("{id:016x}"),
        "name": name, "start_time": START + start, "duration_ms": ms, "service": "shop",
        "environment": "production", "status": "ok"});
    if let Some(parent) = parent {
        span["parent_span_id"] = json!(format!("{parent:016x}"));
    }
    span
}

fn ingest_spans(server: &crate::harness::TestServer, spans: Vec<Value>) {
    let result = accepted(&post(server, "/ingest/spans", &json!({ "spans": spans })));
    assert_eq!(result["rejected"], json!([]), "{result}");
}

#[test]
fn span_percentiles_come_per_time_bucket() {
    let server = ingest_server(&[]);
    let mut spans = Vec::new();
    // Minute 0: 10..100 ms; minute 2: one 500 ms span; another name and service apart.
    for n in 1..=10_u32 {
        spans.push(span(n, n, None, "GET /cart", i64::from(n) * 1000, n * 10));
    }
    spans.push(span(20, 20, None, "GET /cart", 2 * MINUTE + 5, 500));
    spans.push(span(21, 21, None, "GET /home", 10, 7));
    let mut elsewhere = span(22, 22, None, "GET /cart", 10, 9_000);
    elsewhere["service"] = json!("admin");
    spans.push(elsewhere);
    ingest_spans(&server, spans);
    let key = owner_key(&server);

    let path = format!(
        "/api/v1/spans/series?service=shop&environment=production&name=GET%20/cart&from={START}&to={}&interval=60",
        START + 3 * MINUTE
    );
    let series = read(&server, &key, &path);
    assert_eq!(series["interval_seconds"], 60);
    let points = series["points"].as_array().expect("points");
    assert_eq!(points.len(), 3, "{series}");
    assert_eq!(points[0]["at"], "2026-11-22T12:00:00.000Z");
    assert_eq!(
        (
            &points[0]["count"],
            &points[0]["p50_ms"],
            &points[0]["p95_ms"]
        ),
        (&json!(10), &json!(50.0), &json!(100.0))
    );
    assert_eq!(
        (&points[1]["count"], &points[1]["p50_ms"]),
        (&json!(0), &Value::Null)
    );
    assert_eq!(points[2]["p99_ms"], 500.0);

    // A too fine interval is widened to at most 500 points; no interval picks one.
    let fine = read(
        &server,
        &key,
        &format!(
            "/api/v1/spans/series?from={START}&to={}&interval=1",
            START + 24 * 60 * MINUTE
        ),
    );
    assert_eq!(fine["interval_seconds"], 174);
    assert!(fine["points"].as_array().unwrap().len() <= 500);
    let chosen = read(
        &server,
        &key,
        &format!("/api/v1/spans/series?to={}", START + MINUTE),
    );
    assert_eq!(chosen["interval_seconds"], 900, "24 hours by default");

    // The existing per-name list takes the environment too.
    let staging = read(&server, &key, "/api/v1/spans?environment=staging");
    assert_eq!(staging["items"], json!([]));

    for bad in [
        "interval=0",
        "interval=x",
        "from=2026-11-22T13:00:00Z&to=2026-11-22T12:00:00Z",
        "to=yesterday",
        "name=a&name=b",
    ] {
        let reply = send(bearer(
            &server,
            &key,
            Method::GET,
            &format!("/api/v1/spans/series?{bad}"),
        ));
        reply.problem(400, "invalid_parameter");
    }
}

#[test]
fn traces_are_listed_newest_first_with_their_root_and_errors() {
    let server = ingest_server(&[]);
    let mut failed = span(1, 3, Some(2), "fetch /api/cart", 150, 300);
    failed["status"] = json!({"code": "error", "message": "503"});
    ingest_spans(
        &server,
        vec![
            // Trace 1: page load > render > fetch (failed), 0..450 ms.
            span(1, 2, Some(1), "render", 100, 350),
            failed,
            span(1, 1, None, "page load", 0, 450),
            // Trace 2, a minute later: a route change with one child.
            span(2, 4, None, "route change", MINUTE, 80),
            span(2, 5, Some(4), "fetch /api/cart", MINUTE + 10, 40),
            // Trace 3, two minutes later: another service only.
            json!({"trace_id": format!("{:032x}", 3), "span_id": format!("{:016x}", 6),
                "name": "cron", "start_time": START + 2 * MINUTE, "duration_ms": 5, "service": "worker"}),
        ],
    );
    let key = owner_key(&server);
    let all = read(&server, &key, "/api/v1/traces");
    let ids: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["root_name"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cron", "route change", "page load"]);
    let page_load = &all["items"][2];
    assert_eq!(
        page_load,
        &json!({"trace_id": format!("{:032x}", 1), "root_name": "page load", "service": "shop",
            "started_at": "2026-11-22T12:00:00.000Z", "duration_ms": 450.0, "span_count": 3,
            "error_count": 1})
    );
    assert_eq!(all["next_cursor"], Value::Null);

    // A trace is listed when one of its spans has the name; filters narrow it further.
    let named = read(
        &server,
        &key,
        "/api/v1/traces?service=shop&name=fetch%20/api/cart",
    );
    assert_eq!(named["items"].as_array().unwrap().len(), 2);
    let slow = read(&server, &key, "/api/v1/traces?min_duration_ms=100");
    assert_eq!(slow["items"].as_array().unwrap().len(), 1);
    let since = read(
        &server,
        &key,
        &format!(
            "/api/v1/traces?from={}&environment=production",
            START + MINUTE
        ),
    );
    assert_eq!(since["items"][0]["root_name"], "route change");
    assert_eq!(since["items"].as_array().unwrap().len(), 1);

    // Pages of one follow each other without overlap.
    let mut seen = Vec::new();
    let mut path = "/api/v1/traces?limit=1".to_string();
    loop {
        let page = read(&server, &key, &path);
        let items = page["items"].as_array().unwrap();
        seen.extend(
            items
                .iter()
                .map(|t| t["root_name"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/v1/traces?limit=1&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, ["cron", "route change", "page load"]);

    for bad in ["cursor=nope", "min_duration_ms=-1", "from=soon"] {
        let reply = send(bearer(
            &server,
            &key,
            Method::GET,
            &format!("/api/v1/traces?{bad}"),
        ));
        reply.problem(400, "invalid_parameter");
    }
}

#[test]
fn an_archived_experiment_leaves_ab_config_and_keeps_its_results() {
    let server = ingest_server(&[]);
    let key = owner_key(&server);
    let call = |method: Method, path: &str, body: Value| {
        send(bearer(&server, &key, method, path).json(&body))
    };
    let experiment =
        json!({"key": "cta", "variants": [{"key": "a", "weight": 1}, {"key": "b", "weight": 1}]});
    assert_eq!(
        call(Method::POST, "/api/v1/experiments", experiment).status,
        201
    );
    let exposure = json!({"exposures": [{"experiment": "cta", "variant": "b", "visitor_id": "v1",
        "timestamp": "2026-11-22T08:00:00Z"}]});
    accepted(&post(&server, "/ingest/ab-uniques", &exposure));

    let archived = call(
        Method::PATCH,
        "/api/v1/experiments/cta",
        json!({"archived": true}),
    );
    assert_eq!(archived.status, 200);
    let body = archived.json();
    assert_eq!(
        (&body["archived"], &body["active"]),
        (&json!(true), &json!(false))
    );
    let config = send(keyed(&server, Method::GET, "/ingest/ab-config")).json();
    assert_eq!(config["experiments"], json!([]), "archived: not served");
    let listed = read(&server, &key, "/api/v1/experiments");
    assert_eq!(listed["items"][0]["archived"], true);
    let results = read(&server, &key, "/api/v1/experiments/cta/results");
    assert_eq!(results["days"][0]["variants"]["b"], 1, "results kept");

    call(
        Method::PATCH,
        "/api/v1/experiments/cta",
        json!({"active": true}),
    )
    .problem(400, "invalid_payload");
    let back = call(
        Method::PATCH,
        "/api/v1/experiments/cta",
        json!({"archived": false, "active": true}),
    );
    assert_eq!(back.status, 200);
    let config = send(keyed(&server, Method::GET, "/ingest/ab-config")).json();
    assert_eq!(config["experiments"][0]["active"], true);
}
