//! `ErrorsError`: the conditions errors' storage and model code report (read and write
//! closures included). Only the API maps them to answers, exhaustively (`api.rs`).
//!
//! Invariant: none of these is the client's fault; the store's own errors keep their answer
//! (503 `store_unavailable` when the disk refuses, 500 otherwise), everything else is 500
//! with the cause logged and never sent.

use tokio::sync::oneshot;

use crate::store::StoreError;
use crate::store::ids::IdError;

#[derive(Debug, thiserror::Error)]
pub enum ErrorsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A row of a group index names no valid error group id.
    #[error("stored error group id: {0}")]
    StoredGroupId(#[from] IdError),
    /// The events of a committed batch did not come back from the write closure.
    #[error("committed events did not return: {0}")]
    EventsLost(#[from] oneshot::error::RecvError),
    /// The server is stopping: a batch is refused before it is written (503, send it again).
    #[error(transparent)]
    Stopping(#[from] super::search::status::Stopping),
}
