//! Typed table access for enrolment tokens, agents and shell tickets. Every function takes the
//! transaction first, so a change and its audit entry commit together.
//!
//! Invariants: a token has one row in `ENROLMENT_TOKENS` and one in `ENROLMENT_TOKEN_DIGESTS`,
//! written together; an agent has one row in `AGENTS` and one in `AGENT_IDENTITIES`; a shell
//! ticket leaves the store in the transaction that redeems it, whatever the outcome; a shell
//! session row is written in the same transactions as its start and end audit events; an agent's
//! metric history holds one point per minute, and a write prunes that agent's points before
//! `keep_from`.

use redb::WriteTransaction;

use super::model::{
    Agent, AgentId, EnrolmentToken, EnrolmentTokenId, MetricPoint, ShellSession, ShellSessionId,
    ShellTicket,
};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::tables::{self, composite_key, owner_prefix};
use crate::store::{IndexTable, ReadTxn, RecordTable, Scan, SecretTable, StoreError};

/// Enrolment tokens and their digests (created, listed and revoked by `auth::token_flow`).
pub static TOKENS: SecretTable<EnrolmentToken> =
    SecretTable::new(tables::ENROLMENT_TOKENS, tables::ENROLMENT_TOKEN_DIGESTS);
const AGENTS: RecordTable<Agent> = RecordTable::new(tables::AGENTS);
const IDENTITIES: IndexTable = IndexTable::new(tables::AGENT_IDENTITIES);
const TICKETS: RecordTable<ShellTicket> = RecordTable::new(tables::SHELL_TICKETS);
const SESSIONS: RecordTable<ShellSession> = RecordTable::new(tables::SHELL_SESSIONS);
const METRICS: RecordTable<MetricPoint> = RecordTable::new(tables::AGENT_METRICS);

crate::store::secret_record!(EnrolmentToken);

pub fn put_token(txn: &WriteTransaction, token: &EnrolmentToken) -> Result<(), StoreError> {
    TOKENS.put(txn, token)
}

pub fn token_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &EnrolmentTokenId,
) -> Result<Option<EnrolmentToken>, StoreError> {
    TOKENS.get(txn, org.as_str(), id.as_str())
}

pub fn tokens_of_org(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<EnrolmentToken>, StoreError> {
    TOKENS.list(txn, org.as_str())
}

pub fn put_agent(txn: &WriteTransaction, agent: &Agent) -> Result<(), StoreError> {
    let key = composite_key(agent.org_id.as_str(), agent.id.as_str());
    AGENTS.insert(txn, &key, agent)?;
    let identity = composite_key(agent.enrolment_token_id.as_str(), &agent.hostname);
    IDENTITIES.insert(txn, &identity, agent.id.as_str())
}

pub fn agent_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &AgentId,
) -> Result<Option<Agent>, StoreError> {
    AGENTS.get(txn, &composite_key(org.as_str(), id.as_str()))
}

/// One page of an organisation's agents in id (creation) order, after `after` when given.
pub fn agents_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&AgentId>,
    limit: usize,
) -> Result<Vec<Agent>, StoreError> {
    AGENTS.page_of_owner(txn, org.as_str(), after.map(|id| id.as_str()), limit)
}

/// The agent that `token`'s host `hostname` enrolled as before, if any.
pub fn agent_by_identity(
    txn: &impl ReadTxn,
    token: &EnrolmentToken,
    hostname: &str,
) -> Result<Option<Agent>, StoreError> {
    let identity = composite_key(token.id.as_str(), hostname);
    let Some(id) = IDENTITIES.get(txn, &identity)? else {
        return Ok(None);
    };
    let id = AgentId::parse(&id).map_err(|err| StoreError::Corrupt {
        what: "agent identity index",
        detail: err.to_string(),
    })?;
    agent_of_org(txn, &token.org_id, &id)
}

pub fn insert_ticket(
    txn: &WriteTransaction,
    digest: &str,
    ticket: &ShellTicket,
) -> Result<(), StoreError> {
    TICKETS.insert(txn, digest, ticket)
}

