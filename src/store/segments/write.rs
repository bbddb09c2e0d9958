//! The writer's side of the event segments: opening them (the clean-up after a crash),
//! a transaction's appends and removals around its commit, and giving removed records' space back.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use redb::{Database, Durability, ReadableTable, TableDefinition, WriteTransaction};

use super::*;

/// What the probe writes: about a commit's records at half the maximum rate.
const PROBE_BYTES: usize = 256 * 1024;

pub(super) fn definition() -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(tables::SEGMENT_STATE)
}

/// What `prepare` wrote: each changed segment's new state, and the segments it emptied.
type Prepared = (Vec<(u32, SegmentState)>, Vec<u32>);

pub(super) struct WriteState {
    current: Option<Current>,
    /// Committed state of every segment with a row.
    segments: HashMap<u32, SegmentState>,
    /// The number of the next segment to create.
    next: u32,
    /// This transaction's frames, written at `prepare`, and how many records they hold.
    pending: Vec<u8>,
    appended: u64,
    /// This transaction's removed records.
    released: Vec<Pointer>,
    /// The states `prepare` wrote, applied at `committed`, and the segments emptied.
    prepared: Option<Prepared>,
    /// Committed removals waiting for `GRACE`: when, what, and which segments died whole.
    pub(super) reclaim: VecDeque<(Instant, Vec<Pointer>, Vec<u32>)>,
}

struct Current {
    number: u32,
    file: File,
    committed: u64,
}

impl WriteState {
    /// The frame `pointer` names among this transaction's, not yet written: `None` when it
    /// is not of them, `Some(None)` when it is past them.
    pub(super) fn pending_frame(&self, pointer: Pointer) -> Option<Option<&[u8]>> {
        let current = self.current.as_ref()?;
        if current.number != pointer.segment || pointer.offset < current.committed {
            return None;
        }
        let start = (pointer.offset - current.committed) as usize;
        let end = start + (FRAME_HEADER + u64::from(pointer.len)) as usize;
        Some(self.pending.get(start..end))
    }
}

