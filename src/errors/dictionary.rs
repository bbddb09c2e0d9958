//! Each organisation's compression dictionary for its error event records: trained from its
//! own newest events once enough arrived, stored, then used for every event it stores next
//! (`store/dictionaries.rs` holds and applies them; `event_db::EventBatch` encodes with one).
//!
//! An error event is about 2.5 KB of JSON; compressed alone it keeps about 1.1 KB, because a
//! lone frame has nothing to match its stack and URLs against. With a dictionary made from
//! the organisation's own events it keeps about 250 bytes and can still be read alone. Fewer
//! bytes per event make a smaller store file, and redb's commit cost grows with the file.
//!
//! Invariants:
//! - One training at a time per organisation, off the reactor and off the store's writer:
//!   the samples are read in a read transaction, the dictionary is trained on a blocking
//!   thread, and only the finished dictionary is written.
//! - A dictionary is used only after the write storing it committed (`dictionaries::activate`
//!   after `Store::write`), so every record names a dictionary the store holds.
//! - A failed training costs nothing stored: events keep their current encoding, and the
//!   organisation is tried again after as many events again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::event::ErrorEvent;
use super::event_db::EVENTS;
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::{ReadTxn, Store, StoreError, dictionaries, tables};

/// Events stored for an organisation (since the server started, or since its last training)
/// before a dictionary is trained for it.
pub const TRAIN_AFTER_EVENTS: u64 = 1_000;
/// How many of its newest events a dictionary is trained on.
const SAMPLE_EVENTS: usize = 1_000;
/// The largest dictionary: 64 KiB was the best measured trade between records' size (233
/// bytes per event at 64 KiB, 284 at 32 KiB) and the memory each prepared dictionary takes.
const DICTIONARY_BYTES: usize = 64 * 1024;
/// Samples per byte of dictionary below which no dictionary is trained: too little to learn.
const MIN_SAMPLE_RATIO: usize = 8;
/// A first dictionary older than this (by the events' clock) is trained again, so that new
/// releases' file names and messages are learnt; each later one waits twice as long as the
/// one before (`retrain_after`), so an org holds ten dictionaries after ten years.
const RETRAIN_AFTER: Duration = Duration::from_secs(7 * 24 * 3600);

/// Counts each organisation's stored events and trains its dictionary when due.
#[derive(Default)]
pub struct Trainer {
    orgs: Mutex<HashMap<OrgId, Count>>,
}

#[derive(Default)]
struct Count {
    /// Events stored since the server started or the last training began.
    since: u64,
    training: bool,
}

impl Trainer {
    /// Counts `events` stored for `org`, the newest received at `newest`; starts training
    /// its dictionary in the background when it is due.
    pub fn stored(self: &Arc<Self>, store: &Store, org: &OrgId, events: u64, newest: Timestamp) {
        let due = {
            let mut orgs = self.orgs.lock().unwrap_or_else(|p| p.into_inner());
            let count = orgs.entry(org.clone()).or_default();
            count.since += events;
            let held = dictionaries::held(org.as_str());
            let stale = dictionaries::current(org.as_str()).is_none_or(|current| {
                let due = current.trained_at().plus(retrain_after(held));
                due.unix_millis() <= newest.unix_millis()
            });
            let due = stale && !count.training && count.since >= TRAIN_AFTER_EVENTS;
            if due {
                count.training = true;
                count.since = 0;
            }
            due
        };
        if due {
            let (trainer, store, org) = (self.clone(), store.clone(), org.clone());
            tokio::spawn(async move {
                match train(&store, &org).await {
                    Ok(Some(report)) => {
                        // Logged before it is counted: whoever sees the count finds the line.
                        tracing::info!(org = %org, id = %format!("{:016x}", report.id),
                            bytes = report.bytes, samples = report.samples,
                            sample_bytes = report.sample_bytes, "record dictionary trained");
                        metrics::counter!("lookout_record_dictionaries_trained_total").increment(1);
                    }
                    Ok(None) => tracing::debug!(org = %org, "too little to train a dictionary on"),
                    Err(err) => tracing::warn!(org = %org, error = %err,
                        "record dictionary not trained; events keep their encoding"),
                }
                let mut orgs = trainer.orgs.lock().unwrap_or_else(|p| p.into_inner());
                orgs.entry(org).or_default().training = false;
            });
        }
    }
}

