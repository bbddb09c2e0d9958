//! `kill -9` under ingest, round after round, on one data dir: the promise that an event
//! acknowledged with a `202` is never lost, checked `LOOKOUT_BENCH_ROUNDS` times (100 by
//! default), with what a crash costs the next start.
//!
//! Each round starts `lookout serve` on the same data dir, has `LOOKOUT_BENCH_CLIENTS` clients
//! (8) post batches of 100 events (each with its own `event_id`, the round in `release`) as fast
//! as the server takes them, and kills the server with SIGKILL after a delay drawn between 0.3
//! and 2.3 s. The next start is timed to `/healthz`, then to the end of the index's catch-up
//! (`"search":"catching_up"` gone), and the round's events are read back through the search
//! API, one client's at a time (`release:roundNclientC`, paged: a search pages at most 100,000
//! events deep, and a fast machine acknowledges more than that in a round): every acknowledged
//! `event_id` must be there, once. Events
//! stored but not acknowledged (committed, the answer lost with the process) are counted, not
//! required. A lost or doubled event fails the run.
//!
//! ```sh
//! cargo bench --bench crash_rounds
//! LOOKOUT_BENCH_ROUNDS=20 cargo bench --bench crash_rounds
//! ```

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use support::{Numbers, api_key, env_number, health, sign_in_owner, start_until_healthy};

const INGEST_KEY: &str = "bench-crash-key-00000000000001";
const EVENTS_PER_BATCH: usize = 100;
const GROUPS: u64 = 20;
/// A page of the read-back: the list's largest.
const PAGE: usize = 500;
/// How long a start may take to index its tail again before the run is called stuck.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(300);
/// After the catch-up, how long an acknowledged event may take to become searchable (the
/// index commits every 250 ms; the promise is 1 s).
const SEARCHABLE_WITHIN: Duration = Duration::from_secs(2);

const ENV: &[(&str, &str)] = &[
    ("WEB_INGEST_KEY", INGEST_KEY),
    // The limiter is not what this measures.
    ("WEB_INGEST_RATE_PER_MIN", "1000000000"),
];

/// The release of one client's events in one round: what the read-back searches for.
fn release(round: u64, client: usize) -> String {
    format!("round{round}client{client}")
}

/// One request's body: `EVENTS_PER_BATCH` events of `round`, their ids named after the client
/// and the batch.
fn batch(round: u64, client: usize, number: u64, now_ms: u64) -> (Vec<String>, Value) {
    let ids: Vec<String> = (0..EVENTS_PER_BATCH)
        .map(|i| format!("r{round}-c{client}-b{number}-{i}"))
        .collect();
    let events: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let group = (number * EVENTS_PER_BATCH as u64 + i as u64) % GROUPS;
            json!({
                "event_id": id,
                "level": "error",
                "name": "TypeError",
                "message": format!("Cannot read properties of undefined (reading 'f{group}') in batch {number}"),
                "stack": format!(
                    "TypeError: Cannot read properties of undefined (reading 'f{group}')\n    at \
                     handler{group} (https://app.example.com/assets/app.js:{}:17)\n    at \
                     dispatch (https://app.example.com/assets/vendor.js:88:3)",
                    100 + group
                ),
                "url": format!("https://app.example.com/orders/{number}"),
                "release": release(round, client),
                "environment": "production",
                "user_id": format!("u-{}", (number + i as u64) % 500),
                "timestamp": now_ms,
            })
        })
        .collect();
    (ids, json!({ "events": events }))
}

