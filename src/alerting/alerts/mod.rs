//! Alerts: raised by external monitoring (the generic and Alertmanager bodies), by rules and by
//! browser-error spikes; listed and acknowledged.

pub mod api;
pub mod db;
pub mod external;
pub mod model;
