//! The embedded store: redb is the source of truth for every record of the service.
//!
//! Invariants:
//! - Every write goes through the single group-commit writer (`writer.rs`): concurrent calls
//!   are batched into one durable (`Durability::Immediate`, two-phase) transaction, and a call
//!   returns only after its data is on disk.
//! - Reads run on blocking threads in MVCC read transactions and never wait for the writer.
//! - After an I/O error (disk full, read-only file system) writes fail fast with
//!   `StoreError::Unavailable`, `health()` says degraded, reads keep working where redb allows,
//!   and the writer reopens the database and probes until a write succeeds again.
//! - No transaction is ever held across an `.await`: closures run to completion on one thread.

pub mod ages;
mod backward;
pub mod codec;
pub mod data_dir;
pub mod dictionaries;
mod forward;
pub mod ids;
pub mod migrations;
pub mod secret_table;
pub mod segments;
pub mod snapshot;
pub mod table;
pub mod tables;
mod writer;

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use redb::{Database, ReadTransaction, ReadableDatabase, WriteTransaction};
use tokio::sync::oneshot;

pub use backward::{WalkBounds, WalkEnd, walk_backwards};
pub use forward::keep_forward;
pub(crate) use secret_table::secret_record;
pub use secret_table::{SecretRecord, SecretTable};
pub use table::{
    IndexTable, IndexWriter, ReadTxn, RecordTable, RecordWriter, Scan, meta_get, meta_put,
    meta_remove, page_of_owner_newest_first,
};

/// How long a client is told to wait before retrying a write refused by a degraded store.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The disk refused a write (full, read-only, failing). Temporary: the store heals itself.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("stored {what} is corrupt: {detail}")]
    Corrupt { what: &'static str, detail: String },
    /// A redb error that is not about the disk: a bug, never the client's fault.
    #[error("storage error: {0}")]
    Storage(String),
    #[error("store is closed")]
    Closed,
}

impl From<redb::StorageError> for StoreError {
    fn from(err: redb::StorageError) -> Self {
        match err {
            redb::StorageError::Io(io) => StoreError::Unavailable(io.to_string()),
            redb::StorageError::PreviousIo => {
                StoreError::Unavailable("an earlier i/o error is not yet recovered".into())
            }
            redb::StorageError::DatabaseClosed => StoreError::Closed,
            other => StoreError::Storage(other.to_string()),
        }
    }
}

/// Turns the wrappers redb puts around `StorageError` into the same classification.
macro_rules! from_redb_wrapper {
    ($($error:ty),*) => {$(
        impl From<$error> for StoreError {
            fn from(err: $error) -> Self {
                match err.into() {
                    redb::Error::Io(io) => StoreError::Unavailable(io.to_string()),
                    redb::Error::PreviousIo => {
                        StoreError::Unavailable("an earlier i/o error is not yet recovered".into())
                    }
                    redb::Error::DatabaseClosed => StoreError::Closed,
                    other => StoreError::Storage(other.to_string()),
                }
            }
        }
    )*};
}
from_redb_wrapper!(
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError
);

/// Tuning of the writer; the defaults are what production uses.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Most writes committed in one transaction; 1 turns group commit off (for benchmarks).
    pub max_batch: usize,
    /// redb's two-phase commit: browser data is attacker-supplied, so this stays on.
    pub two_phase_commit: bool,
    /// Save allocator state on each commit so reopening after a crash is instant.
    pub quick_repair: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_batch: 1024,
            two_phase_commit: true,
            quick_repair: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open database {path}: {source}")]
    Database {
        path: PathBuf,
        source: redb::DatabaseError,
    },
    #[error(transparent)]
    Migration(#[from] migrations::MigrationError),
    #[error("cannot start the store writer: {0}")]
    Writer(std::io::Error),
    #[error("cannot load the record dictionaries: {0}")]
    Dictionaries(StoreError),
    #[error("cannot open the event segments: {0}")]
    Segments(StoreError),
}

/// Whether writes are currently accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    Degraded,
}

