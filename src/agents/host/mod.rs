//! `lookout agent`: the process on a monitored host. It dials the server's
//! `/api/v1/agent/connect` with its enrolment token, says hello, reports host metrics every
//! heartbeat, and runs a PTY shell per terminal session the server opens.
//!
//! Invariants: a lost connection is retried forever with jittered exponential backoff (so a
//! fleet does not reconnect in lockstep after a server restart); a refused token (401) stops
//! the agent, since retrying cannot fix it; with `--no-shell` no process is ever spawned for
//! the server; the token is never logged.

pub mod metrics;
pub mod shell;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rand::Rng;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use super::protocol::{self, AgentMessage, ServerMessage};
use shell::ShellInput;

/// First wait after a failed connection; doubles up to `MAX_BACKOFF`.
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// With no frame from the server for this long (it pings every 25 s), reconnect.
const SERVER_SILENCE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The server's base URL (`https://lookout.example.com`).
    pub server: url::Url,
    pub token: String,
    /// The shell to run per terminal session; `None` refuses every session (`--no-shell`).
    pub shell: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the server refused the enrolment token (revoked or unknown)")]
    TokenRefused,
    #[error("the server URL must be http:// or https://, not {0}")]
    Scheme(String),
}

/// Jittered exponential backoff: each wait is drawn from the upper half of the current step.
#[derive(Debug)]
pub struct Backoff {
    step: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { step: MIN_BACKOFF }
    }
}

impl Backoff {
    pub fn next_delay(&mut self, rng: &mut impl Rng) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(MAX_BACKOFF);
        let half = step.as_millis() as u64 / 2;
        Duration::from_millis(half + rng.random_range(0..=half))
    }

    pub fn reset(&mut self) {
        self.step = MIN_BACKOFF;
    }
}

/// The websocket URL of the agent endpoint under `server`.
pub fn connect_url(server: &url::Url) -> Result<url::Url, AgentError> {
    let scheme = match server.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        other => return Err(AgentError::Scheme(other.to_string())),
    };
    let mut url = server.clone();
    url.set_scheme(scheme)
        .map_err(|()| AgentError::Scheme(server.scheme().to_string()))?;
    let base = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{base}/api/v1/agent/connect"));
    url.set_query(None);
    Ok(url)
}

/// Runs until `shutdown` resolves, or the token is refused.
pub async fn run(options: AgentOptions, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let url = connect_url(&options.server)?;
    let mut backoff = Backoff::default();
    tokio::pin!(shutdown);
    loop {
        let outcome = tokio::select! {
            outcome = connect_once(&options, &url) => outcome,
            () = &mut shutdown => return Ok(()),
        };
        match outcome {
            Ok(Session {
                welcomed: true,
                ended,
            }) => {
                tracing::warn!(reason = %ended, "connection to the server ended; reconnecting");
                backoff.reset();
            }
            Ok(Session {
                welcomed: false,
                ended,
            }) => {
                tracing::warn!(reason = %ended, "the server closed the connection before welcoming this agent");
            }
            Err(ConnectError::Refused) => return Err(AgentError::TokenRefused.into()),
            Err(ConnectError::Other(error)) => {
                tracing::warn!(%error, "cannot reach the server");
            }
        }
        let wait = backoff.next_delay(&mut rand::rng());
        tracing::info!(seconds = wait.as_secs_f64(), "reconnecting after a pause");
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = &mut shutdown => return Ok(()),
        }
    }
}

/// How one connection went.
struct Session {
    welcomed: bool,
    ended: String,
}

enum ConnectError {
    Refused,
    Other(String),
}

