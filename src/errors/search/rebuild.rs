//! Rebuilding the index from redb (`lookout reindex`): a new index is built in
//! `<index dir>.rebuild` beside the live one, then put in its place by renaming directories.
//! Offline (`rebuild`) the CLI drives it to the end; online the server's index writer thread
//! steps it between live batches (`writer.rs`), so searches keep answering from the old index
//! until the swap and ingest never waits.
//!
//! Invariants: the live index is untouched until the rebuilt one is complete and committed,
//! so an interrupted rebuild (a crash, a cancelled client) leaves the old index working and a
//! leftover directory that the next rebuild or start removes. No event is left out: an event
//! committed to redb before the rebuild began is read by its scan, and one handed to the
//! writer after it began is also added to the new index (`add_live`). None is found twice:
//! live events minted up to the rebuild's start replace their documents (by millisecond:
//! `replace.rs`), and the scan replaces from `CATCH_UP_MARGIN_MS` before the rebuild's start
//! on (ids are minted on arrival, so only those can arrive live while it runs, as the start-up
//! catch-up also assumes); later live events cannot be read by the scan. The scan stops
//! at the ids minted when the rebuild began: later events come live, and a scan that chased
//! them would never end while ingest outpaced it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::checkpoint::margin_id;
use super::replace::Sweep;
use super::schema::Fields;
use super::target::read_events;
use super::writer::Target;
use super::{SearchError, open_index};
use crate::store::Store;

/// Events read from redb per step: between two steps the writer handles live events.
const STEP_EVENTS: usize = 1_000;
/// The longest gap between progress reports to a client.
const REPORT_EVERY: Duration = Duration::from_millis(200);

/// What the writer tells the client of an online rebuild.
#[derive(Debug, Clone, PartialEq)]
pub enum RebuildReport {
    /// Stored events indexed so far, of those stored when the rebuild began.
    Progress { done: u64, total: u64 },
    /// The events the scan indexed, or why the rebuild failed (the live index is unchanged).
    Finished(Result<u64, String>),
}

/// Where an online rebuild's reports go; offline there is no one to tell.
#[derive(Clone)]
pub struct Reports(Option<Sender<RebuildReport>>);

impl Reports {
    /// `false` when the client is gone.
    fn send(&self, report: RebuildReport) -> bool {
        self.0
            .as_ref()
            .is_none_or(|sender| sender.send(report).is_ok())
    }

    pub fn finished(&self, result: Result<u64, String>) {
        self.send(RebuildReport::Finished(result));
    }
}

/// A rebuild in progress.
pub struct Rebuild {
    target: Target,
    work_dir: PathBuf,
    /// Organisations still to scan, the current one last.
    orgs: Vec<String>,
    /// The last event id read of the current organisation.
    after: Option<String>,
    /// What the scan replaces: the events minted from `CATCH_UP_MARGIN_MS` before the
    /// rebuild's start on (see the invariants).
    sweep: Sweep,
    /// The scan reads ids before this one: those minted up to the rebuild's start.
    scan_to: String,
    total: u64,
    done: u64,
    reports: Reports,
    last_report: Option<Instant>,
}

/// `<index dir>.rebuild`: where a rebuild builds.
fn work_dir(dir: &Path) -> PathBuf {
    dir.with_extension("rebuild")
}

/// `<index dir>.old`: where the replaced index goes until it is removed.
fn old_dir(dir: &Path) -> PathBuf {
    dir.with_extension("old")
}

fn directory_error(path: &Path) -> impl FnOnce(std::io::Error) -> SearchError + '_ {
    move |source| SearchError::Directory {
        path: path.to_path_buf(),
        source,
    }
}

fn remove_if_present(path: &Path) -> Result<(), SearchError> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(directory_error(path)(error))
        }
        _ => Ok(()),
    }
}

/// Removes what an interrupted rebuild or swap left beside the index at `dir`.
pub fn remove_leftovers(dir: &Path) -> Result<(), SearchError> {
    remove_if_present(&work_dir(dir))?;
    remove_if_present(&old_dir(dir))
}

