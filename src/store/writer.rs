//! The single writer: batches concurrent writes into one durable transaction (group commit)
//! and heals the database after I/O errors.
//!
//! Invariants:
//! - Only this thread begins write transactions, so redb never blocks a caller on its
//!   writer lock and a batch commits (or fails) as one.
//! - A write's `done` channel is answered only after the commit that holds it returned, so
//!   an acknowledged write is on disk (`Durability::Immediate`).
//! - A closure error or panic aborts its batch; the batch is retried without that write, so
//!   one bad write never takes others down with it.
//! - A write's closure is dropped before its caller is answered, so what the caller shared with
//!   it (an `Arc`) is the caller's alone again when `write` returns.
//! - On an I/O error the store turns degraded, the database is closed and reopened (redb
//!   refuses every call after an I/O error until then), and a probe write is tried every
//!   `PROBE_INTERVAL` until one commits.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use redb::{Database, Durability, WriteTransaction};
use tokio::sync::oneshot;

use super::{JobFailure, JobFn, Shared, StoreError, StoreOptions, open_database, tables};

/// How often a degraded store tries to write again.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// How long closing waits for in-flight readers to release the database.
const READER_DRAIN: Duration = Duration::from_secs(2);

pub(super) enum Message {
    Job(Job),
    /// A reader met an I/O error: check the database even if no write is pending.
    Recover,
}

pub(super) struct Job {
    pub run: JobFn,
    pub done: oneshot::Sender<Result<Box<dyn Any + Send>, JobFailure>>,
}

pub(super) fn spawn(
    shared: Arc<Shared>,
    options: StoreOptions,
) -> std::io::Result<(Sender<Message>, std::thread::JoinHandle<()>)> {
    let (sender, receiver) = mpsc::channel();
    let writer = Writer {
        shared,
        options,
        receiver,
        next_probe: Instant::now(),
    };
    let thread = std::thread::Builder::new()
        .name("store-writer".to_string())
        .spawn(move || writer.run())?;
    Ok((sender, thread))
}

struct Writer {
    shared: Arc<Shared>,
    options: StoreOptions,
    receiver: Receiver<Message>,
    /// Earliest time of the next recovery attempt while degraded.
    next_probe: Instant,
}

