//! The hashing pool: the threads that run argon2 (every password hash and verification) and
//! the bounded queue in front of them.
//!
//! Invariants: at most one argon2 computation per core runs at a time, so a burst of sign-ins
//! costs at most `cores × 19 MiB` of work areas instead of one per request; at most
//! `QUEUE_CAPACITY` jobs wait, and a job that finds the queue full is refused at once with
//! `HashingError::Overloaded` (503 `overloaded` with `Retry-After`) rather than held. A job
//! runs to its end even when its request is dropped, so a cancelled request never frees a
//! thread still in use. The pool starts on first use and lives as long as the process.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::http::{ApiError, ErrorCode};

/// Jobs that may wait for a hashing thread; one more is refused.
pub const QUEUE_CAPACITY: usize = 64;
/// What a refused client is told to wait before trying again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a hashing job did not produce its result.
#[derive(Debug, thiserror::Error)]
pub enum HashingError {
    #[error("every hashing thread is busy and the queue is full")]
    Overloaded,
    #[error("the hashing thread stopped before answering")]
    Lost,
    #[error("{0}")]
    Failed(String),
}

impl From<HashingError> for ApiError {
    fn from(error: HashingError) -> ApiError {
        match error {
            HashingError::Overloaded => ApiError::new(
                ErrorCode::Overloaded,
                "too many sign-ins are being checked at once; try again shortly",
            )
            .with_retry_after(RETRY_AFTER),
            HashingError::Lost | HashingError::Failed(_) => ApiError::internal(error),
        }
    }
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The sending side of the queue; the threads share the receiving side.
struct HashingPool {
    jobs: SyncSender<Job>,
}

static POOL: OnceLock<HashingPool> = OnceLock::new();

/// One thread per core (as `available_parallelism` reports it), at least one.
fn thread_count() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn pool() -> &'static HashingPool {
    POOL.get_or_init(|| {
        let (jobs, queue) = sync_channel::<Job>(QUEUE_CAPACITY);
        let queue = Arc::new(Mutex::new(queue));
        for index in 0..thread_count() {
            let queue = queue.clone();
            // A pool that cannot start a thread runs on the others; with none, jobs are Lost.
            let started = std::thread::Builder::new()
                .name(format!("lookout-argon2-{index}"))
                .spawn(move || serve_jobs(&queue));
            if let Err(error) = started {
                tracing::error!(%error, "cannot start a password hashing thread");
            }
        }
        HashingPool { jobs }
    })
}

/// A hashing thread: takes jobs until the queue's sender is gone (never, in practice).
fn serve_jobs(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job, never while running it.
        let next = match queue.lock() {
            Ok(receiver) => receiver.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match next {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Runs `work` on a hashing thread, or refuses it at once when the queue is full.
pub async fn run_on_hashing_pool<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashingError> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // The requester may be gone; its answer is then dropped.
        let _ = answer.send(work());
    });
    match pool().jobs.try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            metrics::counter!("lookout_password_hashing_refused_total").increment(1);
            return Err(HashingError::Overloaded);
        }
        Err(TrySendError::Disconnected(_)) => return Err(HashingError::Lost),
    }
    answered.await.map_err(|_| HashingError::Lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_beyond_the_threads_and_the_queue_are_refused_and_the_rest_answer() {
        // Every job blocks until released, so one job more than threads + queue must be refused.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Arc::new(Mutex::new(released));
        let jobs: Vec<_> = (0..thread_count() + QUEUE_CAPACITY + 1)
            .map(|index| {
                let released = released.clone();
                tokio::spawn(run_on_hashing_pool(move || {
                    let _ = released.lock().map(|receiver| receiver.recv());
                    index
                }))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        for _ in 0..jobs.len() {
            let _ = release.send(());
        }
        let mut refused = 0;
        for (index, job) in jobs.into_iter().enumerate() {
            match job.await.unwrap() {
                Ok(answer) => assert_eq!(answer, index),
                Err(HashingError::Overloaded) => refused += 1,
                Err(other) => panic!("unexpected {other}"),
            }
        }
        assert!(refused >= 1, "a full queue must refuse");
    }
}
