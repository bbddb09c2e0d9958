//! Error event records outside the B-tree file: append-only segment files beside it.
//!
//! An event's record (its compressed JSON, a few hundred bytes) is written to the current
//! segment (`<db>.events/NNNNNNNN.seg`, a frame of `[length u32][crc32 u32][bytes]`), and its
//! row in redb holds only the tag and where the frame is (`codec`, version 5). redb's every
//! durable commit saves the allocator state of the whole file (quick repair), so its cost grows
//! with the file; with the records out of it, the file holds the small rows and grows about a
//! quarter as fast.
//!
//! Invariants:
//! - A frame is on disk (written and `fdatasync`ed) before the commit that names it: the store
//!   writer calls `prepare` after the transaction's writes and before `commit`. A frame of a
//!   transaction that did not commit is never named, and is written over by the next one.
//! - Each segment's live record count and committed length are rows of `SEGMENT_STATE`,
//!   changed in the same transaction as the rows that name its frames. A segment file without
//!   a row is not named by any record and is deleted when the store opens; the current segment
//!   is cut back to its committed length then.
//! - Space is given back only after `GRACE` and never while a backup runs: a reader that began
//!   before a record's removal may still read it. The whole blocks of removed frames are
//!   punched out of their file (`fallocate`) and a segment whose count reaches zero is deleted
//!   whole, on a thread of their own (`write.rs`): the writer never waits for it.
//! - Records are read and written only on threads that entered the store (`scoped`, the
//!   writer's `enter_writer`): the row does not name its store, the thread does.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::StoreError;
use super::tables;
use write::WriteState;

/// A segment is closed for appends once it holds this much; the next record starts another.
pub const SEGMENT_BYTES: u64 = 64 << 20;
/// How long a removed record's bytes stay readable: readers began before its removal may
/// still read it (a read transaction lives for one request or one step of a long job).
pub const GRACE: Duration = Duration::from_secs(30);
/// A frame's header: the record's length and its CRC-32.
const FRAME_HEADER: u64 = 8;
/// Read handles kept open; past this, the cache is emptied and refilled as reads come.
const OPEN_FILES: usize = 64;
/// No record is longer than this (as in `codec`).
const MAX_RECORD: u32 = 64 << 20;
/// The largest frame buffer kept from one transaction to the next (a commit at the maximum
/// rate holds about 10,000 records, 2.5 MB).
const PENDING_KEPT: usize = 4 << 20;
/// "No current segment" in `Segments::current`.
const NONE: u32 = u32::MAX;

/// Where a record's frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pointer {
    pub segment: u32,
    pub offset: u64,
    pub len: u32,
}

/// The stored size of a `Pointer`.
pub const POINTER_BYTES: usize = 16;

impl Pointer {
    pub fn to_bytes(self) -> [u8; POINTER_BYTES] {
        let mut bytes = [0; POINTER_BYTES];
        bytes[..4].copy_from_slice(&self.segment.to_le_bytes());
        bytes[4..12].copy_from_slice(&self.offset.to_le_bytes());
        bytes[12..].copy_from_slice(&self.len.to_le_bytes());
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Pointer> {
        let bytes: &[u8; POINTER_BYTES] = bytes.try_into().ok()?;
        Some(Pointer {
            segment: u32::from_le_bytes(bytes[..4].try_into().ok()?),
            offset: u64::from_le_bytes(bytes[4..12].try_into().ok()?),
            len: u32::from_le_bytes(bytes[12..].try_into().ok()?),
        })
    }

    /// The end of its frame in the segment.
    fn end(self) -> u64 {
        self.offset + FRAME_HEADER + u64::from(self.len)
    }
}

/// The directory of the segments of the database file at `database`.
pub fn dir_of(database: &Path) -> PathBuf {
    database.with_extension("events")
}

fn file_name(segment: u32) -> String {
    format!("{segment:08}.seg")
}

fn state_key(segment: u32) -> String {
    format!("{segment:08}")
}

/// A segment's row: its live records and its committed length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SegmentState {
    live: u64,
    end: u64,
}

impl SegmentState {
    fn to_bytes(self) -> [u8; 16] {
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&self.live.to_le_bytes());
        bytes[8..].copy_from_slice(&self.end.to_le_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Option<SegmentState> {
        let bytes: &[u8; 16] = bytes.try_into().ok()?;
        Some(SegmentState {
            live: u64::from_le_bytes(bytes[..8].try_into().ok()?),
            end: u64::from_le_bytes(bytes[8..].try_into().ok()?),
        })
    }
}

/// One database's segments.
pub struct Segments {
    dir: PathBuf,
    files: RwLock<HashMap<u32, Arc<File>>>,
    /// The segment appended to (`NONE` before the first append) and how much of it is
    /// written (not necessarily committed): a frame past that is still in `pending`.
    current: AtomicU32,
    written: AtomicU64,
    /// The writer's side; `None` for segments opened to be read only.
    state: Mutex<Option<WriteState>>,
    /// Backups under way: no space is given back meanwhile.
    snapshots: AtomicUsize,
    /// Whether punching holes failed once (the file system cannot); logged once.
    punch_failed: AtomicBool,
}

impl Segments {
    /// The segments of the database at `path`, to be read only (an offline backup).
    pub fn reader(path: &Path) -> Arc<Segments> {
        Arc::new(Segments::new(dir_of(path)))
    }