/// Removes and returns the ticket with `digest`: presenting a ticket spends it.
pub fn take_ticket(
    txn: &WriteTransaction,
    digest: &str,
) -> Result<Option<ShellTicket>, StoreError> {
    let ticket = TICKETS.get(txn, digest)?;
    if ticket.is_some() {
        TICKETS.remove(txn, digest)?;
    }
    Ok(ticket)
}

/// Removes tickets that expired before `now` and were never presented.
pub fn remove_expired_tickets(txn: &WriteTransaction, now: Timestamp) -> Result<usize, StoreError> {
    let expired: Vec<String> = TICKETS
        .scan(txn, Scan::all())?
        .into_iter()
        .filter(|(_, ticket)| ticket.expires_at <= now)
        .map(|(digest, _)| digest)
        .collect();
    for digest in &expired {
        TICKETS.remove(txn, digest)?;
    }
    Ok(expired.len())
}

fn shell_session_key(org: &OrgId, agent: &AgentId, id: &ShellSessionId) -> String {
    composite_key(&composite_key(org.as_str(), agent.as_str()), id.as_str())
}

/// Inserts or replaces a shell session row (at its start, then with its end).
pub fn put_shell_session(txn: &WriteTransaction, session: &ShellSession) -> Result<(), StoreError> {
    let key = shell_session_key(&session.org_id, &session.agent_id, &session.id);
    SESSIONS.insert(txn, &key, session)
}

/// One page of an agent's shell sessions, newest first, older than `before` when given;
/// session ids are ULIDs, so key order under one agent is start order.
pub fn shell_sessions_newest_first(
    txn: &redb::ReadTransaction,
    org: &OrgId,
    agent: &AgentId,
    before: Option<&ShellSessionId>,
    limit: usize,
) -> Result<Vec<ShellSession>, StoreError> {
    let owner = composite_key(org.as_str(), agent.as_str());
    let start = owner_prefix(&owner);
    // Keys of this agent are `{org}/{agent}/…`; `0` is the character right after `/`, so
    // `{org}/{agent}0` is the first key past them.
    let end = match before {
        Some(id) => shell_session_key(org, agent, id),
        None => format!("{owner}0"),
    };
    let mut sessions = Vec::new();
    crate::store::walk_backwards(
        txn,
        SESSIONS.definition(),
        (&start, &end),
        crate::store::WalkBounds::rows(limit),
        |_, value| {
            sessions.push(crate::store::codec::decode::<ShellSession>(value)?);
            Ok::<_, StoreError>(true)
        },
    )?;
    Ok(sessions)
}

/// The key of an agent's metric point at `at` (already a step start): 20-digit milliseconds, so
/// key order under one agent is time order.
fn metric_key(org: &OrgId, agent: &AgentId, at: Timestamp) -> String {
    let owner = composite_key(org.as_str(), agent.as_str());
    composite_key(&owner, &format!("{:020}", at.0.max(0)))
}

/// Stores `point` as the figures of its minute (a later heartbeat of the same minute replaces
/// it) and removes the agent's points from before `keep_from`.
pub fn record_metric_point(
    txn: &WriteTransaction,
    org: &OrgId,
    agent: &AgentId,
    point: &MetricPoint,
    keep_from: Timestamp,
) -> Result<(), StoreError> {
    let at = super::model::metric_step_start(point.at);
    METRICS.insert(txn, &metric_key(org, agent, at), point)?;
    let (first, stale_end) = (
        metric_key(org, agent, Timestamp(0)),
        metric_key(org, agent, keep_from),
    );
    let mut table = txn.open_table(METRICS.definition())?;
    table.retain_in::<&str, _>(first.as_str()..stale_end.as_str(), |_, _| false)?;
    Ok(())
}

/// The agent's metric points with `from <= at < to`, oldest first.
pub fn metric_points(
    txn: &redb::ReadTransaction,
    org: &OrgId,
    agent: &AgentId,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<MetricPoint>, StoreError> {
    let (start, end) = (metric_key(org, agent, from), metric_key(org, agent, to));
    if start >= end {
        return Ok(Vec::new());
    }
    let table = txn.open_table(METRICS.definition())?;
    let mut points = Vec::new();
    for entry in table.range::<&str>(start.as_str()..end.as_str())? {
        let (_, value) = entry?;
        points.push(crate::store::codec::decode::<MetricPoint>(value.value())?);
    }
    Ok(points)
}
