//! What a caller without credentials can make sign-in cost: bodies capped at 8 KiB, e-mails
//! that are not addresses refused before anything is written, failed sign-ins counted in one
//! audit entry per window, audit entries swept after `AUDIT_RETENTION_DAYS`, at most
//! `LOGIN_MAX_FAILURES` password evaluations per account however many arrive at once, and a
//! burst of sign-ins answered with 503 `overloaded` instead of memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use crate::auth_support::{PASSWORD, Session, add_user, login, server, sign_in};
use crate::harness::{TestServer, http, wait_for};
use crate::http_basics::{Reply, send};

const SIGN_IN_LIMIT: usize = 8 * 1024;

/// `POST path` with exactly `body` as a JSON body.
fn post_raw(server: &TestServer, path: &str, body: String) -> Reply {
    let request = http()
        .post(server.url(path))
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    send(request)
}

/// A JSON object `{"<field>": "<padding>", ...rest}` of exactly `size` bytes.
fn body_of_size(size: usize, field: &str, rest: &str) -> String {
    let frame = format!("{{{rest}\"{field}\":\"\"}}");
    let body = format!(
        "{{{rest}\"{field}\":\"{}\"}}",
        "x".repeat(size - frame.len())
    );
    assert_eq!(body.len(), size);
    body
}

/// Bytes of every file under the data dir.
fn data_dir_bytes(server: &TestServer) -> u64 {
    fn walk(path: &std::path::Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(path) else {
            return 0;
        };
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_dir() => walk(&entry.path()),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            })
            .sum()
    }
    walk(&server.data_dir)
}

/// The audit entries of the session's organisation whose action is `action`.
fn audit_entries(server: &TestServer, session: &Session, action: &str) -> Vec<Value> {
    let reply = session.get(server, "/api/v1/audit?limit=200");
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let items = reply.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items
        .into_iter()
        .filter(|item| item["action"] == action)
        .collect()
}

/// `lookout_password_verifications_total` from `/metrics` (loopback needs no credentials).
fn password_verifications(server: &TestServer) -> u64 {
    let text = http()
        .get(server.url("/metrics"))
        .send()
        .and_then(|response| response.text())
        .expect("metrics");
    let line = text
        .lines()
        .find(|line| line.starts_with("lookout_password_verifications_total"));
    let line = line.unwrap_or_else(|| panic!("no password verification counter in:\n{text}"));
    let value = line.rsplit(' ').next().unwrap_or("");
    value
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("counter {line:?}")) as u64
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|line| line.starts_with("VmRSS:"));
    let line = line.expect("VmRSS line");
    line.split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS value")
}

#[test]
fn sign_in_bodies_over_8_kib_get_413() {
    let server = server(&[]);
    let at_limit = body_of_size(SIGN_IN_LIMIT, "password", "\"email\":\"ada@example.com\",");
    post_raw(&server, "/api/v1/auth/login", at_limit).problem(401, "invalid_credentials");
    let over = body_of_size(
        SIGN_IN_LIMIT + 1,
        "password",
        "\"email\":\"ada@example.com\",",
    );
    post_raw(&server, "/api/v1/auth/login", over).problem(413, "body_too_large");
    // A declared length of a megabyte is refused as well, however the body arrives.
    let large = body_of_size(1 << 20, "password", "\"email\":\"ada@example.com\",");
    post_raw(&server, "/api/v1/auth/login", large).problem(413, "body_too_large");

    let path = "/api/v1/auth/2fa/complete";
    let at_limit = body_of_size(SIGN_IN_LIMIT, "code", "");
    post_raw(&server, path, at_limit).problem(401, "unauthorized");
    let over = body_of_size(SIGN_IN_LIMIT + 1, "code", "");
    post_raw(&server, path, over).problem(413, "body_too_large");
}

