//! Typed table access for channels and deliveries. Every function takes the transaction first,
//! so an emitted event's deliveries commit with the change that caused them.
//!
//! Invariants: a `Pending` delivery has exactly one row in `DUE_DELIVERIES`, keyed by its
//! `due_at`; a `Dead` one has exactly one row in `DEAD_DELIVERIES`; every delivery has one row
//! in `CHANNEL_DELIVERIES`. `put_delivery` keeps all three in step with the record, so callers
//! change a delivery only through it.

use redb::WriteTransaction;

use super::model::{Channel, ChannelId, Delivery, DeliveryId, DeliveryState};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::tables::{self, composite_key, owner_prefix};
use crate::store::{
    IndexTable, ReadTxn, RecordTable, Scan, StoreError, page_of_owner_newest_first,
};

const CHANNELS: RecordTable<Channel> = RecordTable::new(tables::CHANNELS);
const ORG_CHANNELS: IndexTable = IndexTable::new(tables::ORG_CHANNELS);
const DELIVERIES: RecordTable<Delivery> = RecordTable::new(tables::DELIVERIES);
const CHANNEL_DELIVERIES: IndexTable = IndexTable::new(tables::CHANNEL_DELIVERIES);
const DUE: IndexTable = IndexTable::new(tables::DUE_DELIVERIES);
const DEAD: IndexTable = IndexTable::new(tables::DEAD_DELIVERIES);

/// The due-index key: zero-padded milliseconds sort as numbers.
pub fn due_key(at: Timestamp, id: &DeliveryId) -> String {
    format!("{:020}/{}", at.unix_millis().max(0), id)
}

/// The due time encoded in a due-index key.
pub fn due_of_key(key: &str) -> Option<Timestamp> {
    let (millis, _) = tables::split_composite_key(key)?;
    millis.parse().ok().map(Timestamp)
}

pub fn put_channel(txn: &WriteTransaction, channel: &Channel) -> Result<(), StoreError> {
    CHANNELS.insert(txn, channel.id.as_str(), channel)?;
    let key = composite_key(channel.org_id.as_str(), channel.id.as_str());
    ORG_CHANNELS.insert(txn, &key, channel.id.as_str())
}

pub fn get_channel(txn: &impl ReadTxn, id: &ChannelId) -> Result<Option<Channel>, StoreError> {
    CHANNELS.get(txn, id.as_str())
}

/// The channel `id` when it belongs to `org` (other orgs' channels do not exist for a caller).
pub fn channel_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &ChannelId,
) -> Result<Option<Channel>, StoreError> {
    Ok(get_channel(txn, id)?.filter(|channel| &channel.org_id == org))
}

pub fn channels_of_org(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<Channel>, StoreError> {
    let prefix = owner_prefix(org.as_str());
    let mut channels = Vec::new();
    for (_, id) in ORG_CHANNELS.scan(txn, Scan::prefix(&prefix))? {
        let channel = CHANNELS.get(txn, &id)?.ok_or_else(|| StoreError::Corrupt {
            what: "channel index",
            detail: format!("{id} is indexed but missing"),
        })?;
        channels.push(channel);
    }
    Ok(channels)
}

/// One page of the organisation's channels, in id (creation) order, after the channel `after`.
pub fn channels_page_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&ChannelId>,
    limit: usize,
) -> Result<Vec<Channel>, StoreError> {
    let ids = ORG_CHANNELS.page_of_owner(txn, org.as_str(), after.map(ChannelId::as_str), limit)?;
    let mut channels = Vec::with_capacity(ids.len());
    for id in ids {
        let channel = CHANNELS.get(txn, &id)?.ok_or_else(|| StoreError::Corrupt {
            what: "channel index",
            detail: format!("{id} is indexed but missing"),
        })?;
        channels.push(channel);
    }
    Ok(channels)
}

/// Removes a channel; its deliveries stay (the log) and pending ones are cancelled on dispatch.
pub fn remove_channel(txn: &WriteTransaction, channel: &Channel) -> Result<(), StoreError> {
    CHANNELS.remove(txn, channel.id.as_str())?;
    let key = composite_key(channel.org_id.as_str(), channel.id.as_str());
    ORG_CHANNELS.remove(txn, &key)?;
    Ok(())
}