/// How old an org's current dictionary may grow when it holds `held` dictionaries:
/// `RETRAIN_AFTER`, doubled for each one after the first.
fn retrain_after(held: usize) -> Duration {
    let doublings = held.saturating_sub(1).min(16) as u32;
    RETRAIN_AFTER * 2u32.pow(doublings)
}

/// What one training made.
#[derive(Debug)]
pub struct Trained {
    pub id: u64,
    pub bytes: usize,
    pub samples: usize,
    pub sample_bytes: usize,
}

/// Trains, stores and activates a dictionary for `org` from its newest events; `None` when
/// there is too little to learn from.
pub async fn train(store: &Store, org: &OrgId) -> Result<Option<Trained>, StoreError> {
    let owner = org.as_str().to_string();
    let samples = store
        .read(move |txn| samples(txn, &owner, SAMPLE_EVENTS))
        .await?;
    let Some(samples) = samples else {
        return Ok(None);
    };
    let trained = tokio::task::spawn_blocking(move || {
        let size = DICTIONARY_BYTES.min(samples.data.len() / MIN_SAMPLE_RATIO);
        let dictionary = zstd::dict::from_continuous(&samples.data, &samples.sizes, size);
        (dictionary, samples)
    })
    .await
    .map_err(|err| StoreError::Storage(format!("dictionary training failed: {err}")))?;
    let (dictionary, samples) = trained;
    let dictionary = dictionary.map_err(|err| StoreError::Corrupt {
        what: "record dictionary",
        detail: format!("cannot train: {err}"),
    })?;
    let (owner, stored, at) = (org.as_str().to_string(), dictionary.clone(), samples.newest);
    store
        .write(move |txn| dictionaries::put(txn, &owner, &stored, at))
        .await?;
    let id = dictionaries::activate(org.as_str(), &dictionary, samples.newest)?;
    Ok(Some(Trained {
        id,
        bytes: dictionary.len(),
        samples: samples.sizes.len(),
        sample_bytes: samples.data.len(),
    }))
}

/// Events' JSON as the codec encodes it (without the group, which a record carries as its
/// tag), one after another.
struct Samples {
    data: Vec<u8>,
    sizes: Vec<usize>,
    /// When the newest sampled event was received: the dictionary's training time.
    newest: Timestamp,
}