#[test]
fn an_email_that_is_not_an_address_gets_400_and_writes_nothing() {
    let server = server(&[("LOGIN_MAX_FAILURES", "1000")]);
    add_user(&server, "ada@example.com", "owner");
    let owner = sign_in(&server, "ada@example.com");
    let failed_before = audit_entries(&server, &owner, "login.failed").len();
    let bytes_before = data_dir_bytes(&server);
    for index in 0..100 {
        let junk = format!("{index}-{}", "n".repeat(7000));
        login(&server, &junk, "guess").problem(400, "invalid_email");
        let no_at = format!("ada{index}.example.com");
        login(&server, &no_at, "guess").problem(400, "invalid_email");
    }
    // 254 bytes is still an address (a wrong password as usual); 255 is not.
    let domain = "@example.com";
    let longest = format!("{}{domain}", "a".repeat(254 - domain.len()));
    assert_eq!(longest.len(), 254);
    login(&server, &longest, "guess").problem(401, "invalid_credentials");
    let too_long = format!("{}{domain}", "a".repeat(255 - domain.len()));
    login(&server, &too_long, "guess").problem(400, "invalid_email");

    let grown = data_dir_bytes(&server).saturating_sub(bytes_before);
    assert!(grown < 256 * 1024, "the data dir grew by {grown} bytes");
    let failed_after = audit_entries(&server, &owner, "login.failed").len();
    assert_eq!(
        failed_after, failed_before,
        "refused e-mails leave no audit entry"
    );
}

#[test]
fn failed_sign_ins_of_one_email_are_one_audit_entry_with_a_count() {
    let server = server(&[("LOGIN_MAX_FAILURES", "1000")]);
    add_user(&server, "ada@example.com", "owner");
    add_user(&server, "bob@example.com", "owner");
    let owner = sign_in(&server, "bob@example.com");
    let bytes_before = data_dir_bytes(&server);
    for _ in 0..200 {
        login(&server, "ada@example.com", "guess").problem(401, "invalid_credentials");
    }
    let failed = audit_entries(&server, &owner, "login.failed");
    assert_eq!(failed.len(), 1, "one entry for the window: {failed:?}");
    assert_eq!(failed[0]["detail"]["count"], 200, "{}", failed[0]);
    assert_eq!(failed[0]["target"], "ada@example.com");

    // Many e-mails: one small state and one entry each, whatever was sent.
    for index in 0..200 {
        let email = format!("stranger{index}@example.com");
        login(&server, &email, "guess").problem(401, "invalid_credentials");
    }
    let grown = data_dir_bytes(&server).saturating_sub(bytes_before);
    assert!(
        grown / 400 < 4096,
        "{grown} bytes for 400 failed sign-ins is more than 4 KiB each"
    );
}

#[test]
fn audit_entries_past_their_retention_are_swept() {
    let mut first = server(&[("AUDIT_RETENTION_DAYS", "1")]);
    add_user(&first, "ada@example.com", "owner");
    login(&first, "ada@example.com", "guess").problem(401, "invalid_credentials");
    let owner = sign_in(&first, "ada@example.com");
    assert_eq!(audit_entries(&first, &owner, "login.failed").len(), 1);
    first.terminate(Duration::from_secs(15));

    // The same data two days later: yesterday's entries are gone, today's stay.
    let two_days = (2 * 86_400).to_string();
    let later = TestServer::builder()
        .data_dir(&first.data_dir)
        .env("AUDIT_RETENTION_DAYS", "1")
        .env("LOOKOUT_CLOCK_OFFSET_SECONDS", &two_days)
        .env("API_RATE_PER_MIN", "100000")
        .start();
    let owner = sign_in(&later, "ada@example.com");
    wait_for("the audit sweep", Duration::from_secs(30), || {
        audit_entries(&later, &owner, "login.failed")
            .is_empty()
            .then_some(())
    });
    let succeeded = audit_entries(&later, &owner, "login.succeeded");
    assert_eq!(
        succeeded.len(),
        1,
        "only the sign-in of today: {succeeded:?}"
    );
}

