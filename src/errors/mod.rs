//! Error intelligence (CONTRACT section 3, the error half): stack parsing, fingerprints and
//! error groups, source map resolution, and the error group read and status APIs.
//!
//! The pipeline hangs off browser ingest's seams: `ingest::errors::parse_event` derives frames
//! with `stack::parse` when the client sent none; the ingest route resolves frames through
//! `resolve` before the write; `ingest::errors::store_events` assigns each event to its group
//! with `db::Grouping` inside the same write transaction, so an event and its group's counts
//! commit together.
//!
//! Rooms: `stack.rs` (pure parser), `fingerprint.rs` (pure), `model.rs` (the group record and
//! how events fold into it), `db.rs` (tables), `resolve.rs` (source maps), `api.rs` (group detail and status changes), `api_list.rs` (the
//! group list), `api_tags.rs` (a group's tag distribution).

pub mod api;
pub mod api_list;
pub mod api_tags;
pub mod db;
pub mod fingerprint;
pub mod model;
pub mod resolve;
pub mod stack;

use crate::accounts::model::OrgId;
use crate::http::ApiError;
use crate::ingest::errors::ErrorEvent;
use crate::store::Store;

/// Resolves the frames of a batch through the source maps of its releases (one read
/// transaction on a blocking thread), before the batch is written.
pub async fn resolve_batch(
    store: &Store,
    org: &OrgId,
    mut events: Vec<ErrorEvent>,
) -> Result<Vec<ErrorEvent>, ApiError> {
    let wanted = events
        .iter()
        .any(|event| event.release.is_some() && (event.frames.is_some() || event.stack.is_some()));
    if !wanted {
        return Ok(events);
    }
    let org = org.clone();
    store
        .read(move |txn| {
            for event in &mut events {
                resolve::resolve_for_storing(txn, &org, event)?;
            }
            Ok::<_, ApiError>(events)
        })
        .await
}
