//! Typed table access for alerts.
//!
//! Invariant: an external alert's dedup key has one row in `LIVE_ALERTS` exactly while it
//! fires; the key part is escaped so a `/` in it cannot split a composite key.

use redb::WriteTransaction;

use crate::accounts::model::OrgId;
use crate::store::tables::{self, composite_key};
use crate::store::{IndexTable, ReadTxn, RecordTable, StoreError};

use super::model::{Alert, AlertId, AlertState};
use crate::alerting::db::{corrupt, key_part};

const ALERTS: RecordTable<Alert> = RecordTable::new(tables::ALERTS);
const LIVE_ALERTS: IndexTable = IndexTable::new(tables::LIVE_ALERTS);

fn live_key(org: &OrgId, dedup_key: &str) -> String {
    composite_key(org.as_str(), &key_part(dedup_key))
}

/// The firing alert of `org` with `dedup_key`, if any.
pub fn live_alert(
    txn: &impl ReadTxn,
    org: &OrgId,
    dedup_key: &str,
) -> Result<Option<Alert>, StoreError> {
    let Some(id) = LIVE_ALERTS.get(txn, &live_key(org, dedup_key))? else {
        return Ok(None);
    };
    let key = composite_key(org.as_str(), &id);
    ALERTS
        .get(txn, &key)?
        .map(Some)
        .ok_or_else(|| corrupt("live alert index", &key))
}

/// Writes an alert; an external alert's dedup key stays in `LIVE_ALERTS` exactly while it
/// fires (rule and spike alerts are found through their rule or spike state instead).
pub fn put_alert(txn: &WriteTransaction, alert: &Alert) -> Result<(), StoreError> {
    let key = composite_key(alert.org_id.as_str(), alert.id.as_str());
    ALERTS.insert(txn, &key, alert)?;
    if !alert.is_external() {
        return Ok(());
    }
    let live = live_key(&alert.org_id, &alert.dedup_key);
    match alert.state {
        AlertState::Firing => LIVE_ALERTS.insert(txn, &live, alert.id.as_str()),
        AlertState::Pending | AlertState::Resolved => {
            // Only this alert's own row: a newer alert may hold the key by now.
            if LIVE_ALERTS.get(txn, &live)?.as_deref() == Some(alert.id.as_str()) {
                LIVE_ALERTS.remove(txn, &live)?;
            }
            Ok(())
        }
    }
}

/// Removes a pending rule alert whose condition went away before its For period ended.
pub fn remove_alert(txn: &WriteTransaction, alert: &Alert) -> Result<(), StoreError> {
    ALERTS.remove(
        txn,
        &composite_key(alert.org_id.as_str(), alert.id.as_str()),
    )?;
    Ok(())
}

pub fn alert_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &AlertId,
) -> Result<Option<Alert>, StoreError> {
    ALERTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Up to `limit` alerts of `org` after `after`, oldest first.
pub fn alerts_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&AlertId>,
    limit: usize,
) -> Result<Vec<Alert>, StoreError> {
    ALERTS.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}