/// Up to `limit` of `owner`'s newest events as samples; `None` when they are too few bytes.
fn samples(txn: &impl ReadTxn, owner: &str, limit: usize) -> Result<Option<Samples>, StoreError> {
    let prefix = tables::owner_prefix(owner);
    let events =
        txn.open(EVENTS.definition())?
            .scan_back_with(&prefix, None, limit, |_, value| {
                crate::store::codec::decode::<ErrorEvent>(value)
            })?;
    let mut samples = Samples {
        data: Vec::new(),
        sizes: Vec::with_capacity(events.len()),
        newest: Timestamp(i64::MIN),
    };
    for mut event in events {
        samples.newest = Timestamp(samples.newest.0.max(event.received_at.0));
        event.group_id = None;
        let start = samples.data.len();
        serde_json::to_writer(&mut samples.data, &event).map_err(|err| StoreError::Corrupt {
            what: "error event",
            detail: format!("cannot encode a sample: {err}"),
        })?;
        samples.sizes.push(samples.data.len() - start);
    }
    let enough = samples.data.len() >= MIN_SAMPLE_RATIO * 1024 && samples.sizes.len() >= 100;
    Ok(enough.then_some(samples))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::errors::event_db::EventBatch;
    use crate::errors::writes::EventWrites;
    use crate::store::codec::{CODEC_VERSION_DICTIONARY, CODEC_VERSION_TAGGED};

    const NOW: i64 = 1_795_348_800_000;

    fn events(first: usize, count: usize) -> Vec<ErrorEvent> {
        (first..first + count)
            .map(|n| {
                let stack: String = (0..12)
                    .map(|f| format!("    at fn{f} (https://app.example.com/a.{}.js:1:{})\n", n % 5, 900 + f * 31))
                    .collect();
                let item = json!({"level": "error", "name": "TypeError", "url": "https://app.example.com/",
                    "message": format!("Cannot read properties of undefined (reading 'x{}')", n % 9),
                    "stack": format!("TypeError: boom\n{stack}"), "release": "1.0.0"});
                crate::ingest::web_errors::parse_event(&item.clone().into(), Timestamp(NOW + n as i64), None).unwrap()
            })
            .collect()
    }

    /// The stored record bytes of `org`'s events, oldest first, each with its record in it
    /// (read from its segment: the row itself holds where the record is).
    fn records(store: &Store, org: &OrgId) -> Vec<Vec<u8>> {
        let prefix = tables::owner_prefix(org.as_str());
        store
            .read_blocking(|txn| {
                txn.open(EVENTS.definition())?.scan_with(
                    crate::store::Scan::prefix(&prefix),
                    |_, value| {
                        assert!(crate::store::codec::segment_pointer(value).is_some());
                        Ok(crate::store::codec::inline(value)?.into_owned())
                    },
                )
            })
            .unwrap()
    }

    /// Too few events train nothing; after `TRAIN_AFTER_EVENTS` a dictionary is trained and
    /// stored, the next events are compressed with it to well under half their size, and
    /// every event (before and after) still reads back whole.
    #[test]
    fn enough_events_train_a_dictionary_that_the_next_events_are_compressed_with() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db.redb"), Default::default()).unwrap();
        let (writes, org) = (EventWrites::new(store.clone()), OrgId::generate());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let write = |first, count| {
            let batch = EventBatch::new(&org, events(first, count));
            runtime.block_on(writes.write(org.clone(), batch)).unwrap();
        };
        write(0, 50);
        assert!(
            runtime.block_on(train(&store, &org)).unwrap().is_none(),
            "too few"
        );
        for first in (50..TRAIN_AFTER_EVENTS as usize).step_by(190) {
            write(first, 190.min(TRAIN_AFTER_EVENTS as usize - first));
        }
        let trained = wait(|| dictionaries::current(org.as_str()));
        assert!(trained.trained_at().0 >= NOW);
        let stored = store
            .read_blocking(|txn| {
                txn.open(redb::TableDefinition::<&str, &[u8]>::new(
                    tables::RECORD_DICTIONARIES,
                ))?
                .row_count()
            })
            .unwrap();
        assert!(stored >= 1);

        write(5_000, 100);
        let records = records(&store, &org);
        let size =
            |records: &[Vec<u8>]| records.iter().map(Vec::len).sum::<usize>() / records.len();
        let (before, after) = records.split_at(records.len() - 100);
        let tag = 2 + after[0][1] as usize;
        assert_eq!(after[0][0], CODEC_VERSION_TAGGED);
        assert_eq!(after[0][tag], CODEC_VERSION_DICTIONARY);
        assert_ne!(
            before[0][2 + before[0][1] as usize],
            CODEC_VERSION_DICTIONARY
        );
        assert!(
            size(after) * 2 < size(before),
            "{} vs {} bytes",
            size(after),
            size(before)
        );
        let read = store
            .read_blocking(|txn| {
                crate::errors::event_db::events_between(txn, org.as_str(), None, None, 10_000)
            })
            .unwrap();
        assert_eq!(read.len(), TRAIN_AFTER_EVENTS as usize + 100);
        assert!(read.iter().all(|event| event.group_id.is_some()));
        store.close_blocking();
    }

    #[test]
    fn each_dictionary_is_kept_twice_as_long_as_the_one_before() {
        let week = 7 * 24 * 3600;
        let ages: Vec<u64> = (0..=4)
            .map(|held| retrain_after(held).as_secs() / week)
            .collect();
        assert_eq!(ages, [1, 1, 2, 4, 8]);
        // Ten years of ingest make ten dictionaries at most.
        let (mut weeks, mut held) = (0, 1);
        while weeks + retrain_after(held).as_secs() / week <= 520 {
            weeks += retrain_after(held).as_secs() / week;
            held += 1;
        }
        assert_eq!(held, 10);
        assert_eq!(retrain_after(1_000), retrain_after(17));
    }

    fn wait<T>(mut check: impl FnMut() -> Option<T>) -> T {
        for _ in 0..600 {
            if let Some(found) = check() {
                return found;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("timed out");
    }
}
