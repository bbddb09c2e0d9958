//! Stored records of agents, enrolment tokens, shell tickets and shell sessions, and the pure
//! rules over them: when a ticket may be redeemed, and how long an agent may stay silent.
//!
//! Invariants: no secret is ever stored, only its SHA-256 digest (the token or ticket itself
//! exists in one HTTP response and on the holder's side); a ticket is bound to one user, one
//! organisation and one agent, and works once, before `expires_at`, while its user is still an
//! admin of that organisation and has not been logged out everywhere since it was minted.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::protocol::HostMetrics;
use crate::accounts::model::{OrgId, Role, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// An agent (`agt_…`): one host enrolled with one enrolment token.
    AgentId,
    "agt_"
);
crate::typed_id!(
    /// An agent enrolment token (`tok_…`).
    EnrolmentTokenId,
    "tok_"
);
crate::typed_id!(
    /// One terminal session on an agent (`shs_…`); ULIDs, so id order is start order.
    ShellSessionId,
    "shs_"
);

/// How often an agent reports; the protocol's heartbeat.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(15);
/// Silence after which an agent counts as gone: three missed heartbeats.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(45);
/// How long a shell ticket may wait before it is redeemed.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(30);
/// How far back an agent's host metric history reaches; older points are pruned.
pub const METRIC_HISTORY: Duration = Duration::from_secs(24 * 3600);
/// The history keeps one point per step: the last heartbeat of each minute.
pub const METRIC_STEP: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnrolmentToken {
    pub id: EnrolmentTokenId,
    pub org_id: OrgId,
    pub name: String,
    pub created_by: UserId,
    pub created_at: Timestamp,
    /// When an agent last connected with it.
    pub last_used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

impl Record for EnrolmentToken {
    const KIND: &'static str = "enrolment_token";
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Agent {
    pub id: AgentId,
    pub org_id: OrgId,
    /// The enrolment token's name: what the admin called the host when enrolling it.
    pub name: String,
    pub enrolment_token_id: EnrolmentTokenId,
    pub hostname: String,
    pub os: String,
    pub arch: String,
    /// The agent's own version (`lookout agent` reports its package version).
    pub version: String,
    /// Whether the agent accepts terminal sessions (`--no-shell` says no).
    pub shell_enabled: bool,
    pub created_at: Timestamp,
    pub last_seen: Timestamp,
    pub metrics: Option<HostMetrics>,
}

impl Record for Agent {
    const KIND: &'static str = "agent";
}

/// One point of an agent's host metric history: the figures of its last heartbeat in a minute.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricPoint {
    pub at: Timestamp,
    pub metrics: HostMetrics,
}

impl Record for MetricPoint {
    const KIND: &'static str = "agent_metric_point";
}

/// The start of the history step (minute) holding `at`.
pub fn metric_step_start(at: Timestamp) -> Timestamp {
    let step = METRIC_STEP.as_millis() as i64;
    Timestamp(at.0 - at.0.rem_euclid(step))
}

/// The oldest time the history keeps at `now`.
pub fn metric_history_start(now: Timestamp) -> Timestamp {
    Timestamp(now.0.saturating_sub(METRIC_HISTORY.as_millis() as i64))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShellTicket {
    pub user_id: UserId,
    pub org_id: OrgId,
    pub agent_id: AgentId,
    pub expires_at: Timestamp,
}

impl Record for ShellTicket {
    const KIND: &'static str = "shell_ticket";
}

impl ShellTicket {
    /// When it was minted: every ticket lives `TICKET_LIFETIME`.
    pub fn issued_at(&self) -> Timestamp {
        let lifetime = TICKET_LIFETIME.as_millis() as i64;
        Timestamp(self.expires_at.0.saturating_sub(lifetime))
    }
}

/// The record of one terminal session, written when it starts and completed when it ends, in
/// the same transactions as its `agent.shell.started` and `agent.shell.ended` audit events.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShellSession {
    pub id: ShellSessionId,
    pub org_id: OrgId,
    pub agent_id: AgentId,
    pub user_id: UserId,
    /// The client address the terminal websocket came from.
    pub ip: Option<String>,
    pub started_at: Timestamp,
    /// None while the session runs, or if the server stopped before it could record the end.
    pub ended_at: Option<Timestamp>,
    pub bytes_to_shell: u64,
    pub bytes_from_shell: u64,
    /// Why the session ended, in words (`the browser closed the terminal`, `exit status 0`…).
    pub reason: Option<String>,
}

impl Record for ShellSession {
    const KIND: &'static str = "shell_session";
}

/// Why a presented ticket is refused; every case answers the same `401 invalid_ticket`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketRefusal {
    UnknownOrUsed,
    Expired,
    OtherAgent,
    /// Its user is no longer a member of the organisation, or no longer an admin there.
    NotAdmin,
    /// Its user was logged out everywhere (RegisterUserLogout) after it was minted.
    Revoked,
}

