//! Alert evaluator cost: one tick over 1,000 rules in a store holding a million error events
//! (and 200,000 spans), in process, with durable commits on the local disk.
//!
//! The events arrive spread over the last 24 hours across 10 services and 3 environments, so
//! the rollup table holds what a day of traffic leaves (second rows for the last hour, minute
//! rows for the day). The rules mix the four kinds with windows from one minute to a day, some
//! filtered by service and environment; thresholds are set so that part of them fire on the
//! first tick (that tick also writes alerts, incidents and events). Reports the first tick and
//! the p50 and max of the following steady ticks.
//!
//! Run: `cargo bench --bench alert_rules` (LOOKOUT_BENCH_EVENTS sets the event count, 1000000).

use std::time::Instant;

use lookout::accounts::model::Org;
use lookout::agents::Agents;
use lookout::alerting::evaluator::Evaluator;
use lookout::alerting::rules::model::{AlertRule, RuleId, RuleKind};
use lookout::clock::{Clock, Timestamp};
use lookout::config::{WebErrorAlertSettings, WebhookSettings};
use lookout::notify::Notify;
use lookout::store::{Store, StoreError, StoreOptions};
use serde_json::json;

const SERVICES: usize = 10;
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "dev"];
const DAY_MS: i64 = 86_400_000;

fn event(index: usize, received_at: Timestamp) -> lookout::errors::ErrorEvent {
    let item = json!({"level": "error", "name": "TypeError",
        "message": format!("cannot read 'x' of undefined (case {})", index % 500),
        "url": "https://shop.example.com/cart", "release": "1.4.2",
        "service": format!("svc-{}", index % SERVICES),
        "environment": ENVIRONMENTS[index % 3],
        "frames": [{"filename": "https://shop.example.com/app.js", "function": format!("f{}", index % 500), "lineno": 1, "colno": 2, "in_app": true}]});
    lookout::ingest::web_errors::parse_event(&item.into(), received_at, None).expect("valid event")
}

fn span(index: usize, received_at: Timestamp) -> lookout::ingest::spans::Span {
    let item = json!({"trace_id": format!("{:032x}", index / 10 + 1), "span_id": format!("{:016x}", index + 1),
        "name": "GET /api/cart", "start_time": received_at.unix_millis(),
        "duration_ms": 20 + (index * 7919) % 900, "service": format!("svc-{}", index % SERVICES),
        "environment": ENVIRONMENTS[index % 3]});
    lookout::ingest::spans::parse_span(&item.into(), received_at).expect("valid span")
}

fn rules(org: &Org, now: Timestamp) -> Vec<AlertRule> {
    let windows = [60, 300, 900, 3_600, 86_400];
    // Some windows are under 60 s after the offset below: still valid (at least 10 s).
    (0..1000)
        .map(|index| {
            let (kind, threshold) = match index % 20 {
                0..=11 => (RuleKind::ErrorCount, [5.0, 50.0, 5_000.0][index % 3]),
                12..=15 => (RuleKind::NewErrorGroup, 1.0),
                16..=18 => (RuleKind::SpanP95Ms, [300.0, 900.0][index % 2]),
                _ => (RuleKind::AgentOffline, 1.0),
            };
            AlertRule {
                id: RuleId::generate(),
                org_id: org.id.clone(),
                name: format!("rule {index}"),
                kind,
                service: (index % 2 == 0).then(|| format!("svc-{}", index % SERVICES)),
                environment: (index % 3 == 0).then(|| ENVIRONMENTS[index % 3].to_string()),
                threshold,
                // Distinct windows, so no two rules share a measurement.
                window_seconds: windows[index % windows.len()] - (index / 5) as i64 % 50,
                for_seconds: [0, 60][index % 2],
                recovery_seconds: 60,
                severity: "warning".into(),
                channels: Vec::new(),
                open_incident: index % 10 == 0,
                enabled: true,
                created_at: now,
                updated_at: now,
            }
        })
        .collect()
}

