//! Shell tickets and the terminal websocket: `POST /api/v1/agents/{id}/shell/ticket` mints a
//! single-use ticket for an admin; `GET /api/v1/agents/{id}/shell?ticket=…` spends it and
//! relays the browser's terminal to a PTY on the agent, through the hub.
//!
//! Invariants: a browser cannot send headers on a websocket, so the ticket, not a session, is
//! the credential, and it is bound to the user, organisation and agent it was minted for; it
//! is stored as a SHA-256 digest and removed in the same transaction that checks it, so two
//! concurrent presentations cannot both win. The `Origin` check runs before the ticket is
//! touched, so a cross-site attempt does not burn it. Redemption checks the user's rights as
//! they are then (still an admin of the organisation, not logged out everywhere since the
//! ticket was minted), and a running terminal closes as soon as that user is logged out
//! everywhere (`access::AccessWatch`). Every session is audited when it starts
//! and when it ends (who, agent, duration, bytes each way, why), and its `ShellSession` row is
//! written in those same two transactions, so the session list and the audit log agree. How a
//! session ended, and what its close frame tells the browser, is `ending::TerminalEnd`.

use std::time::Instant;

use axum::Json;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::{AccessWatch, Subscription};
use super::ending::TerminalEnd;
use super::hub::{ShellEvent, ToAgent};
use super::model::{self, Agent, AgentId, ShellSession, ShellSessionId, ShellTicket};
use super::protocol::{self, ServerMessage, TerminalControl};
use super::{Agents, db};
use crate::accounts;
use crate::auth::audit::{self, Actor};
use crate::auth::{Admin, Auth};
use crate::http::error::Problem;
use crate::http::extract::ClientAddr;
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};
use crate::store::StoreError;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Agents: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(create_ticket))
        .routes(routes!(open_terminal))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ShellTicketResponse {
    /// 32 random bytes, base64url: spend it within 30 s on `url`.
    pub ticket: String,
    pub expires_at: String,
    /// The terminal websocket with the ticket in its query string.
    pub url: String,
}

/// Mints a single-use ticket for the terminal websocket of an agent.
#[utoipa::path(post, path = "/api/v1/agents/{id}/shell/ticket", tag = "agents",
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = ShellTicketResponse),
        problems::NotFound))]
async fn create_ticket(
    State(agents): State<Agents>,
    Admin(caller): Admin,
    Path(id): Path<String>,
) -> Result<Json<ShellTicketResponse>, ApiError> {
    // A shell is opened by a person at a browser: the contract asks for a session, so an API
    // key (a program) cannot mint tickets even with the admin role.
    if caller.session().is_none() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "shell tickets are minted from a signed-in session, not with an API key",
        ));
    }
    let agent = super::api::find_agent(&agents, &caller.org_id, &id).await?;
    let secret = crate::secrets::random_token();
    let digest = crate::secrets::digest_hex(&secret);
    let expires_at = agents.clock().now().plus(model::TICKET_LIFETIME);
    let ticket = ShellTicket {
        user_id: caller.user_id.clone(),
        org_id: caller.org_id.clone(),
        agent_id: agent.id.clone(),
        expires_at,
    };
    let now = agents.clock().now();
    agents
        .store()
        .write(move |txn| {
            // Tickets nobody spent would pile up: each mint sweeps the expired ones.
            db::remove_expired_tickets(txn, now)?;
            db::insert_ticket(txn, &digest, &ticket)
        })
        .await?;
    let base = agents.base_url();
    let scheme_less = base
        .strip_prefix("https://")
        .map(|rest| format!("wss://{rest}"))
        .or_else(|| {
            base.strip_prefix("http://")
                .map(|rest| format!("ws://{rest}"))
        })
        .unwrap_or_else(|| base.to_string());
    Ok(Json(ShellTicketResponse {
        url: format!(
            "{scheme_less}/api/v1/agents/{}/shell?ticket={secret}",
            agent.id
        ),
        ticket: secret,
        expires_at: expires_at.to_rfc3339(),
    }))
}

/// The terminal websocket: binary frames are terminal bytes both ways, text frames are JSON
/// control messages (`{"type":"resize","cols","rows"}`).
#[utoipa::path(get, path = "/api/v1/agents/{id}/shell", tag = "agents",
    params(("id" = String, Path, description = "agent id"),
        ("ticket" = String, Query, description = "a ticket from POST /api/v1/agents/{id}/shell/ticket")),
    responses((status = 101, description = "switching to the terminal"),
        (status = 401, description = "used, expired or foreign ticket, or its user is no longer an admin here or was logged out everywhere", body = Problem, content_type = "application/problem+json"),
        problems::Forbidden))]
