//! Browser ingest. For now: the services registry that ingest and deployments fill, and that
//! `GET /api/v1/services` lists.

pub mod experiments;
pub mod services;
