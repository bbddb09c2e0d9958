//! What the end-to-end benchmarks share: the release `lookout serve` on a fresh data dir, an
//! owner created through the CLI and signed in, and readings of a process from `/proc`.
//!
//! Included with `mod support;` by each benchmark that drives the real binary; not a benchmark
//! of its own (Cargo only builds the files named in `[[bench]]`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// The binary this benchmark was built with.
const BUILT_BIN: &str = env!("CARGO_BIN_EXE_lookout");
pub const EMAIL: &str = "bench@example.com";
pub const PASSWORD: &str = "correct horse battery staple";

/// The `lookout` to run: LOOKOUT_BENCH_BIN names another build (to compare two versions back
/// to back on the same machine), else the one built with this benchmark.
pub fn bin() -> String {
    std::env::var("LOOKOUT_BENCH_BIN").unwrap_or_else(|_| BUILT_BIN.to_string())
}

/// Kills the child when the bench ends, however it ends.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A small deterministic generator (xorshift), so that runs send the same data and wait the
/// same times.
pub struct Numbers(pub u64);

impl Numbers {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A number from the environment, or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Starts `lookout serve` on `data_dir` with `env` on top of a clean environment; returns it
/// with the address it listens on.
pub fn start_server(data_dir: &Path, env: &[(&str, &str)]) -> (Process, String) {
    let mut command = Command::new(bin());
    command
        .arg("serve")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LOOKOUT_DATA_DIR", data_dir)
        .env("LOOKOUT_LISTEN", "127.0.0.1:0")
        .env("LOG_LEVEL", "warn");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lookout serve");
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let addr = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_string))
        .expect("`listening on` line");
    (Process(child), addr)
}

/// Creates the owner (and the `default` organisation) through the CLI, which goes through the
/// running server's admin socket, and signs in: returns `(session cookie, csrf token)`.
pub fn sign_in_owner(data_dir: &Path, base: &str) -> (String, String) {
    let mut create = Command::new(bin())
        .args(["user", "create", "--email", EMAIL, "--password-stdin"])
        .args(["--role", "owner"])
        .env_clear()
        .env("LOOKOUT_DATA_DIR", data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("lookout user create");
    writeln!(create.stdin.take().unwrap(), "{PASSWORD}").unwrap();
    assert!(create.wait().unwrap().success(), "user create failed");
    let reply = reqwest::blocking::Client::new()
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"email": EMAIL, "password": PASSWORD}))
        .send()
        .expect("login");
    let cookie = reply
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| value.strip_prefix("lookout_session="))
        .and_then(|value| value.split(';').next())
        .expect("session cookie")
        .to_string();
    let body: Value = reply.json().unwrap();
    let csrf = body["csrf_token"].as_str().expect("csrf_token").to_string();
    (cookie, csrf)
}

/// A POST as the web UI sends it, asserting success.
pub fn post(base: &str, (cookie, csrf): &(String, String), path: &str, body: Value) -> Value {
    let reply = reqwest::blocking::Client::new()
        .post(format!("{base}{path}"))
        .json(&body)
        .header(
            "cookie",
            format!("lookout_session={cookie}; lookout_csrf={csrf}"),
        )
        .header("x-csrf-token", csrf)
        .send()
        .expect("request");
    assert!(reply.status().is_success(), "{path}: {}", reply.status());
    reply.json().unwrap()
}

/// A new API key of the signed-in owner.
pub fn api_key(base: &str, session: &(String, String)) -> String {
    let created = post(
        base,
        session,
        "/api/v1/orgs/me/api-keys",
        json!({"name": "bench"}),
    );
    created["key"].as_str().expect("key").to_string()
}

/// A `KEY:` line of `/proc/<pid>/status`, in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(pid: &str, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap()
}

/// CPU seconds (user, system) of process `pid` (`self` for this one).
pub fn cpu_seconds(pid: &str) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let seconds = |index: usize| fields[index].parse::<f64>().unwrap() / ticks;
    // utime and stime are fields 14 and 15 of stat, 11 and 12 after the name and state.
    (seconds(11), seconds(12))
}

