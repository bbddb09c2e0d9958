//! Full-text search over error events (CONTRACT section 3): a tantivy index in
//! `<data dir>/search`, derived from redb and rebuildable from it at any time.
//!
//! `Search` is the handle: a request takes a `ticket` before it writes events and `submit`s
//! them through it once committed, to the one writer thread (`writer.rs`); `query` runs a
//! search (`query.rs`) on the caller's (blocking) thread,
//! `rebuild_online` has the writer rebuild the index while the server runs (`rebuild.rs`), and
//! `close` commits what is pending and stops the writer. The index is opened with
//! `ReloadPolicy::Manual`; the writer reloads the reader after each commit, and replaces the
//! index searches use (`Opened`) when a rebuild is swapped in.
//!
//! Invariants: ingest never fails because of indexing, and waits for it only while the
//! writer's inbox is past half its bound, at most a second (`inbox.rs`); start-up never
//! waits for indexing either: after a clean stop the index is complete (`checkpoint.rs`) and
//! nothing is indexed again; after a crash the events from the checkpoint on, and for a
//! missing or unreadable index (after a restore, for one) every stored event, are indexed by
//! the writer thread while the server already serves (`catching_up`, shown by `/healthz`),
//! searches answering from the index as it is meanwhile; `lookout reindex` rebuilds it on
//! demand, offline (`rebuild`) or through the running server, and searches answer from the
//! old index until the new one is complete.

pub mod background;
pub mod checkpoint;
pub mod inbox;
pub mod newest;
pub mod query;
pub mod rebuild;
pub mod replace;
pub mod schema;
pub mod sessions;
pub mod status;
pub mod target;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use tantivy::directory::MmapDirectory;
use tantivy::{Index, IndexReader};

use crate::errors::ErrorEvent;
use crate::store::{Store, StoreError};
use inbox::Inbox;
pub use rebuild::{RebuildReport, rebuild};
use schema::Fields;
pub use status::IndexTicket;
use status::Status;
use writer::{Message, Target, Writer};

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    #[error("search index directory {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The `q` parameter is not a valid query (the detail says where).
    #[error("q: {0}")]
    InvalidQuery(String),
}

/// List totals are exact up to this many matches; beyond, they are an estimate
/// (`total_is_estimate`), so no request counts more rows than this one by one.
pub const EXACT_TOTAL_UP_TO: usize = 10_000;

/// The search handle shared by the ingest route, the read API and the server.
#[derive(Clone)]
pub struct Search {
    inner: Arc<Inner>,
}

struct Inner {
    /// The index searches read; the writer thread replaces it when a rebuild is swapped in.
    current: Arc<RwLock<Arc<Opened>>>,
    fields: Fields,
    status: Arc<Status>,
    /// The writer's inbox; `None` once closed (dropping it ends the writer loop).
    sender: Mutex<Option<Sender<Message>>>,
    /// The bytes of events in the inbox, bounded, and what was left out of it.
    inbox: Arc<Inbox>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// An open index and its reader. A search holds one for its whole run, so a swap never
/// changes the index under it (the replaced files stay mapped until the last search ends).
pub struct Opened {
    pub index: Index,
    pub reader: IndexReader,
    /// The newest timestamp per block of each segment, for newest-first searches.
    pub maxima: newest::BlockMaxima,
}

impl Opened {
    pub fn new(index: Index, reader: IndexReader) -> Opened {
        Opened {
            index,
            reader,
            maxima: newest::BlockMaxima::default(),
        }
    }
}

/// The index directory of a data dir.
pub fn index_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("search")
}

/// The file beside the index's own that names the format of its term dictionaries: tantivy is
/// built with sorted string tables (its `quickwit` feature), which cost a fraction of FSTs to
/// write and merge (docs/benchmarks.md, step 16), and reads only the format it is built with;
/// an index without this file was written with FSTs and is started over.
const FORMAT_FILE: &str = "lookout-format";
const FORMAT: &[u8] = b"term dictionaries: sorted string tables\n";

/// Opens the index at `dir`, creating it when absent, and starting it over (empty, to be
/// caught up from redb) when unreadable, of another schema or of another format.
pub(crate) fn open_index(dir: &Path) -> Result<Index, SearchError> {
    let (schema, _) = schema::schema();
    std::fs::create_dir_all(dir).map_err(|source| directory_error(dir, source))?;
    if std::fs::read(dir.join(FORMAT_FILE)).ok().as_deref() != Some(FORMAT) {
        let written = std::fs::read_dir(dir)
            .map_err(|source| directory_error(dir, source))?
            .next()
            .is_some();
        if written {
            tracing::info!(path = %dir.display(), "search index of an earlier version's format: indexing every stored event again");
        }
        start_over(dir)?;
    }
    let open = || -> Result<Index, SearchError> {
        let directory = MmapDirectory::open(dir).map_err(|error| {
            SearchError::Index(tantivy::TantivyError::SystemError(error.to_string()))
        })?;
        let index = Index::open_or_create(directory, schema.clone())?;
        Ok(index)
    };
    match open() {
        Ok(index) => Ok(index),
        Err(error) => {
            // Derived data: start over from redb rather than refuse to serve.
            if let SearchError::Index(tantivy::TantivyError::SchemaError(_)) = error {
                tracing::info!(path = %dir.display(), "search index of an earlier version's schema: indexing every stored event again");
            } else {
                tracing::warn!(%error, path = %dir.display(), "search index unreadable: rebuilding it");
            }
            start_over(dir)?;
            open()
        }
    }
}

