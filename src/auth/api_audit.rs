//! HTTP face of the audit log: `GET /api/v1/audit` (admin), the organisation's security events
//! newest first, in pages of the CONTRACT.md section 1 list convention, filtered by `actor`,
//! `action`, `from` and `to`.
//!
//! Invariants: only events filed under the caller's organisation are listed; the cursor is the
//! id of the last event of the previous page, so pages never overlap or skip even while new
//! events arrive (they sort before the first page). A filtered page examines at most
//! `db::AUDIT_MAX_EXAMINED` events, so it may hold fewer than `limit` items and still have a
//! `next_cursor`. Events recorded without the actor's e-mail show the actor's current e-mail,
//! looked up when listed; the `actor` filter matches either.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{FromRef, RawQuery, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::db::AuditFilter;
use super::model::{AuditEvent, AuditId};
use super::{Admin, Auth, db};
use crate::accounts;
use crate::accounts::model::UserId;
use crate::http::ApiError;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, parameter_error, time_filter};
use crate::store::{Store, StoreError};

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Store: FromRef<S>,
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

/// Whose and which events a page asks for (the `actor` and `action` parameters).
#[derive(Debug, Clone, Default)]
struct EventMatch {
    /// A user id, or an e-mail compared without regard to case.
    actor: Option<String>,
    /// One action, or a family when it ends in `.*` (`api_key.*`).
    action: Option<String>,
}

impl EventMatch {
    fn read(filters: &HashMap<String, String>) -> Result<EventMatch, ApiError> {
        let non_empty = |name: &str| match filters.get(name).map(|v| v.trim()) {
            Some("") => Err(parameter_error(format!(
                "{name}: empty; omit it to list all"
            ))),
            other => Ok(other.map(str::to_string)),
        };
        Ok(EventMatch {
            actor: non_empty("actor")?.map(|actor| actor.to_lowercase()),
            action: non_empty("action")?,
        })
    }

    fn action_matches(&self, action: &str) -> bool {
        match self.action.as_deref() {
            None => true,
            Some(wanted) => match wanted.strip_suffix('*') {
                Some(family) if family.ends_with('.') => action.starts_with(family),
                _ => action == wanted,
            },
        }
    }

    /// `actor_id`: the user the `actor` e-mail belongs to, when it is one of a user.
    fn actor_matches(&self, event: &AuditEvent, actor_id: Option<&UserId>) -> bool {
        let Some(wanted) = self.actor.as_deref() else {
            return true;
        };
        let by_id = event
            .actor_user_id
            .as_ref()
            .is_some_and(|id| id.as_str().eq_ignore_ascii_case(wanted) || Some(id) == actor_id);
        let by_email = event
            .actor_email
            .as_deref()
            .is_some_and(|email| email.eq_ignore_ascii_case(wanted));
        by_id || by_email
    }
}

/// The organisation's security events, newest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit",
    params(("limit" = Option<usize>, Query, description = "1 to 500, default 50"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
        ("actor" = Option<String>, Query, description = "the acting user's id or e-mail"),
        ("action" = Option<String>, Query, description = "one action (`member.removed`), or a family ending in `.*` (`api_key.*`)"),
        ("from" = Option<String>, Query, description = "at or after (RFC 3339 or epoch ms)"),
        ("to" = Option<String>, Query, description = "before (RFC 3339 or epoch ms)")),
    responses((status = 200, body = Page<AuditItem>),
        problems::Invalid,
        problems::Forbidden))]
async fn list_audit_events(
    State(store): State<Store>,
    Admin(caller): Admin,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<AuditItem>>, ApiError> {
    let filters = filters(query.as_deref(), &["actor", "action", "from", "to"])?;
    let (from, to) = (time_filter(&filters, "from")?, time_filter(&filters, "to")?);
    let matching = EventMatch::read(&filters)?;
    let before = page.cursor_as(AuditId::parse)?;
    let (org, limit) = (caller.org_id.clone(), page.limit);
    let (found, emails) = store
        .read(move |txn| {
            let actor_id = match matching.actor.as_deref() {
                Some(email) if email.contains('@') => {
                    accounts::find_user_by_email(txn, email)?.map(|user| user.id)
                }
                _ => None,
            };
            let wanted = |event: &AuditEvent| {
                matching.action_matches(&event.action)
                    && matching.actor_matches(event, actor_id.as_ref())
            };
            let filter = AuditFilter {
                before: before.as_ref(),
                from,
                to,
                wanted: &wanted,
            };
            let found = db::audit_events_of_org_newest_first(txn, &org, &filter, limit)?;
            let mut emails = HashMap::new();
            for event in found
                .events
                .iter()
                .filter(|event| event.actor_email.is_none())
            {
                let Some(actor) = &event.actor_user_id else {
                    continue;
                };
                if !emails.contains_key(actor)
                    && let Some(user) = accounts::get_user(txn, actor)?
                {
                    emails.insert(actor.clone(), user.email);
                }
            }
            Ok::<_, StoreError>((found, emails))
        })
        .await?;
    let next_cursor = found.resume_before.map(|id| id.to_string());
    let items = found
        .events
        .into_iter()
        .map(|event| item(event, &emails))
        .collect();
    Ok(Json(Page::new(items, next_cursor)))
}