/// Posts batches until `stop` is set or the server stops answering (killed under us); returns
/// the ids of every event acknowledged with a `202`.
fn ingest(base: String, round: u64, client: usize, stop: Arc<AtomicBool>) -> Vec<String> {
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let url = format!("{base}/ingest/web-errors");
    let mut acknowledged = Vec::new();
    for number in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let (ids, body) = batch(round, client, number, now_ms());
        let reply = http
            .post(&url)
            .header("x-lookout-key", INGEST_KEY)
            .json(&body)
            .send();
        match reply {
            Ok(reply) if reply.status() == 202 => acknowledged.extend(ids),
            // 503 while the store is unavailable, or any answer that is not an acceptance:
            // not acknowledged, so not owed.
            Ok(_) => {}
            Err(_) => break,
        }
    }
    acknowledged
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Waits until `/healthz` no longer says the index is catching up; how long that took.
fn catch_up(base: &str) -> Duration {
    let began = Instant::now();
    loop {
        if let Some(body) = health(base)
            && body.get("search").is_none()
        {
            return began.elapsed();
        }
        assert!(
            began.elapsed() < CATCH_UP_LIMIT,
            "the index was still catching up after {CATCH_UP_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `event_id`s of `round`'s stored events from `client`, through the search API, every page.
fn stored_ids(base: &str, key: &str, round: u64, client: usize) -> Vec<String> {
    let http = reqwest::blocking::Client::new();
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let release = release(round, client);
        let mut url = format!("{base}/api/v1/errors?q=release:{release}&limit={PAGE}");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let page: Value = http
            .get(&url)
            .bearer_auth(key)
            .send()
            .expect("search")
            .json()
            .expect("search answer");
        let items = page["items"].as_array().expect("items");
        ids.extend(
            items
                .iter()
                .filter_map(|item| item["event_id"].as_str().map(str::to_string)),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return ids,
        }
    }
}

/// One round's outcome.
struct Round {
    acknowledged: usize,
    /// Stored without an acknowledgement: committed when the process died.
    unacknowledged: usize,
    start: Duration,
    catch_up: Duration,
}

/// Checks `round`'s events after a start, each client's apart: every acknowledged one stored,
/// none twice. Returns how many were stored without their acknowledgement.
fn check(base: &str, key: &str, round: u64, acknowledged: &[HashSet<String>]) -> usize {
    acknowledged
        .iter()
        .enumerate()
        .map(|(client, acknowledged)| check_client(base, key, round, client, acknowledged))
        .sum()
}

fn check_client(
    base: &str,
    key: &str,
    round: u64,
    client: usize,
    acknowledged: &HashSet<String>,
) -> usize {
    let began = Instant::now();
    loop {
        let ids = stored_ids(base, key, round, client);
        let stored: HashSet<&String> = ids.iter().collect();
        assert_eq!(
            stored.len(),
            ids.len(),
            "round {round}, client {client}: an event stored twice"
        );
        let lost = acknowledged
            .iter()
            .filter(|id| !stored.contains(id))
            .count();
        if lost == 0 {
            return stored.len() - acknowledged.len();
        }
        assert!(
            began.elapsed() < SEARCHABLE_WITHIN,
            "round {round}, client {client}: {lost} of {} acknowledged events missing after the \
             start",
            acknowledged.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn main() {
    let rounds = env_number("LOOKOUT_BENCH_ROUNDS", 100);
    let clients = env_number("LOOKOUT_BENCH_CLIENTS", 8) as usize;
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let mut numbers = Numbers(0x2545_f491_4f6c_dd1d);
    println!(
        "{rounds} rounds of kill -9 under ingest ({clients} clients, batches of \
         {EVENTS_PER_BATCH}), one data dir"
    );

    let (first, base, _) = start_until_healthy(&data_dir, ENV);
    let session = sign_in_owner(&data_dir, &base);
    let key = api_key(&base, &session);
    let mut first = Some((first, base));
    let mut outcomes: Vec<Round> = Vec::new();
    let mut previous: Option<(u64, Vec<HashSet<String>>)> = None;
    // One start more than rounds: the last one only reads the last round's events back.
    for round in 1..=rounds + 1 {
        let (process, base, start) = match first.take() {
            Some((process, base)) => (process, base, Duration::ZERO),
            None => start_until_healthy(&data_dir, ENV),
        };
        let catch_up = catch_up(&base);
        if let Some((number, acknowledged)) = previous.take() {
            let unacknowledged = check(&base, &key, number, &acknowledged);
            outcomes.push(Round {
                acknowledged: acknowledged.iter().map(HashSet::len).sum(),
                unacknowledged,
                start,
                catch_up,
            });
        }
        if round > rounds {
            support::stop(process);
            break;
        }

        let stop = Arc::new(AtomicBool::new(false));
        let senders: Vec<_> = (0..clients)
            .map(|client| {
                let (base, stop) = (base.clone(), stop.clone());
                std::thread::spawn(move || ingest(base, round, client, stop))
            })
            .collect();
        let delay = Duration::from_millis(300 + numbers.next() % 2_000);
        std::thread::sleep(delay);
        // `Process` kills with SIGKILL when dropped, and waits for the exit.
        drop(process);
        stop.store(true, Ordering::Relaxed);
        let acknowledged: Vec<HashSet<String>> = senders
            .into_iter()
            .map(|sender| sender.join().expect("client").into_iter().collect())
            .collect();
        println!(
            "round {round}: killed after {} ms, {} events acknowledged",
            delay.as_millis(),
            acknowledged.iter().map(HashSet::len).sum::<usize>()
        );
        previous = Some((round, acknowledged));
    }
    report(&outcomes, &data_dir);
}

fn report(outcomes: &[Round], data_dir: &Path) {
    let acknowledged: usize = outcomes.iter().map(|round| round.acknowledged).sum();
    let unacknowledged: usize = outcomes.iter().map(|round| round.unacknowledged).sum();
    let mut starts: Vec<Duration> = outcomes.iter().map(|round| round.start).collect();
    let mut catch_ups: Vec<Duration> = outcomes.iter().map(|round| round.catch_up).collect();
    starts.sort();
    catch_ups.sort();
    let (disk, _) = support::disk_bytes(data_dir);
    println!(
        "{} rounds: {acknowledged} events acknowledged, 0 lost, 0 stored twice; {unacknowledged} \
         stored without their acknowledgement (committed as the process died)",
        outcomes.len()
    );
    println!(
        "start to /healthz after kill -9: p50 {} ms, p99 {} ms, max {} ms",
        percentile(&starts, 0.5).as_millis(),
        percentile(&starts, 0.99).as_millis(),
        percentile(&starts, 1.0).as_millis()
    );
    println!(
        "then the index's catch-up, in the background: p50 {} ms, p99 {} ms, max {} ms",
        percentile(&catch_ups, 0.5).as_millis(),
        percentile(&catch_ups, 0.99).as_millis(),
        percentile(&catch_ups, 1.0).as_millis()
    );
    println!("data dir at the end: {:.1} MiB", disk as f64 / 1_048_576.0);
}
