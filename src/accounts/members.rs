//! Member operations inside one write transaction, shared by the members API and invitation
//! acceptance: reading a member, judging a change against the actor's stored role, and adding
//! someone (a new user, or an existing account, with a password or an invitation).
//!
//! Invariants: permission is judged against the actor's membership as stored when the change
//! commits, and the owners are counted then; the single writer serialises changes, so two
//! owners demoting each other at once cannot leave the org without one. An existing account is
//! never given a password or an invitation by another org's admin: only a brand-new user (or one
//! with no password and no membership anywhere) is.

use redb::WriteTransaction;
use serde_json::json;

use super::db;
use super::model::{Invitation, Membership, OrgId, Role, User, UserId, validate_password};
use super::roles::{self, MemberChange, Refusal};
use crate::auth::audit::{self, Actor};
use crate::clock::Timestamp;
use crate::http::{ApiError, ErrorCode};
use crate::store::{ReadTxn, StoreError};

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        let detail = refusal.to_string();
        match refusal {
            Refusal::Forbidden(_) => ApiError::new(ErrorCode::Forbidden, detail),
            Refusal::LastOwner => ApiError::new(ErrorCode::LastOwner, detail),
        }
    }
}

/// A member as stored, with what its view needs.
pub struct MemberRow {
    pub user: User,
    pub membership: Membership,
    pub two_factor_enabled: bool,
}

impl MemberRow {
    pub fn read(txn: &impl ReadTxn, membership: Membership) -> Result<Self, StoreError> {
        let user = db::get_user(txn, &membership.user_id)?.ok_or_else(|| StoreError::Corrupt {
            what: "membership",
            detail: format!("names missing user {}", membership.user_id),
        })?;
        let two_factor_enabled = crate::auth::db::two_factor_enabled(txn, &user.id)?;
        Ok(MemberRow {
            user,
            membership,
            two_factor_enabled,
        })
    }

    /// Added without a password and not yet through the invitation.
    pub fn invited(&self) -> bool {
        self.user.password_hash.is_empty()
    }
}

/// The actor's role as stored now: a session carries the role it was issued with, and the
/// decision must not rest on a role taken away a moment ago.
pub fn live_role(txn: &WriteTransaction, org: &OrgId, actor: &UserId) -> Result<Role, ApiError> {
    db::get_membership(txn, org, actor)?
        .map(|membership| membership.role)
        .ok_or_else(|| ApiError::new(ErrorCode::Forbidden, "you are no longer a member"))
}

pub fn owner_count(txn: &WriteTransaction, org: &OrgId) -> Result<usize, StoreError> {
    Ok(db::memberships_of_org(txn, org)?
        .iter()
        .filter(|membership| membership.role == Role::Owner)
        .count())
}

/// The target's membership, and a check that `actor` may apply `change` to it.
pub fn authorize_change(
    txn: &WriteTransaction,
    org: &OrgId,
    actor: &UserId,
    target: &UserId,
    change: MemberChange,
) -> Result<Membership, ApiError> {
    let membership =
        db::get_membership(txn, org, target)?.ok_or_else(|| ApiError::not_found("member"))?;
    let actor_role = live_role(txn, org, actor)?;
    roles::check_change(actor_role, membership.role, change, owner_count(txn, org)?)?;
    Ok(membership)
}

/// Checks a password typed for a new account and hashes it off the async reactor.
pub async fn hash_password(password: String) -> Result<String, ApiError> {
    validate_password(&password).map_err(|err| ApiError::new(ErrorCode::InvalidPayload, err.0))?;
    // On the bounded hashing pool: 503 `overloaded` when its queue is full.
    Ok(crate::auth::password::hash_bounded(password).await?)
}

/// What `add_member` decided inside its transaction.
pub struct Added {
    pub row: MemberRow,
    pub invitation: Option<Invitation>,
}

/// Adds `email` to `org` with `role`: an existing user as is, a new one with `password_hash`
/// or, without one, an invitation stored under `digest` (the SHA-256 of the token, hex).
pub struct AddMember {
    pub org: OrgId,
    pub actor: Actor,
    pub actor_id: UserId,
    pub email: String,
    pub role: Role,
    pub password_hash: Option<String>,
    pub digest: String,
    pub now: Timestamp,
}

/// Runs `add` in `txn`. Refuses a role the actor may not grant (403) and someone who already
/// belongs to the org (409 `already_member`).
pub fn add_member_txn(txn: &WriteTransaction, add: &AddMember) -> Result<Added, ApiError> {
    roles::check_grant(live_role(txn, &add.org, &add.actor_id)?, add.role)?;
    let existing = db::find_user_by_email(txn, &add.email)?;
    if let Some(user) = &existing
        && db::get_membership(txn, &add.org, &user.id)?.is_some()
    {
        return Err(ApiError::new(
            ErrorCode::AlreadyMember,
            format!("{} is already a member; change the role instead", add.email),
        ));
    }
    let (mut user, sets_credential) = match existing {
        None => {
            let user = User {
                id: UserId::generate(),
                email: add.email.clone(),
                password_hash: String::new(),
                created_at: add.now,
            };
            db::insert_user(txn, &user)?;
            (user, true)
        }
        // Nobody can sign in to an account with no password and no organisation: treat it as
        // new. Any other account belongs to someone, who keeps their own credentials.
        Some(user) => {
            let unclaimed =
                user.password_hash.is_empty() && db::memberships_of_user(txn, &user.id)?.is_empty();
            (user, unclaimed)
        }
    };
    let mut invitation = None;
    if sets_credential {
        match &add.password_hash {
            Some(hash) => {
                user.password_hash = hash.clone();
                db::update_user(txn, &user)?;
            }
            None => {
                let created = Invitation::new(
                    add.org.clone(),
                    user.id.clone(),
                    add.actor_id.clone(),
                    add.now,
                );
                db::insert_invitation(txn, &add.digest, &created)?;
                invitation = Some(created);
            }
        }
    }
    let membership = Membership {
        org_id: add.org.clone(),
        user_id: user.id.clone(),
        role: add.role,
        created_at: add.now,
    };
    db::insert_membership(txn, &membership)?;
    let detail = json!({"email": user.email, "role": add.role, "invited": invitation.is_some()});
    audit::record(
        txn,
        Some(&add.org),
        &add.actor,
        "member.added",
        Some(user.id.as_str()),
        detail,
        add.now,
    )?;
    let two_factor_enabled = crate::auth::db::two_factor_enabled(txn, &user.id)?;
    Ok(Added {
        row: MemberRow {
            user,
            membership,
            two_factor_enabled,
        },
        invitation,
    })
}
