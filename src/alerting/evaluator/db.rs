//! Typed table access for each organisation's browser-error spike state.

use redb::WriteTransaction;

use crate::accounts::model::OrgId;
use crate::store::tables::{self};
use crate::store::{ReadTxn, RecordTable, StoreError};

use crate::alerting::alerts::model::AlertId;

const SPIKE_STATES: RecordTable<SpikeState> = RecordTable::new(tables::SPIKE_STATES);

/// An organisation's browser-error spike state.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpikeState {
    /// The spike alert firing now, if any.
    pub live: Option<AlertId>,
    /// When the last spike alert fired (the cooldown runs from here).
    pub last_fired_at: Option<crate::clock::Timestamp>,
}

impl crate::store::codec::Record for SpikeState {
    const KIND: &'static str = "spike state";
}

pub fn spike_state(txn: &impl ReadTxn, org: &OrgId) -> Result<SpikeState, StoreError> {
    Ok(SPIKE_STATES.get(txn, org.as_str())?.unwrap_or_default())
}

pub fn put_spike_state(
    txn: &WriteTransaction,
    org: &OrgId,
    state: &SpikeState,
) -> Result<(), StoreError> {
    SPIKE_STATES.insert(txn, org.as_str(), state)
}
