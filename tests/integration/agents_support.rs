//! What the agent tests share: an owner's session, enrolment tokens, a real `lookout agent`
//! process (killed on drop, its log printed when a test fails), polling the agent list, and a
//! browser-side terminal websocket driven with tokio-tungstenite on a small runtime.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::auth_support::{Session, add_user, sign_in};
use crate::harness::{BIN, TestServer, text, wait_for};
use crate::http_basics::send;

pub(crate) const OWNER: &str = "owner@example.com";

/// A fresh server and its owner's session. Polling the agent list is many requests: the
/// per-credential rate limit is raised so that it never answers for the feature under test.
pub(crate) fn server_with_owner() -> (TestServer, Session) {
    let server = TestServer::builder()
        .env("API_RATE_PER_MIN", "100000")
        .start();
    add_user(&server, OWNER, "owner");
    let session = sign_in(&server, OWNER);
    (server, session)
}

/// Creates an enrolment token and returns `(id, token)`.
pub(crate) fn enrol(server: &TestServer, session: &Session, name: &str) -> (String, String) {
    let reply = session.post(
        server,
        "/api/v1/agents/enrolment-tokens",
        &json!({"name": name}),
    );
    assert_eq!(reply.status, 201, "create token: {}", text(&reply.body));
    let body = reply.json();
    assert_eq!(body["name"], name);
    let token = body["token"].as_str().expect("token").to_string();
    (body["id"].as_str().expect("id").to_string(), token)
}

/// A `lookout agent` process.
pub(crate) struct AgentProcess {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl AgentProcess {
    pub fn start(server: &TestServer, token: &str, extra: &[&str]) -> AgentProcess {
        let mut args = vec!["--token", token];
        args.extend_from_slice(extra);
        AgentProcess::start_with(server, &args, &[])
    }