pub fn get_delivery(txn: &impl ReadTxn, id: &DeliveryId) -> Result<Option<Delivery>, StoreError> {
    DELIVERIES.get(txn, id.as_str())
}

/// Writes `new`, moving its index rows from what `old` had (None for a new delivery).
pub fn put_delivery(
    txn: &WriteTransaction,
    old: Option<&Delivery>,
    new: &Delivery,
) -> Result<(), StoreError> {
    let dead_key = composite_key(new.channel_id.as_str(), new.id.as_str());
    if let Some(old) = old {
        if let Some(at) = old.due_at {
            DUE.remove(txn, &due_key(at, &old.id))?;
        }
        if old.state == DeliveryState::Dead {
            DEAD.remove(txn, &dead_key)?;
        }
    } else {
        CHANNEL_DELIVERIES.insert(txn, &dead_key, new.id.as_str())?;
    }
    match (new.state, new.due_at) {
        (DeliveryState::Pending, Some(at)) => {
            DUE.insert(txn, &due_key(at, &new.id), new.id.as_str())?
        }
        (DeliveryState::Pending, None) => {
            return Err(StoreError::Corrupt {
                what: "delivery",
                detail: format!("{} is pending without a due time", new.id),
            });
        }
        (DeliveryState::Dead, _) => DEAD.insert(txn, &dead_key, new.id.as_str())?,
        (DeliveryState::Delivered | DeliveryState::Cancelled, _) => {}
    }
    DELIVERIES.insert(txn, new.id.as_str(), new)
}

/// Rows of the due index, soonest first, as `(key, delivery id)`.
pub fn due_rows(txn: &impl ReadTxn, limit: usize) -> Result<Vec<(String, String)>, StoreError> {
    DUE.scan(
        txn,
        Scan {
            prefix: "",
            after: None,
            limit,
        },
    )
}

pub fn queue_depth(txn: &impl ReadTxn) -> Result<u64, StoreError> {
    DUE.row_count(txn)
}

pub fn dead_letter_total(txn: &impl ReadTxn) -> Result<u64, StoreError> {
    DEAD.row_count(txn)
}

/// A page of one channel's deliveries in creation order, after the cursor (a delivery id).
pub fn deliveries_of_channel(
    txn: &impl ReadTxn,
    channel: &ChannelId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Delivery>, StoreError> {
    page_of(txn, CHANNEL_DELIVERIES, channel, after, limit)
}

/// A page of one channel's deliveries, newest first, before the cursor (a delivery id).
pub fn deliveries_of_channel_newest_first(
    txn: &impl ReadTxn,
    channel: &ChannelId,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<Delivery>, StoreError> {
    let owner = (channel.as_str(), before);
    let index = CHANNEL_DELIVERIES.definition();
    let ids = page_of_owner_newest_first(txn, index, owner, limit, |_, id| Ok(id.to_string()))?;
    ids.iter().map(|id| indexed_delivery(txn, id)).collect()
}

/// A page of one channel's dead letters, oldest first.
pub fn dead_of_channel(
    txn: &impl ReadTxn,
    channel: &ChannelId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Delivery>, StoreError> {
    page_of(txn, DEAD, channel, after, limit)
}

pub fn dead_count(txn: &impl ReadTxn, channel: &ChannelId) -> Result<usize, StoreError> {
    let prefix = owner_prefix(channel.as_str());
    Ok(DEAD.scan(txn, Scan::prefix(&prefix))?.len())
}

fn page_of(
    txn: &impl ReadTxn,
    index: IndexTable,
    channel: &ChannelId,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Delivery>, StoreError> {
    let prefix = owner_prefix(channel.as_str());
    let after_key = after.map(|id| composite_key(channel.as_str(), id));
    let scan = Scan {
        prefix: &prefix,
        after: after_key.as_deref(),
        limit,
    };
    let rows = index.scan(txn, scan)?;
    rows.iter()
        .map(|(_, id)| indexed_delivery(txn, id))
        .collect()
}

/// The delivery an index row names; its absence is corruption.
fn indexed_delivery(txn: &impl ReadTxn, id: &str) -> Result<Delivery, StoreError> {
    DELIVERIES.get(txn, id)?.ok_or_else(|| StoreError::Corrupt {
        what: "delivery index",
        detail: format!("{id} is indexed but missing"),
    })
}
