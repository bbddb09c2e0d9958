//! Sustained browser-error ingest over loopback, end to end through the real server: a
//! release `lookout serve` with the ingest rate limit raised, and 64 concurrent clients (one
//! keep-alive connection each) posting `POST /ingest/web-errors` batches of 100 events of about
//! 2 KB: V8 stacks of 15 frames, in about 50 error groups, with messages that vary by numbers
//! and ids so grouping and masking are exercised. After a warm-up it counts accepted events
//! for a fixed time and reports events/s, request p50/p99, non-202 answers, the time from the
//! acknowledgement of a last batch until a search finds its marker, the server's peak RSS
//! (VmHWM), its CPU time per event, the bytes the data dir grew by per event, the store's
//! commits in the measured window (how many, their mean time, how many took over 10, 25 and
//! 50 ms) and the events the search index's inbox left out and read back.
//!
//! Run: `cargo bench --bench ingest_load`. Environment: LOOKOUT_BENCH_SECONDS (measured
//! seconds, 20), LOOKOUT_BENCH_WARMUP_SECONDS (5), LOOKOUT_BENCH_CLIENTS (64),
//! LOOKOUT_BENCH_RATE (events/s in all, paced; unset: each client sends back to back),
//! LOOKOUT_BENCH_KEEP=1 prints the data dir and leaves it (for inspecting or profiling);
//! LOOKOUT_BENCH_BIN=PATH runs another `lookout` build (to compare two back to back).
//!
//! The client speaks HTTP/1.1 over raw tokio sockets with request bytes built before the
//! run, so that on a 2-core machine it takes as little CPU from the server as it can; its
//! own CPU time is reported too.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use support::{
    Numbers, api_key, commits_between, cpu_seconds, disk_bytes, env_number, histogram_growth,
    histogram_mean, metric_in, metrics_text, sign_in_owner, start_server, status_kib,
    thread_cpu_seconds,
};

const INGEST_KEY: &str = "bench-ingest-key-000000000001";
const EVENTS_PER_BATCH: usize = 100;
const GROUPS: usize = 50;
/// Distinct request bodies built before the run; clients cycle through them.
const BODIES: usize = 128;

const NAMES: [&str; 5] = [
    "TypeError",
    "ReferenceError",
    "RangeError",
    "Error",
    "SyntaxError",
];
const MODULES: [&str; 8] = [
    "checkout", "cart", "search", "profile", "catalog", "payment", "shipping", "reviews",
];
const FUNCTIONS: [&str; 10] = [
    "computeTotals",
    "renderRow",
    "applyDiscount",
    "loadItems",
    "formatPrice",
    "validateForm",
    "onSubmit",
    "fetchQuote",
    "updateBadge",
    "parseResponse",
];

/// A V8 stack of 15 frames for `group`: its in-app frames name group-specific functions (so the
/// group is one fingerprint), framework frames sit in `node_modules`; lines and columns vary.
fn stack(group: usize, message: &str, numbers: &mut Numbers) -> String {
    let module = MODULES[group % MODULES.len()];
    let mut lines = vec![format!("{}: {message}", NAMES[group % NAMES.len()])];
    for frame in 0..15 {
        let (line, column) = (1 + numbers.next() % 40, 100 + numbers.next() % 30_000);
        let text = match frame {
            0..=5 => format!(
                "    at {}_{group}_{frame} (https://shop.example.com/assets/{module}.4e1f9a2c.js:{line}:{column})",
                FUNCTIONS[(group + frame) % FUNCTIONS.len()]
            ),
            6 => "    at Array.forEach (<anonymous>)".to_string(),
            7..=11 => format!(
                "    at {} (https://shop.example.com/assets/vendor.91b3c7d0.js:{line}:{column})",
                [
                    "commitRoot",
                    "performWork",
                    "flushSync",
                    "batchedUpdates",
                    "dispatchEvent"
                ][frame - 7]
            ),
            _ => format!(
                "    at async {} (https://shop.example.com/node_modules/.vite/deps/react-dom.js?v=8c2d1e7f:{line}:{column})",
                ["runTask", "workLoop", "scheduleCallback"][frame - 12]
            ),
        };
        lines.push(text);
    }
    lines.join("\n")
}

