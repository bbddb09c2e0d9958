//! The chunks `sentry-cli sourcemaps upload` sends before it asks for an artifact bundle to
//! be assembled, kept in memory per organisation until then, and the outcome of each recent
//! assembly, so the CLI's polls of the same bundle get the same answer.
//!
//! Invariants: only a member's API key puts chunks here (the routes check it first); per
//! organisation at most `MAX_PENDING_CHUNKS` chunks and `MAX_PENDING_BYTES` bytes wait, each at
//! most `CHUNK_SIZE`, and each leaves when its bundle is assembled or `PENDING_TTL_MS` after it
//! arrived; at most `MAX_OUTCOMES` outcomes per organisation are remembered, for as long. A
//! chunk is stored under the SHA-1 of its bytes, checked on arrival, so a bundle assembled from
//! chunks is exactly the bytes the CLI hashed. Nothing here survives a restart: the CLI then
//! sends the chunks again, as the assemble answer lists them missing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use sha1::{Digest, Sha1};

use super::CompatError;
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;

/// The size of the chunks the CLI cuts a bundle into (it is told so), and the most one may be.
pub const CHUNK_SIZE: usize = 1 << 20;
/// The most chunks one upload request may carry.
pub const CHUNKS_PER_REQUEST: usize = 16;
/// The most bytes one upload request may have: its chunks gzip-compressed, with the multipart
/// framing (gzip may grow incompressible bytes a little).
pub const MAX_REQUEST_BYTES: usize = CHUNKS_PER_REQUEST * (CHUNK_SIZE + (64 << 10));
/// The most chunks, and bytes, that wait for assembly per organisation; also the largest
/// bundle (`MAX_PENDING_BYTES`).
pub const MAX_PENDING_CHUNKS: usize = 64;
pub const MAX_PENDING_BYTES: usize = 32 << 20;
/// How long a chunk waits for its bundle, and an outcome is remembered.
pub const PENDING_TTL_MS: i64 = 10 * 60 * 1000;
/// Outcomes remembered per organisation.
pub const MAX_OUTCOMES: usize = 32;

/// How assembling a bundle ended, as the CLI's polls are answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Stored,
    Failed(String),
}

/// The SHA-1 of `bytes`, lowercase hex, as the CLI names chunks and bundles.
pub fn sha1_hex(bytes: &[u8]) -> String {
    hex::encode(Sha1::digest(bytes))
}

