//! Error intelligence (CONTRACT section 3, the error half): the error event's owner. Its type
//! and id, its tables and storage, stack parsing, fingerprints and error groups, source maps
//! and their resolution, the event and error group read APIs, and handing stored events to the
//! search index.
//!
//! Ingest reads a scrubbed item into an `ErrorEvent` and hands a request's events here, in one
//! direction: `resolve_batch` (frames through uploaded source maps, before the write),
//! `EventBatch::returning` (fingerprints, off the writer thread), `EventWrites::write` (the
//! batches of concurrent requests in one write closure, `store_events` for each: stores,
//! groups, counts rollups, updates the services registry; returns what the request reports),
//! then `events_committed` once the write is durable (indexing). Nothing comes back to ingest but those answers. Other capabilities and the CLI
//! reach events only through the functions and types here.
//!
//! Rooms: `event.rs` (the event), `event_db.rs` (its tables and storage), `stack.rs` (pure
//! parser), `fingerprint.rs` (pure), `model.rs` (the group record and how events fold into it),
//! `db.rs` (group tables and `Grouping`), `sourcemaps.rs` (stored maps), `resolve.rs`
//! (resolution), `writes.rs` (concurrent requests' batches written together), `views.rs` (the
//! event's wire type), `api_events.rs` (the event list), `regroup.rs` (moving stored events
//! to their source-mapped group when a map arrives),
//! `api.rs` (group detail and status changes), `api_list.rs` (the group list), `api_tags.rs`
//! (a group's tag distribution), `failure.rs` (`ErrorsError`, what storage code and closures
//! return; only the API rooms map it to answers). The rooms are private: other folders, tests and benches
//! reach errors only through the items re-exported here (and the `search` room's face).

mod api;
mod api_events;
mod api_list;
mod api_tags;
mod db;
mod dictionary;
mod engines;
mod event;
mod event_db;
mod failure;
mod fingerprint;
mod group_events;
mod group_runs;
mod model;
mod regroup;
mod resolve;
// The index is errors' own room; the server starts it and the admin socket and the CLI
// rebuild it through the re-exports below.
mod search;
mod session_events;
mod shapes;
mod sourcemaps;
mod stack;
mod views;
mod writes;

use redb::WriteTransaction;

pub use api::routes;
pub use event::{ErrorEvent, EventId, MAX_BREADCRUMBS};
pub use event_db::{
    EVENT_AGE, EventBatch, ReturnedEvents, StoredEvents, events_between, remove_event,
    remove_events,
};
pub use failure::ErrorsError;
/// The worker that regroups stored events when their source map arrives (`regroup.rs`).
pub use regroup::run as run_regroup;
/// The search index's face: the handle, its start and rebuild (`lookout reindex`), and the
/// ticket a request takes before writing events.
pub use search::{IndexTicket, RebuildReport, Search, index_dir, rebuild as rebuild_index};
pub use session_events::events_of_session;
pub use sourcemaps::{SourceMap, SourceMapId, debug_id};
/// The stack parser, for its fuzz target (`fuzz/fuzz_targets/stack_parser.rs`).
pub use stack::{Frame, MAX_FRAMES, parse as parse_stack};
pub use views::ErrorEventView;
pub use writes::EventWrites;

use crate::accounts::model::OrgId;
use crate::store::{ReadTxn, Store, StoreError};

/// Resolves the frames of a batch through the source maps of their debug ids and of its
/// releases (one read transaction on a blocking thread), before the batch is written.
pub async fn resolve_batch(
    store: &Store,
    org: &OrgId,
    mut events: Vec<ErrorEvent>,
) -> Result<Vec<ErrorEvent>, ErrorsError> {
    if !events.iter().any(resolve::may_resolve) {
        return Ok(events);
    }
    let org = org.clone();
    let resolved = store
        .read(move |txn| {
            let mut releases = resolve::ReleasesWithMaps::default();
            for event in &mut events {
                resolve::resolve_for_storing(txn, &org, event, &mut releases)?;
            }
            Ok::<_, StoreError>(events)
        })
        .await?;
    Ok(resolved)
}

/// Stores a batch inside the caller's write transaction: the events not stored before, each
/// assigned to its error group, counted for alert rules and in the services registry, with its
/// age row. May run more than once for one batch (the group-commit writer retries a batch
/// without a failed write): each run assigns groups afresh.
pub fn store_events(
    txn: &WriteTransaction,
    org: &OrgId,
    batch: &mut EventBatch,
) -> Result<StoredEvents, StoreError> {
    event_db::store_events(txn, org, batch)
}

/// The ticket a request takes before writing a batch (`search::status`); refused while the
/// server is stopping, before anything is written.
pub fn index_ticket(search: &search::Search) -> Result<IndexTicket, ErrorsError> {
    Ok(search.ticket()?)
}

/// Called once a batch is durable, with what `store_events` reported and where its events
/// return (`EventBatch::returning`): hands the events stored now, each with its group, to the
/// search index writer through the ticket taken before the write (`Search::ticket`), once
/// the writer's inbox has room (or a second passed: `search::inbox`).
pub async fn events_committed(
    ticket: IndexTicket,
    org: &OrgId,
    returned: ReturnedEvents,
    stored: StoredEvents,
) -> Result<(), ErrorsError> {
    let events = returned.arrive().await?;
    let stored = stored.take_from(events);
    metrics::counter!("lookout_ingest_events_stored_total").increment(stored.len() as u64);
    tracing::debug!(org = %org, stored = stored.len(), "error events committed");
    ticket.submit(org.as_str(), stored).await;
    Ok(())
}

/// How many error events are stored, over every organisation.
pub fn event_count(txn: &impl ReadTxn) -> Result<u64, StoreError> {
    event_db::EVENTS.row_count(txn)
}

/// Stores (or replaces) a source map: under its release and minified file (when it has a
/// release) and under its debug id (when it has one).
pub fn put_sourcemap(
    txn: &WriteTransaction,
    org: &OrgId,
    record: &SourceMap,
    compressed: &[u8],
) -> Result<(), StoreError> {
    sourcemaps::put(txn, org, record, compressed)
}
