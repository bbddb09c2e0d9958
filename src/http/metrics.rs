//! The Prometheus recorder behind `GET /metrics`.
//!
//! Invariant: one recorder per process, installed on first use; every later server in the
//! same process (tests, benchmarks) shares it rather than failing.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Seconds buckets for request and commit latency: 0.5 ms to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Writes per group commit.
const BATCH_BUCKETS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// Installs the global recorder once and returns the handle that renders it.
pub fn install() -> Result<PrometheusHandle, String> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_string()), LATENCY_BUCKETS)
        .and_then(|builder| {
            builder.set_buckets_for_metric(
                Matcher::Full("lookout_store_commit_batch_size".into()),
                BATCH_BUCKETS,
            )
        })
        .map_err(|err| err.to_string())?
        .build_recorder();
    let handle = recorder.handle();
    // A lost race means another thread installed first: use its handle.
    if metrics::set_global_recorder(recorder).is_ok() {
        let _ = HANDLE.set(handle);
    }
    HANDLE
        .get()
        .cloned()
        .ok_or_else(|| "a foreign metrics recorder is installed".to_string())
}
