//! The Sentry endpoints' limits at their edges: 1 MiB per item (and per `/store/` body),
//! 100 items and 20 MiB per envelope, sent and inflated. Over a limit: 413 with the CONTRACT
//! code, and nothing stored.

use crate::compat_support::{declared_post, keyed_query, post_envelope, project_of, sentry_server};
use crate::harness::{TestServer, http};
use crate::http_basics::send;
use crate::ingest_support::*;

const MIB: usize = 1 << 20;

/// An event payload of exactly `size` bytes whose message is `message`.
fn event_payload(message: &str, size: usize) -> Vec<u8> {
    let head = format!("{{\"message\":\"{message}\",\"level\":\"error\",\"extra\":{{\"pad\":\"");
    let tail = "\"}}";
    let pad = size - head.len() - tail.len();
    let mut payload = head.into_bytes();
    payload.extend(std::iter::repeat_n(b'x', pad));
    payload.extend(tail.as_bytes());
    assert_eq!(payload.len(), size);
    payload
}

fn envelope_with_event(payload: &[u8]) -> Vec<u8> {
    let mut body = b"{}\n{\"type\":\"event\"}\n".to_vec();
    body.extend(payload);
    body.push(b'\n');
    body
}

/// An envelope of exactly `size` bytes: one small event, then a skipped attachment as padding.
fn envelope_of_size(message: &str, size: usize) -> Vec<u8> {
    let mut body = envelope_with_event(&event_payload(message, 100));
    // The length's digits are part of the size: measure the header with a guess of as many.
    let guess = format!(
        "{{\"type\":\"attachment\",\"length\":{}}}\n",
        size - body.len()
    );
    let length = size - body.len() - guess.len();
    let header = format!("{{\"type\":\"attachment\",\"length\":{length}}}\n");
    body.extend(header.as_bytes());
    body.extend(std::iter::repeat_n(b'a', size - body.len()));
    assert_eq!(body.len(), size);
    body
}

/// One byte over a limit: 413 with `code`; at the limit: 200.
fn at_the_edge(
    server: &TestServer,
    project: u64,
    (over, at): (Vec<u8>, Vec<u8>),
    encoding: Option<&str>,
    code: &str,
) {
    let headers: Vec<(&str, &str)> = encoding
        .map(|e| vec![("content-encoding", e)])
        .unwrap_or_default();
    let reply = post_envelope(server, project, &keyed_query(), &headers, over);
    assert_eq!(
        reply.status,
        413,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["code"], code);
    let reply = post_envelope(server, project, &keyed_query(), &headers, at);
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[test]
fn items_and_envelopes_are_bounded_at_their_edges() {
    let (server, key) = sentry_server(&[]);
    let project = project_of(&server, &key);
    let one_event = |message: &str, size: usize| envelope_with_event(&event_payload(message, size));
    let items = |count: usize| {
        let mut body = b"{}\n".to_vec();
        for _ in 0..count {
            body.extend(b"{\"type\":\"client_report\"}\n{}\n");
        }
        body
    };
    // One item: 1 MiB. Items: 100. The envelope as sent: 20 MiB (refused from its declared
    // length, before a byte of it is read).
    let item = (
        one_event("item over", MIB + 1),
        one_event("item at edge", MIB),
    );
    at_the_edge(&server, project, item, None, "body_too_large");
    at_the_edge(
        &server,
        project,
        (items(101), items(100)),
        None,
        "too_many_events",
    );
    let path = format!("/api/{project}/envelope/{}", keyed_query());
    declared_post(&server, &path, 20 * MIB + 1).problem(413, "body_too_large");
    let at = envelope_of_size("envelope at edge", 20 * MIB);
    let reply = post_envelope(&server, project, &keyed_query(), &[], at);
    assert_eq!(reply.status, 200);
    // Inflated: a small gzip body that expands past 20 MiB is refused; to exactly 20 MiB fits.
    let inflated = (
        gzip(&envelope_of_size("inflated over", 20 * MIB + 1)),
        gzip(&envelope_of_size("inflated at edge", 20 * MIB)),
    );
    assert!(inflated.0.len() < MIB);
    at_the_edge(&server, project, inflated, Some("gzip"), "body_too_large");

    // /store/: its body is one event, 1 MiB at most.
    let store = |payload: Vec<u8>| {
        let url = server.url(&format!("/api/{project}/store/{}", keyed_query()));
        send(
            http()
                .post(url)
                .header("content-type", "application/json")
                .body(payload),
        )
    };
    let path = format!("/api/{project}/store/{}", keyed_query());
    declared_post(&server, &path, MIB + 1).problem(413, "body_too_large");
    assert_eq!(store(event_payload("store at edge", MIB)).status, 200);

    let stored =
        crate::harness::wait_for("stored events", std::time::Duration::from_secs(10), || {
            let events = all_errors(&server, &key);
            (events.len() >= 4).then_some(events)
        });
    let messages: Vec<String> = stored
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = messages.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "envelope at edge",
            "inflated at edge",
            "item at edge",
            "store at edge"
        ],
        "only what fit was stored"
    );
}
