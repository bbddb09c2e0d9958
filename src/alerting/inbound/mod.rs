//! Inbound tokens (`/api/v1/orgs/me/inbound-tokens`) and the `Inbound<K>` extractor that
//! admits build servers, CI systems and monitors: 401 or 403 before the body is read.

pub mod api;
pub mod db;
pub mod model;