async fn open_terminal(
    State(agents): State<Agents>,
    State(auth): State<Auth>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    ClientAddr(client): ClientAddr,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let origin = headers.get(header::ORIGIN);
    if origin.is_some_and(|origin| origin.as_bytes() != agents.base_origin().as_bytes()) {
        return Err(ApiError::new(
            ErrorCode::ForbiddenOrigin,
            "the terminal opens only from this server's own pages",
        ));
    }
    // Subscribed before the ticket is checked: no logout can fall between check and relay.
    let subscription = Subscription::start(&auth);
    let (ticket, agent) = redeem_ticket(&agents, &subscription, &id, query.as_deref()).await?;
    let watch = subscription.watch(ticket.user_id.clone(), ticket.issued_at());
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::new(
            ErrorCode::InvalidParameter,
            format!("expected a websocket upgrade: {rejection}"),
        )
    })?;
    let actor = Actor {
        user_id: Some(ticket.user_id.clone()),
        email: None,
        ip: Some(client.to_string()),
    };
    let record = ShellSession {
        id: ShellSessionId::generate(),
        org_id: agent.org_id.clone(),
        agent_id: agent.id.clone(),
        user_id: ticket.user_id,
        ip: actor.ip.clone(),
        started_at: agents.clock().now(),
        ended_at: None,
        bytes_to_shell: 0,
        bytes_from_shell: 0,
        reason: None,
    };
    Ok(upgrade
        .max_message_size(protocol::MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| serve_terminal(agents, agent, actor, record, watch, socket)))
}

/// Spends the ticket of `query` and returns it with its agent, or `401 invalid_ticket`.
async fn redeem_ticket(
    agents: &Agents,
    subscription: &Subscription,
    id: &str,
    query: Option<&str>,
) -> Result<(ShellTicket, Agent), ApiError> {
    let invalid = || {
        ApiError::new(
            ErrorCode::InvalidTicket,
            "the shell ticket is unknown, used, expired or for another agent, or its user may no \
             longer open terminals here",
        )
    };
    let secret = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(name, _)| name == "ticket")
        .map(|(_, value)| value.into_owned())
        .ok_or_else(invalid)?;
    let digest = crate::secrets::digest_hex(&secret);
    let now = agents.clock().now();
    // The role is read in the transaction that spends the ticket: a role change or removal
    // committed before it is seen, one committed after it is heard by the relay.
    let (taken, role) = agents
        .store()
        .write(move |txn| {
            let taken = db::take_ticket(txn, &digest)?;
            let role = match &taken {
                Some(ticket) => accounts::get_membership(txn, &ticket.org_id, &ticket.user_id)?
                    .map(|membership| membership.role),
                None => None,
            };
            Ok::<_, StoreError>((taken, role))
        })
        .await?;
    let agent_id = AgentId::parse(id).map_err(|_| invalid())?;
    let checked = model::redeem(taken.as_ref(), &agent_id, now).and_then(|()| {
        let ticket = taken.as_ref().ok_or(model::TicketRefusal::UnknownOrUsed)?;
        let revoked = subscription.cut_off(&ticket.user_id, ticket.issued_at());
        model::holder_may_open(role, revoked)
    });
    if let Err(refusal) = checked {
        tracing::info!(agent = %agent_id, ?refusal, "shell ticket refused");
        return Err(invalid());
    }
    let ticket = taken.ok_or_else(invalid)?;
    let org = ticket.org_id.clone();
    let agent = agents
        .store()
        .read(move |txn| db::agent_of_org(txn, &org, &agent_id))
        .await?
        .ok_or_else(invalid)?;
    Ok((ticket, agent))
}

/// Totals of one terminal session, for its audit entry.
#[derive(Default)]
struct Traffic {
    to_shell: u64,
    from_shell: u64,
}

