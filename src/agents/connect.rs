//! `GET /api/v1/agent/connect`: an agent dials in with its enrolment token as a bearer
//! credential and speaks the agent protocol (`protocol.rs`) over the upgraded websocket.
//!
//! Invariants: only an enrolment token is read here: a session cookie is ignored and an API
//! key or JWT in the header is 401, like any unknown token. The token is checked again inside
//! the transaction that records the hello, so a revocation racing a connect wins. A connection
//! that stays silent for `SILENCE_LIMIT` is closed, which is what makes an agent offline when
//! its host vanishes without a goodbye; the record keeps `last_seen`, the hub says online.

use std::time::{Duration, Instant};

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::hub::{ShellEvent, ToAgent};
use super::model::{self, Agent, AgentId, EnrolmentToken};
use super::protocol::{self, AgentMessage, HostMetrics, ServerMessage};
use super::{Agents, db};
use crate::auth::audit::{self, Actor};
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};

/// Initial read and write buffer of one agent connection.
const AGENT_BUFFER_BYTES: usize = 4 * 1024;

/// Websocket pings keep proxies from closing an idle connection and prove the peer is there.
const PING_INTERVAL: Duration = Duration::from_secs(25);
/// How long an agent has to say hello after the upgrade.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest hostname, OS, architecture or version string accepted in a hello.
const MAX_FACT_CHARS: usize = 255;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Agents: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(connect))
}

/// The agent's websocket. Send `Authorization: Bearer <enrolment token>`; see docs/agents.md.
#[utoipa::path(get, path = "/api/v1/agent/connect", tag = "agents",
    responses((status = 101, description = "switching to the agent protocol"),
        problems::Unauthenticated))]
async fn connect(
    State(agents): State<Agents>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let token = authenticate(&agents, &headers).await?;
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::new(
            ErrorCode::InvalidParameter,
            format!("expected a websocket upgrade: {rejection}"),
        )
    })?;
    Ok(upgrade
        .max_message_size(protocol::MAX_MESSAGE_BYTES)
        .max_frame_size(protocol::MAX_MESSAGE_BYTES)
        // Agent messages are a few hundred bytes; the default 128 KiB read and write buffers
        // per connection are what held 5,000 agents' memory (about 137 KiB each). The buffers
        // still grow for a large message.
        .read_buffer_size(AGENT_BUFFER_BYTES)
        .write_buffer_size(AGENT_BUFFER_BYTES)
        .on_upgrade(move |socket| serve_agent(agents, token, socket)))
}

/// The enrolment token of the `Authorization: Bearer` header, unrevoked.
async fn authenticate(agents: &Agents, headers: &HeaderMap) -> Result<EnrolmentToken, ApiError> {
    let refused = |detail: &str| ApiError::new(ErrorCode::Unauthorized, detail.to_string());
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| refused("send Authorization: Bearer <enrolment token>"))?;
    let secret = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, secret)| secret.trim())
        .ok_or_else(|| refused("send Authorization: Bearer <enrolment token>"))?;
    let digest = crate::secrets::digest_hex(secret);
    let token = agents
        .store()
        .read(move |txn| db::TOKENS.find_live(txn, &digest))
        .await?;
    // API keys and session JWTs land on `None` too: they are not enrolment tokens.
    token.ok_or_else(|| refused("the enrolment token is unknown or revoked"))
}

/// Why a connection ends early, as the close frame tells the agent.
struct Refusal {
    code: u16,
    reason: String,
}

impl Refusal {
    fn policy(reason: impl Into<String>) -> Self {
        Refusal {
            code: 1008,
            reason: reason.into(),
        }
    }
}

async fn serve_agent(agents: Agents, token: EnrolmentToken, mut socket: WebSocket) {
    let agent = match greet(&agents, &token, &mut socket).await {
        Ok(agent) => agent,
        Err(refusal) => {
            close(&mut socket, refusal.code, &refusal.reason).await;
            return;
        }
    };
    let (connection, queue) = agents
        .hub()
        .register(&agent.id, &token.id, agent.shell_enabled);
    tracing::info!(agent = %agent.id, hostname = %agent.hostname, "agent connected");
    let welcome = ServerMessage::Welcome {
        protocol: protocol::PROTOCOL_VERSION,
        agent_id: agent.id.to_string(),
        heartbeat_seconds: model::HEARTBEAT_INTERVAL.as_secs(),
    };
    let agent_id = agent.id.clone();
    let ended = match send_json(&mut socket, &welcome).await {
        Ok(()) => relay(&agents, agent, connection, queue, &mut socket).await,
        Err(()) => "the agent went away".to_string(),
    };
    agents.hub().unregister(&agent_id, connection);
    tracing::info!(agent = %agent_id, reason = %ended, "agent disconnected");
}

