//! Typed table access for incidents. Every function takes the transaction first, so a change
//! and its outbound events commit together.

use redb::WriteTransaction;

use crate::accounts::model::OrgId;
use crate::store::tables::{self, composite_key};
use crate::store::{ReadTxn, RecordTable, StoreError};

use super::model::{Incident, IncidentId};

const INCIDENTS: RecordTable<Incident> = RecordTable::new(tables::INCIDENTS);

pub fn put_incident(txn: &WriteTransaction, incident: &Incident) -> Result<(), StoreError> {
    let key = composite_key(incident.org_id.as_str(), incident.id.as_str());
    INCIDENTS.insert(txn, &key, incident)
}

pub fn incident_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &IncidentId,
) -> Result<Option<Incident>, StoreError> {
    INCIDENTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// Up to `limit` incidents of `org` after `after`, oldest first.
pub fn incidents_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&IncidentId>,
    limit: usize,
) -> Result<Vec<Incident>, StoreError> {
    INCIDENTS.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}
