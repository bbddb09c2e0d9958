//! `lookout reindex`: rebuilds the search index of a data dir from redb (after a restore, or
//! when the index is suspect), with a progress line on a terminal.
//!
//! Invariants: it runs only while no server holds the data dir (the index has one writer, and
//! a running server's writer is it); the old index is deleted first, so an interrupted rebuild
//! leaves a partial index that the next `serve` completes by catching up from its checkpoint.

use anyhow::Context;

use super::progress::{ProgressLine, Unit};
use crate::config::Config;
use crate::ingest::errors::EVENTS;
use crate::store::data_dir::{DataDir, DataDirError};
use crate::store::{Store, StoreOptions};

pub fn run(config: &Config) -> anyhow::Result<()> {
    let dir = match DataDir::open(&config.data_dir, "lookout reindex") {
        Ok(dir) => dir,
        Err(error @ DataDirError::Locked { .. }) => {
            return Err(anyhow::Error::new(error).context(
                "stop the server first: the index has one writer and it is the server's",
            ));
        }
        Err(error) => return Err(error.into()),
    };
    let store = Store::open(&dir.database_path(), StoreOptions::default())?;
    let total = store
        .read_blocking(|txn| EVENTS.row_count(txn))
        .context("cannot count the stored events")?;
    let mut progress = ProgressLine::for_stderr();
    let index_dir = crate::search::index_dir(dir.path());
    let indexed = crate::search::rebuild(&index_dir, &store, |done| {
        progress.update("indexing", done, total, Unit::Rows);
    })
    .context("cannot rebuild the search index")?;
    progress.finish();
    store.close_blocking();
    drop(dir);
    println!("indexed {indexed} error events");
    Ok(())
}
