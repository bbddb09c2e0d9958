//! Alert rules: their records and pure state machine, the CRUD API, and each rule's last
//! reading (in memory).

pub mod api;
pub mod db;
pub mod model;
pub mod readings;
mod request;
