//! A real HTTP receiver for webhook deliveries: a loopback port 0 that records every request's
//! raw bytes and answers as the test scripts it (a status, a redirect, a stall). Shared by the
//! integration and browser tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::wait_for;

#[derive(Clone, Debug)]
pub(crate) enum Answer {
    Status(u16),
    Redirect(String),
    /// Waits this long before answering 200.
    Stall(Duration),
}

/// One request as received: headers lower-cased, the body as raw bytes.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self.headers.iter().find(|(key, _)| key == name);
        found.map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("receiver got JSON")
    }
}

type Script = Arc<dyn Fn(usize) -> Answer + Send + Sync>;

/// A webhook receiver on `127.0.0.1:0`, alive as long as the test holds it.
pub(crate) struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<Script>>,
}

impl Receiver {
    pub fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind receiver");
        let addr = listener.local_addr().unwrap();
        let receiver = Receiver {
            addr,
            received: Arc::default(),
            script: Arc::new(Mutex::new(Arc::new(script))),
        };
        let (received, script) = (receiver.received.clone(), receiver.script.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (received, script) = (received.clone(), script.clone());
                std::thread::spawn(move || serve(stream, &received, &script));
            }
        });
        receiver
    }

    /// A receiver that answers 200 to everything.
    pub fn ok() -> Receiver {
        Receiver::start(|_| Answer::Status(200))
    }

    pub fn set_script(&self, script: impl Fn(usize) -> Answer + Send + Sync + 'static) {
        *self.script.lock().unwrap() = Arc::new(script);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until at least `count` requests arrived and returns them all.
    pub fn wait_for(&self, count: usize, deadline: Duration) -> Vec<Received> {
        wait_for(&format!("{count} webhook requests"), deadline, || {
            let received = self.received();
            (received.len() >= count).then_some(received)
        })
    }
}

/// Serves requests on one connection until it closes (ureq keeps connections alive).
fn serve(stream: TcpStream, received: &Mutex<Vec<Received>>, script: &Mutex<Script>) {
    let mut writer = stream.try_clone().expect("clone stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_lowercase(), value.trim().to_string()));
            }
        }
        let length = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let index = {
            let mut all = received.lock().unwrap();
            all.push(Received {
                headers,
                body,
                at: Instant::now(),
            });
            all.len() - 1
        };
        let answer = (script.lock().unwrap().clone())(index);
        let response = match answer {
            Answer::Status(status) => {
                format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok")
            }
            Answer::Redirect(location) => {
                format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n")
            }
            Answer::Stall(wait) => {
                std::thread::sleep(wait);
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_string()
            }
        };
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
