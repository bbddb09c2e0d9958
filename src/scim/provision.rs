//! The writes behind SCIM's Users and Groups: provisioning a member, updating what the provider
//! says about it, deactivating, activating again and deleting it, and moving it between role
//! groups. Each is one write transaction, through auth's member-change frame where a membership
//! changes, so the role rules, the last-owner rule, RegisterUserLogout, the revocation of the
//! member's API keys in the organisation and the audit entries are the members API's own.
//!
//! Invariants: an e-mail with an account gets a membership of that account, never a second
//! account, and its password is never touched; a new account has no password (it signs in
//! through the organisation's SSO, or after the operator's `lookout user reset-password`). A
//! deactivated user keeps its record (and role) and loses the membership; a deleted one loses
//! both. A token never grants a role its creator could not.

use redb::WriteTransaction;
use serde_json::json;

use super::db;
use super::model::ProvisionedUser;
use super::user::UserAttributes;
use crate::accounts::model::{Membership, OrgId, Role, User, UserId, normalize_email};
use crate::accounts::roles::{self, MemberChange};
use crate::accounts::{self};
use crate::auth::audit::{self, Actor};
use crate::auth::members::{
    Changed, MemberError, MemberOfOrg, change_member, live_role, remove_from_org, set_role,
};
use crate::clock::{Clock, Timestamp};
use crate::store::{ReadTxn, Store, StoreError};

