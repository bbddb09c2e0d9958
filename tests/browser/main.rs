//! Browser tests: the real `lookout` binary (the integration tests' `TestServer`) with its web
//! UI driven in Debian's headless Chromium over the DevTools protocol. `page::Page` is what
//! tests use: elements found by role, label and text, every look-up waiting with a deadline.

#[path = "../integration/harness.rs"]
mod harness;

mod agents;
mod alerts;
mod auth;
mod chrome;
mod compat;
mod deployments;
mod errors;
mod errors_support;
mod experiments;
mod harness_checks;
mod identity;
mod links;
#[path = "../integration/oidc_node.rs"]
mod oidc_node;
mod overview;
mod page;
mod peers;
mod performance;
#[path = "../integration/receiver.rs"]
mod receiver;
mod sdk;
mod sdk_support;
mod sessions;
mod settings;
mod sign_in;
mod support;
mod ui_security;
mod vendor;
mod webhooks;
