//! Telling systemd how `serve` is doing when it runs as a `Type=notify` service
//! (`systemd/lookout.service`): `READY=1` once it listens, `STOPPING=1` at shutdown, a
//! `STATUS=` line, and watchdog pings while the process is healthy.
//!
//! Invariants: outside systemd (no `NOTIFY_SOCKET`) every call is a no-op; a ping is sent only
//! after a check of this tick passed, so a wedged process stops pinging and systemd restarts
//! it. Healthy means the async runtime runs this task, the store's writer thread is alive and
//! a read transaction completes within the ping interval. A store degraded by a full or
//! read-only disk still counts as healthy: it keeps serving reads and heals itself once space
//! frees, while a restart would fix nothing and drop every connection; `STATUS=` says so.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio::sync::watch;

use crate::store::{Health, Store};

/// Announces that the server accepts connections on `address`.
pub fn notify_ready(address: &str) {
    let status = format!("STATUS=serving on {address}");
    send(&[NotifyState::Ready, NotifyState::Custom(&status)]);
}

/// Announces an orderly shutdown (so systemd does not count it as a failure).
pub fn notify_stopping() {
    send(&[
        NotifyState::Stopping,
        NotifyState::Status("stopping: finishing requests"),
    ]);
}

/// Pings the watchdog at half its interval while the server is healthy, until `stop` is set.
/// Returns at once when systemd set no watchdog (`WatchdogSec=` unset, or not under systemd).
pub async fn watchdog(store: Store, mut stop: watch::Receiver<bool>) {
    let Some(timeout) = sd_notify::watchdog_enabled() else {
        return;
    };
    let interval = (timeout / 2).max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval(interval);
    let mut last_health = Health::Ok;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
        match check(&store, interval).await {
            Ok(health) => {
                if health != last_health {
                    send(&[NotifyState::Status(status_line(health))]);
                    last_health = health;
                }
                send(&[NotifyState::Watchdog]);
            }
            Err(reason) => {
                tracing::error!(reason, "health check failed: withholding the watchdog ping");
            }
        }
    }
}

/// One health check, bounded by `deadline`.
async fn check(store: &Store, deadline: Duration) -> Result<Health, &'static str> {
    if !store.writer_alive() {
        return Err("the store writer thread has stopped");
    }
    let read = store.read(|_txn| Ok::<(), crate::store::StoreError>(()));
    match tokio::time::timeout(deadline, read).await {
        Err(_) => Err("a read transaction did not complete within the watchdog interval"),
        // A degraded store may refuse reads while it reopens the file: still alive.
        Ok(_) => Ok(store.health()),
    }
}

fn status_line(health: Health) -> &'static str {
    match health {
        Health::Ok => "serving",
        Health::Degraded => "degraded: writes refused after an i/o error, reads continue",
    }
}

fn send(states: &[NotifyState]) {
    if let Err(error) = sd_notify::notify(states) {
        tracing::warn!(%error, "cannot notify systemd");
    }
}