fn main() {
    let count: usize = std::env::var("LOOKOUT_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let spans = count / 5;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.redb");
    let store = Store::open(&path, StoreOptions::default()).expect("store");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let clock = Clock::system();
    let now = clock.now();
    let org = Org::new("bench".into(), now);
    let stored_org = org.clone();
    runtime
        .block_on(store.write(move |txn| {
            lookout::accounts::db::insert_org(txn, &stored_org)
                .map_err(|e| StoreError::Storage(e.to_string()))
        }))
        .expect("org");

    let started = Instant::now();
    for first in (0..count).step_by(1000) {
        let events: Vec<_> = (first..(first + 1000).min(count))
            .map(|index| {
                // Oldest first, spread over the last day.
                let age = DAY_MS - (index as i64 * DAY_MS / count as i64);
                event(index, Timestamp(now.unix_millis() - age))
            })
            .collect();
        let mut batch = lookout::errors::EventBatch::new(&org.id, events);
        let org = org.id.clone();
        runtime
            .block_on(
                store.write(move |txn| {
                    lookout::errors::store_events(txn, &org, &mut batch).map(drop)
                }),
            )
            .expect("events");
    }
    for first in (0..spans).step_by(1000) {
        let batch: Vec<_> = (first..(first + 1000).min(spans))
            .map(|index| {
                // The spans of the last hour.
                let age = 3_600_000 - (index as i64 * 3_600_000 / spans as i64);
                span(index, Timestamp(now.unix_millis() - age))
            })
            .collect();
        let org = org.id.clone();
        runtime
            .block_on(
                store.write(move |txn| lookout::ingest::spans::store_spans(txn, &org, &batch)),
            )
            .expect("spans");
    }
    let all_rules = rules(&org, now);
    runtime
        .block_on(store.write(move |txn| {
            for rule in &all_rules {
                lookout::alerting::rules::db::put_rule(txn, rule)?;
            }
            Ok::<_, StoreError>(())
        }))
        .expect("rules");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "store: {count} events and {spans} spans in {:.1} s, database {:.0} MiB",
        started.elapsed().as_secs_f64(),
        size as f64 / 1_048_576.0
    );

    let base_url = url::Url::parse("http://127.0.0.1:8080").unwrap();
    let webhooks = WebhookSettings {
        timeout: std::time::Duration::from_secs(10),
        retry_delays: vec![std::time::Duration::from_secs(60)],
        allow_private: false,
    };
    let notify = Notify::new(store.clone(), clock.clone(), webhooks, &base_url);
    let (_stop, stopping) = tokio::sync::watch::channel(false);
    let agents = Agents::new(store.clone(), clock.clone(), &base_url, stopping);
    let spikes = WebErrorAlertSettings {
        enabled: true,
        channels: Vec::new(),
        spike_threshold: 50,
        spike_window: std::time::Duration::from_secs(300),
        cooldown: std::time::Duration::from_secs(900),
    };
    let evaluator = Evaluator::new(notify, agents, spikes);

    let mut ticks = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        let report = runtime.block_on(evaluator.tick()).expect("tick");
        ticks.push((started.elapsed().as_secs_f64() * 1000.0, report));
    }
    let (first_ms, first) = &ticks[0];
    println!(
        "first tick: {first_ms:.1} ms ({} rules, {} changes, {} deliveries)",
        first.rules, first.changes, first.events
    );
    let mut steady: Vec<f64> = ticks[1..].iter().map(|(ms, _)| *ms).collect();
    steady.sort_by(f64::total_cmp);
    let changes: usize = ticks[1..].iter().map(|(_, r)| r.changes).sum();
    println!(
        "steady ticks ({}): p50 {:.1} ms, max {:.1} ms ({changes} changes)",
        steady.len(),
        steady[steady.len() / 2],
        steady[steady.len() - 1]
    );
}