/// A cheap, cloneable handle to the store.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

/// State shared between handles, readers and the writer thread.
struct Shared {
    path: PathBuf,
    /// The open database; `None` while the writer is reopening it after an I/O error.
    /// Readers clone the `Arc` and release it when their read transaction ends.
    database: RwLock<Option<Arc<Database>>>,
    /// Set by the writer on an I/O error, cleared once a probe write succeeds.
    degraded: AtomicBool,
    /// Sends work to the writer thread; `None` once the store is closed. A read lock is
    /// enough to send (the sender is `Sync`), so concurrent writers do not contend here.
    jobs: RwLock<Option<std::sync::mpsc::Sender<writer::Message>>>,
    /// Joined by `close()`, so that closing returns after the last commit.
    writer_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The error event records' segment files (`segments.rs`).
    segments: Arc<segments::Segments>,
}

impl Shared {
    /// The open database, or `Unavailable` while the writer reopens it.
    fn current_database(&self) -> Result<Arc<Database>, StoreError> {
        let slot = self
            .database
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slot.clone()
            .ok_or_else(|| StoreError::Unavailable("the database is being reopened".into()))
    }
}

/// The boxed form of a write closure, run (possibly more than once) by the writer.
type JobFn = Box<dyn FnMut(&WriteTransaction) -> Result<Box<dyn Any + Send>, JobFailure> + Send>;

/// Why a write did not commit.
pub(crate) enum JobFailure {
    /// The closure returned its own error (boxed `E`): nothing of it is committed.
    Rejected(Box<dyn Any + Send>),
    /// The store could not commit.
    Store(StoreError),
}

