//! Retention: a background worker that deletes error events, sessions and spans older than
//! `RETENTION_DAYS`, and forgets idle addresses of the ingest rate limiter.
//!
//! Invariants: deletion walks the age index oldest first in transactions of at most `BATCH`
//! items, so it never holds the writer for long and a crash mid-sweep only leaves work for the
//! next sweep; each record leaves together with its index rows. The worker stops when the
//! shutdown signal flips, before the store closes.

use std::time::Duration;

use redb::WriteTransaction;
use tokio::sync::watch;

use super::{Ingest, sessions, spans};
use crate::clock::Timestamp;
use crate::store::StoreError;
use crate::store::ages::{self, Kind};

/// Time between sweeps (the first runs at start-up).
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(10);
/// Items deleted per transaction.
pub const BATCH: usize = 256;
/// After each of its transactions a sweep waits this many times as long as the transaction
/// took (from its queueing to its commit, so longer while ingest is busy): a large backlog (a
/// lowered retention, a store that was offline) takes at most a fifth of the store's one
/// writer, and ingest's requests keep their latency meanwhile.
const PAUSE_PER_WRITE: u32 = 4;

/// Sweeps every `SWEEP_INTERVAL` until `shutdown` turns true (or its sender is dropped).
pub async fn run(ingest: Ingest, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        sweep(&ingest, &shutdown).await;
        ingest.rate().sweep(true);
        tokio::select! {
            _ = tokio::time::sleep(SWEEP_INTERVAL) => {}
            changed = shutdown.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

/// Deletes everything older than the retention period, batch by batch; returns how many.
pub async fn sweep(ingest: &Ingest, shutdown: &watch::Receiver<bool>) -> usize {
    let cutoff = retention_cutoff(ingest.clock().now(), ingest.retention());
    let mut total = 0;
    let mut shutdown = shutdown.clone();
    while !*shutdown.borrow() {
        let began = std::time::Instant::now();
        let removed = ingest
            .store()
            .write(move |txn| delete_expired(txn, cutoff, BATCH))
            .await;
        match removed {
            Ok(count) => {
                total += count;
                // Counted per transaction, so a long sweep shows its progress.
                metrics::counter!("lookout_ingest_retention_deleted_total").increment(count as u64);
                if count < BATCH {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep(began.elapsed() * PAUSE_PER_WRITE) => {}
                    _ = shutdown.changed() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "retention sweep failed; retrying at the next sweep");
                break;
            }
        }
    }
    if total > 0 {
        tracing::info!(deleted = total, "retention removed old telemetry");
    }
    total
}

/// The instant before which telemetry is deleted.
pub fn retention_cutoff(now: Timestamp, retention: Duration) -> Timestamp {
    let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    Timestamp(now.unix_millis().saturating_sub(ms))
}

/// Every kind of record in the age index: error events (`errors`), sessions and spans.
const AGE_KINDS: [Kind; 3] = [
    crate::errors::EVENT_AGE,
    sessions::SESSION_AGE,
    spans::SPAN_AGE,
];

/// Removes a record and its index rows by its key; answers whether it was there.
type Remove = fn(&WriteTransaction, &str) -> Result<bool, StoreError>;

fn unclaimed(kind: Kind) -> StoreError {
    StoreError::Corrupt {
        what: "telemetry age kind",
        detail: kind.as_str().to_string(),
    }
}

/// Deletes up to `limit` items aged before `cutoff`, oldest first; returns how many.
pub fn delete_expired(
    txn: &WriteTransaction,
    cutoff: Timestamp,
    limit: usize,
) -> Result<usize, StoreError> {
    let expired = ages::expired(txn, (cutoff, &AGE_KINDS), limit)?;
    // Error events together: their groups' event lists are updated once for all of them.
    let events: Vec<&str> = expired
        .iter()
        .filter(|item| item.kind == crate::errors::EVENT_AGE)
        .map(|item| item.record_key.as_str())
        .collect();
    crate::errors::remove_events(txn, &events)?;
    for item in &expired {
        let remove: Remove = match item.kind {
            crate::errors::EVENT_AGE => continue,
            sessions::SESSION_AGE => sessions::remove_session,
            spans::SPAN_AGE => spans::remove_span,
            // `expired` returns only the kinds of `AGE_KINDS`.
            other => return Err(unclaimed(other)),
        };
        // False for a bundle's record removed since: nothing left to do for it.
        remove(txn, &item.record_key)?;
    }
    // A record's own row is normally gone with it already; this also clears a row left
    // dangling, and what bundles `expired` took.
    ages::forget_taken(txn, &expired)?;
    Ok(expired.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::accounts::model::OrgId;
    use crate::ingest::item::Item;
    use crate::store::{ReadTxn, tables};

    const DAY: i64 = 86_400_000;
    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    /// Events of one write and second share a bundle keyed by the first of them at the newest
    /// age: removing that event must not take the bundle, which names the others.
    #[test]
    fn a_bundle_taken_in_small_batches_expires_every_event_it_names() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let item = json!({"level": "error", "message": "m", "url": "u",
            "timestamp": NOW.0 - 2 * DAY});
        let events: Vec<_> = (0..10)
            .map(|_| {
                super::super::web_errors::parse_event(&Item::from(item.clone()), NOW, None).unwrap()
            })
            .collect();
        let txn = database.begin_write().unwrap();
        let mut batch = crate::errors::EventBatch::new(&org, events);
        crate::errors::store_events(&txn, &org, &mut batch).unwrap();
        let cutoff = retention_cutoff(NOW, Duration::from_secs(86_400));
        let mut rounds = Vec::new();
        loop {
            let deleted = delete_expired(&txn, cutoff, 3).unwrap();
            rounds.push(deleted);
            if deleted < 3 {
                break;
            }
        }
        assert_eq!(rounds, [3, 3, 3, 1]);
        let count = |name| {
            txn.open(redb::TableDefinition::<&str, &[u8]>::new(name))
                .unwrap()
                .row_count()
                .unwrap()
        };
        assert_eq!(
            count(tables::EVENTS),
            0,
            "every event of the bundle expired"
        );
        let rows = txn
            .open(redb::TableDefinition::<&str, &str>::new(
                tables::TELEMETRY_AGES,
            ))
            .unwrap()
            .row_count()
            .unwrap();
        assert_eq!(rows, 0);
    }

    #[test]
    fn old_items_go_with_their_index_rows_and_new_ones_stay() {
        let (_dir, database) = crate::store::migrations::scratch_database();
        let org = OrgId::generate();
        let event = |id: &str, at: i64| {
            let item = json!({"level": "error", "message": "m", "url": "u", "event_id": id,
                "session_id": "s-1", "timestamp": at, "service": "web"});
            super::super::web_errors::parse_event(&Item::from(item.clone()), NOW, None).unwrap()
        };
        let old_session = json!({"id": "s-0", "started_at": NOW.0 - 3 * DAY, "url": "u"});
        let new_session = json!({"id": "s-1", "started_at": NOW.0 - DAY / 2, "url": "u"});
        let span = json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
            "name": "load", "start_time": NOW.0 - 5 * DAY, "duration_ms": 3, "service": "web",
            "session_id": "s-1"});
        let txn = database.begin_write().unwrap();
        let mut batch = crate::errors::EventBatch::new(
            &org,
            vec![event("old", NOW.0 - 2 * DAY), event("new", NOW.0)],
        );
        crate::errors::store_events(&txn, &org, &mut batch).unwrap();
        let parsed = [old_session, new_session]
            .map(|s| sessions::parse_session(&Item::from(s.clone()), NOW, None).unwrap());
        sessions::upsert_sessions(&txn, &org, &parsed).unwrap();
        spans::store_spans(
            &txn,
            &org,
            &[spans::parse_span(&Item::from(span.clone()), NOW).unwrap()],
        )
        .unwrap();

        let cutoff = retention_cutoff(NOW, Duration::from_secs(86_400));
        assert_eq!(
            delete_expired(&txn, cutoff, 2).unwrap(),
            2,
            "batches are bounded"
        );
        assert_eq!(delete_expired(&txn, cutoff, 10).unwrap(), 1);
        assert_eq!(delete_expired(&txn, cutoff, 10).unwrap(), 0);
        let rows = |name| {
            txn.open(redb::TableDefinition::<&str, &str>::new(name))
                .unwrap()
                .row_count()
                .unwrap()
        };
        let records = |name| {
            txn.open(redb::TableDefinition::<&str, &[u8]>::new(name))
                .unwrap()
                .row_count()
                .unwrap()
        };
        assert_eq!(records(tables::EVENTS), 1);
        assert_eq!(rows(tables::EVENT_CLIENT_IDS), 1);
        assert_eq!(
            rows(tables::SESSION_EVENTS),
            0,
            "none written: sessions are searched"
        );
        assert_eq!(records(tables::WEB_SESSIONS), 1);
        assert_eq!(rows(tables::SESSION_STARTS), 1);
        assert_eq!(records(tables::SPANS), 0);
        assert_eq!(
            rows(tables::SESSION_SPANS),
            0,
            "a span's session row leaves with it"
        );
        assert_eq!(rows(tables::TELEMETRY_AGES), 2);
    }
}