/// One event of about 2 KB; `marker` goes into the message of the last batch's first event.
fn event(numbers: &mut Numbers, now_ms: u64, marker: Option<&str>) -> Value {
    let group = (numbers.next() % GROUPS as u64) as usize;
    let item = numbers.next() % 100_000;
    let order = format!("ord_{:016x}", numbers.next());
    let mut message = format!(
        "Cannot read properties of undefined (reading 'price') for item {item} in order {order} after {}ms",
        numbers.next() % 5_000
    );
    if let Some(marker) = marker {
        message = format!("{message} {marker}");
    }
    let stack = stack(group, &message, numbers);
    let module = MODULES[group % MODULES.len()];
    let service = ["shop", "checkout", "search"][group % 3];
    let plan = ["free", "pro", "team"][item as usize % 3];
    json!({
        "level": if item.is_multiple_of(10) { "warning" } else { "error" },
        "name": NAMES[group % NAMES.len()],
        "message": message,
        "stack": stack,
        "url": format!("https://shop.example.com/{module}/{item}?ref=mail&page={}", item % 7),
        "release": format!("2.14.{}", group % 3),
        "environment": "production",
        "service": service,
        "session_id": format!("s-{:016x}", numbers.next()),
        "user_id": format!("u-{}", numbers.next() % 20_000),
        "user_agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        "timestamp": now_ms - numbers.next() % 2_000,
        "tags": {"plan": plan, "locale": "en-GB", "route": format!("/{module}/:id"), "build": "a1b2c3d"},
    })
}

/// The full HTTP/1.1 request (head and body) of one batch.
fn request(addr: &str, numbers: &mut Numbers, now_ms: u64, marker: Option<&str>) -> Vec<u8> {
    let events: Vec<Value> = (0..EVENTS_PER_BATCH)
        .map(|index| event(numbers, now_ms, marker.filter(|_| index == 0)))
        .collect();
    let body = json!({ "events": events }).to_string();
    assert!(body.len() < 262_144, "a batch of {} bytes", body.len());
    let head = format!(
        "POST /ingest/web-errors HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         x-lookout-key: {INGEST_KEY}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

/// One keep-alive connection.
struct Connection {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
}

impl Connection {
    async fn open(addr: &str) -> Connection {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        let (read, writer) = stream.into_split();
        Connection {
            reader: BufReader::new(read),
            writer,
        }
    }

    /// Sends one request and returns the status and body of its answer.
    async fn send(&mut self, request: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        self.writer.write_all(request).await?;
        let mut line = String::new();
        self.reader.read_line(&mut line).await?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("status line {line:?}")))?;
        let mut length = 0usize;
        loop {
            line.clear();
            if self.reader.read_line(&mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().map_err(std::io::Error::other)?;
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).await?;
        Ok((status, body))
    }
}

/// What one client saw during the measured window.
#[derive(Default)]
struct ClientReport {
    latencies_us: Vec<u32>,
    accepted_events: u64,
    refused: Vec<u16>,
}

/// Posts batches until `stop`; counts what completes inside `[measure_from, measure_to)`.
/// One client: requests back to back, or one every `pace` (the first after `offset`).
async fn client(
    addr: Arc<str>,
    bodies: Arc<Vec<Vec<u8>>>,
    first: usize,
    measure_from: Instant,
    stop: Arc<AtomicBool>,
    pace: Option<(Duration, Duration)>,
) -> ClientReport {
    let mut connection = Connection::open(&addr).await;
    let mut report = ClientReport::default();
    let mut next = first;
    let mut due = pace.map(|(_, offset)| tokio::time::Instant::now() + offset);
    while !stop.load(Ordering::Relaxed) {
        if let (Some(at), Some((interval, _))) = (due.as_mut(), pace) {
            tokio::time::sleep_until(*at).await;
            *at += interval;
        }
        let started = Instant::now();
        let answer = connection.send(&bodies[next % bodies.len()]).await;
        next += 1;
        let measured = started >= measure_from && !stop.load(Ordering::Relaxed);
        match answer {
            Ok((202, body)) if measured => {
                report
                    .latencies_us
                    .push(started.elapsed().as_micros() as u32);
                report.accepted_events += accepted_count(&body);
            }
            Ok((202, _)) => {}
            Ok((status, _)) => {
                report.refused.push(status);
                // The server may close after an error; start a fresh connection.
                connection = Connection::open(&addr).await;
            }
            Err(error) => panic!("ingest request failed: {error}"),
        }
    }
    report
}

fn accepted_count(body: &[u8]) -> u64 {
    let value: Value = serde_json::from_slice(body).expect("202 body");
    value["accepted"].as_u64().expect("accepted")
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    f64::from(sorted[index]) / 1000.0
}

/// CPU seconds, user and system together.
fn cpu_total(pid: &str) -> f64 {
    let (user, system) = cpu_seconds(pid);
    user + system
}

/// The one-minute load average: other work on the machine skews every figure.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split(' ').next().unwrap_or("?").to_string()
}