impl Store {
    /// Opens (creating if needed) the database at `path`, migrates it, and starts the writer.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Store, OpenError> {
        migrations::refuse_newer(path)?;
        let database = open_database(path).map_err(|source| OpenError::Database {
            path: path.to_path_buf(),
            source,
        })?;
        migrations::migrate(&database)?;
        // Before any read: a record compressed with a dictionary decodes only once it is known.
        let read = database.begin_read().map_err(StoreError::from);
        read.and_then(|txn| dictionaries::load_all(&txn))
            .map_err(OpenError::Dictionaries)?;
        let segments = segments::Segments::open(path, &database).map_err(OpenError::Segments)?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            database: RwLock::new(Some(Arc::new(database))),
            degraded: AtomicBool::new(false),
            jobs: RwLock::new(None),
            writer_thread: Mutex::new(None),
            segments,
        });
        let (sender, thread) = writer::spawn(shared.clone(), options).map_err(OpenError::Writer)?;
        *shared.jobs.write().unwrap_or_else(|p| p.into_inner()) = Some(sender);
        *lock(&shared.writer_thread) = Some(thread);
        Ok(Store { shared })
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    pub fn health(&self) -> Health {
        if self.shared.degraded.load(Ordering::Acquire) {
            Health::Degraded
        } else {
            Health::Ok
        }
    }

    /// Runs `f` in a read transaction on a blocking thread.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&ReadTransaction) -> Result<T, E> + Send + 'static,
    {
        let store = self.clone();
        match tokio::task::spawn_blocking(move || store.read_blocking(f)).await {
            Ok(result) => result,
            Err(join) => Err(E::from(StoreError::Storage(format!(
                "read task failed: {join}"
            )))),
        }
    }

    /// Runs `f` in a read transaction on the calling thread (for blocking contexts only).
    pub fn read_blocking<T, E, F>(&self, f: F) -> Result<T, E>
    where
        E: From<StoreError>,
        F: FnOnce(&ReadTransaction) -> Result<T, E>,
    {
        let database = self.current_database()?;
        let txn = match database.begin_read() {
            Ok(txn) => txn,
            Err(err) => {
                let err = StoreError::from(err);
                if matches!(err, StoreError::Unavailable(_)) {
                    // The database needs reopening; let the writer know even if no write comes.
                    self.send(writer::Message::Recover);
                }
                return Err(err.into());
            }
        };
        segments::scoped(&self.shared.segments, || f(&txn))
    }

    /// Runs `f` inside the next group commit and returns once its writes are durable.
    ///
    /// `f` may run more than once (when another write in its batch fails, the batch is retried
    /// without it), so it must not have side effects outside the transaction. When `f` returns
    /// an error, none of its writes are committed and the error is returned as is.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnMut(&WriteTransaction) -> Result<T, E> + Send + 'static,
    {
        if self.health() == Health::Degraded {
            return Err(
                StoreError::Unavailable("writes are suspended after an i/o error".into()).into(),
            );
        }
        let (done, outcome) = oneshot::channel();
        let mut f = f;
        let run: JobFn = Box::new(move |txn| match f(txn) {
            Ok(value) => Ok(Box::new(value) as Box<dyn Any + Send>),
            Err(err) => Err(JobFailure::Rejected(Box::new(err))),
        });
        if !self.send(writer::Message::Job(writer::Job { run, done })) {
            return Err(StoreError::Closed.into());
        }
        let failure = match outcome.await {
            Ok(Ok(value)) => match value.downcast::<T>() {
                Ok(value) => return Ok(*value),
                Err(_) => StoreError::Storage("write returned an unexpected type".into()),
            },
            Ok(Err(JobFailure::Rejected(err))) => match err.downcast::<E>() {
                Ok(err) => return Err(*err),
                Err(_) => StoreError::Storage("write failed with an unexpected type".into()),
            },
            Ok(Err(JobFailure::Store(err))) => err,
            Err(_) => StoreError::Closed,
        };
        Err(failure.into())
    }

    /// Copies the whole database into `work_dir` inside one read transaction on this thread
    /// (blocking): writers go on, the copy is one consistent point in time. See `snapshot`.
    pub fn snapshot_blocking(
        &self,
        work_dir: &Path,
        progress: snapshot::ProgressFn<'_>,
    ) -> Result<snapshot::Snapshot, snapshot::SnapshotError> {
        // Removed records keep their bytes until the copy is done (it may read them).
        let _reclaiming_held = self.shared.segments.snapshot_guard();
        self.read_blocking(|txn| snapshot::take(txn, work_dir, progress))
    }

    /// Whether the writer thread is still running (false once closed, or if it died).
    pub fn writer_alive(&self) -> bool {
        lock(&self.shared.writer_thread)
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
    }

    /// Commits every queued write, stops the writer and closes the database.
    pub async fn close(&self) {
        drop(self.take_sender());
        let thread = lock(&self.shared.writer_thread).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }

    /// Closes from a blocking context (the CLI's offline commands).
    pub fn close_blocking(&self) {
        drop(self.take_sender());
        if let Some(thread) = lock(&self.shared.writer_thread).take() {
            let _ = thread.join();
        }
    }

    fn current_database(&self) -> Result<Arc<Database>, StoreError> {
        self.shared.current_database()
    }

    /// Dropping the returned sender lets the writer finish the queue and stop.
    fn take_sender(&self) -> Option<std::sync::mpsc::Sender<writer::Message>> {
        self.shared
            .jobs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn send(&self, message: writer::Message) -> bool {
        let jobs = self.shared.jobs.read().unwrap_or_else(|p| p.into_inner());
        match jobs.as_ref() {
            Some(sender) => sender.send(message).is_ok(),
            None => false,
        }
    }
}

/// Opens the database file, creating it when missing.
/// redb's page cache (reads, and up to half of it for pages written by the open transaction).
/// Its default of 1 GiB made the cache most of the server's memory under sustained ingest;
/// the hot pages (recent events, groups, indexes) fit well within this. 32 MiB served ingest
/// at the maximum rate as fast as 64 MiB did (`ingest_load`), 30 MiB less resident.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

fn open_database(path: &Path) -> Result<Database, redb::DatabaseError> {
    Database::builder().set_cache_size(CACHE_BYTES).create(path)
}

/// Locks a mutex, ignoring poisoning: the guarded values stay consistent across panics.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
