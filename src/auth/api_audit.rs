//! HTTP face of the audit log: `GET /api/v1/audit` (admin), the organisation's security events
//! newest first, in pages of the CONTRACT.md section 1 list convention.
//!
//! Invariants: only events filed under the caller's organisation are listed; the cursor is the
//! id of the last event of the previous page, so pages never overlap or skip even while new
//! events arrive (they sort before the first page). Events recorded without the actor's e-mail
//! show the actor's current e-mail, looked up when listed.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{FromRef, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{AuditEvent, AuditId};
use super::{Admin, Auth, db};
use crate::accounts;
use crate::accounts::model::UserId;
use crate::http::ApiError;
use crate::http::error::Problem;
use crate::http::page::PageRequest;
use crate::store::StoreError;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(list_audit_events))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditItem {
    pub id: String,
    pub at: String,
    /// e.g. `login.succeeded`, `member.role_changed`, `ip_allowlist.changed`.
    pub action: String,
    pub actor_user_id: Option<String>,
    pub actor_email: Option<String>,
    /// What the action was done to: a user id, key id or e-mail.
    pub target: Option<String>,
    /// The client address of the actor.
    pub ip: Option<String>,
    /// Action-specific facts, e.g. `{"from":"member","to":"viewer"}`.
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    pub items: Vec<AuditItem>,
    pub next_cursor: Option<String>,
}

fn item(event: AuditEvent, emails: &HashMap<UserId, String>) -> AuditItem {
    let actor_email = event.actor_email.or_else(|| {
        let actor = event.actor_user_id.as_ref()?;
        emails.get(actor).cloned()
    });
    AuditItem {
        id: event.id.to_string(),
        at: event.at.to_rfc3339(),
        action: event.action,
        actor_user_id: event.actor_user_id.map(|id| id.to_string()),
        actor_email,
        target: event.target,
        ip: event.ip,
        detail: event.detail,
    }
}

/// The organisation's security events, newest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit",
    params(("limit" = Option<usize>, Query, description = "1 to 500, default 50"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses((status = 200, body = AuditList),
        (status = 400, description = "invalid_parameter", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "forbidden", body = Problem, content_type = "application/problem+json")))]
async fn list_audit_events(
    State(auth): State<Auth>,
    Admin(caller): Admin,
    page: PageRequest,
) -> Result<Json<AuditList>, ApiError> {
    let before = page.cursor_as(AuditId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let (events, emails) = auth
        .store()
        .read(move |txn| {
            // One extra event tells whether another page follows.
            let events =
                db::audit_events_of_org_newest_first(txn, &org, before.as_ref(), limit + 1)?;
            let mut emails = HashMap::new();
            for event in events.iter().filter(|event| event.actor_email.is_none()) {
                let Some(actor) = &event.actor_user_id else {
                    continue;
                };
                if !emails.contains_key(actor)
                    && let Some(user) = accounts::db::get_user(txn, actor)?
                {
                    emails.insert(actor.clone(), user.email);
                }
            }
            Ok::<_, StoreError>((events, emails))
        })
        .await?;
    let next_cursor = (events.len() > limit).then(|| events[limit - 1].id.to_string());
    let items = events
        .into_iter()
        .take(limit)
        .map(|event| item(event, &emails))
        .collect();
    Ok(Json(AuditList { items, next_cursor }))
}
