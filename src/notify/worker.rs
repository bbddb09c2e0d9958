//! The delivery worker: a dispatcher loop over the redb due index that hands due deliveries
//! to a bounded set of blocking attempts, then records each outcome durably.
//!
//! Invariants:
//! - At most `MAX_IN_FLIGHT` attempts run at once, and at most `PER_DESTINATION` to one
//!   `host:port`, so a stalled receiver holds a few threads and never the whole pool.
//! - A delivery stays in the due index while its attempt runs; the write that records the
//!   attempt moves it (retry, dead letter, done) in one transaction. A crash in between sends
//!   it again after start-up with the same delivery id (at-least-once).
//! - The schedule comes from the `Clock` and the due times stored in redb; the loop sleeps
//!   until the soonest due time, a wake-up from `Notify::wake`, or a finished attempt.
//! - No transaction is held across an `.await`: reads and writes are closures on the store.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use redb::WriteTransaction;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::model::{Attempt, Channel, Delivery, DeliveryId, DeliveryState, NextStep, Outcome};
use super::send::{Report, Request, Sender, destination_of};
use super::{Notify, db, model};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// Attempts running at once (each holds one blocking thread).
pub const MAX_IN_FLIGHT: usize = 64;
/// Attempts running at once against one `host:port`: enough to keep a fast receiver busy while
/// outcomes commit (group commit batches them), few enough that one stalled receiver holds at
/// most a quarter of `MAX_IN_FLIGHT`.
pub const PER_DESTINATION: usize = 16;
/// Due rows read per pass; rows of capped destinations beyond it wait for a later pass.
const SCAN_ROWS: usize = 2048;
/// The longest sleep: a safety net should a wake-up be missed.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// Attempt history kept per delivery (redrives could otherwise grow it without bound).
const MAX_ATTEMPTS_KEPT: usize = 50;
/// How long shutdown waits for attempts in flight before leaving them to the next start.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A due delivery chosen for an attempt.
struct Claim {
    id: DeliveryId,
    destination: String,
    request: Request,
}

/// What a pass found besides claims: deliveries to settle without sending, and when to look again.
struct Pass {
    claims: Vec<Claim>,
    settle: Vec<(DeliveryId, DeliveryState)>,
    next_due: Option<Timestamp>,
    queue_depth: u64,
    dead_letters: u64,
}

/// Runs until `shutdown` turns true.
pub async fn run(notify: Notify, mut shutdown: watch::Receiver<bool>) {
    let settings = notify.settings().clone();
    let sender = Arc::new(Sender::new(settings.timeout, settings.allow_private));
    let mut in_flight: HashMap<DeliveryId, String> = HashMap::new();
    let mut per_destination: HashMap<String, usize> = HashMap::new();
    let mut attempts: JoinSet<DeliveryId> = JoinSet::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        let wait = match dispatch(
            &notify,
            &sender,
            &mut in_flight,
            &mut per_destination,
            &mut attempts,
        )
        .await
        {
            Ok(wait) => wait,
            Err(error) => {
                tracing::warn!(%error, "webhook dispatch pass failed");
                IDLE_POLL
            }
        };
        tokio::select! {
            _ = shutdown.changed() => break,
            () = notify.woken() => {}
            () = tokio::time::sleep(wait) => {}
            Some(done) = attempts.join_next(), if !attempts.is_empty() => {
                release(done, &mut in_flight, &mut per_destination);
            }
        }
        // Collect every other attempt that finished meanwhile before the next pass.
        while let Some(done) = attempts.try_join_next() {
            release(done, &mut in_flight, &mut per_destination);
        }
    }
    // Give attempts in flight a moment to record their outcome; the rest stay due and are sent
    // again after the next start.
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
        while attempts.join_next().await.is_some() {}
    })
    .await;
    attempts.abort_all();
}

fn release(
    done: Result<DeliveryId, tokio::task::JoinError>,
    in_flight: &mut HashMap<DeliveryId, String>,
    per_destination: &mut HashMap<String, usize>,
) {
    let Ok(id) = done else {
        // A panicked attempt left its delivery due; it is retried on a later pass.
        tracing::error!("webhook attempt task failed");
        return;
    };
    if let Some(destination) = in_flight.remove(&id)
        && let Some(count) = per_destination.get_mut(&destination)
    {
        *count = count.saturating_sub(1);
        if *count == 0 {
            per_destination.remove(&destination);
        }
    }
}