async fn connect_once(options: &AgentOptions, url: &url::Url) -> Result<Session, ConnectError> {
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|err| ConnectError::Other(err.to_string()))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", options.token))
        .map_err(|_| ConnectError::Other("the token is not a valid header value".into()))?;
    request.headers_mut().insert("authorization", bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(protocol::MAX_MESSAGE_BYTES))
        .max_frame_size(Some(protocol::MAX_MESSAGE_BYTES));
    let (socket, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), true)
        .await
        .map_err(|error| match error {
            tungstenite::Error::Http(response) if response.status() == 401 => ConnectError::Refused,
            other => ConnectError::Other(other.to_string()),
        })?;
    tracing::info!(server = %url, "connected");
    Ok(converse(options, socket).await)
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Speaks the protocol on an open connection until it ends.
async fn converse(options: &AgentOptions, mut socket: Socket) -> Session {
    let mut session = Session {
        welcomed: false,
        ended: String::new(),
    };
    if socket.send(text(&hello(options))).await.is_err() {
        session.ended = "the connection closed".into();
        return session;
    }
    // Shell tasks queue their frames here; bounded, so a slow link slows the PTY reads.
    let (outbox, mut queued) = mpsc::channel::<Message>(256);
    let mut shells: HashMap<u32, mpsc::Sender<ShellInput>> = HashMap::new();
    let mut sampler = Some(metrics::Sampler::default());
    let mut heartbeat = tokio::time::interval(super::model::HEARTBEAT_INTERVAL);
    let mut last_heard = Instant::now();
    session.ended = loop {
        tokio::select! {
            frame = socket.next() => {
                let message = match frame {
                    Some(Ok(message)) => message,
                    Some(Err(error)) => break error.to_string(),
                    None => break "the server closed the connection".into(),
                };
                last_heard = Instant::now();
                match message {
                    Message::Text(body) => match serde_json::from_str::<ServerMessage>(&body) {
                        Ok(ServerMessage::Welcome { agent_id, .. }) => {
                            tracing::info!(agent = %agent_id, "welcomed by the server");
                            session.welcomed = true;
                        }
                        Ok(message) => {
                            let reply = on_message(options, message, &mut shells, &outbox);
                            if let Some(reply) = reply
                                && socket.send(text(&reply)).await.is_err()
                            {
                                break "the connection closed".into();
                            }
                        }
                        Err(_) => break "the server sent an unreadable message".into(),
                    },
                    Message::Binary(frame) => {
                        let Some((id, bytes)) = protocol::decode_data(&frame) else {
                            break "the server sent a short data frame".into();
                        };
                        if let Some(shell) = shells.get(&id) {
                            // A shell that ended drops its receiver; forget it then.
                            if shell.send(ShellInput::Data(bytes.to_vec())).await.is_err() {
                                shells.remove(&id);
                            }
                        }
                    }
                    Message::Close(frame) => {
                        break frame.map_or_else(|| "closed".to_string(), |f| f.reason.to_string());
                    }
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
                }
            }
            Some(message) = queued.recv() => {
                if socket.send(message).await.is_err() {
                    break "the connection closed".into();
                }
            }
            _ = heartbeat.tick(), if session.welcomed => {
                shells.retain(|_, shell| !shell.is_closed());
                if last_heard.elapsed() > SERVER_SILENCE {
                    break "the server went silent".into();
                }
                let mut taken = sampler.take().unwrap_or_default();
                // A panicked sampler yields an empty report and a fresh sampler.
                let (returned, metrics) = tokio::task::spawn_blocking(move || {
                    let metrics = taken.sample();
                    (taken, metrics)
                })
                .await
                .unwrap_or_default();
                sampler = Some(returned);
                if socket.send(text(&AgentMessage::Heartbeat { metrics })).await.is_err() {
                    break "the connection closed".into();
                }
            }
        }
    };
    // Dropping `shells` closes every input queue: each shell task kills its child and ends.
    session
}

/// Handles a server message; returns an immediate reply, if any.
fn on_message(
    options: &AgentOptions,
    message: ServerMessage,
    shells: &mut HashMap<u32, mpsc::Sender<ShellInput>>,
    outbox: &mpsc::Sender<Message>,
) -> Option<AgentMessage> {
    match message {
        ServerMessage::Welcome { .. } | ServerMessage::Pong => None,
        ServerMessage::Ping => Some(AgentMessage::Pong),
        ServerMessage::ShellOpen {
            session,
            cols,
            rows,
        } => {
            let Some(program) = options.shell.clone() else {
                tracing::info!(session, "terminal refused: this agent runs with --no-shell");
                return Some(AgentMessage::ShellClosed {
                    session,
                    reason: "shells are disabled on this agent (--no-shell)".into(),
                });
            };
            if !protocol::valid_size(cols, rows) || shells.contains_key(&session) {
                return Some(AgentMessage::ShellClosed {
                    session,
                    reason: "invalid shell_open".into(),
                });
            }
            let (input, inputs) = mpsc::channel(64);
            shells.insert(session, input);
            tracing::info!(session, "terminal session opened");
            tokio::spawn(shell::run(
                session,
                program,
                cols,
                rows,
                inputs,
                outbox.clone(),
            ));
            None
        }
        ServerMessage::ShellResize {
            session,
            cols,
            rows,
        } => {
            if let Some(shell) = shells.get(&session) {
                let _ = shell.try_send(ShellInput::Resize { cols, rows });
            }
            None
        }
        ServerMessage::ShellClose { session } => {
            // Dropping the input queue ends the shell task, which kills the shell.
            shells.remove(&session);
            None
        }
    }
}

fn hello(options: &AgentOptions) -> AgentMessage {
    AgentMessage::Hello {
        protocol: protocol::PROTOCOL_VERSION,
        hostname: hostname(),
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        shell: options.shell.is_some(),
    }
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

fn text(message: &AgentMessage) -> Message {
    // Serialising these plain enums cannot fail; an empty text would be refused by the server.
    Message::Text(serde_json::to_string(message).unwrap_or_default().into())
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn backoff_grows_with_jitter_up_to_the_cap_and_resets() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut backoff = Backoff::default();
        let first = backoff.next_delay(&mut rng);
        assert!(first >= Duration::from_millis(500) && first <= MIN_BACKOFF);
        let waits: Vec<Duration> = (0..10).map(|_| backoff.next_delay(&mut rng)).collect();
        assert!(waits.iter().all(|wait| *wait <= MAX_BACKOFF));
        assert!(waits.last().unwrap() >= &(MAX_BACKOFF / 2));
        backoff.reset();
        assert!(backoff.next_delay(&mut rng) <= MIN_BACKOFF);
    }

    #[test]
    fn connect_urls_follow_the_server_scheme_and_path() {
        let cases = [
            (
                "http://127.0.0.1:8080",
                "ws://127.0.0.1:8080/api/v1/agent/connect",
            ),
            (
                "https://mon.example/lookout/",
                "wss://mon.example/lookout/api/v1/agent/connect",
            ),
        ];
        for (server, expected) in cases {
            let url = connect_url(&server.parse().unwrap()).unwrap();
            assert_eq!(url.as_str(), expected);
        }
        assert!(connect_url(&"ftp://x".parse().unwrap()).is_err());
    }
}
