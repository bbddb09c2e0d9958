//! Lookout: a self-hosted monitoring appliance in one binary.
//!
//! Modules in reading order: configuration, storage, HTTP plumbing, the capabilities
//! (with `secrets` below accounts and auth), the composition root and the command line.

pub mod accounts;
pub mod admin;
pub mod agents;
pub mod alerting;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod compat;
pub mod config;
pub mod errors;
pub mod http;
pub mod ingest;
pub mod notify;
pub mod scim;
pub mod secrets;
pub mod server;
pub mod sso;
pub mod store;
pub mod systemd;