/// One pass: claim what is due and startable, spawn its attempts; returns how long to sleep.
async fn dispatch(
    notify: &Notify,
    sender: &Arc<Sender>,
    in_flight: &mut HashMap<DeliveryId, String>,
    per_destination: &mut HashMap<String, usize>,
    attempts: &mut JoinSet<DeliveryId>,
) -> Result<Duration, StoreError> {
    let now = notify.clock().now();
    let busy: HashSet<DeliveryId> = in_flight.keys().cloned().collect();
    let counts = per_destination.clone();
    let room = MAX_IN_FLIGHT.saturating_sub(in_flight.len());
    let pass = notify
        .store()
        .read(move |txn| plan_pass(txn, now, &busy, counts, room))
        .await?;
    metrics::gauge!("lookout_webhook_queue_depth").set(pass.queue_depth as f64);
    metrics::gauge!("lookout_webhook_dead_letters").set(pass.dead_letters as f64);
    if !pass.settle.is_empty() {
        let settle = pass.settle;
        notify
            .store()
            .write(move |txn| settle_without_sending(txn, &settle, now))
            .await?;
    }
    for claim in pass.claims {
        *per_destination
            .entry(claim.destination.clone())
            .or_default() += 1;
        in_flight.insert(claim.id.clone(), claim.destination);
        attempts.spawn(attempt(
            notify.clone(),
            sender.clone(),
            claim.id,
            claim.request,
        ));
    }
    let wait = match pass.next_due {
        Some(due) => {
            let millis = due
                .unix_millis()
                .saturating_sub(notify.clock().now().unix_millis());
            Duration::from_millis(u64::try_from(millis).unwrap_or(0)).min(IDLE_POLL)
        }
        None => IDLE_POLL,
    };
    Ok(wait)
}

/// Reads the due index and picks deliveries to attempt (pure over the read transaction).
fn plan_pass(
    txn: &redb::ReadTransaction,
    now: Timestamp,
    busy: &HashSet<DeliveryId>,
    mut counts: HashMap<String, usize>,
    mut room: usize,
) -> Result<Pass, StoreError> {
    let mut pass = Pass {
        claims: Vec::new(),
        settle: Vec::new(),
        next_due: None,
        queue_depth: db::queue_depth(txn)?,
        dead_letters: db::dead_letter_total(txn)?,
    };
    let mut channels: HashMap<String, Option<Channel>> = HashMap::new();
    for (key, id) in db::due_rows(txn, SCAN_ROWS)? {
        let due = db::due_of_key(&key).ok_or_else(|| StoreError::Corrupt {
            what: "due index",
            detail: key.clone(),
        })?;
        if due > now {
            pass.next_due = Some(due);
            break;
        }
        if room == 0 {
            break;
        }
        let id = DeliveryId::parse(&id).map_err(|err| StoreError::Corrupt {
            what: "due index",
            detail: err.to_string(),
        })?;
        if busy.contains(&id) {
            continue;
        }
        let Some(delivery) = db::get_delivery(txn, &id)? else {
            continue;
        };
        let channel_key = delivery.channel_id.to_string();
        if !channels.contains_key(&channel_key) {
            let channel = db::get_channel(txn, &delivery.channel_id)?;
            channels.insert(channel_key.clone(), channel);
        }
        let channel = match channels.get(&channel_key) {
            Some(Some(channel)) => channel,
            _ => {
                pass.settle.push((id, DeliveryState::Cancelled));
                continue;
            }
        };
        if !channel.enabled {
            pass.settle.push((id, DeliveryState::Dead));
            continue;
        }
        let destination = destination_of(&channel.url);
        let count = counts.entry(destination.clone()).or_default();
        if *count >= PER_DESTINATION {
            continue;
        }
        *count += 1;
        room -= 1;
        pass.claims.push(Claim {
            request: Request {
                delivery_id: id.to_string(),
                event: delivery.event.clone(),
                url: channel.url.clone(),
                body: delivery.body.clone(),
                secret: channel.signing_secret.clone(),
            },
            id,
            destination,
        });
    }
    Ok(pass)
}

