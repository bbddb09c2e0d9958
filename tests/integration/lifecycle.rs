//! Process lifecycle of `lookout serve`: the data-dir lock that keeps a second server out
//! (naming the holder), graceful shutdown on SIGTERM under load (a request in flight still
//! gets its whole response, no client sees a 5xx, exit 0 within 10 s, the port closes and a
//! restart works), shutdown on SIGINT, and `lookout version`.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::harness::{BIN, TestServer, http, run_cli, signal, text, wait_for};
use crate::http_basics::{connect, read_response};

/// A `lookout serve` process started by hand, for what `TestServer` does not expose.
struct Serving {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_serve(data_dir: &std::path::Path) -> Serving {
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in TestServer::base_env(data_dir) {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn lookout serve");
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("listening on ") {
                let _ = sender.send(addr.parse::<SocketAddr>().expect("address"));
            }
        }
    });
    let addr = receiver
        .recv_timeout(Duration::from_secs(20))
        .expect("`listening on` line");
    Serving { child, addr }
}

fn wait_for_exit(child: &mut Child, deadline: Duration) -> ExitStatus {
    wait_for("the process to exit", deadline, || {
        child.try_wait().expect("wait")
    })
}

fn port_refuses(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err()
}

#[test]
fn a_second_server_on_the_same_data_dir_is_refused() {
    let server = TestServer::start();
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in TestServer::base_env(&server.data_dir) {
        command.env(key, value);
    }
    let mut second = Serving {
        child: command.spawn().unwrap(),
        addr: server.addr,
    };
    let status = wait_for_exit(&mut second.child, Duration::from_secs(5));
    assert!(
        !status.success(),
        "a second server ran on a locked data dir"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(second.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let data_dir = server.data_dir.display().to_string();
    for needle in [data_dir.as_str(), &format!("pid {}", server.pid()), "serve"] {
        assert!(
            stderr.contains(needle),
            "message lacks {needle:?}: {stderr}"
        );
    }
    // The first server is unharmed.
    assert_eq!(
        http().get(server.url("/healthz")).send().unwrap().status(),
        200
    );
}

/// How one load request ended.
enum Outcome {
    Status(u16),
    /// No response at all: refused, reset before a response, or closed while idle.
    NotServed,
    /// A response started but did not complete.
    Truncated(String),
}

fn hammer(base: String, stop: Arc<AtomicBool>) -> JoinHandle<Vec<Outcome>> {
    std::thread::spawn(move || {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap();
        let mut outcomes = Vec::new();
        for path in ["/healthz", "/api/v1/setup"].iter().cycle() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let outcome = match client.get(format!("{base}{path}")).send() {
                Ok(response) => {
                    let status = response.status().as_u16();
                    match response.bytes() {
                        Ok(_) => Outcome::Status(status),
                        Err(error) => Outcome::Truncated(format!("{status}: {error}")),
                    }
                }
                Err(error) if error.is_connect() || error.is_request() => Outcome::NotServed,
                Err(error) => Outcome::Truncated(error.to_string()),
            };
            outcomes.push(outcome);
        }
        outcomes
    })
}

#[test]
fn sigterm_under_load_finishes_requests_in_flight_and_exits_cleanly() {
    let mut server = TestServer::start();
    let addr = server.addr;

    // A request in flight: `100 Continue` proves the handler is reading its body.
    let body = br#"{"token":"wrong-token","email":"a@example.com","password":"long enough"}"#;
    let mut in_flight = connect(addr);
    let head = format!(
        "POST /api/v1/setup HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    in_flight.write_all(head.as_bytes()).unwrap();
    assert_eq!(read_response(&mut in_flight).unwrap().status, 100);
    let (first_half, second_half) = body.split_at(body.len() / 2);
    in_flight.write_all(first_half).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let base = server.url("");
    let load: Vec<_> = (0..8).map(|_| hammer(base.clone(), stop.clone())).collect();
    wait_for("load to reach the server", Duration::from_secs(10), || {
        let text = http()
            .get(server.url("/metrics"))
            .send()
            .ok()?
            .text()
            .ok()?;
        let served = text
            .lines()
            .filter(|l| l.starts_with("lookout_http_requests_total{"))
            .filter(|l| l.contains("/api/v1/setup"));
        let count: f64 = served
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        (count >= 50.0).then_some(())
    });

    // Once shutdown has begun (the listener is gone), finish the body in flight.
    let finisher = std::thread::spawn(move || {
        wait_for("the listener to close", Duration::from_secs(10), || {
            port_refuses(addr).then_some(())
        });
        in_flight.write_all(second_half).unwrap();
        read_response(&mut in_flight)
    });
    let started = Instant::now();
    let status = server.terminate(Duration::from_secs(10));
    let shutdown_took = started.elapsed();
    stop.store(true, Ordering::Relaxed);

    assert!(status.success(), "exit status {status:?} after SIGTERM");
    assert!(
        shutdown_took < Duration::from_secs(10),
        "shutdown took {shutdown_took:?}"
    );
    let response = finisher
        .join()
        .unwrap()
        .expect("the request in flight got a complete response");
    response.problem(401, "invalid_setup_token");

    let outcomes: Vec<Outcome> = load
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let served = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Status(s) if (200..300).contains(s)))
        .count();
    assert!(served >= 50, "too little load was served: {served}");
    let bad: Vec<String> = outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            Outcome::Status(200..=299) | Outcome::NotServed => None,
            Outcome::Status(status) => Some(format!("status {status}")),
            Outcome::Truncated(error) => Some(format!("truncated: {error}")),
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} load requests failed badly, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );

    assert!(
        port_refuses(addr),
        "the port still accepts connections after exit"
    );
    server.restart();
    assert_eq!(
        http().get(server.url("/healthz")).send().unwrap().status(),
        200
    );
}

#[test]
fn sigint_shuts_down_with_exit_zero() {
    let temp = tempfile::tempdir().unwrap();
    let mut serving = spawn_serve(&temp.path().join("data"));
    let url = format!("http://{}/healthz", serving.addr);
    wait_for("healthz", Duration::from_secs(10), || {
        http().get(&url).send().ok().filter(|r| r.status() == 200)
    });
    signal(serving.child.id(), libc::SIGINT);
    let status = wait_for_exit(&mut serving.child, Duration::from_secs(10));
    assert!(status.success(), "exit status {status:?} after SIGINT");
    assert!(port_refuses(serving.addr));
}

#[test]
fn version_prints_the_name_and_a_version() {
    let temp = tempfile::tempdir().unwrap();
    let output = run_cli(temp.path(), &[], &["version"], "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let version = stdout
        .trim()
        .strip_prefix("lookout ")
        .unwrap_or_else(|| panic!("{stdout:?}"));
    let numeric = version.split('.').take(3).all(|part| {
        part.split('-')
            .next()
            .is_some_and(|n| n.parse::<u32>().is_ok())
    });
    assert!(
        numeric && version.split('.').count() >= 3,
        "not a version: {version:?}"
    );
}
