//! Durable write throughput: one commit per write versus group commit, at 1, 8 and 64
//! concurrent writers. Every write is acknowledged only once it is on disk.
//!
//! Run: `cargo bench --bench store_commit` (LOOKOUT_BENCH_SECONDS sets the time per case,
//! LOOKOUT_BENCH_FILTER keeps only the cases whose "mode/writers" contains it).

use std::time::{Duration, Instant};

use lookout::store::{Store, StoreError, StoreOptions, meta_put};

struct Outcome {
    writes: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn run_case(options: StoreOptions, writers: usize, duration: Duration) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("bench.redb"), options).expect("open store");
    let payload = vec![b'x'; 200];
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let store = store.clone();
        let payload = payload.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                // Records are keyed by time-sortable ids, as every record of the service is.
                let key = format!("evt_{}", lookout::store::ids::next_ulid());
                let value = payload.clone();
                let begun = Instant::now();
                store
                    .write(move |txn| -> Result<(), StoreError> { meta_put(txn, &key, &value) })
                    .await
                    .expect("durable write");
                latencies.push(begun.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("writer task"));
    }
    let elapsed = started.elapsed();
    store.close().await;
    latencies.sort();
    Outcome {
        writes: latencies.len(),
        elapsed,
        latencies,
    }
}

fn main() {
    let seconds: u64 = std::env::var("LOOKOUT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // Optional substring filter on "mode/writers", e.g. LOOKOUT_BENCH_FILTER="group commit/64".
    let filter = std::env::var("LOOKOUT_BENCH_FILTER").unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let modes = [
        (
            "one commit per write",
            StoreOptions {
                max_batch: 1,
                ..StoreOptions::default()
            },
        ),
        ("group commit", StoreOptions::default()),
        (
            "group commit, no two-phase",
            StoreOptions {
                two_phase_commit: false,
                quick_repair: false,
                ..StoreOptions::default()
            },
        ),
    ];
    println!("| mode | writers | records/s | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|");
    for (name, options) in modes {
        for writers in [1, 8, 64] {
            if !format!("{name}/{writers}").contains(&filter) {
                continue;
            }
            let outcome = runtime.block_on(run_case(
                options.clone(),
                writers,
                Duration::from_secs(seconds),
            ));
            let rate = outcome.writes as f64 / outcome.elapsed.as_secs_f64();
            println!(
                "| {name} | {writers} | {rate:.0} | {:.2} | {:.2} |",
                percentile(&outcome.latencies, 0.50).as_secs_f64() * 1000.0,
                percentile(&outcome.latencies, 0.99).as_secs_f64() * 1000.0,
            );
        }
    }
}
