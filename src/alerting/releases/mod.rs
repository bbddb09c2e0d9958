//! Releases: deployments reported by any CI system (`/api/v1/deployments`) and Jenkins
//! builds (`/api/v1/builds`, `/api/v1/jenkins/notify`).

pub mod builds;
pub mod db;
pub mod deployments;
pub mod model;