/// Empties `dir` and marks it with the format (`FORMAT_FILE`), synced, before any index file.
fn start_over(dir: &Path) -> Result<(), SearchError> {
    let error = |source| directory_error(dir, source);
    std::fs::remove_dir_all(dir).map_err(error)?;
    std::fs::create_dir_all(dir).map_err(error)?;
    let mut file = std::fs::File::create(dir.join(FORMAT_FILE)).map_err(error)?;
    std::io::Write::write_all(&mut file, FORMAT).map_err(error)?;
    file.sync_all().map_err(error)
}

fn directory_error(dir: &Path, source: std::io::Error) -> SearchError {
    SearchError::Directory {
        path: dir.to_path_buf(),
        source,
    }
}

impl Search {
    /// Opens (or creates) the index at `dir` and starts the writer thread, which first
    /// catches up with redb unless the index is complete (see the invariants). Blocking: call
    /// it from a blocking thread; it never waits for the catch-up.
    pub fn start(dir: &Path, store: &Store, inbox_bytes: usize) -> Result<Search, SearchError> {
        rebuild::remove_leftovers(dir)?;
        let mut live = Target::new(open_index(dir)?)?;
        let status = Arc::new(Status::default());
        // A complete index stays so only until something is added: the mark goes now, so that
        // a crash from here on is caught up.
        let complete = live.take_complete_mark()? || !live.has_stored_after_checkpoint(store)?;
        status.set_catching_up(!complete);
        let (_, fields) = schema::schema();
        let current = Arc::new(RwLock::new(Arc::new(Opened::new(
            live.index.clone(),
            live.reader.clone(),
        ))));
        let inbox = Arc::new(Inbox::new(inbox_bytes));
        let writer = Writer::new(
            fields.clone(),
            live,
            dir.to_path_buf(),
            current.clone(),
            store.clone(),
            status.clone(),
            inbox.clone(),
        );
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("search-writer".into())
            .spawn(move || writer.run(!complete, receiver))
            .map_err(|source| SearchError::Directory {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(Search {
            inner: Arc::new(Inner {
                current,
                fields,
                status,
                sender: Mutex::new(Some(sender)),
                inbox,
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// The index searches read now.
    pub(crate) fn opened(&self) -> Arc<Opened> {
        self.inner
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Has the writer thread rebuild the index from redb while ingest and searches go on;
    /// reports arrive on the receiver, ending with `Finished`. Dropping the receiver cancels
    /// the rebuild (at its next report) and leaves the index as it was.
    pub fn rebuild_online(&self) -> Receiver<RebuildReport> {
        let (reports, receiver) = mpsc::channel();
        let sent = self
            .lock_sender()
            .as_ref()
            .is_some_and(|sender| sender.send(Message::Rebuild(reports.clone())).is_ok());
        if !sent {
            let stopped = "the search writer has stopped".to_string();
            let _ = reports.send(RebuildReport::Finished(Err(stopped)));
        }
        receiver
    }

    /// Whether the writer is still indexing what it missed before this start.
    pub fn catching_up(&self) -> bool {
        self.inner.status.catching_up()
    }

    /// Hands durable events to the writer (through `IndexTicket::submit`): queued when the
    /// inbox admitted their `queued` bytes (moved events always), else left for the writer to
    /// read back from redb (`inbox.rs`). `false` when the writer is gone and they were not
    /// taken.
    fn send_events(
        &self,
        org: &str,
        events: Vec<ErrorEvent>,
        replace: bool,
        queued: Option<usize>,
    ) -> bool {
        let inbox = &self.inner.inbox;
        if events.is_empty() {
            if let Some(bytes) = queued {
                inbox.release(bytes);
            }
            return true;
        }
        let sender = self.lock_sender();
        let Some(sender) = sender.as_ref() else {
            if let Some(bytes) = queued {
                inbox.release(bytes);
            }
            tracing::error!("search writer stopped: events not indexed until restart");
            return false;
        };
        // Entered under the sender's lock: in the order of the writer's messages. Moved
        // events were searchable before, under the same session.
        let Some(bytes) = queued else {
            let seq = inbox.unsearched.enter(org, &events, true);
            // The first left out since the writer last looked wakes it; it reads them back.
            return !inbox.leave_out(&events, seq) || sender.send(Message::LeftOut).is_ok();
        };
        let seq = inbox
            .unsearched
            .enter(org, if replace { &[] } else { &events }, false);
        let message = Message::Events {
            org: org.to_string(),
            events,
            replace,
            bytes,
            seq,
        };
        match sender.send(message) {
            Ok(()) => true,
            Err(returned) => {
                if let Message::Events { bytes, .. } = returned.0 {
                    inbox.release(bytes);
                }
                tracing::error!("search writer stopped: events not indexed until restart");
                false
            }
        }
    }

    /// Commits what is pending and waits for it (blocking).
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        let sent = self
            .lock_sender()
            .as_ref()
            .is_some_and(|sender| sender.send(Message::Flush(done)).is_ok());
        if sent {
            let _ = wait.recv();
        }
    }

    /// Commits what is pending and stops the writer thread (blocking); from here on no ticket
    /// is handed out, and the last commit marks the index complete when nothing was missed.
    pub fn close(&self) {
        self.inner.status.close();
        drop(self.lock_sender().take());
        let thread = self
            .inner
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("search writer panicked");
        }
    }

    fn lock_sender(&self) -> std::sync::MutexGuard<'_, Option<Sender<Message>>> {
        self.inner
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
