//! What the browser SDK's tests share: a tiny HTTP server on another loopback port (so another
//! origin than Lookout's) that serves a shop's test pages and records every request, the same
//! server used as a gate in front of Lookout's ingest that can refuse requests as the test
//! scripts, the test page that loads the SDK from the Lookout server, and what the tests read
//! back through the API.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha384};

use crate::errors_support::{ApiSession, KEY};
use crate::harness::{TestServer, http};
use crate::page::Page;

/// One request as the site received it (header names lower-cased).
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self.headers.iter().find(|(key, _)| key == name);
        found.map(|(_, value)| value.as_str())
    }
}

/// What the site answers to one request.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// No answer at all: the connection is closed, as a network failure looks to the browser.
    pub fn hang_up() -> Reply {
        Reply::new(0, "text/plain", "")
    }

    pub fn html(body: &str) -> Reply {
        Reply::new(200, "text/html; charset=utf-8", body)
    }
}

/// The statuses a gate gave to the SDK's posts, with their paths, in order.
pub type Statuses = Arc<Mutex<Vec<(String, u16)>>>;

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// An HTTP/1.1 server on `127.0.0.1:0` answering through the test's handler, one connection
/// per request (`Connection: close`). Dropping it stops it and drops the handler, so a Lookout
/// server the handler holds (`gate_site`) is stopped with the test, not left running.
pub struct Site {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Site {
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the site");
        let addr = listener.local_addr().expect("its address");
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let handler: Handler = Arc::new(handler);
        let (record, stopping) = (seen.clone(), Arc::new(AtomicBool::new(false)));
        let stop = stopping.clone();
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let (handler, record) = (handler.clone(), record.clone());
                // Not joined: a connection the browser opened and never used must not hold the
                // test; each answer ends with `Connection: close`.
                std::thread::spawn(move || answer(stream, &handler, &record));
            }
        });
        Site {
            addr,
            seen,
            stopping,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:<port>` (no final slash).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// The requests received so far whose method and path start as given (`"POST /ingest"`).
    pub fn seen(&self, method: &str, path_prefix: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        let matching = seen
            .iter()
            .filter(|request| request.method == method && request.path.starts_with(path_prefix));
        matching.cloned().collect()
    }
}

fn answer(stream: TcpStream, handler: &Handler, record: &Mutex<Vec<Seen>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    record.lock().unwrap().push(request.clone());
    let reply = handler(&request);
    if reply.status == 0 {
        return;
    }
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = reader.into_inner();
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&reply.body);
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let at = Instant::now();
    Some(Seen {
        method,
        path,
        headers,
        body,
        at,
    })
}

/// Forwards one request the SDK sent to the gate on to Lookout, and its answer back, with the
/// CORS headers a browser needs (the gate is another origin than the page).
pub fn forward(lookout: &TestServer, request: &Seen) -> Reply {
    if request.method == "OPTIONS" {
        return with_cors(Reply::new(204, "text/plain", ""));
    }
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).expect("a method");
    let mut outgoing = http().request(method, lookout.url(&request.path));
    for (name, value) in &request.headers {
        if matches!(name.as_str(), "content-type" | "x-lookout-key") {
            outgoing = outgoing.header(name, value);
        }
    }
    let response = outgoing
        .body(request.body.clone())
        .send()
        .expect("forward to lookout");
    let status = response.status().as_u16();
    // The validators and the back-off travel back, so the browser sees what Lookout said.
    let kept: Vec<(String, String)> = ["etag", "cache-control", "retry-after"]
        .into_iter()
        .filter_map(|name| {
            let value = response.headers().get(name)?.to_str().ok()?;
            Some((name.to_string(), value.to_string()))
        })
        .collect();
    let body = response.bytes().expect("lookout's body").to_vec();
    let mut reply = with_cors(Reply::new(status, "application/json", body));
    reply.headers.extend(kept);
    reply
}

impl Drop for Site {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wakes the acceptor, which then sees `stopping`.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// A site that serves `page` at `/` and forwards `/ingest/*` to `lookout`, except that `refuse`
/// may answer a request itself; it records every status it gave to the SDK.
pub fn gate_site(
    lookout: &Arc<TestServer>,
    page: String,
    refuse: impl Fn(&Seen, usize) -> Option<Reply> + Send + Sync + 'static,
) -> (Site, Statuses) {
    let statuses: Statuses = Arc::default();
    let (server, record) = (lookout.clone(), statuses.clone());
    let site = Site::start(move |request| {
        if !request.path.starts_with("/ingest/") {
            return Reply::html(if request.path == "/" {
                &page
            } else {
                "<!doctype html><title>Bye</title>"
            });
        }
        let earlier = record
            .lock()
            .unwrap()
            .iter()
            .filter(|(path, _)| path == &request.path)
            .count();
        let reply = match request.method.as_str() {
            "POST" => refuse(request, earlier).unwrap_or_else(|| forward(&server, request)),
            _ => forward(&server, request),
        };
        if request.method == "POST" {
            record
                .lock()
                .unwrap()
                .push((request.path.clone(), reply.status));
        }
        reply
    });
    (site, statuses)
}

/// A refusal from the gate with `Retry-After`, readable by the SDK on another origin.
pub fn refusal(status: u16, retry_after_seconds: u64) -> Reply {
    let mut reply = with_cors(Reply::new(status, "application/problem+json", "{}"));
    reply
        .headers
        .push(("Retry-After".into(), retry_after_seconds.to_string()));
    reply
}

fn with_cors(mut reply: Reply) -> Reply {
    let cors = [
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
        (
            "Access-Control-Allow-Headers",
            "Content-Type, X-Lookout-Key",
        ),
        ("Access-Control-Expose-Headers", "ETag, Retry-After"),
    ];
    for (name, value) in cors {
        reply.headers.push((name.into(), value.into()));
    }
    reply
}

/// The served SDK file `name` at its versioned path, and the SRI hash this test computes for it.
pub fn versioned_sdk(lookout: &TestServer, name: &str) -> (String, String) {
    let manifest: Value = http()
        .get(lookout.url("/sdk/manifest.json"))
        .send()
        .and_then(|response| response.json())
        .expect("the SDK manifest");
    let version = manifest["version"].as_str().expect("a version");
    let url = lookout.url(&format!("/sdk/{version}/{name}"));
    let bytes = http()
        .get(&url)
        .send()
        .and_then(|response| response.bytes())
        .expect("the SDK file");
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha384::digest(&bytes));
    (url, format!("sha384-{digest}"))
}

/// A shop page that loads the SDK (the IIFE, pinned by its SRI hash) from Lookout, calls
/// `Lookout.init` with `endpoint` and the extra `options` (JavaScript object members), then runs
/// `script`. `window.ready` is `init`'s promise.
pub fn shop_page(lookout: &TestServer, endpoint: &str, options: &str, script: &str) -> String {
    let (sdk, integrity) = versioned_sdk(lookout, "lookout.iife.js");
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script src="{sdk}" integrity="{integrity}" crossorigin="anonymous"></script>
<script>
window.ready = Lookout.init({{ endpoint: "{endpoint}", key: "{KEY}", release: "shop@1.0.0",
  environment: "test", service: "shop", {options} }});
{script}
</script></head><body><h1>Shop</h1><button id="buy">Buy</button></body></html>"#
    )
}

/// Waits until `ready` answers a value for which `done` holds, for up to 20 seconds.
pub fn wait_for_value(
    what: &str,
    mut ready: impl FnMut() -> Value,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let value = ready();
        if done(&value) {
            return value;
        }
        assert!(
            Instant::now() < until,
            "timed out waiting for {what}: last {value}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The error groups' titles and ids, newest 100.
pub fn groups(api: &ApiSession) -> Vec<(String, String)> {
    let listed = api.get("/api/v1/error-groups?limit=100");
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    let pairs = items.iter().map(|group| {
        let title = group["title"].as_str().unwrap_or_default().to_string();
        (title, group["id"].as_str().unwrap_or_default().to_string())
    });
    pairs.collect()
}

/// The messages of every stored error event (newest 100).
pub fn event_messages(api: &ApiSession) -> Vec<String> {
    let listed = api.get("/api/v1/errors?limit=100");
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    let messages = items
        .iter()
        .map(|event| event["message"].as_str().unwrap_or_default().to_string());
    messages.collect()
}

/// Waits until the browser reported `count` uncaught problems (the page's errors, on purpose).
pub fn take_expected_problems(page: &Page, count: usize) -> Vec<String> {
    let mut problems = Vec::new();
    wait_for_value(
        "the page's uncaught errors",
        || {
            problems.extend(page.take_page_problems());
            json!(problems.len())
        },
        |seen| seen.as_u64() >= Some(count as u64),
    );
    problems
}
