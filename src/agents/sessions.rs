//! `GET /api/v1/agents/{id}/sessions`: the terminal sessions opened on one agent, newest first,
//! in pages of the CONTRACT.md section 1 list convention.
//!
//! Invariants: only admins read it (it says who had a shell where); a session of another
//! organisation's agent does not exist for the caller (404 on the agent); the rows are the
//! ones the terminal relay writes beside its audit events, so a session with no `ended_at`
//! is either running or was cut short by a server stop.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{FromRef, Path, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{ShellSession, ShellSessionId};
use super::{Agents, db};
use crate::accounts;
use crate::auth::{Admin, Auth};
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::store::StoreError;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Agents: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_sessions))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ShellSessionResponse {
    pub id: String,
    pub agent_id: String,
    pub user_id: String,
    /// The user's e-mail today; null if the user has since been deleted.
    pub user_email: Option<String>,
    pub ip: Option<String>,
    pub started_at: String,
    /// Null while the session runs (or if the server stopped before recording its end).
    pub ended_at: Option<String>,
    /// Bytes typed into the shell (browser to agent).
    pub bytes_to_shell: u64,
    /// Bytes the shell printed (agent to browser).
    pub bytes_from_shell: u64,
    /// Why the session ended; null while it runs.
    pub reason: Option<String>,
}

fn session_view(
    session: &ShellSession,
    emails: &HashMap<accounts::model::UserId, String>,
) -> ShellSessionResponse {
    ShellSessionResponse {
        id: session.id.to_string(),
        agent_id: session.agent_id.to_string(),
        user_email: emails.get(&session.user_id).cloned(),
        user_id: session.user_id.to_string(),
        ip: session.ip.clone(),
        started_at: session.started_at.to_rfc3339(),
        ended_at: session.ended_at.map(Timestamp::to_rfc3339),
        bytes_to_shell: session.bytes_to_shell,
        bytes_from_shell: session.bytes_from_shell,
        reason: session.reason.clone(),
    }
}

/// The terminal sessions of one agent, newest first.
#[utoipa::path(get, path = "/api/v1/agents/{id}/sessions", tag = "agents",
    params(("id" = String, Path, description = "agent id"),
        ("limit" = Option<usize>, Query, description = "1 to 500, default 50"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = Page<ShellSessionResponse>),
        problems::Invalid,
        problems::Forbidden,
        problems::NotFound))]
async fn list_sessions(
    State(agents): State<Agents>,
    Admin(caller): Admin,
    Path(id): Path<String>,
    page: PageRequest,
) -> Result<Json<Page<ShellSessionResponse>>, ApiError> {
    let before = page.cursor_as(ShellSessionId::parse)?;
    let agent = super::api::find_agent(&agents, &caller.org_id, &id).await?;
    let limit = page.limit;
    let (sessions, emails) = agents
        .store()
        .read(move |txn| {
            // One extra row tells whether another page follows.
            let sessions = db::shell_sessions_newest_first(
                txn,
                &agent.org_id,
                &agent.id,
                before.as_ref(),
                limit + 1,
            )?;
            let mut emails = HashMap::new();
            for session in &sessions {
                if !emails.contains_key(&session.user_id)
                    && let Some(user) = accounts::get_user(txn, &session.user_id)?
                {
                    emails.insert(session.user_id.clone(), user.email);
                }
            }
            Ok::<_, StoreError>((sessions, emails))
        })
        .await?;
    Ok(Json(page.answer(
        sessions,
        |session| session.id.to_string(),
        |session| session_view(session, &emails),
    )))
}
