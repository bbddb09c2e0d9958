//! Keystroke round trip of the terminal over loopback, end to end through real processes:
//! a websocket client (the browser side) sends one byte, `lookout serve` relays it to
//! `lookout agent`, which writes it into the PTY of `cat` in raw mode; `cat` writes it back
//! and it returns the same way. Reports p50, p99 and max of 2,000 keystrokes sent one at a
//! time (each waits for its echo, as a typist's feedback does).
//!
//! Run: `cargo bench --bench terminal` (release build; LOOKOUT_BENCH_KEYSTROKES=N to change
//! the count).

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use support::{Process, bin, env_number, sign_in_owner, start_server};

/// A request as the web UI sends it.
fn call(base: &str, (cookie, csrf): &(String, String), path: &str, body: Option<Value>) -> Value {
    let client = reqwest::blocking::Client::new();
    let cookies = format!("lookout_session={cookie}; lookout_csrf={csrf}");
    let request = match body {
        Some(body) => client.post(format!("{base}{path}")).json(&body),
        None => client.get(format!("{base}{path}")),
    };
    let reply = request
        .header("cookie", cookies)
        .header("x-csrf-token", csrf)
        .send()
        .expect("request");
    assert!(reply.status().is_success(), "{path}: {}", reply.status());
    reply.json().unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn main() {
    let keystrokes = env_number("LOOKOUT_BENCH_KEYSTROKES", 2_000) as usize;
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let (_server, addr) = start_server(&data_dir, &[]);
    let base = format!("http://{addr}");
    let session = sign_in_owner(&data_dir, &base);
    let enrolment = call(
        &base,
        &session,
        "/api/v1/agents/enrolment-tokens",
        Some(json!({"name": "bench"})),
    );
    let token = enrolment["token"].as_str().unwrap();
    let _agent = Process(
        Command::new(bin())
            .args(["agent", "--server", &base, "--token", token])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lookout agent"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let agent_id = loop {
        let agents = call(&base, &session, "/api/v1/agents", None);
        let online = agents["items"]
            .as_array()
            .and_then(|items| items.iter().find(|agent| agent["status"] == "online"));
        if let Some(agent) = online {
            break agent["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the agent did not come online");
        std::thread::sleep(Duration::from_millis(50));
    };
    let path = format!("/api/v1/agents/{agent_id}/shell/ticket");
    let ticket = call(&base, &session, &path, Some(json!({})));
    let url = format!(
        "ws://{addr}/api/v1/agents/{agent_id}/shell?ticket={}",
        ticket["ticket"].as_str().unwrap()
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut samples = runtime.block_on(async {
        let (mut terminal, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("terminal websocket");
        let send = async |terminal: &mut _, bytes: &[u8]| {
            SinkExt::send(terminal, Message::Binary(bytes.to_vec().into()))
                .await
                .expect("send");
        };
        // Raw mode without echo: `cat` returns each byte as it comes, and nothing else does.
        send(&mut terminal, b"stty raw -echo; exec cat\n").await;
        // Warm up: repeat a marker until `cat` echoes it, then drain what the shell printed.
        let ready = 'ready: loop {
            send(&mut terminal, b"#").await;
            let wait = tokio::time::sleep(Duration::from_millis(200));
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    frame = terminal.next() => {
                        if let Some(Ok(Message::Binary(bytes))) = frame
                            && bytes.ends_with(b"#")
                        {
                            break 'ready true;
                        }
                    }
                    () = &mut wait => break,
                }
            }
        };
        assert!(ready);
        while let Ok(Some(_)) =
            tokio::time::timeout(Duration::from_millis(300), terminal.next()).await
        {}
        let mut samples = Vec::with_capacity(keystrokes);
        for index in 0..keystrokes {
            let key = b'a' + (index % 26) as u8;
            let start = Instant::now();
            send(&mut terminal, &[key]).await;
            loop {
                match terminal.next().await {
                    Some(Ok(Message::Binary(bytes))) if bytes.contains(&key) => break,
                    Some(Ok(_)) => continue,
                    other => panic!("terminal ended: {other:?}"),
                }
            }
            samples.push(start.elapsed());
        }
        samples
    });
    samples.sort();
    println!(
        "terminal keystroke round trip over loopback, {keystrokes} keystrokes: \
         p50 {:?}, p99 {:?}, max {:?}",
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
}