/// Whether `ticket` (already removed from the store: presenting it spends it) opens a
/// terminal on `agent` at `now`.
pub fn redeem(
    ticket: Option<&ShellTicket>,
    agent: &AgentId,
    now: Timestamp,
) -> Result<(), TicketRefusal> {
    let ticket = ticket.ok_or(TicketRefusal::UnknownOrUsed)?;
    if now >= ticket.expires_at {
        return Err(TicketRefusal::Expired);
    }
    if &ticket.agent_id != agent {
        return Err(TicketRefusal::OtherAgent);
    }
    Ok(())
}

/// Whether the user of a ticket may still open a terminal: `role` is their role in the
/// ticket's organisation now (None: no longer a member), `revoked` whether a RegisterUserLogout
/// came after the ticket was minted.
pub fn holder_may_open(role: Option<Role>, revoked: bool) -> Result<(), TicketRefusal> {
    if !role.is_some_and(|role| role.at_least(Role::Admin)) {
        return Err(TicketRefusal::NotAdmin);
    }
    if revoked {
        return Err(TicketRefusal::Revoked);
    }
    Ok(())
}

/// Whether a connection silent since `last_heard` has missed too many heartbeats.
pub fn silent_too_long(last_heard: std::time::Instant, now: std::time::Instant) -> bool {
    now.saturating_duration_since(last_heard) > SILENCE_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(agent: &AgentId, expires_at: i64) -> ShellTicket {
        ShellTicket {
            user_id: UserId::generate(),
            org_id: OrgId::generate(),
            agent_id: agent.clone(),
            expires_at: Timestamp(expires_at),
        }
    }

    #[test]
    fn tickets_are_redeemed_only_in_time_and_for_their_agent() {
        let agent = AgentId::generate();
        let other = AgentId::generate();
        let valid = ticket(&agent, 30_000);
        let cases = [
            (None, &agent, 0, Err(TicketRefusal::UnknownOrUsed)),
            (Some(&valid), &agent, 29_999, Ok(())),
            (Some(&valid), &agent, 30_000, Err(TicketRefusal::Expired)),
            (Some(&valid), &other, 1, Err(TicketRefusal::OtherAgent)),
        ];
        for (ticket, agent, now, expected) in cases {
            assert_eq!(redeem(ticket, agent, Timestamp(now)), expected);
        }
    }

    #[test]
    fn only_a_current_admin_not_logged_out_since_may_open() {
        let cases = [
            (Some(Role::Owner), false, Ok(())),
            (Some(Role::Admin), false, Ok(())),
            (Some(Role::Member), false, Err(TicketRefusal::NotAdmin)),
            (Some(Role::Viewer), false, Err(TicketRefusal::NotAdmin)),
            (None, false, Err(TicketRefusal::NotAdmin)),
            (Some(Role::Admin), true, Err(TicketRefusal::Revoked)),
        ];
        for (role, revoked, expected) in cases {
            assert_eq!(
                holder_may_open(role, revoked),
                expected,
                "{role:?} {revoked}"
            );
        }
        let minted = ticket(&AgentId::generate(), 30_000);
        assert_eq!(minted.issued_at(), Timestamp(0));
    }

    #[test]
    fn metric_points_fall_in_minutes_and_age_out_after_a_day() {
        assert_eq!(metric_step_start(Timestamp(119_999)), Timestamp(60_000));
        assert_eq!(metric_step_start(Timestamp(120_000)), Timestamp(120_000));
        let day = 24 * 3_600_000;
        assert_eq!(metric_history_start(Timestamp(day + 5)), Timestamp(5));
    }

    #[test]
    fn silence_allows_two_missed_heartbeats() {
        let start = std::time::Instant::now();
        assert!(!silent_too_long(start, start + HEARTBEAT_INTERVAL * 2));
        assert!(silent_too_long(
            start,
            start + SILENCE_LIMIT + Duration::from_millis(1)
        ));
    }
}
