//! `lookout reindex`: rebuilds the search index of a data dir from redb (after a restore, or
//! when the index is suspect), with a progress line on a terminal, whether or not the server
//! runs.
//!
//! Invariants: the index has one writer. With the data dir free, this process takes the lock
//! and rebuilds it itself; while a server holds it, the server's own index writer does the
//! rebuild (asked through the admin socket), with ingest and searches going on, and this
//! process only shows its progress. Either way the new index is built beside the old one and
//! replaces it only when complete, so an interrupted rebuild leaves the old index working.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use super::progress::{ProgressLine, Unit};
use crate::admin::AdminRequest;
use crate::admin::client::{self, ClientError};
use crate::admin::reindex::ReindexProgress;
use crate::config::Config;
use crate::store::data_dir::{DataDir, DataDirError, admin_socket_path};
use crate::store::{Store, StoreOptions};

/// The longest wait for a line from the server: it reports at least after every step, but a
/// step, or the swap at the end, can take a while on a slow disk.
const SERVER_WAIT: Duration = Duration::from_secs(600);

pub fn run(config: &Config) -> anyhow::Result<()> {
    let indexed = match DataDir::open(&config.data_dir, "lookout reindex") {
        Ok(dir) => offline(dir)?,
        Err(DataDirError::Locked { path, holder }) => {
            through_server(&config.data_dir).map_err(|error| match error {
                // No server answers: the holder is something else (exit 75).
                ClientError::Connect { .. } => DataDirError::Locked { path, holder }.into(),
                other => {
                    anyhow::Error::new(other).context("the server could not rebuild the index")
                }
            })?
        }
        Err(error) => return Err(error.into()),
    };
    println!("indexed {indexed} error events");
    Ok(())
}

fn offline(dir: DataDir) -> anyhow::Result<u64> {
    let store = Store::open(&dir.database_path(), StoreOptions::default())?;
    let total = store
        .read_blocking(crate::errors::event_count)
        .context("cannot count the stored events")?;
    let mut progress = ProgressLine::for_stderr();
    let index_dir = crate::errors::index_dir(dir.path());
    let indexed = crate::errors::rebuild_index(&index_dir, &store, |done| {
        progress.update("indexing", done, total, Unit::Rows);
    })
    .context("cannot rebuild the search index")?;
    progress.finish();
    store.close_blocking();
    drop(dir);
    Ok(indexed)
}

/// Asks the server holding the data dir to rebuild its index, showing its progress.
fn through_server(data_dir: &Path) -> Result<u64, ClientError> {
    let mut progress = ProgressLine::for_stderr();
    let result = client::call_with_progress(
        &admin_socket_path(data_dir),
        &AdminRequest::Reindex,
        SERVER_WAIT,
        &mut |report| {
            if let Ok(report) = serde_json::from_value::<ReindexProgress>(report) {
                progress.update("indexing", report.done, report.total, Unit::Rows);
            }
        },
    );
    progress.finish();
    let indexed = result?["indexed"].as_u64();
    indexed.ok_or_else(|| ClientError::Protocol("the reply has no `indexed` count".into()))
}