/// Reads the hello and records the agent (new or returning). Returns the stored record.
async fn greet(
    agents: &Agents,
    token: &EnrolmentToken,
    socket: &mut WebSocket,
) -> Result<Agent, Refusal> {
    let first = tokio::time::timeout(HELLO_TIMEOUT, socket.recv())
        .await
        .map_err(|_| Refusal::policy("no hello in time"))?;
    let Some(Ok(Message::Text(text))) = first else {
        return Err(Refusal::policy("expected a hello message"));
    };
    let Ok(AgentMessage::Hello {
        protocol: version,
        hostname,
        os,
        arch,
        version: agent_version,
        shell,
    }) = serde_json::from_str::<AgentMessage>(&text)
    else {
        return Err(Refusal::policy("expected a hello message"));
    };
    if version != protocol::PROTOCOL_VERSION {
        return Err(Refusal {
            code: 4400,
            reason: format!("unsupported protocol version {version}"),
        });
    }
    let facts = [&hostname, &os, &arch, &agent_version];
    if hostname.trim().is_empty() || facts.iter().any(|f| f.chars().count() > MAX_FACT_CHARS) {
        return Err(Refusal::policy(
            "hello: hostname required, fields up to 255 characters",
        ));
    }
    let now = agents.clock().now();
    let token = token.clone();
    let hello = (hostname, os, arch, agent_version, shell);
    let written = agents
        .store()
        .write(move |txn| {
            // Re-read: a revocation committed since the handshake must win.
            let Some(mut current) = db::token_of_org(txn, &token.org_id, &token.id)? else {
                return Ok(None);
            };
            if current.revoked_at.is_some() {
                return Ok(None);
            }
            let (hostname, os, arch, version, shell) = hello.clone();
            let existing = db::agent_by_identity(txn, &current, &hostname)?;
            let enrolled = existing.is_none();
            let agent = Agent {
                id: existing.as_ref().map_or_else(AgentId::generate, |a| a.id.clone()),
                org_id: current.org_id.clone(),
                name: current.name.clone(),
                enrolment_token_id: current.id.clone(),
                hostname,
                os,
                arch,
                version,
                shell_enabled: shell,
                created_at: existing.as_ref().map_or(now, |a| a.created_at),
                last_seen: now,
                metrics: existing.and_then(|a| a.metrics),
            };
            db::put_agent(txn, &agent)?;
            current.last_used_at = Some(now);
            db::put_token(txn, &current)?;
            if enrolled {
                let detail = serde_json::json!({"hostname": agent.hostname, "enrolment_token_id": current.id});
                audit::record(txn, Some(&agent.org_id), &Actor::default(), "agent.enrolled", Some(agent.id.as_str()), detail, now)?;
            }
            Ok::<_, crate::store::StoreError>(Some(agent))
        })
        .await;
    match written {
        Ok(Some(agent)) => Ok(agent),
        Ok(None) => Err(Refusal::policy("the enrolment token was revoked")),
        Err(error) => {
            tracing::warn!(%error, "cannot record an agent's hello");
            Err(Refusal {
                code: 1011,
                reason: "the server cannot store the agent right now".into(),
            })
        }
    }
}