fn main() {
    let seconds = env_number("LOOKOUT_BENCH_SECONDS", 20);
    let warmup = env_number("LOOKOUT_BENCH_WARMUP_SECONDS", 5);
    let clients = env_number("LOOKOUT_BENCH_CLIENTS", 64) as usize;
    // Events/s in all when set: each client sends at its share of the rate (open loop).
    let rate = env_number("LOOKOUT_BENCH_RATE", 0);
    let pace = (rate > 0).then(|| {
        let interval = Duration::from_secs_f64((clients * EVENTS_PER_BATCH) as f64 / rate as f64);
        (interval, interval / clients.max(1) as u32)
    });
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let (server, addr) = start_server(
        &data_dir,
        &[
            ("WEB_INGEST_KEY", INGEST_KEY),
            // No client reaches it: the benchmark measures the server, not the limiter.
            ("WEB_INGEST_RATE_PER_MIN", "1000000000"),
        ],
    );
    let pid = server.0.id().to_string();
    // For a profiler attached from outside (`perf record -g -p PID`).
    println!("server pid {pid}");
    let base = format!("http://{addr}");
    let session = sign_in_owner(&data_dir, &base);
    let api_key = api_key(&base, &session);

    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..BODIES)
            .map(|_| request(&addr, &mut numbers, now_ms, None))
            .collect(),
    );
    let average = bodies.iter().map(Vec::len).sum::<usize>() / BODIES / EVENTS_PER_BATCH;
    let marker = format!("loadmarker{:x}", numbers.next());
    let last_batch = request(&addr, &mut numbers, now_ms, Some(&marker));
    let bytes_before = disk_bytes(&data_dir);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr: Arc<str> = addr.into();
    let measure_from = Instant::now() + Duration::from_secs(warmup);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..clients)
        .map(|index| {
            let first = index * BODIES / clients.max(1);
            let pace = pace.map(|(interval, step)| (interval, step * index as u32));
            runtime.spawn(client(
                addr.clone(),
                bodies.clone(),
                first,
                measure_from,
                stop.clone(),
                pace,
            ))
        })
        .collect();
    std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
    let (server_cpu_before, own_cpu_before) = (cpu_total(&pid), cpu_total("self"));
    let threads_before = thread_cpu_seconds(&pid);
    let load_before = load_average();
    let metrics_before = metrics_text(&base);
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let window = measure_from.elapsed().as_secs_f64();
    let (server_cpu, own_cpu) = (
        cpu_total(&pid) - server_cpu_before,
        cpu_total("self") - own_cpu_before,
    );
    let threads_after = thread_cpu_seconds(&pid);
    let metrics_after = metrics_text(&base);
    let reports: Vec<ClientReport> = runtime.block_on(async {
        let mut reports = Vec::new();
        for task in tasks {
            reports.push(task.await.expect("client task"));
        }
        reports
    });

    // The last batch, once every client has stopped: the index may still hold a backlog.
    let (acknowledged, status) = runtime.block_on(async {
        let mut connection = Connection::open(&addr).await;
        let (status, _) = connection.send(&last_batch).await.expect("last batch");
        (Instant::now(), status)
    });
    assert_eq!(status, 202, "the last batch was refused");
    let search = reqwest::blocking::Client::new();
    let searchable = loop {
        let found: Value = search
            .get(format!("{base}/api/v1/errors?q={marker}&limit=1"))
            .bearer_auth(&api_key)
            .send()
            .expect("search")
            .json()
            .unwrap();
        if found["items"]
            .as_array()
            .is_some_and(|items| items.len() == 1)
        {
            break acknowledged.elapsed();
        }
        assert!(
            acknowledged.elapsed() < Duration::from_secs(120),
            "the last batch never became searchable"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let metrics = metrics_text(&base);
    let stored: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("lookout_ingest_events_stored_total "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0);
    let peak_rss = status_kib(&pid, "VmHWM:") as f64 / 1024.0;
    let (apparent, allocated) = disk_bytes(&data_dir);
    let (database, segments, index) = (
        disk_bytes(&data_dir.join("lookout.redb")),
        disk_bytes(&data_dir.join("lookout.events")),
        disk_bytes(&data_dir.join("search")),
    );

    let mut latencies: Vec<u32> = reports
        .iter()
        .flat_map(|report| report.latencies_us.iter().copied())
        .collect();
    latencies.sort_unstable();
    let accepted: u64 = reports.iter().map(|report| report.accepted_events).sum();
    let refused: Vec<u16> = reports
        .iter()
        .flat_map(|report| report.refused.iter().copied())
        .collect();
    println!(
        "{clients} clients, batches of {EVENTS_PER_BATCH} events of {average} bytes in {GROUPS} \
         groups, {warmup} s warm-up, {seconds} s measured"
    );
    println!(
        "accepted {accepted} events in {window:.1} s: {:.0} events/s ({} requests)",
        accepted as f64 / window,
        latencies.len()
    );
    if !latencies.is_empty() {
        println!(
            "request latency: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&latencies, 0.50),
            percentile(&latencies, 0.99),
            percentile(&latencies, 1.0)
        );
    }
    println!("answers other than 202: {} {refused:?}", refused.len());
    println!("last batch searchable {searchable:.1?} after its 202");
    println!("server peak RSS (VmHWM): {peak_rss:.1} MiB");
    println!(
        "load average (1 min) {load_before} before the measured window, {} after",
        load_average()
    );
    println!(
        "server CPU {server_cpu:.1} s ({:.1} µs per accepted event); bench client CPU {own_cpu:.1} s",
        server_cpu * 1e6 / accepted.max(1) as f64
    );
    // Threads that ended during the window are missing from both readings (they are counted
    // together below, from the server's total); the rest is exact.
    let mut per_thread: Vec<(String, f64)> = threads_after
        .iter()
        .map(|(name, after)| {
            let before = threads_before.get(name).copied().unwrap_or(0.0);
            (name.clone(), after - before)
        })
        .filter(|(_, seconds)| *seconds > 0.0)
        .collect();
    // Tantivy starts its indexing worker (which also writes each segment) and its doc store's
    // compressor anew for every segment, so they end within the window: what the live threads
    // do not account for of the server's total is theirs.
    let live: f64 = per_thread.iter().map(|(_, seconds)| seconds).sum();
    if server_cpu > live {
        per_thread.push(("threads that ended".to_string(), server_cpu - live));
    }
    per_thread.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shares: Vec<String> = per_thread
        .iter()
        .map(|(name, seconds)| {
            format!(
                "{name} {:.1} µs ({:.2} cores)",
                seconds * 1e6 / accepted.max(1) as f64,
                seconds / window
            )
        })
        .collect();
    println!(
        "server CPU per accepted event by thread: {}",
        shares.join(", ")
    );
    let per_event = |bytes: u64, before: u64| bytes.saturating_sub(before) as f64 / stored.max(1.0);
    let mib = |bytes: u64| bytes as f64 / 1_048_576.0;
    println!(
        "stored {stored} events; data dir grew {:.0} bytes per event allocated on disk \
         ({:.0} apparent): redb file {:.1} MiB allocated ({:.1} MiB apparent), event segments \
         {:.1} MiB, search index {:.1} MiB",
        per_event(allocated, bytes_before.1),
        per_event(apparent, bytes_before.0),
        mib(database.1),
        mib(database.0),
        mib(segments.1),
        mib(index.1),
    );
    println!(
        "store commits: mean {:.1} ms, mean batch {:.1} writes",
        histogram_mean(&metrics, "lookout_store_commit_seconds") * 1000.0,
        histogram_mean(&metrics, "lookout_store_commit_batch_size")
    );
    let counter = |name: &str| metric_in(&metrics, name).unwrap_or(0.0);
    println!(
        "search inbox: {:.0} events left out, {:.0} read back",
        counter("lookout_search_left_out_events_total"),
        counter("lookout_search_read_back_events_total")
    );
    println!(
        "store commits in the measured window: {}",
        commits_between(&metrics_before, &metrics_after, window)
    );
    let waits = |suffix: &str| {
        let name = "lookout_search_inbox_wait_seconds";
        histogram_growth(&metrics_before, &metrics_after, name, suffix)
    };
    println!(
        "requests that waited for the index's inbox in the measured window: {:.0}, {:.2} s in all",
        waits("_count"),
        waits("_sum")
    );
    drop(server);
    if std::env::var("LOOKOUT_BENCH_KEEP").is_ok_and(|keep| keep == "1") {
        println!("data dir kept: {}", temp.keep().display());
    }
}
