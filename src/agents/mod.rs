//! Agents and the interactive terminal: enrolment tokens, the agent protocol and its
//! connection endpoint, the hub of live connections, single-use shell tickets and the terminal
//! relay. `host/` is the other side: `lookout agent`, run on the monitored machine.
//!
//! Invariants: the agent endpoint reads only an enrolment token (never a session or API key);
//! the terminal endpoint reads only a shell ticket, spent on first presentation; every
//! websocket task watches the shutdown signal, so stopping the server ends them all.

pub mod access;
pub mod api;
pub mod connect;
pub mod db;
pub mod ending;
pub mod history;
pub mod host;
pub mod hub;
pub mod model;
pub mod protocol;
pub mod sessions;
pub mod terminal;

use std::sync::Arc;

use tokio::sync::watch;

pub use hub::AgentHub;
pub use model::{AgentId, EnrolmentTokenId};

use crate::accounts::model::OrgId;
use crate::clock::Clock;
use crate::store::{ReadTxn, Store, StoreError};

/// The shared handle of the agents capability.
#[derive(Clone)]
pub struct Agents {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Clock,
    hub: AgentHub,
    /// `scheme://host[:port]` of BASE_URL: the only `Origin` a terminal may come from.
    base_origin: String,
    /// BASE_URL without a trailing slash, for the terminal URL handed out with a ticket.
    base_url: String,
    /// Turns true when the server begins to shut down; every websocket task watches it.
    stopping: watch::Receiver<bool>,
}

impl Agents {
    pub fn new(
        store: Store,
        clock: Clock,
        base_url: &url::Url,
        stopping: watch::Receiver<bool>,
    ) -> Self {
        Agents {
            inner: Arc::new(Inner {
                store,
                clock,
                hub: AgentHub::default(),
                base_origin: base_url.origin().ascii_serialization(),
                base_url: base_url.as_str().trim_end_matches('/').to_string(),
                stopping,
            }),
        }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    pub fn hub(&self) -> &AgentHub {
        &self.inner.hub
    }

    pub fn base_origin(&self) -> &str {
        &self.inner.base_origin
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Resolves once the server is shutting down.
    pub async fn stopped(&self) {
        let mut stopping = self.inner.stopping.clone();
        // An error means the sender is gone: the server is past shutdown, so stop too.
        let _ = stopping.wait_for(|stopping| *stopping).await;
    }
}

/// The agents of `org` enrolled with a token that is not revoked (an agent whose token was
/// revoked is no longer expected to connect), in a caller's transaction: what the agent-offline
/// alert watches.
pub fn agents_with_live_tokens(
    txn: &impl ReadTxn,
    org: &OrgId,
) -> Result<Vec<model::Agent>, StoreError> {
    let live: Vec<_> = db::tokens_of_org(txn, org)?
        .into_iter()
        .filter(|token| token.revoked_at.is_none())
        .map(|token| token.id)
        .collect();
    let mut agents = Vec::new();
    let mut after = None;
    loop {
        let page = db::agents_of_org(txn, org, after.as_ref(), 500)?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.id.clone());
        agents.extend(
            page.into_iter()
                .filter(|agent| live.contains(&agent.enrolment_token_id)),
        );
    }
    Ok(agents)
}