/// Why a provisioning write refused or failed; `api.rs` maps it to a SCIM error.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// The organisation has a member (or a provisioned user) with this e-mail already.
    #[error("{0} is already a user of this organisation")]
    Taken(String),
    #[error("{0}")]
    InvalidEmail(String),
    /// The account's e-mail cannot be changed from one organisation's provider.
    #[error("the e-mail of an account cannot change through SCIM")]
    EmailChange,
    #[error("user not found")]
    NotFound,
    #[error(transparent)]
    Member(#[from] MemberError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who provisions: the token's organisation, acting as the token's creator.
#[derive(Clone)]
pub struct Provisioner {
    pub org: OrgId,
    pub actor: Actor,
    pub actor_id: UserId,
    pub token: String,
}

/// A user as SCIM shows it: the provider's attributes (or the account's, for a member the
/// provider has not described yet), the role and the account's e-mail.
#[derive(Debug, Clone)]
pub struct ScimUser {
    pub user_id: UserId,
    /// The account's e-mail.
    pub email: String,
    pub attributes: UserAttributes,
    pub role: Role,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Every user of `org` as SCIM shows them: its joined members (owners included, which SCIM
/// can read but not change beyond the role rules) and its deactivated provisioned users.
pub fn users_of_org(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<ScimUser>, StoreError> {
    let mut provisioned: std::collections::HashMap<UserId, ProvisionedUser> =
        db::users_of_org(txn, org)?
            .into_iter()
            .map(|record| (record.user_id.clone(), record))
            .collect();
    let mut users = Vec::new();
    for membership in accounts::memberships_of_org(txn, org)? {
        if membership.awaits_existing_account() {
            continue;
        }
        let Some(account) = accounts::get_user(txn, &membership.user_id)? else {
            continue;
        };
        let record = provisioned.remove(&membership.user_id);
        users.push(shown(&account, &membership, record));
    }
    for record in provisioned.into_values() {
        if let Some(account) = accounts::get_user(txn, &record.user_id)? {
            users.push(deactivated(account, record));
        }
    }
    users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    Ok(users)
}

fn shown(account: &User, membership: &Membership, record: Option<ProvisionedUser>) -> ScimUser {
    let (attributes, updated_at) = match record {
        Some(record) => (record.attributes, record.updated_at),
        None => (
            UserAttributes {
                user_name: account.email.clone(),
                ..UserAttributes::default()
            },
            membership.created_at,
        ),
    };
    ScimUser {
        user_id: membership.user_id.clone(),
        email: account.email.clone(),
        attributes: UserAttributes {
            active: true,
            ..attributes
        },
        role: membership.role,
        created_at: membership.created_at,
        updated_at,
    }
}

/// A provisioned user without a membership: shown inactive, as their record was last written.
fn deactivated(account: User, record: ProvisionedUser) -> ScimUser {
    ScimUser {
        user_id: record.user_id,
        email: account.email,
        attributes: UserAttributes {
            active: false,
            ..record.attributes
        },
        role: record.role,
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

/// The user `id` of `org`, if SCIM shows one (as `users_of_org` would, from that user's rows).
pub fn user_of_org(
    txn: &impl ReadTxn,
    org: &OrgId,
    id: &UserId,
) -> Result<Option<ScimUser>, StoreError> {
    let Some(account) = accounts::get_user(txn, id)? else {
        return Ok(None);
    };
    let record = db::get_user(txn, org, id)?;
    let membership = accounts::get_membership(txn, org, id)?
        .filter(|membership| !membership.awaits_existing_account());
    Ok(match (membership, record) {
        (Some(membership), record) => Some(shown(&account, &membership, record)),
        (None, Some(record)) => Some(deactivated(account, record)),
        (None, None) => None,
    })
}

fn email_of(attributes: &UserAttributes) -> Result<String, ProvisionError> {
    normalize_email(attributes.account_email())
        .map_err(|invalid| ProvisionError::InvalidEmail(invalid.0))
}

/// POST /Users: a membership of the account with that e-mail (made when there is none) with
/// `role`, and the provider's record. Created inactive, it is only the record.
pub fn create(
    txn: &WriteTransaction,
    by: &Provisioner,
    attributes: UserAttributes,
    role: Role,
    now: Timestamp,
) -> Result<ScimUser, ProvisionError> {
    let email = email_of(&attributes)?;
    roles::check_grant(live_role(txn, &by.org, &by.actor_id)?, role).map_err(MemberError::from)?;
    let account = match accounts::find_user_by_email(txn, &email)? {
        Some(account) => account,
        None => {
            let account = User::new(email.clone(), String::new(), now);
            accounts::insert_user(txn, &account).map_err(MemberError::from)?;
            account
        }
    };
    let taken = accounts::get_membership(txn, &by.org, &account.id)?.is_some()
        || db::get_user(txn, &by.org, &account.id)?.is_some()
        || accounts::memberships_of_org(txn, &by.org)?
            .iter()
            .any(|membership| membership.invitee_email.as_deref() == Some(email.as_str()));
    if taken {
        return Err(ProvisionError::Taken(email));
    }
    let membership = Membership::active(by.org.clone(), account.id.clone(), role, now);
    if attributes.active {
        accounts::insert_membership(txn, &membership)?;
    }
    let record = ProvisionedUser {
        org_id: by.org.clone(),
        user_id: account.id.clone(),
        attributes,
        role,
        created_at: now,
        updated_at: now,
    };
    db::put_user(txn, &record)?;
    let detail = json!({"email": email, "role": role, "active": record.attributes.active, "scim_token": by.token});
    audit::record(
        txn,
        Some(&by.org),
        &by.actor,
        "member.provisioned",
        Some(account.id.as_str()),
        detail,
        now,
    )?;
    Ok(ScimUser {
        user_id: record.user_id,
        email: account.email,
        attributes: record.attributes,
        role,
        created_at: now,
        updated_at: now,
    })
}

/// PUT or PATCH /Users/{id}: the provider's new attributes. Becoming inactive removes the
/// membership (sessions end, API keys in the organisation are revoked); becoming active again
/// restores it with the recorded role. Returns the user and when sessions ended, if they did.
pub async fn update(
    store: &Store,
    clock: &Clock,
    by: &Provisioner,
    id: UserId,
    next: UserAttributes,
) -> Result<Changed<ScimUser>, ProvisionError> {
    let current = {
        let (org, id) = (by.org.clone(), id.clone());
        store.read(move |txn| user_of_org(txn, &org, &id)).await?
    }
    .ok_or(ProvisionError::NotFound)?;
    if email_of(&next)? != current.email {
        return Err(ProvisionError::EmailChange);
    }
    if current.attributes.active && !next.active {
        return deactivate(store, clock, by, id, Afterwards::Keep(next)).await;
    }
    let by = by.clone();
    let now_clock = clock.clone();
    store
        .write(move |txn| {
            let now = now_clock.now();
            let role = match db::get_user(txn, &by.org, &id)? {
                Some(record) => record.role,
                None => current.role,
            };
            if !current.attributes.active && next.active {
                roles::check_grant(live_role(txn, &by.org, &by.actor_id)?, role)
                    .map_err(MemberError::from)?;
                accounts::insert_membership(
                    txn,
                    &Membership::active(by.org.clone(), id.clone(), role, now),
                )?;
                let detail = json!({"role": role, "scim_token": by.token});
                audit::record(
                    txn,
                    Some(&by.org),
                    &by.actor,
                    "member.activated",
                    Some(id.as_str()),
                    detail,
                    now,
                )?;
            }
            let record = ProvisionedUser {
                org_id: by.org.clone(),
                user_id: id.clone(),
                attributes: next.clone(),
                role,
                created_at: current.created_at,
                updated_at: now,
            };
            db::put_user(txn, &record)?;
            Ok(Changed {
                answer: ScimUser {
                    user_id: id.clone(),
                    email: current.email.clone(),
                    attributes: next.clone(),
                    role,
                    created_at: current.created_at,
                    updated_at: now,
                },
                sessions_ended_at: None,
            })
        })
        .await
}

/// The target of a change SCIM makes to a member, acting as the token's creator.
fn member(by: &Provisioner, id: &UserId, change: MemberChange) -> MemberOfOrg {
    MemberOfOrg {
        org: by.org.clone(),
        actor: by.actor.clone(),
        actor_id: by.actor_id.clone(),
        member: id.clone(),
        change,
    }
}

/// What becomes of a provisioned user's record when their membership ends.
#[derive(Clone)]
enum Afterwards {
    /// Kept, inactive, with these attributes: a PATCH or PUT `active: false`.
    Keep(UserAttributes),
    /// Dropped with the membership: a DELETE.
    Drop,
}

/// Takes the member out of the organisation and keeps or drops its record, in one write.
async fn deactivate(
    store: &Store,
    clock: &Clock,
    by: &Provisioner,
    id: UserId,
    afterwards: Afterwards,
) -> Result<Changed<ScimUser>, ProvisionError> {
    let org = by.org.clone();
    let changed = change_member(
        store,
        clock,
        member(by, &id, MemberChange::Remove),
        move |txn, membership, now| {
            let email = accounts::get_user(txn, &membership.user_id)?
                .map(|account| account.email)
                .unwrap_or_default();
            let change = remove_from_org(txn, &membership, now)?;
            let previous = db::get_user(txn, &org, &membership.user_id)?;
            let attributes = match &afterwards {
                Afterwards::Keep(next) => next.clone(),
                Afterwards::Drop => previous
                    .as_ref()
                    .map(|record| record.attributes.clone())
                    .unwrap_or_default(),
            };
            let record = ProvisionedUser {
                org_id: org.clone(),
                user_id: membership.user_id.clone(),
                attributes: UserAttributes {
                    active: false,
                    ..attributes
                },
                role: membership.role,
                created_at: previous
                    .as_ref()
                    .map_or(membership.created_at, |record| record.created_at),
                updated_at: now,
            };
            match afterwards {
                Afterwards::Keep(_) => db::put_user(txn, &record)?,
                Afterwards::Drop => db::remove_user(txn, &org, &membership.user_id)?,
            }
            change.try_map(|()| {
                Ok::<_, MemberError>(ScimUser {
                    user_id: record.user_id.clone(),
                    email: email.clone(),
                    attributes: record.attributes.clone(),
                    role: record.role,
                    created_at: record.created_at,
                    updated_at: now,
                })
            })
        },
    )
    .await?;
    Ok(changed)
}

/// DELETE /Users/{id}: the membership (if any) and the record go, in one write.
pub async fn delete(
    store: &Store,
    clock: &Clock,
    by: &Provisioner,
    id: UserId,
) -> Result<Changed<()>, ProvisionError> {
    let (org, lookup) = (by.org.clone(), id.clone());
    let member_now = store
        .read(move |txn| accounts::get_membership(txn, &org, &lookup))
        .await?
        .is_some_and(|membership| !membership.awaits_existing_account());
    if member_now {
        let changed = deactivate(store, clock, by, id, Afterwards::Drop).await?;
        return Ok(Changed {
            answer: (),
            sessions_ended_at: changed.sessions_ended_at,
        });
    }
    let (by, clock) = (by.clone(), clock.clone());
    store
        .write(move |txn| {
            if db::get_user(txn, &by.org, &id)?.is_none() {
                return Err(ProvisionError::NotFound);
            }
            db::remove_user(txn, &by.org, &id)?;
            let detail = json!({"scim_token": by.token});
            audit::record(
                txn,
                Some(&by.org),
                &by.actor,
                "member.deprovisioned",
                Some(id.as_str()),
                detail,
                clock.now(),
            )?;
            Ok(Changed {
                answer: (),
                sessions_ended_at: None,
            })
        })
        .await
}

/// Gives the member `id` the role `role` (a SCIM group's), by the role rules.
pub async fn give_role(
    store: &Store,
    clock: &Clock,
    by: &Provisioner,
    id: UserId,
    role: Role,
) -> Result<Changed<()>, ProvisionError> {
    let org = by.org.clone();
    let changed = change_member(
        store,
        clock,
        member(by, &id, MemberChange::SetRole(role)),
        move |txn, membership, now| {
            let member = membership.user_id.clone();
            let change = set_role(txn, membership, role)?;
            if let Some(mut record) = db::get_user(txn, &org, &member)? {
                record.role = role;
                record.updated_at = now;
                db::put_user(txn, &record)?;
            }
            change.try_map(|_| Ok::<_, MemberError>(()))
        },
    )
    .await?;
    Ok(changed)
}
