//! Memory under hostile and bursty uploads: a source-map upload is refused before its body is
//! read when its declared size is over the limit or it carries no valid credential, and the
//! memory a burst of uploads took is given back to the system once the burst is over.
//!
//! Uploads whose answer should come early are raw `TcpStream`s that send the head and only the
//! first bytes of the body, then wait for the answer: it must arrive while the rest is unsent.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::TestServer;
use crate::http_basics::{Reply, connect, read_response};
use crate::ingest_support::*;

const SIXTEEN_MIB: usize = 16 * 1024 * 1024;

/// Sends a source-map upload head declaring `length` bytes (chunked when `None`), `extra`
/// headers, and 64 KiB of the body; returns the answer, read before anything more is sent.
fn upload_head_only(addr: SocketAddr, length: Option<usize>, extra: &str) -> Reply {
    let mut stream = connect(addr);
    let framing = match length {
        Some(length) => format!("Content-Length: {length}\r\n"),
        None => "Transfer-Encoding: chunked\r\n".to_string(),
    };
    let head = format!(
        "POST /ingest/sourcemaps HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {framing}{extra}\r\n"
    );
    stream.write_all(head.as_bytes()).expect("send head");
    let first_bytes = vec![b' '; 64 * 1024];
    let sent = match length {
        Some(_) => stream.write_all(&first_bytes),
        None => stream
            .write_all(format!("{:x}\r\n", first_bytes.len()).as_bytes())
            .and_then(|()| stream.write_all(&first_bytes))
            .and_then(|()| stream.write_all(b"\r\n")),
    };
    // The server may already have answered and closed; the answer is what counts.
    let _ = sent;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    read_response(&mut stream).expect("an answer before the body was sent")
}

#[test]
fn uploads_without_credentials_or_over_the_limit_are_answered_before_their_body() {
    let server = ingest_server(&[]);
    let addr = server.addr;
    let started = Instant::now();
    // No credential at all, a wrong ingest key, a wrong bearer key, and a chunked body.
    upload_head_only(addr, Some(SIXTEEN_MIB), "").problem(401, "invalid_ingest_key");
    upload_head_only(addr, Some(SIXTEEN_MIB), "X-Lookout-Key: wrong\r\n")
        .problem(401, "invalid_ingest_key");
    let wrong_bearer = "Authorization: Bearer lk_not-a-real-key-at-all-000000000000000000000\r\n";
    assert_eq!(
        upload_head_only(addr, Some(SIXTEEN_MIB), wrong_bearer).status,
        401
    );
    upload_head_only(addr, None, "").problem(401, "invalid_ingest_key");
    // A declared size over the limit is 413 at once, with or without a key (size before key).
    upload_head_only(addr, Some(SIXTEEN_MIB + 1), "").problem(413, "body_too_large");
    let keyed_head = format!("X-Lookout-Key: {KEY}\r\n");
    upload_head_only(addr, Some(SIXTEEN_MIB + 1), &keyed_head).problem(413, "body_too_large");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answers took {:?}",
        started.elapsed()
    );

    // The other ingest routes read no keyless body either.
    let mut stream = connect(addr);
    let head = format!(
        "POST /ingest/web-errors HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 200000\r\n\r\n{{\"events\":["
    );
    stream.write_all(head.as_bytes()).unwrap();
    read_response(&mut stream)
        .expect("an answer before the body was sent")
        .problem(401, "invalid_ingest_key");

    // A keyed upload within the limit still goes through, chunked or not.
    let map = json!({"version": 3, "sources": ["a.ts"], "names": [], "mappings": "AAAA"});
    let upload = json!({"release": "1.0", "file": "/app.js", "sourcemap": map});
    assert_eq!(post(&server, "/ingest/sourcemaps", &upload).status, 201);
}

/// The server's resident set in KiB, from `/proc/<pid>/status`.
fn resident_kib(server: &TestServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib = line.split_whitespace().nth(1).unwrap();
    kib.parse().unwrap()
}

/// A valid source map of about `size` bytes (long `sourcesContent`).
fn large_map_upload(index: usize, size: usize) -> Vec<u8> {
    let content = "x".repeat(size);
    let map = json!({"version": 3, "sources": ["a.ts"], "names": [], "mappings": "AAAA",
        "sourcesContent": [content]});
    let upload = json!({"release": format!("burst-{index}"), "file": "/app.js", "sourcemap": map});
    upload.to_string().into_bytes()
}

/// Sends a keyless 16 MiB upload as a careless client would: the whole body, answer or not.
fn keyless_upload(addr: SocketAddr) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return;
    };
    let head = format!(
        "POST /ingest/sourcemaps HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {SIXTEEN_MIB}\r\nConnection: close\r\n\r\n"
    );
    let _ = stream.write_all(head.as_bytes());
    let chunk = vec![b' '; 1024 * 1024];
    for _ in 0..16 {
        if stream.write_all(&chunk).is_err() {
            return;
        }
    }
}

#[test]
fn memory_taken_by_a_burst_of_uploads_is_returned() {
    let server = ingest_server(&[("WEB_INGEST_RATE_PER_MIN", "100000")]);
    let addr = server.addr;
    // Warm up every path once, so idle includes what a served server always holds.
    let warm = large_map_upload(0, 1024);
    assert_eq!(
        post_bytes(&server, "/ingest/sourcemaps", "application/json", warm).status,
        201
    );
    std::thread::sleep(Duration::from_secs(3));
    let idle = resident_kib(&server);

    let peak = std::sync::atomic::AtomicU64::new(idle);
    std::thread::scope(|scope| {
        for index in 0..100 {
            let server = &server;
            scope.spawn(move || {
                let body = large_map_upload(index, 2 * 1024 * 1024);
                let reply = post_bytes(server, "/ingest/sourcemaps", "application/json", body);
                assert_eq!(
                    reply.status,
                    201,
                    "{}",
                    String::from_utf8_lossy(&reply.body)
                );
            });
            scope.spawn(move || keyless_upload(addr));
        }
        let (peak, server) = (&peak, &server);
        scope.spawn(move || {
            for _ in 0..40 {
                peak.fetch_max(resident_kib(server), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(250));
            }
        });
    });
    let peak = peak.into_inner();
    let burst_over = Instant::now();
    let bound = idle + idle / 5;
    // Polled with a deadline: the figures are printed whether it settles or not.
    let mut now = resident_kib(&server);
    while now > bound && burst_over.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(250));
        now = resident_kib(&server);
    }
    let figures = format!(
        "RSS idle {idle} KiB, peak {peak} KiB, {now} KiB {:?} after the burst",
        burst_over.elapsed()
    );
    eprintln!("{figures}");
    assert!(now <= bound, "not returned: {figures}");
}