/// Whether `text` is a SHA-1 as the CLI writes it (40 lowercase hex digits).
pub fn is_sha1(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[derive(Default)]
struct Pending {
    chunks: HashMap<String, (Bytes, Timestamp)>,
    bytes: usize,
    outcomes: Vec<(String, Outcome, Timestamp)>,
}

impl Pending {
    /// Drops the chunks and outcomes older than `PENDING_TTL_MS`.
    fn expire(&mut self, now: Timestamp) {
        let fresh = |at: &Timestamp| now.0.saturating_sub(at.0) < PENDING_TTL_MS;
        let before = self.chunks.len();
        self.chunks.retain(|_, (_, at)| fresh(at));
        if self.chunks.len() != before {
            self.bytes = self.chunks.values().map(|(bytes, _)| bytes.len()).sum();
        }
        self.outcomes.retain(|(_, _, at)| fresh(at));
    }
}

/// The chunks waiting for assembly, per organisation. Owned by the server state; cloning
/// shares it; dropping the last handle frees every waiting chunk.
#[derive(Clone, Default)]
pub struct Artifacts {
    pending: Arc<Mutex<HashMap<OrgId, Pending>>>,
}

impl Artifacts {
    fn with<T>(&self, org: &OrgId, now: Timestamp, work: impl FnOnce(&mut Pending) -> T) -> T {
        // A panic while holding the lock leaves whole entries only (inserted and removed whole).
        let mut all = self
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let pending = all.entry(org.clone()).or_default();
        pending.expire(now);
        let answer = work(pending);
        if pending.chunks.is_empty() && pending.outcomes.is_empty() {
            all.remove(org);
        }
        answer
    }

    /// Keeps chunks (already checked against their names) for `org`; all or none, refused
    /// when they would pass the organisation's bounds.
    pub fn put(
        &self,
        org: &OrgId,
        now: Timestamp,
        chunks: Vec<(String, Bytes)>,
    ) -> Result<(), CompatError> {
        self.with(org, now, |pending| {
            let new: Vec<_> = chunks
                .into_iter()
                .filter(|(name, _)| !pending.chunks.contains_key(name))
                .collect();
            let added: usize = new.iter().map(|(_, bytes)| bytes.len()).sum();
            if pending.chunks.len() + new.len() > MAX_PENDING_CHUNKS {
                return Err(CompatError::TooManyChunks(MAX_PENDING_CHUNKS));
            }
            if pending.bytes + added > MAX_PENDING_BYTES {
                return Err(CompatError::TooLarge {
                    what: "the chunks waiting for assembly",
                    limit: MAX_PENDING_BYTES,
                });
            }
            pending.bytes += added;
            for (name, bytes) in new {
                pending.chunks.insert(name, (bytes, now));
            }
            Ok(())
        })
    }

    /// The remembered outcome of the bundle `checksum`.
    pub fn outcome(&self, org: &OrgId, now: Timestamp, checksum: &str) -> Option<Outcome> {
        self.with(org, now, |pending| {
            pending
                .outcomes
                .iter()
                .find(|(sum, _, _)| sum == checksum)
                .map(|(_, outcome, _)| outcome.clone())
        })
    }

    /// The names in `chunks` that are not waiting here (each once, in order).
    pub fn missing(&self, org: &OrgId, now: Timestamp, chunks: &[String]) -> Vec<String> {
        self.with(org, now, |pending| {
            let mut missing: Vec<String> = Vec::new();
            for name in chunks {
                if !pending.chunks.contains_key(name) && !missing.contains(name) {
                    missing.push(name.clone());
                }
            }
            missing
        })
    }

    /// The bundle made of `chunks` in order, which then leave; `None` when one is missing.
    pub fn take_bundle(&self, org: &OrgId, now: Timestamp, chunks: &[String]) -> Option<Vec<u8>> {
        self.with(org, now, |pending| {
            let mut bundle = Vec::new();
            for name in chunks {
                bundle.extend_from_slice(&pending.chunks.get(name)?.0);
            }
            for name in chunks {
                if let Some((bytes, _)) = pending.chunks.remove(name) {
                    pending.bytes -= bytes.len();
                }
            }
            Some(bundle)
        })
    }

    /// Remembers how assembling `checksum` ended, forgetting the oldest past `MAX_OUTCOMES`.
    pub fn remember(&self, org: &OrgId, now: Timestamp, checksum: String, outcome: Outcome) {
        self.with(org, now, |pending| {
            pending.outcomes.retain(|(sum, _, _)| *sum != checksum);
            if pending.outcomes.len() >= MAX_OUTCOMES {
                pending.outcomes.remove(0);
            }
            pending.outcomes.push((checksum, outcome, now));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(fill: u8, len: usize) -> (String, Bytes) {
        let bytes = vec![fill; len];
        (sha1_hex(&bytes), Bytes::from(bytes))
    }

    #[test]
    fn chunks_are_bounded_per_org_and_expire() {
        let artifacts = Artifacts::default();
        let (org, other) = (OrgId::generate(), OrgId::generate());
        let now = Timestamp(1_000_000);
        let full: Vec<_> = (0..MAX_PENDING_CHUNKS as u8).map(|i| chunk(i, 8)).collect();
        artifacts.put(&org, now, full.clone()).unwrap();
        // One more is refused, the same ones again are not new, and another org has its own.
        assert!(matches!(
            artifacts.put(&org, now, vec![chunk(255, 8)]),
            Err(CompatError::TooManyChunks(_))
        ));
        artifacts.put(&org, now, full[..3].to_vec()).unwrap();
        artifacts.put(&other, now, vec![chunk(255, 8)]).unwrap();
        let later = Timestamp(now.0 + PENDING_TTL_MS);
        artifacts.put(&org, later, vec![chunk(255, 8)]).unwrap();
        let names: Vec<String> = full.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(artifacts.missing(&org, later, &names).len(), names.len());

        let big = |fill| chunk(fill, CHUNK_SIZE);
        let bytes: Vec<_> = (0..(MAX_PENDING_BYTES / CHUNK_SIZE) as u8)
            .map(big)
            .collect();
        let fresh = OrgId::generate();
        artifacts.put(&fresh, now, bytes).unwrap();
        assert!(matches!(
            artifacts.put(&fresh, now, vec![chunk(200, 1)]),
            Err(CompatError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_bundle_is_its_chunks_in_order_and_they_leave() {
        let artifacts = Artifacts::default();
        let org = OrgId::generate();
        let now = Timestamp(5);
        let (a, b) = (chunk(1, 3), chunk(2, 2));
        artifacts
            .put(&org, now, vec![b.clone(), a.clone()])
            .unwrap();
        let order = vec![a.0.clone(), b.0.clone(), a.0.clone()];
        assert_eq!(artifacts.missing(&org, now, &order), Vec::<String>::new());
        assert_eq!(
            artifacts.take_bundle(&org, now, &order).unwrap(),
            [1, 1, 1, 2, 2, 1, 1, 1]
        );
        assert_eq!(artifacts.missing(&org, now, &order), vec![a.0.clone(), b.0]);
        assert_eq!(artifacts.take_bundle(&org, now, &order), None);
        artifacts.remember(&org, now, "sum".into(), Outcome::Stored);
        assert_eq!(artifacts.outcome(&org, now, "sum"), Some(Outcome::Stored));
        assert!(is_sha1(&a.0) && !is_sha1("ABC") && !is_sha1(&a.0.to_uppercase()));
    }
}
