//! Webhook delivery throughput and latency, in process, against a fast local receiver.
//!
//! 1. Throughput: 1,000 events emitted in one transaction to 3 channels (3,000 deliveries),
//!    then the worker drains the queue; deliveries per second from start to the last answer.
//! 2. Latency: 300 events emitted one write at a time (as a handler would), the delay from
//!    calling `Store::write` with `emit` (durable commit included) to the receiver seeing the
//!    request, p50 and p99.
//!
//! Run: `cargo bench --bench webhooks` (release build, durable commits on the local disk).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lookout::accounts::model::OrgId;
use lookout::clock::Clock;
use lookout::config::WebhookSettings;
use lookout::notify::model::{Channel, ChannelId};
use lookout::notify::{Event, EventExtra, Notify, db, emit, worker};
use lookout::store::{Store, StoreError, StoreOptions};

/// Arrival instant per delivery id.
type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

/// A receiver on its own port (one destination as the per-destination cap sees it).
fn receiver(arrivals: &Arrivals) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let shared = arrivals.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let arrivals = shared.clone();
            std::thread::spawn(move || serve(stream, &arrivals));
        }
    });
    url
}

fn serve(stream: TcpStream, arrivals: &Mutex<HashMap<String, Instant>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let (mut length, mut delivery) = (0usize, String::new());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(value) = header.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            if let Some(value) = header.strip_prefix("x-lookout-delivery:") {
                delivery = value.trim().to_uppercase().replacen("DLV_", "dlv_", 1);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        arrivals.lock().unwrap().insert(delivery, Instant::now());
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

fn event(org: &OrgId, clock: &Clock) -> Event {
    Event {
        name: "alert.fired",
        org_id: org.clone(),
        alert_id: Some("alr_01JD0000000000000000000000".into()),
        title: "Error rate above 5%".into(),
        body: "checkout: 7.2% of requests failed in the last 5 minutes".into(),
        severity: "critical".into(),
        service: "checkout".into(),
        environment: "production".into(),
        url: "http://127.0.0.1:8080/alerts/alr_01JD0000000000000000000000".into(),
        timestamp: clock.now(),
        extra: EventExtra::None,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

async fn wait_until(arrivals: &Arrivals, count: usize) {
    while arrivals.lock().unwrap().len() < count {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.redb"), StoreOptions::default()).unwrap();
        let clock = Clock::system();
        let settings = WebhookSettings {
            timeout: Duration::from_secs(10),
            retry_delays: vec![Duration::from_secs(60)],
            allow_private: true,
        };
        let base = url::Url::parse("http://127.0.0.1:8080").unwrap();
        let notify = Notify::new(store.clone(), clock.clone(), settings, &base);
        // Three receivers on three ports, as three customers' endpoints would be.
        let arrivals: Arrivals = Arc::default();
        let urls: Vec<String> = (0..3).map(|_| receiver(&arrivals)).collect();
        let org = OrgId::generate();
        let channels: Vec<Channel> = (0..3)
            .map(|n| Channel {
                id: ChannelId::generate(),
                org_id: org.clone(),
                name: format!("bench {n}"),
                kind: "webhook".into(),
                url: urls[n].clone(),
                signing_secret: Some("bench-secret".into()),
                events: vec!["*".into()],
                enabled: true,
                disabled_reason: None,
                created_at: clock.now(),
                updated_at: clock.now(),
            })
            .collect();
        store
            .write(move |txn| {
                for channel in &channels {
                    db::put_channel(txn, channel)?;
                }
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();

        // 1. Throughput: 1,000 queued events x 3 channels, drained by a fresh worker.
        let (org_a, clock_a) = (org.clone(), clock.clone());
        store
            .write(move |txn| {
                for _ in 0..1000 {
                    emit(txn, &event(&org_a, &clock_a))?;
                }
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let started = Instant::now();
        let worker = tokio::spawn(worker::run(notify.clone(), stopped));
        wait_until(&arrivals, 3000).await;
        let elapsed = started.elapsed();
        println!(
            "throughput: 3000 deliveries (1000 events x 3 channels) in {:.2} s = {:.0} deliveries/s",
            elapsed.as_secs_f64(),
            3000.0 / elapsed.as_secs_f64()
        );

        // 2. Latency from emit (committed) to the receiver, one event at a time.
        let mut delays = Vec::new();
        for _ in 0..300 {
            let (org_b, clock_b) = (org.clone(), clock.clone());
            // Counted from before the write: the worker may send before `write` returns.
            let before = arrivals.lock().unwrap().len();
            let emitted = Instant::now();
            let ids = store
                .write(move |txn| emit(txn, &event(&org_b, &clock_b)))
                .await
                .unwrap();
            notify.wake();
            let expected = before + ids.len();
            wait_until(&arrivals, expected).await;
            let seen = arrivals.lock().unwrap();
            for id in &ids {
                delays.push(seen[id.as_str()].saturating_duration_since(emitted));
            }
        }
        delays.sort();
        println!(
            "emit to first attempt: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} deliveries)",
            percentile(&delays, 0.50).as_secs_f64() * 1000.0,
            percentile(&delays, 0.99).as_secs_f64() * 1000.0,
            delays.last().unwrap().as_secs_f64() * 1000.0,
            delays.len()
        );
        let _ = stop.send(true);
        let _ = worker.await;
        store.close().await;
    });
}
