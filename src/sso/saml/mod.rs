//! SAML 2.0 service provider (docs/sso.md, CONTRACT §7): the identity provider's metadata
//! (`metadata.rs`), our own metadata and AuthnRequest (`service_provider.rs`), the signed
//! browser attempt (`attempt.rs`) and the verification of a posted Response (`response.rs`).
//!
//! Invariants: XML-DSig and canonicalisation are `saml-rs` (over `bergshamra`, pure Rust,
//! pinned exactly); the checks that decide who signs in are ours as well as the crate's: one
//! Assertion, unique IDs, the element used is the element signed, issuer, audience, recipient,
//! destination, `InResponseTo`, a time window with bounded skew. Every refusal is a
//! [`SamlError`] with a stable `code` for `/login?sso_error=<code>`.

mod api;
mod attempt;
mod error;
mod flow;
mod metadata;
mod response;
mod service_provider;

#[cfg(test)]
mod test_idp;

pub use api::routes;
pub use attempt::{ATTEMPT_COOKIE, ATTEMPT_LIFETIME, Attempt, AttemptKey};
pub use error::SamlError;
pub use metadata::{IdpMetadata, MAX_METADATA_BYTES};
pub use response::{MAX_RESPONSE_BYTES, MAX_SKEW, VerifiedAssertion, verify_response};
pub use service_provider::{ServiceProvider, StartedRequest};
