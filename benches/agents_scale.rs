//! Concurrent agents held by one server: a real `lookout serve` (release build) accepts N
//! agent websockets opened by this one process, each a distinct host that says hello and then
//! heartbeats with small metrics every 5 s (three times the protocol's 15 s, to stress the
//! heartbeat path). After the connections have been held for 30 s, `GET /api/v1/agents` (an
//! admin API key) must list N agents online; then the server's RSS (VmRSS, and its peak VmHWM)
//! and CPU time are read from `/proc/<pid>`.
//!
//! Run: `cargo bench --bench agents_scale` (LOOKOUT_BENCH_AGENTS=N to change the count, default
//! 5,000; LOOKOUT_BENCH_HOLD_SECONDS=S to change the hold, default 30).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use support::{api_key, cpu_seconds, env_number, post, sign_in_owner, start_server, status_kib};

const HEARTBEAT: Duration = Duration::from_secs(5);
/// Connections being opened at once: enough to go fast, few enough not to overflow the
/// listener's accept backlog.
const DIAL_CONCURRENCY: usize = 128;

/// Raises this process's soft RLIMIT_NOFILE to its hard limit: the client holds one socket per
/// agent, and the server, spawned from here, inherits the limit for its side of each.
fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit), 0);
    }
    limit.rlim_cur
}

/// Counts agents online and in all, paging through `GET /api/v1/agents` with the API key.
fn count_agents(base: &str, api_key: &str) -> (usize, usize) {
    let client = reqwest::blocking::Client::new();
    let (mut online, mut total, mut cursor) = (0, 0, None::<String>);
    loop {
        let mut url = format!("{base}/api/v1/agents?limit=500");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let reply = client.get(url).bearer_auth(api_key).send().expect("list");
        assert!(
            reply.status().is_success(),
            "list agents: {}",
            reply.status()
        );
        let page: Value = reply.json().unwrap();
        let items = page["items"].as_array().expect("items");
        total += items.len();
        online += items.iter().filter(|a| a["status"] == "online").count();
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return (online, total),
        }
    }
}

/// The server's resident set (VmRSS, VmHWM) in KiB and CPU time (user, system) in seconds.
fn server_usage(pid: u32) -> (u64, u64, f64, f64) {
    let pid = pid.to_string();
    let (user, system) = cpu_seconds(&pid);
    (
        status_kib(&pid, "VmRSS:"),
        status_kib(&pid, "VmHWM:"),
        user,
        system,
    )
}

/// One agent: hello, then a heartbeat at once and every `HEARTBEAT` until the runtime is
/// dropped; answers the server's pings (tungstenite queues the pongs, flushed by the next read
/// or send). The dial slot is released once the server has welcomed it.
async fn agent(
    url: String,
    token: String,
    index: usize,
    welcomed: Arc<AtomicUsize>,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .unwrap_or_else(|error| panic!("agent {index}: connect: {error}"));
    let hello = json!({"type": "hello", "protocol": 1, "hostname": format!("bench-{index:05}"),
        "os": "linux", "arch": "x86_64", "version": "bench", "shell": false});
    socket
        .send(Message::Text(hello.to_string().into()))
        .await
        .unwrap();
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) if text.contains("\"welcome\"") => break,
            Some(Ok(_)) => continue,
            other => panic!("agent {index}: no welcome: {other:?}"),
        }
    }
    welcomed.fetch_add(1, Ordering::Relaxed);
    drop(slot);
    let mut ticker = tokio::time::interval(HEARTBEAT);
    let mut sent = 0u64;
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                sent += 1;
                let heartbeat = json!({"type": "heartbeat", "metrics": {
                    "load1": 0.1, "load5": 0.2, "load15": 0.3, "cpu_percent": 1.5,
                    "memory_total_bytes": 8_589_934_592u64, "memory_available_bytes": 4_294_967_296u64,
                    "uptime_seconds": 1000 + sent}});
                socket.send(Message::Text(heartbeat.to_string().into())).await.unwrap();
            }
            frame = socket.next() => match frame {
                Some(Ok(_)) => {}
                // A connection lost during the hold shows up as an agent not online in the
                // count; at the end the server is stopped first, which ends them all.
                _ => return,
            },
        }
    }
}

fn main() {
    let agents = env_number("LOOKOUT_BENCH_AGENTS", 5_000) as usize;
    let hold = Duration::from_secs(env_number("LOOKOUT_BENCH_HOLD_SECONDS", 30));
    let fd_limit = raise_fd_limit();
    // Each agent is one socket here and one in the server, plus a margin for files and the API.
    assert!(
        fd_limit as usize >= agents + 256,
        "RLIMIT_NOFILE hard limit {fd_limit} is too low for {agents} agents"
    );
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let connections = (agents + 256).to_string();
    let (server, addr) = start_server(&data_dir, &[("LOOKOUT_MAX_CONNECTIONS", &connections)]);
    let pid = server.0.id();
    let base = format!("http://{addr}");
    let session = sign_in_owner(&data_dir, &base);
    let enrolment = post(
        &base,
        &session,
        "/api/v1/agents/enrolment-tokens",
        json!({"name": "bench"}),
    );
    let token = enrolment["token"].as_str().unwrap().to_string();
    let api_key = api_key(&base, &session);
    let (rss_idle, _, _, _) = server_usage(pid);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let welcomed = Arc::new(AtomicUsize::new(0));
    let url = format!("ws://{addr}/api/v1/agent/connect");
    let started = Instant::now();
    let connected_in = runtime.block_on(async {
        let dial = Arc::new(tokio::sync::Semaphore::new(DIAL_CONCURRENCY));
        for index in 0..agents {
            let permit = dial.clone().acquire_owned().await.unwrap();
            let (url, token, welcomed) = (url.clone(), token.clone(), welcomed.clone());
            tokio::spawn(agent(url, token, index, welcomed, permit));
        }
        while welcomed.load(Ordering::Relaxed) < agents {
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "agents not all welcomed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        started.elapsed()
    });
    let (rss_connected, _, _, _) = server_usage(pid);
    let (_, _, user_before, system_before) = server_usage(pid);
    runtime.block_on(async { tokio::time::sleep(hold).await });
    let (rss, hwm, user, system) = server_usage(pid);
    let (online, total) = count_agents(&base, &api_key);
    println!(
        "{agents} agents (heartbeat every {}s), all welcomed in {connected_in:.1?}; held {}s",
        HEARTBEAT.as_secs(),
        hold.as_secs()
    );
    println!("online {online} of {total} listed");
    println!(
        "server RSS: idle {:.1} MiB, after connecting {:.1} MiB, after holding {:.1} MiB, \
         peak (VmHWM) {:.1} MiB",
        rss_idle as f64 / 1024.0,
        rss_connected as f64 / 1024.0,
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    println!(
        "server CPU: total user {user:.2}s system {system:.2}s; during the hold {:.2}s \
         ({:.1}% of one core)",
        user + system - user_before - system_before,
        (user + system - user_before - system_before) / hold.as_secs_f64() * 100.0
    );
    assert_eq!(online, agents, "not every agent is online");
    drop(server);
    // Dropping the runtime closes the agents' sockets after the server is gone.
    runtime.shutdown_background();
}
