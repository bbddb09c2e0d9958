//! Browser ingest (CONTRACT section 3): six key-authenticated, CORS-enabled, rate-limited routes
//! under `/ingest`, the scrubbing that happens before anything is stored, the stored sessions
//! and spans and their read APIs under `/api/v1`, flags and experiments, and retention.
//!
//! A request passes, in this order: the gate (`gate.rs`: CORS, the per-address rate limit), the
//! size limit while the body streams in, the ingest key, the media type and encoding
//! (`body.rs`), JSON parsing and the batch shape, the item count, then each item is scrubbed
//! (`scrub.rs`) and checked on its own. Accepted items are written through the store's group
//! commit and acknowledged (202) only once durable; a request refused before that stores nothing.
//!
//! Invariants: nothing a scrubber would replace reaches the store, the logs or the metrics; the
//! client address is stored only when `WEB_INGEST_SCRUB_IP=false`; CPU-heavy steps (inflating,
//! parsing, scrubbing, compressing) run on blocking threads, never on the reactor.
//!
//! Error events and source maps are the `errors` capability's: ingest reads an item into an
//! `errors::ErrorEvent` (`web_errors.rs`) or checks an uploaded map (`api_sourcemaps.rs`) and
//! hands them to `errors`' public face; nothing comes back but its answers. Telemetry counts for
//! alert rules and the services registry go to `alerting`'s face the same way, one direction.
//!
//! Errors: ingest's own code returns `IngestError` (and experiments `ExperimentError`); only
//! the handlers (`api.rs`, `api_*.rs`, `experiments/api.rs`) and the request-reading edge
//! (`gate.rs`, `body.rs`) speak `ApiError`, and the mappings are exhaustive matches.

pub mod api;
pub mod api_decoded;
pub mod api_reads;
pub mod api_settings;
pub mod api_sourcemaps;
pub mod api_trace_reads;
pub mod body;
pub mod experiments;
pub mod fields;
pub mod gate;
pub mod item;
pub mod retention;
pub mod scrub;
pub mod session_spans;
pub mod sessions;
pub mod spans;
pub mod traces;
pub mod views;
pub mod web_errors;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::accounts::model::OrgId;
use crate::clock::Clock;
use crate::config::{Config, IngestSettings};
use crate::http::BodyRules;
use crate::store::{Store, StoreError};
use gate::{IngestKeys, MAX_TRACKED_ADDRESSES, RateGate};

/// How long a client is asked to wait while no organisation exists to receive its data.
pub(crate) const NO_ORG_RETRY_AFTER: Duration = Duration::from_secs(60);

/// What ingest's own code (the handle, the batch's way to the store) can meet; the HTTP edge
/// (`api.rs`) maps each to its answer.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `WEB_INGEST_ORG_ID` names an organisation that does not exist.
    #[error("the organisation named by WEB_INGEST_ORG_ID does not exist")]
    ConfiguredOrgMissing,
    /// No organisation exists before setup.
    #[error("no organisation exists yet: finish setup first")]
    NoOrgYet,
    /// A batch's CPU work could not run to its end (the pool closed, the thread panicked).
    #[error("batch work failed: {0}")]
    Work(String),
}

/// The ingest handle shared by the ingest routes, the gate and the retention worker.
#[derive(Clone)]
pub struct Ingest {
    inner: Arc<Inner>,
}

struct Inner {
    settings: IngestSettings,
    store: Store,
    clock: Clock,
    rate: RateGate,
    keys: IngestKeys,
    body_read_timeout: Duration,
    retention: Duration,
    /// The organisation receiving ingested data, once found (organisations are never deleted).
    org: OnceLock<OrgId>,
    /// One permit per core for the CPU work of a batch (`cpu_work`).
    cpu: Arc<tokio::sync::Semaphore>,
    /// Error event batches of concurrent requests, written together.
    event_writes: crate::errors::EventWrites,
}

impl Ingest {
    pub fn new(config: &Config, store: Store, clock: Clock) -> Ingest {
        let settings = config.ingest.clone();
        Ingest {
            inner: Arc::new(Inner {
                rate: RateGate::new(settings.rate_per_min, MAX_TRACKED_ADDRESSES),
                keys: IngestKeys::new(&settings.keys),
                settings,
                event_writes: crate::errors::EventWrites::new(store.clone()),
                store,
                clock,
                body_read_timeout: config.http.body_read_timeout,
                retention: Duration::from_secs(u64::from(config.retention_days) * 86_400),
                org: OnceLock::new(),
                cpu: Arc::new(tokio::sync::Semaphore::new(
                    std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
                )),
            }),
        }
    }

    pub fn settings(&self) -> &IngestSettings {
        &self.inner.settings
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn event_writes(&self) -> &crate::errors::EventWrites {
        &self.inner.event_writes
    }

    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    pub fn rate(&self) -> &RateGate {
        &self.inner.rate
    }

    pub fn keys(&self) -> &IngestKeys {
        &self.inner.keys
    }

    /// Runs the CPU work of a batch (decoding, parsing, scrubbing, fingerprints) on a blocking
    /// thread, at most one batch per core at a time. More at once only adds threads, each
    /// holding a parsed body and keeping freed memory for itself: 64 clients posting together
    /// had dozens of parses in flight on two cores.
    pub async fn cpu_work<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, IngestError> {
        // The permit goes with the work: a request dropped while waiting for it (its client
        // gone) does not free a core the work still uses.
        let permit = self
            .inner
            .cpu
            .clone()
            .acquire_owned()
            .await
            .map_err(|closed| IngestError::Work(closed.to_string()))?;
        tokio::task::spawn_blocking(move || {
            let done = work();
            drop(permit);
            done
        })
        .await
        .map_err(|failed| IngestError::Work(failed.to_string()))
    }

    /// RETENTION_DAYS as a duration.
    pub fn retention(&self) -> Duration {
        self.inner.retention
    }

    /// A body limit of `max_bytes` with the server's body deadline.
    pub fn body_rules(&self, max_bytes: usize) -> BodyRules {
        BodyRules {
            max_bytes,
            read_timeout: self.inner.body_read_timeout,
        }
    }

    /// The organisation ingested data is bound to: `WEB_INGEST_ORG_ID`, else the first
    /// organisation. 503 `ingest_unavailable` while it does not exist (before setup).
    pub async fn org(&self) -> Result<OrgId, IngestError> {
        if let Some(org) = self.inner.org.get() {
            return Ok(org.clone());
        }
        let configured = self.inner.settings.org_id.clone();
        let found = self
            .inner
            .store
            .read(move |txn| {
                let orgs = crate::accounts::all_orgs(txn)?;
                let found = match &configured {
                    Some(id) => orgs.into_iter().find(|org| org.id.as_str() == id),
                    None => orgs.into_iter().next(),
                };
                Ok::<_, StoreError>(found.map(|org| org.id))
            })
            .await?;
        let Some(org) = found else {
            return Err(match &self.inner.settings.org_id {
                Some(_) => IngestError::ConfiguredOrgMissing,
                None => IngestError::NoOrgYet,
            });
        };
        Ok(self.inner.org.get_or_init(|| org).clone())
    }
}
