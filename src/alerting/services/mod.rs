//! The services registry: every service an organisation's telemetry or deployments named, with
//! its environments and when it was last seen. Filled by deployments here and, through
//! `alerting::record_activity`, by ingest and errors as they store telemetry (the arrow points
//! from them to alerting, as for rollups); read by `GET /api/v1/services` (the example
//! bearer-token call of SPEC.md).
//!
//! Invariants: ingest updates a service in the transaction that stores the telemetry naming it;
//! `last_seen` and the hourly error buckets use arrival times (a client cannot date itself into
//! the future); a service keeps at most `MAX_ENVIRONMENTS` environments and 24 hourly buckets.

pub mod api;

use serde::{Deserialize, Serialize};

use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::store::{RecordTable, StoreError, tables};

/// Environments remembered per service; more are not added (a hostile client could send many).
pub const MAX_ENVIRONMENTS: usize = 50;
const HOURS_KEPT: i64 = 24;

/// A service as stored, keyed `{org_id}/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    pub name: String,
    pub environments: Vec<String>,
    pub last_seen: Timestamp,
    /// Error events per hour bucket (unix hour -> count), trimmed to the last 24 hours.
    #[serde(default)]
    pub error_hours: Vec<(i64, u64)>,
}

impl Record for Service {
    const KIND: &'static str = "service";
}

const SERVICES: RecordTable<Service> = RecordTable::new(tables::SERVICES);

/// One ingested item naming a service.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub service: String,
    pub environment: Option<String>,
    /// Arrival time of the item.
    pub at: Timestamp,
    /// 1 for an error event, else 0.
    pub errors: u64,
}

/// Folds `activity` into the registry of `org`, one read and one write per service named.
pub fn record_activity(
    txn: &redb::WriteTransaction,
    org: &OrgId,
    activity: &[Activity],
) -> Result<(), StoreError> {
    let mut touched: std::collections::BTreeMap<&str, Vec<&Activity>> = Default::default();
    for item in activity {
        touched.entry(item.service.as_str()).or_default().push(item);
    }
    for (name, items) in touched {
        let key = tables::composite_key(org.as_str(), name);
        let mut service = SERVICES.get(txn, &key)?.unwrap_or_else(|| Service {
            name: name.to_string(),
            environments: Vec::new(),
            last_seen: Timestamp(0),
            error_hours: Vec::new(),
        });
        for item in items {
            apply_activity(&mut service, item);
        }
        SERVICES.insert(txn, &key, &service)?;
    }
    Ok(())
}

/// One item's effect on a service record (pure).
fn apply_activity(service: &mut Service, item: &Activity) {
    service.last_seen = service.last_seen.max(item.at);
    if let Some(environment) = &item.environment
        && !service.environments.contains(environment)
        && service.environments.len() < MAX_ENVIRONMENTS
    {
        service.environments.push(environment.clone());
        service.environments.sort();
    }
    if item.errors > 0 {
        let hour = item.at.unix_seconds().div_euclid(3600);
        match service.error_hours.iter_mut().find(|(h, _)| *h == hour) {
            Some((_, count)) => *count += item.errors,
            None => service.error_hours.push((hour, item.errors)),
        }
        let newest = service
            .error_hours
            .iter()
            .map(|(h, _)| *h)
            .max()
            .unwrap_or(hour);
        service.error_hours.retain(|(h, _)| newest - h < HOURS_KEPT);
        service.error_hours.sort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_updates_environments_last_seen_and_hourly_errors() {
        let mut service = Service {
            name: "web".into(),
            environments: vec![],
            last_seen: Timestamp(0),
            error_hours: vec![],
        };
        let hour = 3_600_000;
        let item = |at: i64, environment: Option<&str>, errors| Activity {
            service: "web".into(),
            environment: environment.map(str::to_string),
            at: Timestamp(at),
            errors,
        };
        apply_activity(&mut service, &item(10 * hour, Some("prod"), 1));
        apply_activity(&mut service, &item(10 * hour + 5, Some("prod"), 1));
        apply_activity(&mut service, &item(9 * hour, Some("beta"), 0));
        assert_eq!(service.environments, ["beta", "prod"]);
        assert_eq!(service.last_seen, Timestamp(10 * hour + 5));
        assert_eq!(service.error_hours, [(10, 2)]);
        apply_activity(&mut service, &item(40 * hour, None, 1));
        assert_eq!(
            service.error_hours,
            [(40, 1)],
            "buckets older than a day are dropped"
        );
    }
}