impl Segments {
    /// Opens the segments of the database at `path` for the store's writer: creates the
    /// directory, deletes segment files no row names, cuts the current one back to its
    /// committed length and drops rows of segments with nothing left in them.
    pub fn open(path: &Path, database: &Database) -> Result<Arc<Segments>, StoreError> {
        let dir = dir_of(path);
        crate::store::data_dir::create_private_dir(&dir).map_err(|err| io("create", &dir, err))?;
        let mut txn = database.begin_write()?;
        txn.set_durability(Durability::Immediate)
            .map_err(|err| StoreError::Storage(err.to_string()))?;
        txn.set_quick_repair(true);
        let mut rows = HashMap::new();
        {
            let table = txn.open_table(definition())?;
            for row in table.iter()? {
                let (key, value) = row?;
                let number = key.value().parse::<u32>().ok();
                let state = SegmentState::from_bytes(value.value());
                let (Some(number), Some(state)) = (number, state) else {
                    return Err(StoreError::Corrupt {
                        what: "event segment state",
                        detail: format!("row {:?} cannot be read", key.value()),
                    });
                };
                rows.insert(number, state);
            }
        }
        let mut files = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|err| io("list", &dir, err))? {
            let entry = entry.map_err(|err| io("list", &dir, err))?;
            let name = entry.file_name();
            let number = name
                .to_str()
                .and_then(|name| name.strip_suffix(".seg"))
                .and_then(|number| number.parse::<u32>().ok());
            if let Some(number) = number {
                files.push(number);
            }
        }
        let newest = rows.keys().copied().max();
        let mut removed_rows = Vec::new();
        for (&number, state) in &rows {
            if state.live == 0 && Some(number) != newest {
                removed_rows.push(number);
            }
        }
        let mut changed = false;
        {
            let mut table = txn.open_table(definition())?;
            for number in &removed_rows {
                table.remove(state_key(*number).as_str())?;
                rows.remove(number);
                changed = true;
            }
        }
        if changed {
            txn.commit()?;
        } else {
            txn.abort()?;
        }
        for &number in &files {
            if !rows.contains_key(&number) {
                let path = dir.join(file_name(number));
                fs::remove_file(&path).map_err(|err| io("delete", &path, err))?;
                tracing::debug!(segment = number, "event segment named by no record deleted");
            }
        }
        for (number, state) in &rows {
            if state.live > 0 && !files.contains(number) {
                tracing::error!(
                    segment = number,
                    records = state.live,
                    "an event segment is missing: its records cannot be read"
                );
            }
        }
        let next = files
            .iter()
            .chain(rows.keys())
            .copied()
            .max()
            .map_or(1, |n| n + 1);
        let current = match newest {
            Some(number) if rows[&number].end < SEGMENT_BYTES && files.contains(&number) => {
                let path = dir.join(file_name(number));
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(|err| io("open", &path, err))?;
                let end = rows[&number].end;
                // What is past the committed length was never named: cut it off.
                file.set_len(end).map_err(|err| io("cut", &path, err))?;
                Some(Current {
                    number,
                    file,
                    committed: end,
                })
            }
            _ => None,
        };
        let segments = Segments::new(dir);
        if let Some(current) = &current {
            segments.current.store(current.number, Ordering::Release);
            segments.written.store(current.committed, Ordering::Release);
        }
        *lock(&segments.state) = Some(WriteState {
            current,
            segments: rows,
            next,
            pending: Vec::new(),
            appended: 0,
            released: Vec::new(),
            prepared: None,
            reclaim: VecDeque::new(),
        });
        let segments = Arc::new(segments);
        super::reclaim::spawn_reclaimer(Arc::downgrade(&segments))
            .map_err(|err| StoreError::Storage(format!("cannot start the reclaimer: {err}")))?;
        Ok(segments)
    }

    /// Starts a transaction's appends and removals (the store's writer, before its jobs).
    pub fn begin(&self) {
        // Nothing of an earlier attempt is left (`abort` forgets it), and a full segment is
        // closed for appends.
        self.abort();
        let mut state = lock(&self.state);
        let Some(state) = state.as_mut() else {
            return;
        };
        if state
            .current
            .as_ref()
            .is_some_and(|current| current.committed >= SEGMENT_BYTES)
        {
            state.current = None;
            self.current.store(NONE, Ordering::Release);
        }
    }

    /// Appends `record` to this transaction's frames; where it will be.
    pub(super) fn append(&self, record: &[u8]) -> Result<Pointer, StoreError> {
        let len = u32::try_from(record.len())
            .ok()
            .filter(|len| *len <= MAX_RECORD)
            .ok_or_else(|| corrupt(format!("a record of {} bytes", record.len())))?;
        let mut guard = lock(&self.state);
        let state = guard
            .as_mut()
            .ok_or_else(|| StoreError::Storage("segments opened to be read only".into()))?;
        if state.current.is_none() {
            let number = state.next;
            let path = self.dir.join(file_name(number));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|err| io("create", &path, err))?;
            // The new name is durable before any commit names a record in it.
            File::open(&self.dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|err| io("sync", &self.dir, err))?;
            state.next = number + 1;
            state.current = Some(Current {
                number,
                file,
                committed: 0,
            });
            self.written.store(0, Ordering::Release);
            self.current.store(number, Ordering::Release);
        }
        let current = state.current.as_ref().expect("a current segment");
        let pointer = Pointer {
            segment: current.number,
            offset: current.committed + state.pending.len() as u64,
            len,
        };
        state.pending.extend_from_slice(&len.to_le_bytes());
        state
            .pending
            .extend_from_slice(&crc32fast::hash(record).to_le_bytes());
        state.pending.extend_from_slice(record);
        state.appended += 1;
        Ok(pointer)
    }

    /// Notes a record removed (or written over) by this transaction.
    pub(super) fn release(&self, pointer: Pointer) {
        if let Some(state) = lock(&self.state).as_mut() {
            state.released.push(pointer);
        }
    }

    /// Before the commit: records the segments' new states in `txn` and puts this
    /// transaction's frames on disk.
    pub fn prepare(&self, txn: &WriteTransaction) -> Result<(), StoreError> {
        let mut guard = lock(&self.state);
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        if state.appended == 0 && state.released.is_empty() {
            return Ok(());
        }
        let mut changed: HashMap<u32, SegmentState> = HashMap::new();
        if let Some(current) = &state.current
            && state.appended > 0
        {
            let mut segment = state
                .segments
                .get(&current.number)
                .copied()
                .unwrap_or_default();
            segment.live += state.appended;
            segment.end = current.committed + state.pending.len() as u64;
            changed.insert(current.number, segment);
        }
        for pointer in &state.released {
            let segment = match changed.get_mut(&pointer.segment) {
                Some(segment) => segment,
                None => match state.segments.get(&pointer.segment) {
                    Some(known) => changed.entry(pointer.segment).or_insert(*known),
                    None => continue,
                },
            };
            segment.live = segment.live.saturating_sub(1);
        }
        let current = state.current.as_ref().map(|current| current.number);
        let mut emptied = Vec::new();
        let mut rows = Vec::with_capacity(changed.len());
        {
            let mut table = txn.open_table(definition())?;
            for (number, segment) in changed {
                if segment.live == 0 && Some(number) != current {
                    table.remove(state_key(number).as_str())?;
                    emptied.push(number);
                } else {
                    table.insert(state_key(number).as_str(), segment.to_bytes().as_slice())?;
                }
                rows.push((number, segment));
            }
        }
        if let Some(current) = &state.current
            && !state.pending.is_empty()
        {
            let path = || self.dir.join(file_name(current.number));
            current
                .file
                .write_all_at(&state.pending, current.committed)
                .map_err(|err| io("write", &path(), err))?;
            self.written.store(
                current.committed + state.pending.len() as u64,
                Ordering::Release,
            );
            current
                .file
                .sync_data()
                .map_err(|err| io("sync", &path(), err))?;
        }
        state.prepared = Some((rows, emptied));
        Ok(())
    }

    /// After the commit: the transaction's states become the committed ones.
    pub fn committed(&self) {
        let mut guard = lock(&self.state);
        let Some(state) = guard.as_mut() else {
            return;
        };
        let Some((rows, emptied)) = state.prepared.take() else {
            return;
        };
        for (number, segment) in rows {
            if emptied.contains(&number) {
                state.segments.remove(&number);
            } else {
                state.segments.insert(number, segment);
            }
        }
        if let Some(current) = state.current.as_mut() {
            current.committed += state.pending.len() as u64;
        }
        state.pending.clear();
        if state.pending.capacity() > PENDING_KEPT {
            state.pending = Vec::new();
        }
        state.appended = 0;
        let released = std::mem::take(&mut state.released);
        if !released.is_empty() || !emptied.is_empty() {
            state.reclaim.push_back((Instant::now(), released, emptied));
        }
    }

    /// The transaction did not commit: its frames and removals are forgotten.
    pub fn abort(&self) {
        let mut guard = lock(&self.state);
        let Some(state) = guard.as_mut() else {
            return;
        };
        state.pending.clear();
        state.appended = 0;
        state.released.clear();
        state.prepared = None;
        if let Some(current) = &state.current {
            self.written.store(current.committed, Ordering::Release);
        }
    }

    /// Whether the disk takes a commit's worth of records again (the store's probe while it
    /// is degraded): a redb commit may fit in the free pages of its file on a disk that
    /// refuses every byte more.
    pub fn probe(&self) -> Result<(), StoreError> {
        let path = self.dir.join(".probe");
        let written = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|file| {
                file.write_all_at(&[0; PROBE_BYTES], 0)?;
                file.sync_data()
            });
        let _ = fs::remove_file(&path);
        written.map_err(|err| io("write", &path, err))
    }
}
