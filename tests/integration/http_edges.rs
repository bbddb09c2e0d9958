//! Protocol edges on raw connections (CONTRACT section 9): a request with both
//! `Content-Length` and `Transfer-Encoding` is 400 and its connection closed, on the first
//! request of a connection or after others; a request target over the limit is 414
//! `uri_too_long` whatever its length, never hyper's bodiless 431.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use crate::harness::TestServer;
use crate::http_basics::{Reply, connect, read_response};

/// Reads until the server closes; panics if it keeps the connection open.
fn assert_closed(stream: &mut std::net::TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    let result = stream.read_to_end(&mut rest);
    let open =
        result.is_err_and(|e| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut));
    assert!(!open, "the connection stayed open");
    assert!(
        rest.is_empty(),
        "more after the refusal: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

fn post_with(addr: SocketAddr, framing: &str, body: &str) -> String {
    format!(
        "POST /api/v1/auth/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{framing}\r\n{body}"
    )
}

#[test]
fn content_length_with_transfer_encoding_is_400_and_closes() {
    let server = TestServer::start();
    let addr = server.addr;
    let chunked_body = "2\r\n{}\r\n0\r\n\r\n";
    for framing in [
        "Content-Length: 11\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 11\r\n",
        "transfer-encoding: gzip, chunked\r\ncontent-length: 0\r\n",
    ] {
        let mut stream = connect(addr);
        stream
            .write_all(post_with(addr, framing, chunked_body).as_bytes())
            .unwrap();
        let reply = read_response(&mut stream).expect("an answer");
        reply.problem(400, "malformed_request");
        assert_eq!(reply.header("connection"), "close", "{framing}");
        assert_closed(&mut stream);
    }

    // After a well-framed request on the same connection too.
    let mut stream = connect(addr);
    let first = post_with(addr, "Content-Length: 2\r\n", "{}");
    let second = post_with(
        addr,
        "Content-Length: 11\r\nTransfer-Encoding: chunked\r\n",
        chunked_body,
    );
    stream.write_all(first.as_bytes()).unwrap();
    let reply = read_response(&mut stream).expect("first answer");
    assert_ne!(reply.json()["code"], "malformed_request");
    stream.write_all(second.as_bytes()).unwrap();
    read_response(&mut stream)
        .expect("second answer")
        .problem(400, "malformed_request");
    assert_closed(&mut stream);

    // Either framing alone keeps working.
    for framing in ["Transfer-Encoding: chunked\r\n", "Content-Length: 2\r\n"] {
        let body = if framing.starts_with("Transfer") {
            chunked_body
        } else {
            "{}"
        };
        let mut stream = connect(addr);
        stream
            .write_all(post_with(addr, framing, body).as_bytes())
            .unwrap();
        let reply = read_response(&mut stream).expect("an answer");
        assert_ne!(reply.json()["code"], "malformed_request", "{framing}");
    }
}

/// Sends a GET whose target is `length` bytes and reads the answer.
fn get_with_target_of(addr: SocketAddr, length: usize) -> Reply {
    let mut stream = connect(addr);
    let target = format!("/{}", "a".repeat(length - 1));
    let request = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    // The server may answer (and stop reading) before the whole target was sent.
    let _ = stream.write_all(request.as_bytes());
    read_response(&mut stream).expect("an answer")
}

#[test]
fn targets_over_the_limit_are_414_whatever_their_length() {
    let server = TestServer::start();
    let addr = server.addr;
    let at_limit = get_with_target_of(addr, 8192).status;
    assert!(![414, 431].contains(&at_limit), "at the limit: {at_limit}");
    for length in [8193, 40_000, 100_000, 1 << 20] {
        let reply = get_with_target_of(addr, length);
        reply.problem(414, "uri_too_long");
    }
    let small = TestServer::builder()
        .env("LOOKOUT_MAX_URI_BYTES", "300")
        .start();
    get_with_target_of(small.addr, 301).problem(414, "uri_too_long");
    assert_ne!(get_with_target_of(small.addr, 300).status, 414);
}