impl Rebuild {
    /// Starts a rebuild of the index at `dir` in a fresh work directory; counts the stored
    /// events and tells the client.
    pub fn begin(
        dir: &Path,
        store: &Store,
        reports: Option<Sender<RebuildReport>>,
    ) -> Result<Rebuild, SearchError> {
        let work_dir = work_dir(dir);
        remove_if_present(&work_dir)?;
        let mut target = Target::new(open_index(&work_dir)?)?;
        let mut orgs: Vec<String> = store
            .read_blocking(crate::accounts::all_orgs)?
            .into_iter()
            .map(|org| org.id.to_string())
            .collect();
        orgs.reverse();
        let total = store.read_blocking(crate::errors::event_count)?;
        let now = ulid::Ulid::generate();
        let (started, started_ms) = (format!("evt_{now}"), now.timestamp_ms());
        // The scan may read every event minted up to the start.
        target.replace_through(started_ms);
        let rebuild = Rebuild {
            target,
            work_dir,
            orgs,
            after: None,
            sweep: Sweep::from_id(&margin_id(&started)),
            scan_to: format!("evt_{}", ulid::Ulid::from_parts(started_ms + 1, 0)),
            total,
            done: 0,
            reports: Reports(reports),
            last_report: None,
        };
        rebuild
            .reports
            .send(RebuildReport::Progress { done: 0, total });
        Ok(rebuild)
    }

    /// Indexes the next stored events; `true` once every organisation was read.
    pub fn step(&mut self, fields: &Fields, store: &Store) -> Result<bool, SearchError> {
        let Some(org) = self.orgs.last() else {
            return Ok(true);
        };
        let (after, before) = (self.after.as_deref(), Some(self.scan_to.as_str()));
        let batch = read_events(store, org, after, before, STEP_EVENTS)?;
        self.target.add_stored(fields, org, &batch, &mut self.sweep);
        self.done += batch.len() as u64;
        match batch.last() {
            Some(last) if batch.len() == STEP_EVENTS => self.after = Some(last.id.to_string()),
            _ => {
                self.orgs.pop();
                self.after = None;
            }
        }
        Ok(self.orgs.is_empty())
    }

    /// The new index, for the live writer's events: those committed while the rebuild runs
    /// (`Target::add_live`) and those it read back from redb (`Target::add_stored`) go into it
    /// too.
    pub fn target(&mut self) -> &mut Target {
        &mut self.target
    }

    /// Tells the client how far it got (at most every `REPORT_EVERY`); `false` when the client
    /// is gone.
    pub fn report_progress(&mut self) -> bool {
        if self
            .last_report
            .is_some_and(|last| last.elapsed() < REPORT_EVERY)
        {
            return true;
        }
        self.last_report = Some(Instant::now());
        self.reports.send(RebuildReport::Progress {
            done: self.done,
            total: self.total,
        })
    }

    pub fn done(&self) -> u64 {
        self.done
    }

    pub fn reports(&self) -> Reports {
        self.reports.clone()
    }

    pub fn finished(&self, result: Result<u64, String>) {
        self.reports.finished(result);
    }

    /// Commits the new index, closes its writer and puts it at `dir`, the index there (whose
    /// writer the caller closed) going away. Returns the last millisecond whose events the new
    /// index may hold read back from redb (live events up to it replace).
    pub fn finish_into(self, dir: &Path) -> Result<Option<u64>, SearchError> {
        let replaced_to = self.target.replaced_to();
        self.target.close()?;
        let old = old_dir(dir);
        remove_if_present(&old)?;
        let had_index = match std::fs::rename(dir, &old) {
            Ok(()) => true,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
            Err(error) => return Err(directory_error(dir)(error)),
        };
        if let Err(error) = std::fs::rename(&self.work_dir, dir) {
            if had_index {
                let _ = std::fs::rename(&old, dir);
            }
            return Err(directory_error(&self.work_dir)(error));
        }
        if let Err(error) = remove_if_present(&old) {
            tracing::warn!(%error, "the replaced search index was not removed");
        }
        Ok(replaced_to)
    }

    /// Gives up: the work directory goes, the live index stays as it is.
    pub fn abandon(self) {
        let work_dir = self.work_dir;
        if let Err(error) = self.target.discard() {
            tracing::warn!(%error, "closing an abandoned search index rebuild failed");
        }
        if let Err(error) = remove_if_present(&work_dir) {
            tracing::warn!(%error, "an abandoned search index rebuild was not removed");
        }
    }
}

/// Builds the index at `dir` again from every stored event, with no server running on the
/// data dir, and puts it in place of the old one; `progress` gets the count indexed so far.
pub fn rebuild(
    dir: &Path,
    store: &Store,
    mut progress: impl FnMut(u64),
) -> Result<u64, SearchError> {
    remove_leftovers(dir)?;
    let (_, fields) = super::schema::schema();
    let mut rebuild = Rebuild::begin(dir, store, None)?;
    while !rebuild.step(&fields, store)? {
        progress(rebuild.done());
    }
    progress(rebuild.done());
    let indexed = rebuild.done();
    rebuild.finish_into(dir)?;
    Ok(indexed)
}
