//! The local admin socket: how CLI subcommands act on a data dir that a running server holds.
//!
//! Protocol: one JSON request per line, one JSON response per line, on a unix socket in the
//! data dir (mode 0600, and the peer must be the server's own user or root). The same
//! `execute` runs the command whether it arrived over the socket or the CLI opened the data
//! dir itself, so online and offline behave identically.

pub mod backup;
pub mod client;
pub mod reindex;
pub mod server;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::accounts::model::{Plan, Role};
use crate::accounts::{self, AccountsError, NewUser};
use crate::auth::operator;
use crate::clock::Clock;
use crate::http::ApiError;
use crate::store::Store;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum AdminRequest {
    Ping,
    UserCreate {
        email: String,
        password: String,
        role: Role,
        org: Option<String>,
    },
    UserList,
    /// Operator recovery (`auth::operator`): a new password, sessions ended.
    UserResetPassword {
        email: String,
        password: String,
    },
    /// The second factor removed, sessions ended.
    UserResetTwoFactor {
        email: String,
    },
    /// Failed sign-ins forgotten and the lock lifted.
    UserUnlock {
        email: String,
    },
    /// No more sign-in, sessions ended, API keys revoked.
    UserDisable {
        email: String,
    },
    OrgCreate {
        name: String,
    },
    OrgList,
    OrgSetPlan {
        org: String,
        plan: Plan,
    },
    /// A backup of the whole database, streamed back (see `backup.rs`); not run by `execute`.
    Backup,
    /// Rebuild the search index while the server runs, with progress (see `reindex.rs`); not
    /// run by `execute`.
    Reindex,
}

/// One line of reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdminResponse {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<AdminFailure>,
}

/// A refused command: the CONTRACT.md code and a message for the operator.
#[derive(Debug, Clone, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct AdminFailure {
    pub code: String,
    pub message: String,
}

impl From<AccountsError> for AdminFailure {
    fn from(err: AccountsError) -> Self {
        let message = err.to_string();
        let code = ApiError::from(err).code.as_str().to_string();
        AdminFailure { code, message }
    }
}

impl AdminResponse {
    pub fn from_result(result: Result<Value, AdminFailure>) -> Self {
        match result {
            Ok(value) => AdminResponse {
                ok: true,
                result: Some(value),
                error: None,
            },
            Err(failure) => AdminResponse {
                ok: false,
                result: None,
                error: Some(failure),
            },
        }
    }
}

/// What commands act on.
#[derive(Clone)]
pub struct AdminContext {
    pub store: Store,
    pub clock: Clock,
    /// The running server's search index; `None` when the CLI opened the data dir itself.
    pub search: Option<crate::errors::Search>,
    /// The running server's authentication, whose in-memory revocations must learn of a
    /// RegisterUserLogout at once; `None` offline (a server loads them when it starts).
    pub auth: Option<crate::auth::Auth>,
}

/// Runs one admin command.
pub async fn execute(context: &AdminContext, request: AdminRequest) -> Result<Value, AdminFailure> {
    let store = &context.store;
    match request {
        AdminRequest::Ping => Ok(json!({"pong": true})),
        AdminRequest::UserCreate {
            email,
            password,
            role,
            org,
        } => {
            let created = accounts::create_user(
                store,
                &context.clock,
                NewUser {
                    email,
                    password,
                    role,
                    org_name: org,
                },
            )
            .await?;
            Ok(json!({
                "user": {"id": created.user.id, "email": created.user.email},
                "org": org_json(&created.org),
                "role": created.role,
            }))
        }
        AdminRequest::UserList => {
            let users = accounts::list_users(store).await?;
            let items: Vec<Value> = users
                .into_iter()
                .map(|summary| {
                    let memberships: Vec<Value> = summary
                        .memberships
                        .iter()
                        .map(|(org, role)| json!({"org_id": org.id, "org_name": org.name, "role": role}))
                        .collect();
                    json!({
                        "id": summary.user.id,
                        "email": summary.user.email,
                        "created_at": summary.user.created_at.to_rfc3339(),
                        "memberships": memberships,
                    })
                })
                .collect();
            Ok(json!({"items": items}))
        }
        AdminRequest::UserResetPassword { email, password } => {
            let recovered = operator::reset_password(store, &context.clock, &email, password).await;
            Ok(recovery_json(context, recovered?))
        }
        AdminRequest::UserResetTwoFactor { email } => {
            let recovered = operator::reset_two_factor(store, &context.clock, &email).await;
            Ok(recovery_json(context, recovered?))
        }
        AdminRequest::UserUnlock { email } => {
            let recovered = operator::unlock(store, &context.clock, &email).await;
            Ok(recovery_json(context, recovered?))
        }
        AdminRequest::UserDisable { email } => {
            let recovered = operator::disable(store, &context.clock, &email).await;
            Ok(recovery_json(context, recovered?))
        }
        AdminRequest::OrgCreate { name } => {
            let org = accounts::create_org(store, &context.clock, &name).await?;
            Ok(org_json(&org))
        }
        AdminRequest::OrgList => {
            let orgs = accounts::list_orgs(store).await?;
            let items: Vec<Value> = orgs
                .into_iter()
                .map(|summary| {
                    let mut value = org_json(&summary.org);
                    value["members"] = json!(summary.members);
                    value
                })
                .collect();
            Ok(json!({"items": items}))
        }
        AdminRequest::OrgSetPlan { org, plan } => {
            let org = accounts::set_plan(store, &org, plan).await?;
            Ok(org_json(&org))
        }
        // Its reply is a byte stream, not one JSON value: the socket server hands it to
        // `backup::serve`, and offline the CLI snapshots the file itself.
        AdminRequest::Backup => Err(AdminFailure {
            code: "invalid_payload".to_string(),
            message: "backup is streamed by the admin socket server, not run as a command".into(),
        }),
        // Offline the CLI rebuilds the index itself (`cli/reindex.rs`).
        AdminRequest::Reindex => Err(AdminFailure {
            code: "invalid_payload".to_string(),
            message: "reindex is streamed by the admin socket server, not run as a command".into(),
        }),
    }
}

/// Notes ended sessions in the running server, then describes what a recovery did.
fn recovery_json(context: &AdminContext, recovered: operator::Recovered) -> Value {
    if let (Some(auth), Some(at)) = (&context.auth, recovered.sessions_ended_at) {
        auth.revocations().note_user_logout(&recovered.user.id, at);
    }
    json!({
        "user": {"id": recovered.user.id, "email": recovered.user.email},
        "sessions_ended": recovered.sessions_ended_at.is_some(),
        "detail": recovered.detail,
    })
}

fn org_json(org: &accounts::model::Org) -> Value {
    json!({
        "id": org.id,
        "name": org.name,
        "plan": org.plan,
        "two_factor_required": org.two_factor_required,
        "created_at": org.created_at.to_rfc3339(),
    })
}
