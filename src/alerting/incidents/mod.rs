//! Incidents: opened by people or rules, changed, noted and resolved, each with its timeline.

pub mod api;
pub mod db;
pub mod model;
pub mod views;
