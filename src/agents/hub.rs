//! `AgentHub`: which agents are connected right now, and the terminal sessions relayed through
//! each connection. Memory only: the store knows agents, the hub knows links.
//!
//! Invariants: at most one link per agent (a reconnect replaces the old link and tells it to
//! go); a session id is unique for the life of the process, so a late frame of an ended session
//! can never reach a new one; the lock is a std mutex held for map operations only, never
//! across an `.await` (senders are cloned out, then used). Channels are bounded, so a slow
//! browser slows the agent's reads of its PTY instead of growing a queue (back-pressure).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::model::{AgentId, EnrolmentTokenId};
use super::protocol::ServerMessage;

/// Frames queued for one agent connection.
const AGENT_QUEUE: usize = 256;
/// Events queued for one terminal.
const SESSION_QUEUE: usize = 64;

/// What the hub asks an agent's connection task to send or do.
#[derive(Debug)]
pub enum ToAgent {
    Control(ServerMessage),
    Data {
        session: u32,
        bytes: Vec<u8>,
    },
    /// Close the connection (replaced by a newer one, or its token was revoked).
    Disconnect(&'static str),
}

/// What a terminal hears from its shell.
#[derive(Debug)]
pub enum ShellEvent {
    Opened,
    Data(Vec<u8>),
    /// The shell ended on the agent, in the agent's words.
    Closed(String),
    /// The agent's connection ended (or was replaced) under the session.
    AgentGone(String),
}

/// Why a terminal cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenRefusal {
    #[error("the agent is offline")]
    Offline,
    #[error("the agent runs with --no-shell")]
    ShellDisabled,
}

/// A terminal's end of a relayed session.
pub struct SessionLink {
    pub session: u32,
    pub events: mpsc::Receiver<ShellEvent>,
    pub to_agent: mpsc::Sender<ToAgent>,
}

struct Link {
    connection: u64,
    token: EnrolmentTokenId,
    shell_enabled: bool,
    outbox: mpsc::Sender<ToAgent>,
    sessions: HashMap<u32, mpsc::Sender<ShellEvent>>,
}

#[derive(Clone, Default)]
pub struct AgentHub {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    links: Mutex<HashMap<AgentId, Link>>,
    next_connection: AtomicU64,
    next_session: AtomicU32,
}

impl AgentHub {
    fn links(&self) -> MutexGuard<'_, HashMap<AgentId, Link>> {
        self.inner
            .links
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a new connection of `agent`; returns its number and the queue it must send.
    pub fn register(
        &self,
        agent: &AgentId,
        token: &EnrolmentTokenId,
        shell_enabled: bool,
    ) -> (u64, mpsc::Receiver<ToAgent>) {
        let connection = self.inner.next_connection.fetch_add(1, Ordering::Relaxed);
        let (outbox, queue) = mpsc::channel(AGENT_QUEUE);
        let link = Link {
            connection,
            token: token.clone(),
            shell_enabled,
            outbox,
            sessions: HashMap::new(),
        };
        if let Some(old) = self.links().insert(agent.clone(), link) {
            close_link(old, "the agent connected again");
        }
        (connection, queue)
    }

    /// Forgets `connection` of `agent` (a newer connection is left alone) and ends its sessions.
    pub fn unregister(&self, agent: &AgentId, connection: u64) {
        let mut links = self.links();
        if links.get(agent).is_none_or(|l| l.connection != connection) {
            return;
        }
        if let Some(link) = links.remove(agent) {
            drop(links);
            for (_, session) in link.sessions {
                let _ = session.try_send(ShellEvent::AgentGone("the agent disconnected".into()));
            }
        }
    }

    pub fn is_online(&self, agent: &AgentId) -> bool {
        self.links().contains_key(agent)
    }

    /// Asks every connection enrolled with `token` to close (the token was revoked).
    pub fn disconnect_token(&self, token: &EnrolmentTokenId) {
        for link in self.links().values().filter(|link| &link.token == token) {
            let _ = link
                .outbox
                .try_send(ToAgent::Disconnect("enrolment token revoked"));
        }
    }

    /// Starts relaying a new terminal session to `agent`.
    pub fn open_session(&self, agent: &AgentId) -> Result<SessionLink, OpenRefusal> {
        let mut links = self.links();
        let link = links.get_mut(agent).ok_or(OpenRefusal::Offline)?;
        if !link.shell_enabled {
            return Err(OpenRefusal::ShellDisabled);
        }
        let session = self.inner.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        let (sender, events) = mpsc::channel(SESSION_QUEUE);
        link.sessions.insert(session, sender);
        Ok(SessionLink {
            session,
            events,
            to_agent: link.outbox.clone(),
        })
    }

    /// Where events of `session` on `agent`'s connection go, if the session is live.
    pub fn session_sender(
        &self,
        agent: &AgentId,
        connection: u64,
        session: u32,
    ) -> Option<mpsc::Sender<ShellEvent>> {
        let links = self.links();
        let link = links.get(agent).filter(|l| l.connection == connection)?;
        link.sessions.get(&session).cloned()
    }

    /// Forgets a session (the terminal left or the shell ended).
    pub fn end_session(&self, agent: &AgentId, session: u32) {
        if let Some(link) = self.links().get_mut(agent) {
            link.sessions.remove(&session);
        }
    }

    /// How many agents are connected (for metrics and benchmarks).
    pub fn connected(&self) -> usize {
        self.links().len()
    }
}

fn close_link(link: Link, reason: &'static str) {
    let _ = link.outbox.try_send(ToAgent::Disconnect(reason));
    for (_, session) in link.sessions {
        let _ = session.try_send(ShellEvent::AgentGone(reason.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconnect_replaces_the_link_and_the_old_one_cannot_unregister_it() {
        let hub = AgentHub::default();
        let (agent, token) = (AgentId::generate(), EnrolmentTokenId::generate());
        let (first, mut first_queue) = hub.register(&agent, &token, true);
        let (second, _queue) = hub.register(&agent, &token, true);
        assert!(matches!(first_queue.try_recv(), Ok(ToAgent::Disconnect(_))));
        hub.unregister(&agent, first);
        assert!(hub.is_online(&agent));
        hub.unregister(&agent, second);
        assert!(!hub.is_online(&agent));
    }

    #[test]
    fn sessions_need_a_connected_agent_with_shells_enabled() {
        let hub = AgentHub::default();
        let (agent, token) = (AgentId::generate(), EnrolmentTokenId::generate());
        assert_eq!(hub.open_session(&agent).err(), Some(OpenRefusal::Offline));
        let (connection, _queue) = hub.register(&agent, &token, false);
        assert_eq!(
            hub.open_session(&agent).err(),
            Some(OpenRefusal::ShellDisabled)
        );
        hub.register(&agent, &token, true);
        let link = hub.open_session(&agent).unwrap();
        assert!(
            hub.session_sender(&agent, connection, link.session)
                .is_none()
        );
        let again = hub.open_session(&agent).unwrap();
        assert_ne!(link.session, again.session);
    }
}
