//! What Lookout knows of each OpenID provider: its metadata (discovery document) with its key
//! set (JWKS), fetched through `openidconnect` on first use and cached.
//!
//! Invariants: discovery is the crate's (`CoreProviderMetadata::discover`), which uses a
//! document only when its `issuer` equals the configured issuer (a trailing slash the provider
//! adds to its own name is tolerated); cached entries live `CACHE_TTL`; an ID token signed with
//! a key the cached set lacks makes one re-fetch of the set (key rotation), at most once per
//! `JWKS_REFETCH_FLOOR` per provider, so forged `kid`s cannot make Lookout hammer a provider.
//! The cache holds at most `MAX_PROVIDERS` entries (issuers come from saved configurations).
//! Fetches run on blocking threads through the guarded `Fetcher`; no lock is held across them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreJsonWebKeySet, CoreProviderMetadata};
use openidconnect::{DiscoveryError, IssuerUrl, JsonWebKeySet};

use super::super::SsoError;
use super::super::fetch::{FetchError, Fetcher};

/// How long a discovery document or key set is trusted before it is fetched again.
pub const CACHE_TTL: Duration = Duration::from_secs(3600);
/// The least time between two re-fetches of a key set caused by an unknown key id.
pub const JWKS_REFETCH_FLOOR: Duration = Duration::from_secs(60);
/// The most providers cached at once.
pub const MAX_PROVIDERS: usize = 1024;
/// The largest discovery document or key set accepted, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

#[derive(Clone)]
struct Entry {
    metadata: CoreProviderMetadata,
    fetched_at: Instant,
    last_forced_refetch: Option<Instant>,
}

/// The cache of providers, shared by every sign-in.
#[derive(Default)]
pub struct Providers {
    entries: Mutex<HashMap<String, Entry>>,
}

/// A fetch's failure as an `SsoError`: the guard's refusal keeps its own code.
pub fn fetch_error(what: &str, cause: FetchError) -> SsoError {
    match cause {
        FetchError::Refused(why) => SsoError::DestinationRefused(format!("{what}: {why}")),
        FetchError::Failed(why) => SsoError::Provider(format!("{what}: {why}")),
    }
}

fn discovery_error(what: &str, error: DiscoveryError<FetchError>) -> SsoError {
    match error {
        DiscoveryError::Request(cause) => fetch_error(what, cause),
        DiscoveryError::Response(status, _, _) => {
            SsoError::Provider(format!("{what}: answered {status}"))
        }
        other => SsoError::Provider(format!("{what}: {other}")),
    }
}

fn discover(fetcher: &Fetcher, issuer: &str) -> Result<CoreProviderMetadata, SsoError> {
    let client = fetcher.bounded(MAX_DOCUMENT_BYTES);
    let exact = IssuerUrl::new(issuer.to_string())
        .map_err(|err| SsoError::Provider(format!("issuer: {err}")))?;
    match CoreProviderMetadata::discover(&exact, &client) {
        // OpenID Connect Discovery section 4.3: the document must name the issuer asked for;
        // the configured issuer is kept without a trailing slash, so try the provider's
        // spelling with one before refusing.
        Err(DiscoveryError::Validation(why)) => {
            let slashed = IssuerUrl::new(format!("{issuer}/"))
                .map_err(|err| SsoError::Provider(format!("issuer: {err}")))?;
            CoreProviderMetadata::discover(&slashed, &client)
                .map_err(|_| SsoError::Provider(format!("discovery: {why}")))
        }
        other => other.map_err(|err| discovery_error("discovery", err)),
    }
}

async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, SsoError> + Send + 'static,
) -> Result<T, SsoError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|cause| SsoError::Provider(cause.to_string()))?
}

impl Providers {
    fn cached(&self, issuer: &str) -> Option<Entry> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        entries
            .get(issuer)
            .filter(|entry| entry.fetched_at.elapsed() < CACHE_TTL)
            .cloned()
    }

    fn store(&self, issuer: &str, entry: Entry) {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if entries.len() >= MAX_PROVIDERS && !entries.contains_key(issuer) {
            entries.retain(|_, entry| entry.fetched_at.elapsed() < CACHE_TTL);
            if entries.len() >= MAX_PROVIDERS {
                entries.clear();
            }
        }
        entries.insert(issuer.to_string(), entry);
    }

    /// The metadata (with its key set) of `issuer`: cached, or discovered.
    pub async fn metadata(
        &self,
        fetcher: &Fetcher,
        issuer: &str,
    ) -> Result<CoreProviderMetadata, SsoError> {
        if let Some(entry) = self.cached(issuer) {
            return Ok(entry.metadata);
        }
        let (fetcher, owned) = (fetcher.clone(), issuer.to_string());
        let metadata = blocking(move || discover(&fetcher, &owned)).await?;
        self.store(
            issuer,
            Entry {
                metadata: metadata.clone(),
                fetched_at: Instant::now(),
                last_forced_refetch: None,
            },
        );
        Ok(metadata)
    }

    /// After an ID token named a key the cached set lacks: the metadata with a freshly
    /// fetched key set, or `None` when the set was re-fetched less than `JWKS_REFETCH_FLOOR`
    /// ago (the token is then refused as it is).
    pub async fn refetch_keys(
        &self,
        fetcher: &Fetcher,
        issuer: &str,
    ) -> Result<Option<CoreProviderMetadata>, SsoError> {
        let entry = match self.cached(issuer) {
            Some(entry) => entry,
            None => Entry {
                metadata: self.metadata(fetcher, issuer).await?,
                fetched_at: Instant::now(),
                last_forced_refetch: None,
            },
        };
        let recently = entry
            .last_forced_refetch
            .is_some_and(|at| at.elapsed() < JWKS_REFETCH_FLOOR);
        if recently {
            return Ok(None);
        }
        // Noted before the fetch, so concurrent unknown keys make one fetch, not many.
        let now = Instant::now();
        self.store(
            issuer,
            Entry {
                last_forced_refetch: Some(now),
                ..entry.clone()
            },
        );
        let (owned, url) = (fetcher.clone(), entry.metadata.jwks_uri().clone());
        let keys: CoreJsonWebKeySet = blocking(move || {
            JsonWebKeySet::fetch(&url, &owned.bounded(MAX_DOCUMENT_BYTES))
                .map_err(|err| discovery_error("key set", err))
        })
        .await?;
        let metadata = entry.metadata.set_jwks(keys);
        self.store(
            issuer,
            Entry {
                metadata: metadata.clone(),
                fetched_at: entry.fetched_at,
                last_forced_refetch: Some(now),
            },
        );
        Ok(Some(metadata))
    }
}
