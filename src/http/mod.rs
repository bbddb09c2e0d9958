//! HTTP plumbing shared by every capability: the error catalogue, extractors, middleware,
//! metrics, the embedded UI and browser SDK, and the connection loop. Knows no capability.

pub mod body_buffers;
pub mod destination;
pub mod edge;
pub mod error;
pub mod extract;
pub mod head_scan;
pub mod memory;
pub mod metrics;
pub mod middleware;
pub mod outbound;
pub mod page;
pub mod problems;
pub mod query;
pub mod sdk;
pub mod serve;
pub mod ui;

pub use error::{ApiError, ErrorCode};
pub use extract::{ApiJson, BodyRules, ClientAddr};