impl Writer {
    fn run(mut self) {
        let segments = self.shared.segments.clone();
        super::segments::enter_writer(segments.clone());
        loop {
            let wait = if self.degraded() {
                PROBE_INTERVAL
            } else {
                Duration::from_secs(3600)
            };
            let first = match self.receiver.recv_timeout(wait) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    self.try_recover();
                    continue;
                }
                // Every handle is gone and every queued job was taken: commit nothing more.
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let (batch, recover) = self.collect_batch(first);
            if recover && !self.degraded() {
                self.degrade("a reader met an i/o error");
            }
            if self.degraded() {
                self.try_recover();
            }
            if batch.is_empty() {
                continue;
            }
            if self.degraded() {
                let error =
                    StoreError::Unavailable("writes are suspended after an i/o error".into());
                fail_all(batch, &error);
            } else {
                self.commit(batch);
            }
        }
        // What retention removed is given back now rather than at the next start.
        segments.reclaim(true);
        self.close_database();
    }

    /// Takes the first message and whatever else is already queued, up to the batch limit.
    fn collect_batch(&self, first: Message) -> (Vec<Job>, bool) {
        let mut batch = Vec::new();
        let mut recover = false;
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Job(job) => batch.push(job),
                Message::Recover => recover = true,
            }
            next = if batch.len() < self.options.max_batch.max(1) {
                self.receiver.try_recv().ok()
            } else {
                None
            };
        }
        (batch, recover)
    }

    /// Commits `jobs` in one transaction, retrying without the ones whose closure failed.
    fn commit(&mut self, mut jobs: Vec<Job>) {
        let started = Instant::now();
        loop {
            let txn = match self.begin() {
                Ok(txn) => txn,
                Err(error) => {
                    self.note_failure(&error);
                    fail_all(jobs, &error);
                    return;
                }
            };
            let segments = self.shared.segments.clone();
            segments.begin();
            let mut values = Vec::with_capacity(jobs.len());
            let mut rejected = Vec::new();
            for (index, job) in jobs.iter_mut().enumerate() {
                match catch_unwind(AssertUnwindSafe(|| (job.run)(&txn))) {
                    Ok(Ok(value)) => values.push(value),
                    Ok(Err(failure)) => rejected.push((index, failure)),
                    Err(_) => {
                        tracing::error!(
                            "a write closure panicked; its batch is retried without it"
                        );
                        let error = StoreError::Storage("the write panicked".into());
                        rejected.push((index, JobFailure::Store(error)));
                    }
                }
            }
            if rejected.is_empty() {
                let batch_size = jobs.len();
                // The records' frames are on disk before the commit that names them.
                let committed = segments
                    .prepare(&txn)
                    .and_then(|()| txn.commit().map_err(StoreError::from));
                if let Err(error) = committed {
                    segments.abort();
                    self.note_failure(&error);
                    fail_all(jobs, &error);
                    return;
                }
                segments.committed();
                record_commit(started, batch_size);
                for (job, value) in jobs.into_iter().zip(values) {
                    // The closure goes before the answer: what it captured is released here, so
                    // the caller gets back sole ownership of anything it shared with it.
                    let Job { run, done } = job;
                    drop(run);
                    let _ = done.send(Ok(value));
                }
                return;
            }
            // Nothing of an aborted batch is kept; answer the failed writes and go again.
            let _ = txn.abort();
            segments.abort();
            for (index, failure) in rejected.into_iter().rev() {
                let job = jobs.remove(index);
                let _ = job.done.send(Err(failure));
            }
            if jobs.is_empty() {
                return;
            }
        }
    }

    fn begin(&self) -> Result<WriteTransaction, StoreError> {
        let database = self.database()?;
        let mut txn = database.begin_write()?;
        txn.set_durability(Durability::Immediate)
            .map_err(|err| StoreError::Storage(err.to_string()))?;
        txn.set_two_phase_commit(self.options.two_phase_commit);
        txn.set_quick_repair(self.options.quick_repair);
        Ok(txn)
    }

    fn database(&self) -> Result<Arc<Database>, StoreError> {
        self.shared.current_database()
    }

    fn degraded(&self) -> bool {
        self.shared.degraded.load(Ordering::Acquire)
    }

    /// Degrades the store when a failure was the disk's; other failures only fail their batch.
    fn note_failure(&mut self, error: &StoreError) {
        metrics::counter!("lookout_store_write_failures_total").increment(1);
        if let StoreError::Unavailable(reason) = error {
            self.degrade(reason);
        } else {
            tracing::error!(error = %error, "store commit failed");
        }
    }

    fn degrade(&mut self, reason: &str) {
        if !self.shared.degraded.swap(true, Ordering::AcqRel) {
            tracing::error!(
                reason,
                "store degraded: writes are refused until the disk recovers"
            );
            metrics::gauge!("lookout_store_degraded").set(1.0);
        }
        // redb refuses every call after an I/O error, reads included, until it is reopened.
        self.close_database();
        self.next_probe = Instant::now();
        self.try_recover();
    }

    /// Reopens the database if needed and probes with a small durable write.
    fn try_recover(&mut self) {
        if !self.degraded() || Instant::now() < self.next_probe {
            return;
        }
        self.next_probe = Instant::now() + PROBE_INTERVAL;
        if self.database().is_err() {
            match open_database(&self.shared.path) {
                Ok(database) => {
                    let mut slot = self
                        .shared
                        .database
                        .write()
                        .unwrap_or_else(|p| p.into_inner());
                    *slot = Some(Arc::new(database));
                }
                Err(error) => {
                    tracing::warn!(error = %error, "store still unavailable: reopening failed");
                    return;
                }
            }
        }
        match self.probe() {
            Ok(()) => {
                self.shared.degraded.store(false, Ordering::Release);
                metrics::gauge!("lookout_store_degraded").set(0.0);
                tracing::info!("store recovered: writes are accepted again");
            }
            Err(error) => {
                tracing::warn!(error = %error, "store still unavailable: probe write failed");
                // The failed probe poisoned this handle; reopen now so reads keep working.
                self.close_database();
                if let Ok(database) = open_database(&self.shared.path) {
                    let mut slot = self
                        .shared
                        .database
                        .write()
                        .unwrap_or_else(|p| p.into_inner());
                    *slot = Some(Arc::new(database));
                }
            }
        }
    }

    fn probe(&self) -> Result<(), StoreError> {
        self.shared.segments.probe()?;
        let txn = self.begin()?;
        {
            let mut meta = txn.open_table(tables::META)?;
            let now = crate::clock::Clock::system()
                .now()
                .unix_millis()
                .to_be_bytes();
            meta.insert("health_probe", now.as_slice())?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Takes the database out of the shared slot and drops it once readers let go.
    fn close_database(&self) {
        let taken = {
            let mut slot = self
                .shared
                .database
                .write()
                .unwrap_or_else(|p| p.into_inner());
            slot.take()
        };
        let Some(database) = taken else { return };
        let deadline = Instant::now() + READER_DRAIN;
        while Arc::strong_count(&database) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(database);
    }
}

fn fail_all(jobs: Vec<Job>, error: &StoreError) {
    for job in jobs {
        let _ = job.done.send(Err(JobFailure::Store(error.clone())));
    }
}

fn record_commit(started: Instant, batch_size: usize) {
    metrics::counter!("lookout_store_commits_total").increment(1);
    metrics::histogram!("lookout_store_commit_seconds").record(started.elapsed().as_secs_f64());
    metrics::histogram!("lookout_store_commit_batch_size").record(batch_size as f64);
}
