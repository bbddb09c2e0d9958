//! Integration tests: the real `lookout` binary on an ephemeral loopback port with a
//! temporary data dir, driven over HTTP, the admin socket and the command line.

mod agents_connect;
mod agents_support;
mod agents_terminal;
mod auth_attacks;
mod auth_keys;
mod auth_members;
mod auth_org;
mod auth_sessions;
mod auth_support;
mod auth_twofactor;
mod backup;
mod backup_data;
mod cli;
mod config_errors;
mod durability;
mod errors_groups;
mod errors_search;
mod fixtures;
mod harness;
mod http_basics;
mod ingest_data;
mod ingest_durability;
mod ingest_gate;
mod ingest_privacy;
mod ingest_support;
mod lifecycle;
mod packaging;
mod setup;
mod tidy;
mod webhooks_delivery;
mod webhooks_durability;
mod webhooks_support;
