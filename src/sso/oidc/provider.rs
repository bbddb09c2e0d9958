//! What Lookout knows of each OpenID provider: its discovery document and its key set (JWKS),
//! fetched on first use and cached.
//!
//! Invariants: a discovery document is used only when its `issuer` equals the configured
//! issuer exactly; cached entries live `CACHE_TTL`; an ID token signed with a key the cached
//! set lacks makes one re-fetch of the set (key rotation), at most once per
//! `JWKS_REFETCH_FLOOR` per provider, so forged `kid`s cannot make Lookout hammer a provider.
//! The cache holds at most `MAX_PROVIDERS` entries (issuers come from saved configurations).
//! Fetches run on blocking threads; no lock is held across them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;

use super::super::{SsoError, fetch};

/// How long a discovery document or key set is trusted before it is fetched again.
pub const CACHE_TTL: Duration = Duration::from_secs(3600);
/// The least time between two re-fetches of a key set caused by an unknown key id.
pub const JWKS_REFETCH_FLOOR: Duration = Duration::from_secs(60);
/// The most providers cached at once.
pub const MAX_PROVIDERS: usize = 1024;
/// The largest discovery document or key set accepted, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The parts of an OpenID Provider's discovery document Lookout uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
}

#[derive(Clone)]
struct Entry {
    discovery: Discovery,
    discovered_at: Instant,
    keys: Option<(JwkSet, Instant)>,
    last_forced_refetch: Option<Instant>,
}

/// The cache of providers, shared by every sign-in.
#[derive(Default)]
pub struct Providers {
    entries: Mutex<HashMap<String, Entry>>,
}

fn provider_error(what: &str, cause: impl std::fmt::Display) -> SsoError {
    SsoError::Provider(format!("{what}: {cause}"))
}

async fn fetch_json<T: serde::de::DeserializeOwned + Send + 'static>(
    url: String,
    what: &'static str,
) -> Result<T, SsoError> {
    tokio::task::spawn_blocking(move || {
        let answer = fetch::get(&url, "application/json", MAX_DOCUMENT_BYTES)
            .map_err(|cause| provider_error(what, cause))?;
        if answer.status != 200 {
            return Err(provider_error(what, format!("answered {}", answer.status)));
        }
        serde_json::from_slice(&answer.body).map_err(|cause| provider_error(what, cause))
    })
    .await
    .map_err(|cause| provider_error(what, cause))?
}

impl Providers {
    fn cached(&self, issuer: &str) -> Option<Entry> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        entries
            .get(issuer)
            .filter(|entry| entry.discovered_at.elapsed() < CACHE_TTL)
            .cloned()
    }

    fn store(&self, issuer: &str, entry: Entry) {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if entries.len() >= MAX_PROVIDERS && !entries.contains_key(issuer) {
            entries.retain(|_, entry| entry.discovered_at.elapsed() < CACHE_TTL);
            if entries.len() >= MAX_PROVIDERS {
                entries.clear();
            }
        }
        entries.insert(issuer.to_string(), entry);
    }

    /// The discovery document of `issuer` (cached).
    pub async fn discovery(&self, issuer: &str) -> Result<Discovery, SsoError> {
        if let Some(entry) = self.cached(issuer) {
            return Ok(entry.discovery);
        }
        let url = format!("{issuer}/.well-known/openid-configuration");
        let discovery: Discovery = fetch_json(url, "discovery").await?;
        // OpenID Connect Discovery section 4.3: the issuer must be the one asked for.
        if discovery.issuer.trim_end_matches('/') != issuer {
            return Err(provider_error(
                "discovery",
                "the document names another issuer",
            ));
        }
        self.store(
            issuer,
            Entry {
                discovery: discovery.clone(),
                discovered_at: Instant::now(),
                keys: None,
                last_forced_refetch: None,
            },
        );
        Ok(discovery)
    }

    /// The key `kid` of `issuer`'s key set: from the cache, or after one re-fetch when the
    /// cached set lacks it (and the floor allows).
    pub async fn key(&self, issuer: &str, kid: Option<&str>) -> Result<Jwk, SsoError> {
        let discovery = self.discovery(issuer).await?;
        let entry = self.cached(issuer);
        let cached_keys = entry
            .as_ref()
            .and_then(|entry| entry.keys.clone())
            .filter(|(_, fetched)| fetched.elapsed() < CACHE_TTL)
            .map(|(keys, _)| keys);
        if let Some(keys) = &cached_keys {
            if let Some(key) = find_key(keys, kid) {
                return Ok(key);
            }
            let recently = entry
                .as_ref()
                .and_then(|entry| entry.last_forced_refetch)
                .is_some_and(|at| at.elapsed() < JWKS_REFETCH_FLOOR);
            if recently {
                return Err(SsoError::Rejected(
                    "the ID token's key is not in the provider's key set".to_string(),
                ));
            }
        }
        let forced = cached_keys.is_some();
        let keys: JwkSet = fetch_json(discovery.jwks_uri.clone(), "key set").await?;
        let now = Instant::now();
        let mut updated = entry.unwrap_or(Entry {
            discovery,
            discovered_at: now,
            keys: None,
            last_forced_refetch: None,
        });
        updated.keys = Some((keys.clone(), now));
        if forced {
            updated.last_forced_refetch = Some(now);
        }
        self.store(issuer, updated);
        find_key(&keys, kid).ok_or_else(|| {
            SsoError::Rejected("the ID token's key is not in the provider's key set".to_string())
        })
    }
}

/// The key named `kid`, or the only signing key when the token names none.
fn find_key(keys: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => keys.find(kid).cloned(),
        None if keys.keys.len() == 1 => keys.keys.first().cloned(),
        None => None,
    }
}
