//! Search indexing cost: events of about 2 KB (a 15-frame stack, the rest user agent and
//! fields) in 50 groups, stored in
//! redb, then indexed by `search::rebuild` (the same writer code as the live path). Reports
//! the wall time and process CPU time per event, so the "stack text once per group" design
//! can be checked against the cost of indexing every stack.
//!
//! Run: `cargo bench --bench search_index` (LOOKOUT_BENCH_EVENTS sets the count, 20000).

use std::time::Instant;

use lookout::accounts::model::Org;
use lookout::clock::Timestamp;
use lookout::store::{Store, StoreOptions};
use serde_json::json;

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (fields 14 and 15 of /proc/self/stat).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(") ").next().unwrap_or("");
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn event(index: usize, now: Timestamp) -> lookout::errors::ErrorEvent {
    let group = index % 50;
    let stack: String = std::iter::once(format!(
        "TypeError: cannot read 'x' of undefined (case {group})"
    ))
    .chain((0..15).map(|frame| {
        format!(
            "    at handler{group}_{frame} (https://shop.example.com/assets/app.3f9a1c2b.js:{}:{})",
            frame + 1,
            100 + index % 900
        )
    }))
    .collect::<Vec<_>>()
    .join("\n");
    let padding = "x".repeat(2048usize.saturating_sub(stack.len() + 300));
    let item = json!({"level": "error", "name": "TypeError", "message": format!("cannot read 'x' of undefined, request {index}"),
        "url": "https://shop.example.com/cart?item=42", "release": "1.4.2", "service": "shop",
        "environment": "production", "user_agent": padding, "user_id": format!("u-{}", index % 1000), "tags": {"plan": "pro"},
        "stack": stack});
    lookout::ingest::web_errors::parse_event(&item.into(), now, None).expect("valid event")
}

fn main() {
    let count: usize = std::env::var("LOOKOUT_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        Store::open(&dir.path().join("bench.redb"), StoreOptions::default()).expect("store");
    let now = Timestamp(1_795_348_800_000);
    let org = Org::new("bench".into(), now);
    let org_id = org.id.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(store.write(move |txn| {
            lookout::accounts::db::insert_org(txn, &org)
                .map_err(|e| lookout::store::StoreError::Storage(e.to_string()))
        }))
        .expect("org");
    let started = Instant::now();
    for chunk in (0..count).collect::<Vec<_>>().chunks(100) {
        let events: Vec<_> = chunk.iter().map(|index| event(*index, now)).collect();
        let mut batch = lookout::errors::EventBatch::new(&org_id, events);
        let org = org_id.clone();
        runtime
            .block_on(
                store.write(move |txn| {
                    lookout::errors::store_events(txn, &org, &mut batch).map(drop)
                }),
            )
            .expect("store events");
    }
    let stored = started.elapsed();
    let (cpu_before, wall) = (cpu_seconds(), Instant::now());
    let index_dir = dir.path().join("search");
    let indexed = lookout::errors::rebuild_index(&index_dir, &store, |_| {}).expect("rebuild");
    let (cpu, wall) = (cpu_seconds() - cpu_before, wall.elapsed());
    assert_eq!(indexed as usize, count);
    println!("stored {count} events (100 per transaction, grouped) in {stored:?}");
    println!(
        "indexed {count} events: {:.1} µs wall and {:.1} µs CPU per event (one commit at the end)",
        wall.as_secs_f64() * 1e6 / count as f64,
        cpu * 1e6 / count as f64
    );
}