/// Moves deliveries whose channel is gone (cancelled) or disabled (dead letter) out of the queue.
fn settle_without_sending(
    txn: &WriteTransaction,
    settle: &[(DeliveryId, DeliveryState)],
    now: Timestamp,
) -> Result<(), StoreError> {
    for (id, state) in settle {
        let Some(current) = db::get_delivery(txn, id)? else {
            continue;
        };
        if current.state != DeliveryState::Pending {
            continue;
        }
        let mut next = current.clone();
        next.state = *state;
        next.due_at = None;
        next.updated_at = now;
        db::put_delivery(txn, Some(&current), &next)?;
    }
    Ok(())
}

/// One attempt: send on a blocking thread, then record the outcome durably.
async fn attempt(
    notify: Notify,
    sender: Arc<Sender>,
    id: DeliveryId,
    request: Request,
) -> DeliveryId {
    let started_at = notify.clock().now();
    let unix_seconds = started_at.unix_seconds();
    let sent = tokio::task::spawn_blocking(move || sender.send(&request, unix_seconds)).await;
    let report = match sent {
        Ok(report) => report,
        Err(join) => {
            tracing::error!(error = %join, "webhook attempt thread failed");
            return id;
        }
    };
    metrics::counter!("lookout_webhook_attempts_total").increment(1);
    if report.outcome != Outcome::Success {
        metrics::counter!("lookout_webhook_failures_total", "reason" => report.reason).increment(1);
    }
    metrics::histogram!("lookout_webhook_attempt_duration_seconds")
        .record(report.duration.as_secs_f64());
    let delays = notify.settings().retry_delays.clone();
    let (record_id, finished_at) = (id.clone(), notify.clock().now());
    let recorded = notify
        .store()
        .write(move |txn| {
            record_attempt(txn, &record_id, started_at, finished_at, &report, &delays)
        })
        .await;
    if let Err(error) = recorded {
        // The delivery is still due in the store, so it is attempted again: at-least-once.
        tracing::warn!(%error, delivery = %id, "cannot record a webhook attempt");
    }
    id
}

/// Appends the attempt and moves the delivery to its next state, in one transaction.
fn record_attempt(
    txn: &WriteTransaction,
    id: &DeliveryId,
    started_at: Timestamp,
    now: Timestamp,
    report: &Report,
    delays: &[Duration],
) -> Result<(), StoreError> {
    let Some(current) = db::get_delivery(txn, id)? else {
        return Ok(());
    };
    if current.state != DeliveryState::Pending {
        return Ok(());
    }
    let mut next: Delivery = current.clone();
    next.attempts.push(Attempt {
        at: started_at,
        status_code: report.status_code,
        error: report.error.clone(),
        duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
        response_snippet: report.snippet.clone(),
    });
    if next.attempts.len() > MAX_ATTEMPTS_KEPT {
        next.attempts.remove(0);
    }
    next.round_attempts = next.round_attempts.saturating_add(1);
    next.updated_at = now;
    match model::next_step(report.outcome, next.round_attempts, delays, now) {
        NextStep::Done => {
            next.state = DeliveryState::Delivered;
            next.due_at = None;
        }
        NextStep::RetryAt(at) => next.due_at = Some(at),
        NextStep::DeadLetter => {
            next.state = DeliveryState::Dead;
            next.due_at = None;
        }
        NextStep::DisableChannel => {
            next.state = DeliveryState::Dead;
            next.due_at = None;
            if let Some(mut channel) = db::get_channel(txn, &next.channel_id)? {
                channel.enabled = false;
                channel.disabled_reason = Some(format!(
                    "receiver answered 410 Gone at {}",
                    now.to_rfc3339()
                ));
                channel.updated_at = now;
                db::put_channel(txn, &channel)?;
            }
        }
    }
    db::put_delivery(txn, Some(&current), &next)
}
