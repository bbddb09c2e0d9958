//! Drop-in compatibility (CONTRACT section 9, docs/compat.md): the Sentry SDKs' envelope and
//! store endpoints and OpenTelemetry's OTLP/HTTP trace export, read into Lookout's native
//! ingest items and handed to ingest's one entry for decoded telemetry
//! (`ingest::api_decoded::accept_decoded`), so limits, scrubbing, grouping, search and alerting
//! are native ingest's own; and `GET /api/v1/orgs/me/ingest`, which tells an SDK where to send.
//!
//! Rooms: `envelope.rs` (encodings and the bounded framer), `sentry_event.rs` (Sentry events
//! into native error items), `sentry_other.rs` (transactions into spans, sessions), `otlp.rs`
//! (OTLP/JSON into spans and exception events), `otlp_proto.rs`
//! (OTLP protobuf into OTLP/JSON), `api.rs` (the `GET` route, the
//! CORS and rate-limit headers around the compat routes, `CompatError` mapped to problems),
//! `api_sentry.rs` and `api_otlp.rs` (the ingest routes); for `sentry-cli sourcemaps upload`,
//! `api_artifacts.rs` (chunk-upload options, chunks, bundle assembly), `artifacts.rs` (the
//! chunks waiting for assembly, bounded per organisation) and `bundle.rs` (an artifact
//! bundle's zip and manifest read into its source maps, bounded).
//!
//! Invariants: the same key check and organisation as `/ingest/*` (the key must be one of
//! `WEB_INGEST_KEY(S)`, the project id that of the organisation receiving ingest); every item
//! passes the native item checks after scrubbing; nothing is stored when a request is refused.

pub mod api;
pub mod api_artifacts;
pub mod api_otlp;
pub mod api_sentry;
pub mod artifacts;
pub mod bundle;
pub mod envelope;
pub mod otlp;
pub mod otlp_proto;
pub mod sentry_event;
pub mod sentry_other;
pub mod sentry_spans;

pub use artifacts::Artifacts;

use crate::accounts::model::OrgId;

/// What reading a Sentry or OTLP request can meet; `api.rs` maps each to its problem.
#[derive(Debug, thiserror::Error)]
pub enum CompatError {
    #[error("{what} exceeds {limit} bytes")]
    TooLarge { what: &'static str, limit: usize },
    #[error("more than {0} items in one envelope")]
    TooManyItems(usize),
    #[error("more than {0} chunks")]
    TooManyChunks(usize),
    #[error("{0}")]
    Invalid(String),
    #[error("the only Content-Encodings accepted are gzip, deflate and br")]
    UnsupportedEncoding,
    #[error("send {0}")]
    UnsupportedMediaType(&'static str),
    #[error("send a valid ingest key as sentry_key, in X-Sentry-Auth or in the envelope's dsn")]
    MissingKey,
    #[error("this project id is not the one of the organisation receiving ingest")]
    WrongProject,
}

/// The Sentry project id of an organisation: a stable positive integer below 2^31 derived from
/// its id, so it needs no table and never changes.
pub fn project_id(org: &OrgId) -> u32 {
    let digest = crate::secrets::token_digest(org.as_str());
    let id = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff;
    id.max(1)
}

/// Whether `key` can stand in a DSN: Sentry's SDKs accept only `[A-Za-z0-9_]+` there.
pub fn usable_in_dsn(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_ids_are_stable_and_positive() {
        let org = OrgId::parse("org_01JDZ5YV6F3N3T8K2M4P6Q8R0S").unwrap();
        assert_eq!(project_id(&org), project_id(&org.clone()));
        assert!(project_id(&org) >= 1 && project_id(&org) < 1 << 31);
        assert!(usable_in_dsn("abc_DEF_123"));
        for bad in ["", "a-b", "a b", "key@x", "é"] {
            assert!(!usable_in_dsn(bad), "{bad:?}");
        }
    }
}