/// CPU seconds (user and system) of each thread of process `pid`, summed by thread name
/// (`store-writer`, `tokio-runtime-w`, ...).
pub fn thread_cpu_seconds(pid: &str) -> std::collections::BTreeMap<String, f64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_name;
    };
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let seconds = |index: usize| {
            fields
                .get(index)
                .and_then(|field| field.parse::<f64>().ok())
                .unwrap_or(0.0)
                / ticks
        };
        *by_name.entry(name).or_insert(0.0) += seconds(11) + seconds(12);
    }
    by_name
}

/// `/healthz`'s body, once the server answers it.
pub fn health(base: &str) -> Option<Value> {
    reqwest::blocking::get(format!("{base}/healthz"))
        .ok()?
        .json()
        .ok()
}

/// Starts the server and waits for `/healthz`: the server, its base URL and the time it took.
pub fn start_until_healthy(
    data_dir: &Path,
    env: &[(&str, &str)],
) -> (Process, String, std::time::Duration) {
    let began = std::time::Instant::now();
    let (server, addr) = start_server(data_dir, env);
    let base = format!("http://{addr}");
    while health(&base).is_none() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    (server, base, began.elapsed())
}

/// A clean stop: SIGTERM, then wait for the exit.
pub fn stop(mut server: Process) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) };
    let _ = server.0.wait();
}

/// The server's `/metrics` text (empty when it cannot be read).
pub fn metrics_text(base: &str) -> String {
    reqwest::blocking::get(format!("{base}/metrics"))
        .and_then(|reply| reply.text())
        .unwrap_or_default()
}

/// The value of the line named `line` in a `/metrics` text: a metric's name, with a
/// histogram's suffix and labels as the server writes them (`…_bucket{le="0.05"}`).
pub fn metric_in(metrics: &str, line: &str) -> Option<f64> {
    metrics
        .lines()
        .filter_map(|text| text.split_once(' '))
        .find_map(|(key, value)| (key == line).then(|| value.trim().parse().ok())?)
}

/// One value of `/metrics` (NaN when absent).
pub fn metric(base: &str, name: &str) -> f64 {
    metric_in(&metrics_text(base), name).unwrap_or(f64::NAN)
}

/// `sum / count` of a Prometheus histogram in the `/metrics` text.
pub fn histogram_mean(metrics: &str, name: &str) -> f64 {
    histogram_value(metrics, name, "_sum") / histogram_value(metrics, name, "_count").max(1.0)
}

/// One line of a Prometheus histogram (`_sum`, `_count`, `_bucket{le="0.05"}`), or 0.
pub fn histogram_value(metrics: &str, name: &str, suffix: &str) -> f64 {
    metric_in(metrics, &format!("{name}{suffix}")).unwrap_or(0.0)
}

/// How much a histogram's line (`_sum`, `_count`, a bucket) grew between two `/metrics` texts.
pub fn histogram_growth(before: &str, after: &str, name: &str, suffix: &str) -> f64 {
    histogram_value(after, name, suffix) - histogram_value(before, name, suffix)
}

/// The store's commits between two `/metrics` readings `window` seconds apart: how many,
/// their mean time and writes, the writer's busy share, and how many took longer than 10, 25
/// and 50 ms (the histogram's bucket bounds).
pub fn commits_between(before: &str, after: &str, window: f64) -> String {
    let delta =
        |suffix: &str| histogram_growth(before, after, "lookout_store_commit_seconds", suffix);
    let writes = histogram_growth(before, after, "lookout_store_commit_batch_size", "_sum");
    let count = delta("_count");
    let over = |bound: &str| count - delta(&format!("_bucket{{le=\"{bound}\"}}"));
    format!(
        "{count:.0} commits ({:.0}/s), mean {:.1} ms, {:.1} writes each, writer busy {:.0} %; \
         over 10 ms: {:.0}, over 25 ms: {:.0}, over 50 ms: {:.0}",
        count / window,
        delta("_sum") * 1000.0 / count.max(1.0),
        writes / count.max(1.0),
        delta("_sum") / window * 100.0,
        over("0.01"),
        over("0.025"),
        over("0.05"),
    )
}

/// Bytes of the file at `path`, or of the files under it, recursively: their apparent size
/// (redb grows its file in large steps ahead of use) and the disk blocks allocated to them.
pub fn disk_bytes(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return (0, 0);
    };
    if !meta.is_dir() {
        return (meta.len(), meta.blocks() * 512);
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return (0, 0);
    };
    entries
        .flatten()
        .map(|entry| disk_bytes(&entry.path()))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}
