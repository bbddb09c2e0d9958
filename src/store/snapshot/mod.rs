//! Backups: a consistent snapshot of the database packed into one self-checking file, its
//! verification, and its restore into an empty data dir.
//!
//! A backup is taken in two steps. `take` runs inside one redb read transaction (MVCC: writers
//! go on) and copies every table of `tables::ALL` into a fresh redb file in a work dir, then
//! reopens the copy and compares its row counts with those counted in the transaction. `pack`
//! then compresses that copy into the backup file (`format.rs`), fsyncs it, and verifies the
//! finished file exactly as `restore` would, so a backup that was reported written is known to
//! restore. Writing goes to a path chosen by the caller (a `.partial` name, a work dir) and
//! only the caller renames it into place, so a backup killed at any point never leaves a file
//! at the final name, and a leftover partial file never verifies (it lacks its footer).
//!
//! Invariants:
//! - A read transaction is held only while tables are copied, never while compressing, so a
//!   slow disk cannot keep old pages of the live database pinned for long.
//! - Nothing is trusted before the header's format version, then the whole-file SHA-256, have
//!   been checked; a newer format or schema is refused, never guessed at.
//! - Derived data (the search index, once it exists) is not part of a backup: `serve` rebuilds
//!   it from redb, which is the source of truth (see `restore.rs`).

mod copy;
pub mod format;
mod read;
mod restore;
mod write;

use std::path::PathBuf;

pub use format::{Manifest, PayloadInfo};
pub use read::{inspect, verify};
pub use restore::restore;
pub use write::{Snapshot, pack, take, take_from_file};

use super::StoreError;

/// Why a backup, a verification or a restore did not happen. The CLI maps each variant to its
/// own exit code (`cli::backup`), so scripts can tell a damaged file from a busy target.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file ends early: a copy or download was cut short, or a backup was killed.
    #[error("the backup file is truncated: {0}")]
    Truncated(String),
    /// The file is complete but not what was written (or not a backup at all).
    #[error("the backup file is corrupted: {0}")]
    Corrupt(String),
    #[error(
        "the backup file has format version {found}, newer than this lookout reads \
         ({supported}): restore it with a newer lookout"
    )]
    NewerFormat { found: u32, supported: u32 },
    #[error(
        "the backup holds database schema {found}, newer than this lookout supports \
         ({supported}): restore it with a newer lookout"
    )]
    NewerSchema { found: u32, supported: u32 },
    #[error("refusing to restore into {path}: the directory is not empty (it holds {first})")]
    TargetNotEmpty { path: PathBuf, first: String },
    #[error("refusing to restore into {path}: it exists and is not a directory")]
    TargetNotDirectory { path: PathBuf },
    /// The database holds a table this lookout does not know: it was written by a newer one.
    #[error(
        "the database holds table {0:?}, unknown to this lookout; back it up with the lookout \
         that wrote it"
    )]
    UnknownTable(String),
    /// The snapshot failed its own check (the copy differs from what the transaction saw).
    #[error("the snapshot failed its check: {0}")]
    Check(String),
    #[error("no database to back up at {0}")]
    NoDatabase(PathBuf),
    /// Displayed without its source: callers print the chain (`{:#}`), which adds it.
    #[error("{what} {path}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The restore target is locked by a running lookout, or cannot be created.
    #[error(transparent)]
    DataDir(#[from] super::data_dir::DataDirError),
    /// The progress callback asked to stop (the client of an online backup went away).
    #[error("the backup was cancelled")]
    Cancelled,
}

impl SnapshotError {
    /// Wraps an I/O error with what was being done and to which path.
    pub fn io(what: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { what, path, source }
    }
}

/// Which step a long operation is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Copying rows out of the read transaction (`done`/`total` are rows).
    Copying,
    /// Reopening the copy and counting its rows.
    Checking,
    /// Compressing the copy into the backup file (bytes of the copy).
    Compressing,
    /// Reading a backup file and checking its hashes (bytes of the file).
    Verifying,
    /// Decompressing the database out of a backup file (bytes of the database).
    Unpacking,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Copying => "copying rows",
            Phase::Checking => "checking the copy",
            Phase::Compressing => "compressing",
            Phase::Verifying => "verifying",
            Phase::Unpacking => "unpacking",
        }
    }
}

/// A progress report: `done` of `total` units of the current phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

/// Called with each report; returning an error (normally `Cancelled`) stops the operation.
pub type ProgressFn<'a> = &'a mut dyn FnMut(Progress) -> Result<(), SnapshotError>;

/// A progress callback that ignores every report.
pub fn no_progress(_: Progress) -> Result<(), SnapshotError> {
    Ok(())
}

/// File name of the database inside a snapshot work dir and inside a restored data dir.
const SNAPSHOT_FILE: &str = "snapshot.redb";
