//! Giving memory back once a burst of requests is over.
//!
//! glibc keeps the pages of freed allocations in its arenas for reuse, so after 100 parallel
//! 16 MiB uploads the process would keep hundreds of MiB it no longer uses until it exits.
//! `malloc_trim(0)` hands every free page of every arena back to the kernel. It costs a walk of
//! the heaps, so it runs only when requests finished since the last trim and none is in flight
//! (or under steady load, at most every `BUSY_TRIM_INTERVAL`), on a blocking thread.
//!
//! Invariant: the counters are process-wide and only counted here; the trim never runs on the
//! async reactor. Where the allocator is not glibc's, the loop counts but never trims.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::watch;

/// How often the loop looks at the counters.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Under steady load there is never a quiet moment; trim anyway this often.
const BUSY_TRIM_INTERVAL: Duration = Duration::from_secs(30);
/// Trims after the last activity: background work (the index writer, the store's writer)
/// frees what a burst left it a little after the last response went out.
const TRIMS_AFTER_ACTIVITY: u8 = 3;

/// Requests between the router receiving them and the handler's answer.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Requests answered since start.
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Lowers `IN_FLIGHT` however the request ends, answered or dropped.
struct InFlight;

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        FINISHED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Middleware counting requests in flight and finished, for the trim loop.
pub async fn count_requests(request: Request, next: Next) -> Response {
    IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
    let _in_flight = InFlight;
    next.run(request).await
}

/// Runs until `shutdown` turns true: trims when the server went quiet after serving requests.
pub async fn return_freed_memory(mut shutdown: watch::Receiver<bool>) {
    let mut seen = FINISHED.load(Ordering::Relaxed);
    let mut trims_due = 0u8;
    let mut last_trim = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(CHECK_INTERVAL) => {}
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    return;
                }
            }
        }
        let finished = FINISHED.load(Ordering::Relaxed);
        if finished != seen {
            seen = finished;
            trims_due = TRIMS_AFTER_ACTIVITY;
        }
        let quiet = IN_FLIGHT.load(Ordering::Relaxed) == 0;
        let overdue = last_trim.elapsed() >= BUSY_TRIM_INTERVAL;
        if trims_due == 0 || !(quiet || overdue) {
            continue;
        }
        trims_due -= 1;
        last_trim = Instant::now();
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

/// Large allocations (request bodies, decoded maps) get pages of their own, given back when
/// freed. glibc's default raises both thresholds after each large free, up to 32 MiB and 64 MiB,
/// so a burst of large bodies ends up in the heaps; the top of a thread's heap is then out of
/// `malloc_trim`'s reach (it trims only the main heap's top). Fixed thresholds keep it from
/// drifting. Called once, before the server starts its threads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn configure_allocator() {
    const LARGE: libc::c_int = 256 * 1024;
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE);
        libc::mallopt(libc::M_TRIM_THRESHOLD, LARGE);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn configure_allocator() {}

/// Returns the free pages of every glibc arena to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks and shrinks the allocator's own free lists.
    let released = unsafe { libc::malloc_trim(0) };
    tracing::trace!(released, "returned free heap pages");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