    /// Starts `lookout agent --server URL ARGS` with only `PATH` and `env` in its environment.
    pub fn start_with(server: &TestServer, args: &[&str], env: &[(&str, &str)]) -> AgentProcess {
        let mut command = Command::new(BIN);
        command
            .args(["agent", "--server", &server.url("")])
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lookout agent");
        let log: Arc<Mutex<String>> = Arc::default();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        AgentProcess { child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit by itself and returns its exit code.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<i32> {
        let until = Instant::now() + deadline;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            assert!(
                Instant::now() < until,
                "agent still running:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("---- lookout agent log ----\n{}", self.log());
        }
    }
}

/// Polls the agent list until an agent enrolled with `token_id` matches `check`.
pub(crate) fn wait_agent(
    server: &TestServer,
    session: &Session,
    token_id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(what, Duration::from_secs(20), || {
        let reply = session.get(server, "/api/v1/agents");
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
        let body = reply.json();
        let items = body["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .find(|agent| agent["enrolment_token_id"] == token_id && check(agent))
    })
}

/// Enrols a token, starts an agent with it and waits until the agent is online.
pub(crate) fn online_agent(
    server: &TestServer,
    session: &Session,
    name: &str,
    extra: &[&str],
) -> (AgentProcess, Value) {
    let (token_id, token) = enrol(server, session, name);
    let process = AgentProcess::start(server, &token, extra);
    let agent = wait_agent(server, session, &token_id, "agent online", |agent| {
        agent["status"] == "online"
    });
    (process, agent)
}

/// Mints a shell ticket for `agent_id` and returns the 200 body.
pub(crate) fn ticket(server: &TestServer, session: &Session, agent_id: &str) -> Value {
    let path = format!("/api/v1/agents/{agent_id}/shell/ticket");
    let reply = session.post(server, &path, &json!({}));
    assert_eq!(reply.status, 200, "ticket: {}", text(&reply.body));
    reply.json()
}

pub(crate) type Terminal =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A current-thread runtime for the browser side of a terminal.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// How a websocket handshake was refused: HTTP status and problem code.
#[derive(Debug)]
pub(crate) struct Refused {
    pub status: u16,
    pub code: String,
}

/// Opens a websocket to `url`, with `origin` and `bearer` when given.
pub(crate) async fn open_websocket(
    url: &str,
    origin: Option<&str>,
    bearer: Option<&str>,
) -> Result<Terminal, Refused> {
    let mut request = url.into_client_request().expect("websocket request");
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", HeaderValue::from_str(origin).unwrap());
    }
    if let Some(bearer) = bearer {
        let value = HeaderValue::from_str(&format!("Bearer {bearer}")).unwrap();
        request.headers_mut().insert("authorization", value);
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::Error::Http(response)) => {
            let body = response.body().clone().unwrap_or_default();
            let problem: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            Err(Refused {
                status: response.status().as_u16(),
                code: problem["code"].as_str().unwrap_or("").to_string(),
            })
        }
        Err(other) => panic!("websocket to {url} failed: {other}"),
    }
}

/// Opens a websocket that must be refused; returns how.
pub(crate) async fn open_refused(url: &str, origin: Option<&str>, bearer: Option<&str>) -> Refused {
    match open_websocket(url, origin, bearer).await {
        Ok(_) => panic!("websocket to {url} was accepted"),
        Err(refused) => refused,
    }
}

/// Reads terminal output until it contains `needle`; returns everything read.
pub(crate) async fn read_until(terminal: &mut Terminal, needle: &str) -> String {
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !seen.contains(needle) {
        let frame = tokio::time::timeout_at(deadline, terminal.next())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} in terminal output {seen:?}"));
        match frame {
            Some(Ok(Message::Binary(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Some(Ok(Message::Close(frame))) => panic!("terminal closed ({frame:?}) after {seen:?}"),
            Some(Ok(_)) => {}
            other => panic!("terminal ended ({other:?}) after {seen:?}"),
        }
    }
    seen
}

/// Reads until the server closes the websocket; returns the close code and reason.
pub(crate) async fn read_close(terminal: &mut Terminal) -> (u16, String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let frame = tokio::time::timeout_at(deadline, terminal.next())
            .await
            .expect("no close frame in time");
        match frame {
            Some(Ok(Message::Close(Some(frame)))) => {
                return (frame.code.into(), frame.reason.to_string());
            }
            Some(Ok(Message::Close(None))) | None => return (1005, String::new()),
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("terminal failed before closing: {error}"),
        }
    }
}

pub(crate) async fn type_bytes(terminal: &mut Terminal, bytes: &str) {
    terminal
        .send(Message::Binary(bytes.as_bytes().to_vec().into()))
        .await
        .expect("send keystrokes");
}

/// The audit entries of the session's organisation with `action`.
pub(crate) fn audit_entries(server: &TestServer, session: &Session, action: &str) -> Vec<Value> {
    let reply = session.get(server, "/api/v1/audit?limit=500");
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    let items = reply.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items
        .into_iter()
        .filter(|item| item["action"] == action)
        .collect()
}

/// One way an admin loses the rights a terminal rests on; each ends in a RegisterUserLogout.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Revoke {
    /// The owner makes the admin a member.
    Demote,
    /// The owner removes the admin from the organisation.
    Remove,
    /// The admin signs out everywhere.
    LogoutEverywhere,
    /// The owner resets the admin's second factor (the admin must have one).
    ResetTwoFactor,
}

impl Revoke {
    /// Does it to `admin` through the API, asserting success.
    pub fn apply(self, server: &TestServer, owner: &Session, admin: &Session) {
        let member = format!("/api/v1/orgs/me/members/{}", admin.user_id());
        let delete = |path: &str| {
            let request = owner.request(server, reqwest::Method::DELETE, path);
            send(request.header("x-csrf-token", &owner.csrf))
        };
        let reply = match self {
            Revoke::Demote => owner.write(
                server,
                reqwest::Method::PATCH,
                &member,
                &json!({"role": "member"}),
            ),
            Revoke::Remove => delete(&member),
            Revoke::LogoutEverywhere => admin.post_empty(server, "/api/v1/auth/logout-everywhere"),
            Revoke::ResetTwoFactor => delete(&format!("{member}/two-factor")),
        };
        assert!(
            reply.status == 200 || reply.status == 204,
            "{self:?}: {} {}",
            reply.status,
            text(&reply.body)
        );
    }
}

/// Creates an admin of the default organisation and signs them in.
pub(crate) fn signed_in_admin(server: &TestServer, email: &str) -> Session {
    add_user(server, email, "admin");
    sign_in(server, email)
}

/// Asks the shell for its process id and returns it.
pub(crate) async fn shell_pid(terminal: &mut Terminal) -> u32 {
    // The typed line echoes as `"[$$]"`; only the output has `]` right before the line end.
    type_bytes(terminal, "echo \"[$$]\"\n").await;
    let seen = read_until(terminal, "]\r\n").await;
    let end = seen.rfind("]\r\n").unwrap();
    let start = seen[..end].rfind('[').unwrap();
    seen[start + 1..end].parse().expect("a shell pid")
}

/// Whether process `pid` of this machine has ended (gone, or a zombie nobody reaped yet).
pub(crate) fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}
