//! Error events of concurrent requests written together: one write closure for all the
//! batches waiting when the previous one committed, so that each error group is loaded and
//! written back, each rollup row and service record updated, and each table opened once per
//! commit rather than once per request (`event_db::store_batches`).
//!
//! Invariants: a request is answered only after the write holding its batch committed (the
//! store's writer answers after the commit), so a `202` still means durable. One combined
//! write is in flight at a time; batches arriving meanwhile wait in the queue and go together
//! in the next one, up to `MAX_EVENTS_PER_WRITE` events (at least one batch). The drain runs
//! in its own task, so a request that stops waiting cancels nothing: its batch is written
//! (and a retry of it is acknowledged by its client ids). A failed write fails every batch in
//! it; nothing of it is kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::dictionary::Trainer;
use super::event_db::{EventBatch, StoredEvents, store_batches};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::{Store, StoreError};

/// The most events one combined write takes (it takes at least one batch, however large).
pub const MAX_EVENTS_PER_WRITE: usize = 20_000;

/// The queue of event batches waiting for their write; cloned into every request's state.
#[derive(Clone)]
pub struct EventWrites {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    queue: Mutex<Queue>,
    /// Counts each org's stored events and trains its record dictionary when due.
    dictionaries: Arc<Trainer>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    /// Whether a drain task is running (it ends when it finds the queue empty).
    draining: bool,
}

struct Waiting {
    org: OrgId,
    batch: EventBatch,
    done: oneshot::Sender<Result<StoredEvents, StoreError>>,
}

impl EventWrites {
    pub fn new(store: Store) -> EventWrites {
        EventWrites {
            inner: Arc::new(Inner {
                store,
                queue: Mutex::new(Queue::default()),
                dictionaries: Arc::default(),
            }),
        }
    }

    /// Stores `batch` (`store_events`) in the next combined write; answers once it committed.
    pub async fn write(&self, org: OrgId, batch: EventBatch) -> Result<StoredEvents, StoreError> {
        let (done, answer) = oneshot::channel();
        let start_drain = {
            let mut queue = self.inner.lock();
            queue.waiting.push_back(Waiting { org, batch, done });
            !std::mem::replace(&mut queue.draining, true)
        };
        if start_drain {
            tokio::spawn(drain(self.inner.clone()));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(StoreError::Storage("the events write was dropped".into())))
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The batches of the next write, oldest first; none (and the drain ends) when the queue
    /// is empty.
    fn take(&self) -> Vec<Waiting> {
        let mut queue = self.lock();
        let mut taken = Vec::new();
        let mut events = 0;
        while let Some(next) = queue.waiting.front() {
            let size = next.batch.events().len();
            if !taken.is_empty() && events + size > MAX_EVENTS_PER_WRITE {
                break;
            }
            events += size;
            taken.extend(queue.waiting.pop_front());
        }
        if taken.is_empty() {
            queue.draining = false;
        }
        taken
    }
}

/// Writes what waits, one combined write after another, until the queue is empty.
async fn drain(inner: Arc<Inner>) {
    loop {
        let taken = inner.take();
        if taken.is_empty() {
            return;
        }
        // The batches by organisation, in arrival order; each answer's place among them.
        let mut orgs: Vec<(OrgId, Vec<EventBatch>)> = Vec::new();
        let mut answers = Vec::with_capacity(taken.len());
        for Waiting { org, batch, done } in taken {
            let at = match orgs.iter().position(|(known, _)| *known == org) {
                Some(at) => at,
                None => {
                    orgs.push((org, Vec::new()));
                    orgs.len() - 1
                }
            };
            answers.push((done, at, orgs[at].1.len()));
            orgs[at].1.push(batch);
        }
        // Each org's events and newest arrival, for its dictionary's training.
        let counts: Vec<(OrgId, u64, Timestamp)> = orgs
            .iter()
            .map(|(org, batches)| {
                let events = batches.iter().flat_map(EventBatch::events);
                let newest = events.clone().map(|event| event.received_at).max();
                let count = batches
                    .iter()
                    .map(|batch| batch.events().len() as u64)
                    .sum();
                (org.clone(), count, newest.unwrap_or(Timestamp(0)))
            })
            .collect();
        let written = inner
            .store
            .write(move |txn| {
                orgs.iter_mut()
                    .map(|(org, batches)| store_batches(txn, org, batches))
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .await;
        match written {
            Ok(mut stored) => {
                for (org, count, newest) in &counts {
                    inner
                        .dictionaries
                        .stored(&inner.store, org, *count, *newest);
                }
                for (done, org, batch) in answers {
                    let answer = std::mem::take(&mut stored[org][batch]);
                    let _ = done.send(Ok(answer));
                }
            }
            Err(error) => {
                for (done, _, _) in answers {
                    let _ = done.send(Err(error.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::errors::db;
    use crate::errors::event::ErrorEvent;
    // Marked so the arrow check (tests/integration/tidy.rs) reads it as test-only, as it is.
    #[cfg(test)]
    use crate::ingest::web_errors::parse_event;

    const NOW: i64 = 1_795_348_800_000;

    fn event(client_id: &str) -> ErrorEvent {
        let item = json!({"level": "error", "message": "payment failed", "url": "u",
            "event_id": client_id, "user_id": client_id, "service": "web", "timestamp": NOW});
        parse_event(&item.clone().into(), crate::clock::Timestamp(NOW), None).unwrap()
    }

    /// Many requests of two organisations at once, with client ids repeated across requests:
    /// each request gets its own answer, a repeated id is stored once, and every group counts
    /// each stored event once.
    #[test]
    fn concurrent_batches_are_answered_each_and_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("db.redb"),
            crate::store::StoreOptions::default(),
        )
        .unwrap();
        let writes = EventWrites::new(store.clone());
        let orgs = [OrgId::generate(), OrgId::generate()];
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let answers = runtime.block_on(async {
            let tasks: Vec<_> = (0..40)
                .map(|request| {
                    let (writes, org) = (writes.clone(), orgs[request % 2].clone());
                    // Ten ids of its own, and one every request of its organisation sends.
                    let mut events: Vec<ErrorEvent> =
                        (0..10).map(|n| event(&format!("r{request}-{n}"))).collect();
                    events.push(event("shared"));
                    tokio::spawn(async move {
                        writes
                            .write(org.clone(), EventBatch::new(&org, events))
                            .await
                    })
                })
                .collect();
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.unwrap().unwrap());
            }
            answers
        });
        assert!(answers.iter().all(|answer| answer.accepted() == 11));
        let stored: usize = answers.iter().map(|answer| answer.indexes().count()).sum();
        // 40 × 10 own ids, and "shared" once per organisation.
        assert_eq!(stored, 402);
        for org in &orgs {
            let events = store
                .read_blocking(|txn| {
                    crate::errors::event_db::events_between(txn, org.as_str(), None, None, 1000)
                })
                .unwrap();
            assert_eq!(events.len(), 201);
            let group = events[0].group_id.clone().unwrap();
            assert!(
                events
                    .iter()
                    .all(|event| event.group_id.as_ref() == Some(&group))
            );
            let group = crate::errors::model::GroupId::parse(&group).unwrap();
            let stored_group = store
                .read_blocking(|txn| db::get_group(txn, org, &group))
                .unwrap()
                .unwrap();
            assert_eq!(stored_group.count, 201);
            assert_eq!(stored_group.users, 201);
        }
    }
}
