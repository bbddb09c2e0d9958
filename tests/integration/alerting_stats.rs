//! Error events per interval for the overview chart (`GET /api/v1/stats/errors`), read from the
//! rollup counters: zero buckets included, filters by service and environment, the bounds on
//! the interval and the number of buckets, and every read route the UI needs in the OpenAPI
//! document.

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::text;
use crate::http_basics::send;
use crate::ingest_support::*;

const STATS: &str = "/api/v1/stats/errors";

fn counts(body: &Value) -> Vec<u64> {
    let buckets = body["buckets"].as_array().expect("buckets");
    buckets
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .collect()
}

#[test]
fn error_events_per_minute_come_with_zero_buckets_and_filters() {
    let server = ingest_server(&[]);
    let mut events = Vec::new();
    for n in 0..5 {
        let mut item = event(&format!("failure {n}"));
        item["service"] = json!(if n < 3 { "checkout" } else { "search" });
        item["environment"] = json!("production");
        events.push(item);
    }
    let mut info = event("not an error");
    info["level"] = json!("info");
    events.push(info);
    accepted(&post(
        &server,
        "/ingest/web-errors",
        &json!({"events": events}),
    ));
    let key = owner_key(&server);

    let day = read(&server, &key, STATS);
    assert_eq!(day["interval_seconds"], 60);
    let minutes = counts(&day);
    assert!(
        (1_440..=1_441).contains(&minutes.len()),
        "{}",
        minutes.len()
    );
    assert_eq!(minutes.iter().sum::<u64>(), 5, "error-level events only");
    // In the newest minute, or the one before when the minute turned between write and read.
    let newest = minutes.len() - 2;
    assert_eq!(
        minutes[newest..].iter().sum::<u64>(),
        5,
        "in the newest minute"
    );
    assert!(minutes[..newest].iter().all(|count| *count == 0));
    let first = day["buckets"][0]["at"].as_str().unwrap();
    assert!(
        first.ends_with(":00.000Z"),
        "aligned to the minute: {first}"
    );

    let checkout = read(&server, &key, &format!("{STATS}?service=checkout"));
    assert_eq!(counts(&checkout).iter().sum::<u64>(), 3);
    let filtered = read(
        &server,
        &key,
        &format!("{STATS}?service=search&environment=production"),
    );
    assert_eq!(counts(&filtered).iter().sum::<u64>(), 2);
    let staging = read(&server, &key, &format!("{STATS}?environment=staging"));
    assert_eq!(counts(&staging).iter().sum::<u64>(), 0);
    let hours = read(&server, &key, &format!("{STATS}?interval=3600"));
    assert_eq!(hours["interval_seconds"], 3600);
    assert!((24..=25).contains(&counts(&hours).len()));
    assert_eq!(counts(&hours).iter().sum::<u64>(), 5);
    let five = read(
        &server,
        &key,
        &format!("{STATS}?interval=300&from=0&to=3600000"),
    );
    assert_eq!(
        counts(&five),
        vec![0; 12],
        "an hour long ago in five-minute buckets"
    );
    assert_eq!(five["buckets"][1]["at"], "1970-01-01T00:05:00.000Z");

    let get = |path: &str| send(bearer(&server, &key, Method::GET, path));
    get(&format!("{STATS}?interval=120")).problem(400, "invalid_parameter");
    get(&format!("{STATS}?from=5000&to=5000")).problem(400, "invalid_parameter");
    let too_many = get(&format!("{STATS}?from=0&to=172800000"));
    let detail = too_many.problem(400, "invalid_parameter")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("1500"), "{detail}");
    let anonymous = send(crate::harness::http().get(server.url(STATS)));
    assert_eq!(anonymous.status, 401, "{}", text(&anonymous.body));
}

#[test]
fn the_read_routes_of_the_overview_are_in_the_openapi_document() {
    let server = ingest_server(&[]);
    let reply = send(crate::harness::http().get(server.url("/api/v1/openapi.json")));
    let document = reply.json();
    let paths = &document["paths"];
    for path in [STATS, "/api/v1/auth/orgs", "/api/v1/auth/switch-org"] {
        assert!(paths.get(path).is_some(), "{path} missing");
    }
    let deployments = paths["/api/v1/deployments"]["get"]["parameters"].to_string();
    assert!(deployments.contains("\"from\"") && deployments.contains("\"to\""));
    let schemas = &document["components"]["schemas"];
    // The detail flattens the session, so its own fields sit in one part of an `allOf`.
    let detail = schemas["SessionDetail"].to_string();
    assert!(
        detail.contains("\"traces\""),
        "sessions list their traces: {detail}"
    );
    for field in [
        "trace_id",
        "name",
        "started_at",
        "duration_ms",
        "span_count",
        "status",
    ] {
        let properties = &schemas["SessionTrace"]["properties"];
        assert!(!properties[field].is_null(), "SessionTrace.{field}");
    }
    let span = &schemas["TraceSpan"]["properties"]["session_id"];
    assert!(!span.is_null(), "spans show their session");
}