    fn new(dir: PathBuf) -> Segments {
        Segments {
            dir,
            files: RwLock::default(),
            current: AtomicU32::new(NONE),
            written: AtomicU64::new(0),
            state: Mutex::new(None),
            snapshots: AtomicUsize::new(0),
            punch_failed: AtomicBool::new(false),
        }
    }

    /// The record `pointer` names.
    pub fn read(&self, pointer: Pointer) -> Result<Vec<u8>, StoreError> {
        if pointer.len > MAX_RECORD {
            return Err(corrupt(format!("a record of {} bytes", pointer.len)));
        }
        if pointer.segment == self.current.load(Ordering::Acquire)
            && pointer.end() > self.written.load(Ordering::Acquire)
        {
            // Appended by the transaction under way on this (the writer's) thread.
            let state = lock(&self.state);
            if let Some(frame) = state
                .as_ref()
                .and_then(|state| state.pending_frame(pointer))
            {
                let frame = frame
                    .ok_or_else(|| corrupt(format!("{pointer:?} is past the records written")))?;
                verify(frame, pointer)?;
                return Ok(frame[FRAME_HEADER as usize..].to_vec());
            }
        }
        let file = self.file(pointer.segment)?;
        let mut frame = vec![0; (FRAME_HEADER + u64::from(pointer.len)) as usize];
        file.read_exact_at(&mut frame, pointer.offset)
            .map_err(|err| match err.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    corrupt(format!("{pointer:?} is past its segment's end"))
                }
                _ => StoreError::Unavailable(format!("cannot read an event segment: {err}")),
            })?;
        verify(&frame, pointer)?;
        // One allocation per record: the header is moved out of the buffer read.
        frame.drain(..FRAME_HEADER as usize);
        Ok(frame)
    }

    fn file(&self, segment: u32) -> Result<Arc<File>, StoreError> {
        if let Some(file) = read_lock(&self.files).get(&segment) {
            return Ok(file.clone());
        }
        let path = self.dir.join(file_name(segment));
        let file = File::open(&path).map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => corrupt(format!("segment {segment} is missing")),
            _ => io("open", &path, err),
        })?;
        let file = Arc::new(file);
        let mut files = write_lock(&self.files);
        if files.len() >= OPEN_FILES {
            files.clear();
        }
        files.insert(segment, file.clone());
        Ok(file)
    }

    /// Holds space reclaiming back while the returned guard lives (a backup's reads).
    pub fn snapshot_guard(self: &Arc<Self>) -> SnapshotGuard {
        self.snapshots.fetch_add(1, Ordering::AcqRel);
        SnapshotGuard(self.clone())
    }
}

/// Returned by `Segments::snapshot_guard`.
pub struct SnapshotGuard(Arc<Segments>);

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        self.0.snapshots.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether `frame` (header and record) is the one `pointer` names, whole.
fn verify(frame: &[u8], pointer: Pointer) -> Result<(), StoreError> {
    let (header, record) = frame.split_at(FRAME_HEADER as usize);
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if len != pointer.len || crc32fast::hash(record) != crc {
        return Err(corrupt(format!(
            "the frame at {pointer:?} does not match its checksum"
        )));
    }
    Ok(())
}

fn corrupt(detail: String) -> StoreError {
    StoreError::Corrupt {
        what: "event record segment",
        detail,
    }
}

fn io(what: &str, path: &Path, err: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!(
        "cannot {what} the event segment {}: {err}",
        path.display()
    ))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write_lock<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    /// The segments of the store this thread reads (and, on the writer, writes) through.
    static CURRENT: RefCell<Option<Arc<Segments>>> = const { RefCell::new(None) };
    /// Whether this thread is a store's writer: only it appends and releases.
    static WRITER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread reading through `segments` (the previous ones back after).
pub fn scoped<T>(segments: &Arc<Segments>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Segments>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with_borrow_mut(|current| *current = self.0.take());
        }
    }
    let previous = CURRENT.with_borrow_mut(|current| current.replace(segments.clone()));
    let _restore = Restore(previous);
    f()
}

/// Makes this thread the writer of `segments` for the rest of its life.
pub fn enter_writer(segments: Arc<Segments>) {
    CURRENT.with_borrow_mut(|current| *current = Some(segments));
    WRITER.set(true);
}

fn current() -> Option<Arc<Segments>> {
    CURRENT.with_borrow(Clone::clone)
}

/// Appends `record` when this thread is a store's writer; `None` elsewhere (a record written
/// there stays in its row).
pub fn append_here(record: &[u8]) -> Option<Result<Pointer, StoreError>> {
    if !WRITER.get() {
        return None;
    }
    current().map(|segments| segments.append(record))
}

/// Notes that this transaction removed (or wrote over) the record `pointer` names.
pub fn release_here(pointer: Pointer) {
    if WRITER.get()
        && let Some(segments) = current()
    {
        segments.release(pointer);
    }
}

/// Reads the record `pointer` names through this thread's store.
pub fn read_here(pointer: Pointer) -> Result<Vec<u8>, StoreError> {
    match current() {
        Some(segments) => segments.read(pointer),
        None => Err(corrupt(
            "a record in a segment was read outside its store".to_string(),
        )),
    }
}

mod reclaim;
mod write;

#[cfg(test)]
mod tests;