/// Relays between the agent and the hub until either side ends; returns why it ended.
async fn relay(
    agents: &Agents,
    mut agent: Agent,
    connection: u64,
    mut queue: tokio::sync::mpsc::Receiver<ToAgent>,
    socket: &mut WebSocket,
) -> String {
    let mut ping = tokio::time::interval(PING_INTERVAL);
    let mut silence = tokio::time::interval(Duration::from_secs(5));
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            frame = socket.recv() => {
                let message = match frame {
                    Some(Ok(message)) => message,
                    Some(Err(_)) | None => return "the connection closed".into(),
                };
                last_heard = Instant::now();
                let outcome = match message {
                    Message::Text(text) => match serde_json::from_str::<AgentMessage>(&text) {
                        Ok(message) => on_message(agents, &mut agent, connection, message, socket).await,
                        Err(_) => Err(Refusal::policy("unreadable message")),
                    },
                    Message::Binary(frame) => on_data(agents, &agent, connection, &frame).await,
                    Message::Ping(_) | Message::Pong(_) => Ok(()),
                    Message::Close(_) => return "the agent closed the connection".into(),
                };
                if let Err(refusal) = outcome {
                    close(socket, refusal.code, &refusal.reason).await;
                    return refusal.reason;
                }
            }
            queued = queue.recv() => {
                let sent = match queued {
                    Some(ToAgent::Control(message)) => send_json(socket, &message).await,
                    Some(ToAgent::Data { session, bytes }) => {
                        let frame = protocol::encode_data(session, &bytes);
                        socket.send(Message::Binary(frame.into())).await.map_err(|_| ())
                    }
                    Some(ToAgent::Disconnect(reason)) => {
                        close(socket, 4001, reason).await;
                        return reason.to_string();
                    }
                    None => return "the hub let go of the connection".into(),
                };
                if sent.is_err() {
                    return "the connection closed".into();
                }
            }
            _ = ping.tick() => {
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    return "the connection closed".into();
                }
            }
            _ = silence.tick() => {
                if model::silent_too_long(last_heard, Instant::now()) {
                    close(socket, 4002, "missed heartbeats").await;
                    return "missed heartbeats".into();
                }
            }
            () = agents.stopped() => {
                close(socket, 1001, "the server is shutting down").await;
                return "the server is shutting down".into();
            }
        }
    }
}

async fn on_message(
    agents: &Agents,
    agent: &mut Agent,
    connection: u64,
    message: AgentMessage,
    socket: &mut WebSocket,
) -> Result<(), Refusal> {
    match message {
        AgentMessage::Hello { .. } => Err(Refusal::policy("hello sent twice")),
        AgentMessage::Heartbeat { metrics } => record_heartbeat(agents, agent, metrics).await,
        AgentMessage::ShellOpened { session } => {
            forward(agents, agent, connection, session, ShellEvent::Opened).await;
            Ok(())
        }
        AgentMessage::ShellClosed { session, reason } => {
            forward(
                agents,
                agent,
                connection,
                session,
                ShellEvent::Closed(reason),
            )
            .await;
            agents.hub().end_session(&agent.id, session);
            Ok(())
        }
        AgentMessage::Ping => send_json(socket, &ServerMessage::Pong)
            .await
            .map_err(|()| Refusal::policy("the connection closed")),
        AgentMessage::Pong => Ok(()),
    }
}

/// Stores the heartbeat's figures and the time it arrived, and the figures as the history point
/// of this minute.
async fn record_heartbeat(
    agents: &Agents,
    agent: &mut Agent,
    metrics: HostMetrics,
) -> Result<(), Refusal> {
    let now = agents.clock().now();
    agent.last_seen = now;
    agent.metrics = Some(metrics.clone());
    let stored = agent.clone();
    let point = model::MetricPoint { at: now, metrics };
    let keep_from = model::metric_history_start(now);
    if let Err(error) = agents
        .store()
        .write(move |txn| {
            db::put_agent(txn, &stored)?;
            db::record_metric_point(txn, &stored.org_id, &stored.id, &point, keep_from)
        })
        .await
    {
        // The agent is still connected; the next heartbeat tries again.
        tracing::warn!(%error, agent = %agent.id, "cannot record a heartbeat");
    }
    Ok(())
}

/// Terminal bytes from the agent, for the terminal of their session.
async fn on_data(
    agents: &Agents,
    agent: &Agent,
    connection: u64,
    frame: &[u8],
) -> Result<(), Refusal> {
    let (session, bytes) =
        protocol::decode_data(frame).ok_or_else(|| Refusal::policy("short data frame"))?;
    forward(
        agents,
        agent,
        connection,
        session,
        ShellEvent::Data(bytes.to_vec()),
    )
    .await;
    Ok(())
}

/// Hands `event` to the terminal of `session`, waiting while its queue is full (back-pressure
/// to the agent). A session nobody listens to any more is told to close.
async fn forward(agents: &Agents, agent: &Agent, connection: u64, session: u32, event: ShellEvent) {
    let delivered = match agents.hub().session_sender(&agent.id, connection, session) {
        Some(sender) => sender.send(event).await.is_ok(),
        None => false,
    };
    if !delivered {
        agents.hub().end_session(&agent.id, session);
    }
}

async fn send_json(socket: &mut WebSocket, message: &ServerMessage) -> Result<(), ()> {
    let text = serde_json::to_string(message).map_err(|_| ())?;
    socket
        .send(Message::Text(text.into()))
        .await
        .map_err(|_| ())
}

async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: reason.to_string().into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}
