//! The audit log of security events: sign-ins, lockouts, 2FA changes, API keys, roles,
//! allowlists. Written in the same transaction as the change it records, so the log never
//! claims a change that did not happen, nor misses one that did.

use redb::WriteTransaction;
use serde_json::Value;

use super::db;
use super::model::{AuditEvent, AuditId};
use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::StoreError;

/// Who did it, from where.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    pub user_id: Option<UserId>,
    pub email: Option<String>,
    pub ip: Option<String>,
}

/// Appends one event to `txn`.
pub fn record(
    txn: &WriteTransaction,
    org: Option<&OrgId>,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Value,
    at: Timestamp,
) -> Result<(), StoreError> {
    let event = AuditEvent {
        id: AuditId::generate(),
        org_id: org.cloned(),
        at,
        action: action.to_string(),
        actor_user_id: actor.user_id.clone(),
        actor_email: actor.email.clone(),
        target: target.map(str::to_string),
        ip: actor.ip.clone(),
        detail,
    };
    db::insert_audit_event(txn, &event)
}