async fn serve_terminal(
    agents: Agents,
    agent: Agent,
    actor: Actor,
    mut record: ShellSession,
    watch: AccessWatch,
    mut socket: WebSocket,
) {
    let link = match agents.hub().open_session(&agent.id) {
        Ok(link) => link,
        Err(refusal) => {
            close(&mut socket, &TerminalEnd::from(refusal)).await;
            return;
        }
    };
    let session = link.session;
    let started = Instant::now();
    let detail =
        json!({"session": session, "shell_session": record.id, "hostname": agent.hostname});
    let started_event = ("agent.shell.started", detail);
    if let Err(error) = write_audit(&agents, &actor, started_event, &record).await {
        // A session that cannot be audited does not run.
        tracing::warn!(%error, "cannot audit a shell session; refusing it");
        agents.hub().end_session(&agent.id, session);
        close(&mut socket, &TerminalEnd::NotRecorded).await;
        return;
    }
    let open = ServerMessage::ShellOpen {
        session,
        cols: 80,
        rows: 24,
    };
    let mut traffic = Traffic::default();
    let end = if link.to_agent.send(ToAgent::Control(open)).await.is_err() {
        TerminalEnd::AgentGone("the agent disconnected".to_string())
    } else {
        relay(&agents, link, watch, &mut socket, &mut traffic).await
    };
    close(&mut socket, &end).await;
    let reason = end.recorded_reason();
    agents.hub().end_session(&agent.id, session);
    record.ended_at = Some(agents.clock().now());
    record.bytes_to_shell = traffic.to_shell;
    record.bytes_from_shell = traffic.from_shell;
    record.reason = Some(reason.clone());
    let detail = json!({
        "session": session,
        "shell_session": record.id,
        "hostname": agent.hostname,
        "duration_ms": started.elapsed().as_millis() as u64,
        "bytes_to_shell": traffic.to_shell,
        "bytes_from_shell": traffic.from_shell,
        "reason": reason,
    });
    let ended_event = ("agent.shell.ended", detail);
    if let Err(error) = write_audit(&agents, &actor, ended_event, &record).await {
        tracing::warn!(%error, "cannot audit the end of a shell session");
    }
}

/// Relays until the browser or the shell ends; returns why (the caller closes the websocket).
async fn relay(
    agents: &Agents,
    mut link: super::hub::SessionLink,
    mut watch: AccessWatch,
    socket: &mut WebSocket,
    traffic: &mut Traffic,
) -> TerminalEnd {
    let session = link.session;
    let to_agent = link.to_agent.clone();
    let agent_gone = || TerminalEnd::AgentGone("the agent disconnected".to_string());
    let end = loop {
        tokio::select! {
            frame = socket.recv() => {
                let message = match frame {
                    Some(Ok(message)) => message,
                    Some(Err(_)) | None => break TerminalEnd::BrowserLeft("the browser disconnected"),
                };
                let queued = match message {
                    Message::Binary(bytes) => {
                        traffic.to_shell += bytes.len() as u64;
                        ToAgent::Data { session, bytes: bytes.to_vec() }
                    }
                    Message::Text(text) => match serde_json::from_str::<TerminalControl>(&text) {
                        Ok(TerminalControl::Resize { cols, rows }) if protocol::valid_size(cols, rows) => {
                            ToAgent::Control(ServerMessage::ShellResize { session, cols, rows })
                        }
                        _ => break TerminalEnd::BadControl,
                    },
                    Message::Ping(_) | Message::Pong(_) => continue,
                    Message::Close(_) => break TerminalEnd::BrowserLeft("the browser closed the terminal"),
                };
                // Waits while the agent's queue is full: back-pressure to the browser.
                if to_agent.send(queued).await.is_err() {
                    break agent_gone();
                }
            }
            event = link.events.recv() => match event {
                Some(ShellEvent::Opened) => {}
                Some(ShellEvent::Data(bytes)) => {
                    traffic.from_shell += bytes.len() as u64;
                    if socket.send(Message::Binary(bytes.into())).await.is_err() {
                        break TerminalEnd::BrowserLeft("the browser disconnected");
                    }
                }
                // The agent already ended this shell: nothing to tell it.
                Some(ShellEvent::Closed(reason)) => return TerminalEnd::ShellExited(reason),
                Some(ShellEvent::AgentGone(reason)) => return TerminalEnd::AgentGone(reason),
                None => break agent_gone(),
            },
            () = watch.revoked() => break TerminalEnd::AccessRevoked,
            () = agents.stopped() => break TerminalEnd::ServerStopping,
        }
    };
    // The shell outlives no terminal: tell the agent to end it.
    let _ = to_agent.try_send(ToAgent::Control(ServerMessage::ShellClose { session }));
    end
}

/// Writes the audit event `(action, detail)` and the session row `record` in one transaction.
async fn write_audit(
    agents: &Agents,
    actor: &Actor,
    (action, detail): (&'static str, serde_json::Value),
    record: &ShellSession,
) -> Result<(), StoreError> {
    let (org, target) = (record.org_id.clone(), record.agent_id.to_string());
    let (actor, record) = (actor.clone(), record.clone());
    let now = agents.clock().now();
    agents
        .store()
        .write(move |txn| {
            db::put_shell_session(txn, &record)?;
            audit::record(
                txn,
                Some(&org),
                &actor,
                action,
                Some(&target),
                detail.clone(),
                now,
            )
        })
        .await
}

/// Tells the browser why the terminal ended, when it is still there to hear it.
async fn close(socket: &mut WebSocket, end: &TerminalEnd) {
    let Some(code) = end.close_code() else {
        return;
    };
    let frame = CloseFrame {
        code,
        reason: end.close_reason().into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}
