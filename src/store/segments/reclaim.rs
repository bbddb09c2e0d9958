//! Giving removed records' space back: after `GRACE`, on a thread of its own (the store's
//! writer never waits for the file system), the whole blocks of removed frames are punched out
//! of their segment and a segment left empty is deleted; never while a backup's guard is held.

use std::fs::{self, File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

use super::*;

impl Segments {
    /// Gives back the space of records removed at least `GRACE` ago (all of them when
    /// `everything`, as the store closes), unless a backup is under way.
    pub fn reclaim(&self, everything: bool) {
        if self.snapshots.load(Ordering::Acquire) > 0 {
            return;
        }
        // What is due is taken under the lock; the file system work is done without it, so
        // the writer's appends never wait for it.
        let (released, emptied) = {
            let mut guard = lock(&self.state);
            let Some(state) = guard.as_mut() else {
                return;
            };
            let now = Instant::now();
            let (mut released, mut emptied) = (Vec::new(), Vec::new());
            while let Some((at, _, _)) = state.reclaim.front() {
                if !everything && *at + GRACE > now {
                    break;
                }
                let (_, pointers, dead) = state.reclaim.pop_front().expect("a front entry");
                released.extend(pointers);
                emptied.extend(dead);
            }
            (released, emptied)
        };
        for number in &emptied {
            write_lock(&self.files).remove(number);
            let path = self.dir.join(file_name(*number));
            match fs::remove_file(&path) {
                Ok(()) => metrics::counter!("lookout_event_segments_deleted_total").increment(1),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => tracing::warn!(path = %path.display(), error = %err,
                    "cannot delete an emptied event segment; it is deleted at the next start"),
            }
        }
        // Ranges come sorted by segment: each segment's file is opened once for all of its.
        let mut open: Option<(u32, std::io::Result<File>)> = None;
        for (segment, start, end) in ranges(released, &emptied) {
            if open.as_ref().is_some_and(|(number, _)| *number != segment) {
                open = None;
            }
            let (_, file) = open.get_or_insert_with(|| {
                let path = self.dir.join(file_name(segment));
                (segment, OpenOptions::new().write(true).open(path))
            });
            let punched = match file {
                Ok(file) => punch(file, start, end - start),
                Err(err) => Err(std::io::Error::new(err.kind(), err.to_string())),
            };
            match punched {
                Ok(()) => metrics::counter!("lookout_event_segment_bytes_reclaimed_total")
                    .increment(end - start),
                Err(err) if !self.punch_failed.swap(true, Ordering::AcqRel) => {
                    tracing::warn!(error = %err,
                        "cannot give back removed event records' space in their segment; it is given back when the segment empties");
                }
                Err(_) => {}
            }
        }
    }
}

/// How often the reclaimer looks for removed records whose grace is over.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);

/// Starts the thread that gives removed records' space back (off the store's writer, which
/// never waits for the file system's hole punching); it ends once the segments are dropped.
pub(super) fn spawn_reclaimer(segments: std::sync::Weak<Segments>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("segment-reclaim".to_string())
        .spawn(move || {
            loop {
                std::thread::sleep(RECLAIM_EVERY);
                let Some(segments) = segments.upgrade() else {
                    return;
                };
                segments.reclaim(false);
            }
        })
        .map(drop)
}

/// The file system's block: punching part of one frees nothing and writes zeros into it, so
/// ranges are cut to whole blocks (what is left is freed with its segment).
const BLOCK: u64 = 4096;

/// The whole blocks of the byte ranges of `released` records outside the `emptied` segments,
/// neighbours joined, as `(segment, start, end)`.
pub(super) fn ranges(released: Vec<Pointer>, emptied: &[u32]) -> Vec<(u32, u64, u64)> {
    joined(released, emptied)
        .into_iter()
        .filter_map(|(segment, start, end)| {
            let (start, end) = (start.next_multiple_of(BLOCK), end / BLOCK * BLOCK);
            (start < end).then_some((segment, start, end))
        })
        .collect()
}

/// The byte ranges of `released` records outside the `emptied` segments, neighbours joined.
fn joined(mut released: Vec<Pointer>, emptied: &[u32]) -> Vec<(u32, u64, u64)> {
    released.retain(|pointer| !emptied.contains(&pointer.segment));
    released.sort_by_key(|pointer| (pointer.segment, pointer.offset));
    let mut ranges: Vec<(u32, u64, u64)> = Vec::new();
    for pointer in released {
        match ranges.last_mut() {
            Some((segment, _, end)) if *segment == pointer.segment && *end == pointer.offset => {
                *end = pointer.end();
            }
            _ => ranges.push((pointer.segment, pointer.offset, pointer.end())),
        }
    }
    ranges
}

/// Frees the file system blocks of `len` bytes at `offset` (the file keeps its length).
fn punch(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    let (offset, len) = (
        libc::off_t::try_from(offset).map_err(std::io::Error::other)?,
        libc::off_t::try_from(len).map_err(std::io::Error::other)?,
    );
    // SAFETY: fallocate reads no memory of ours; the descriptor is open for writing, and a
    // failure is reported through errno.
    let result = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset,
            len,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