#[test]
fn parallel_wrong_passwords_get_at_most_the_limit_of_evaluations() {
    let server = server(&[]);
    add_user(&server, "ada@example.com", "owner");
    let limit = 5;
    let before = password_verifications(&server);
    let server = Arc::new(server);
    let start = Arc::new(Barrier::new(41));
    let attempts: Vec<_> = (0..41)
        .map(|index| {
            let (server, start) = (server.clone(), start.clone());
            std::thread::spawn(move || {
                let password = if index == 20 { PASSWORD } else { "guess" };
                start.wait();
                (index, login(&server, "ada@example.com", password).status)
            })
        })
        .collect();
    let statuses: Vec<(usize, u16)> = attempts.into_iter().map(|t| t.join().unwrap()).collect();
    let evaluations = password_verifications(&server) - before;
    let right = statuses[20].1;
    let wrong_evaluated = statuses.iter().filter(|(_, status)| *status == 401).count() as u64;
    for (index, status) in &statuses {
        assert!(
            [200, 401, 423].contains(status),
            "attempt {index}: {status}"
        );
    }
    assert_eq!(
        evaluations,
        wrong_evaluated + u64::from(right == 200),
        "{statuses:?}"
    );
    if right == 200 {
        // Signed in before the limit: the count started again, once.
        assert!(evaluations <= 2 * limit, "{evaluations} evaluations");
    } else {
        assert_eq!(right, 423, "the right password after the limit is refused");
        assert!(
            evaluations <= limit,
            "{evaluations} evaluations: {statuses:?}"
        );
    }
    login(&server, "ada@example.com", PASSWORD).problem(423, "account_locked");
}

#[test]
fn a_burst_of_sign_ins_is_refused_with_503_instead_of_memory() {
    let server = server(&[("LOGIN_MAX_FAILURES", "1000")]);
    let pid = server.pid();
    // Sign-ins in parallel first, so the idle figure includes every hashing thread's work area.
    std::thread::scope(|scope| {
        for index in 0..8 {
            let server = &server;
            scope.spawn(move || {
                login(server, &format!("warm{index}@example.com"), "guess")
                    .problem(401, "invalid_credentials")
            });
        }
    });
    let idle = rss_kib(pid);
    let peak = Arc::new(AtomicU64::new(idle));
    let bursting = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, bursting) = (peak.clone(), bursting.clone());
        std::thread::spawn(move || {
            while bursting.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let server = Arc::new(server);
    let start = Arc::new(Barrier::new(300));
    let attempts: Vec<_> = (0..300)
        .map(|index| {
            let (server, start) = (server.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                login(&server, &format!("burst{index}@example.com"), "guess")
            })
        })
        .collect();
    let replies: Vec<Reply> = attempts.into_iter().map(|t| t.join().unwrap()).collect();
    bursting.store(false, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);

    let mut overloaded = 0;
    for reply in &replies {
        match reply.status {
            401 => {}
            503 => {
                reply.problem(503, "overloaded");
                assert!(
                    !reply.header("retry-after").is_empty(),
                    "503 without Retry-After"
                );
                overloaded += 1;
            }
            other => panic!("status {other}: {}", String::from_utf8_lossy(&reply.body)),
        }
    }
    assert!(overloaded > 0, "a burst beyond the queue must be refused");
    // One 19 MiB work area per core plus what the queued requests hold: far below one per request.
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as u64;
    let bound = idle + cores * 20 * 1024 + 64 * 1024;
    assert!(peak <= bound, "peak RSS {peak} KiB above {bound} KiB");
    // What the burst held is given back: within 20 % of idle in 30 s at the most.
    let settled = idle + idle / 5;
    let began = std::time::Instant::now();
    let mut after = rss_kib(pid);
    while after > settled && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(250));
        after = rss_kib(pid);
    }
    eprintln!(
        "burst of 300 sign-ins: idle {idle} KiB, peak {peak} KiB, {after} KiB {:?} after, {overloaded} refused",
        began.elapsed()
    );
    assert!(
        after <= settled,
        "RSS {after} KiB 30 s after the burst, idle {idle} KiB"
    );
}
