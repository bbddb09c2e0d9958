//! Member operations inside one write transaction, shared by the members API and invitation
//! acceptance: reading a member, judging a change against the actor's stored role, and adding
//! someone (a new user with a password or an invitation, or an existing account's invitation).
//!
//! Invariants: permission is judged against the actor's membership as stored when the change
//! commits, and the owners are counted then; the single writer serialises changes, so two
//! owners demoting each other at once cannot leave the org without one. An existing account is
//! never given a password, nor made a member, by another org's admin: it is invited, and joins
//! only when it accepts as itself. Only a brand-new user (or one with no password and no
//! membership anywhere) gets the password an admin chose.

use redb::WriteTransaction;
use serde_json::json;

use crate::accounts::model::{
    InvalidInput, Invitation, Membership, OrgId, Role, User, UserId, validate_password,
};
use crate::accounts::roles::{self, MemberChange, Refusal};
use crate::accounts::{self, AccountsError};
use crate::auth::audit::{self, Actor};
use crate::clock::Timestamp;
use crate::secrets::hashing_pool::HashingError;
use crate::store::{ReadTxn, StoreError};

/// Why a member operation refused or failed; `api_members.rs` maps it to a problem.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// The actor's own membership is gone (403).
    #[error("you are no longer a member")]
    NoLongerMember,
    /// No member of the org has that id (404).
    #[error("member not found")]
    MemberNotFound,
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The e-mail is a member of the org or invited to it already (409).
    #[error("{0} is already a member or invited; change the role instead")]
    AlreadyMember(String),
    /// The password chosen for a new account breaks the password rules (400).
    #[error(transparent)]
    InvalidPassword(InvalidInput),
    /// The directory refused a write (an e-mail taken by a concurrent sign-up).
    #[error(transparent)]
    Account(#[from] AccountsError),
    #[error(transparent)]
    Hashing(#[from] HashingError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A member as stored, with what its view needs. An existing account's pending invitation
/// reads like a new account's: its placeholder id, the e-mail invited, no second factor.
pub struct MemberRow {
    pub email: String,
    pub membership: Membership,
    pub two_factor_enabled: bool,
    /// Not through the invitation yet: a new account without a password, or an existing
    /// account that has not accepted.
    pub invited: bool,
}

impl MemberRow {
    pub fn read(txn: &impl ReadTxn, membership: Membership) -> Result<Self, StoreError> {
        if let Some(email) = membership.invitee_email.clone() {
            return Ok(MemberRow {
                email,
                membership,
                two_factor_enabled: false,
                invited: true,
            });
        }
        let user =
            accounts::get_user(txn, &membership.user_id)?.ok_or_else(|| StoreError::Corrupt {
                what: "membership",
                detail: format!("names missing user {}", membership.user_id),
            })?;
        let two_factor_enabled = super::db::two_factor_enabled(txn, &user.id)?;
        Ok(MemberRow {
            invited: user.password_hash.is_empty(),
            email: user.email,
            membership,
            two_factor_enabled,
        })
    }
}

/// The actor's role as stored now: a session carries the role it was issued with, and the
/// decision must not rest on a role taken away a moment ago.
pub fn live_role(txn: &WriteTransaction, org: &OrgId, actor: &UserId) -> Result<Role, MemberError> {
    accounts::get_membership(txn, org, actor)?
        .map(|membership| membership.role)
        .ok_or(MemberError::NoLongerMember)
}

/// Owners who can act: an invited owner (new or existing account) does not keep the org owned.
pub fn owner_count(txn: &WriteTransaction, org: &OrgId) -> Result<usize, StoreError> {
    let mut owners = 0;
    for membership in accounts::memberships_of_org(txn, org)? {
        if membership.role == Role::Owner && !MemberRow::read(txn, membership)?.invited {
            owners += 1;
        }
    }
    Ok(owners)
}

/// The target's membership, and a check that `actor` may apply `change` to it.
pub fn authorize_change(
    txn: &WriteTransaction,
    org: &OrgId,
    actor: &UserId,
    target: &UserId,
    change: MemberChange,
) -> Result<Membership, MemberError> {
    let membership =
        accounts::get_membership(txn, org, target)?.ok_or(MemberError::MemberNotFound)?;
    let actor_role = live_role(txn, org, actor)?;
    roles::check_change(actor_role, membership.role, change, owner_count(txn, org)?)?;
    Ok(membership)
}

/// Refuses a change to the credentials of the member `membership` unless the account belongs
/// to this organisation alone and has joined it (see `roles::check_credential_change`).
pub fn authorize_credential_change(
    txn: &WriteTransaction,
    membership: Membership,
) -> Result<(), MemberError> {
    let user_id = membership.user_id.clone();
    let row = MemberRow::read(txn, membership)?;
    let other_orgs = accounts::memberships_of_user(txn, &user_id)?
        .len()
        .saturating_sub(1);
    roles::check_credential_change(row.invited, other_orgs)?;
    Ok(())
}

/// Checks a password typed for a new account and hashes it off the async reactor.
pub async fn hash_password(password: String) -> Result<String, MemberError> {
    validate_password(&password).map_err(MemberError::InvalidPassword)?;
    // On the bounded hashing pool: 503 `overloaded` when its queue is full.
    Ok(crate::secrets::password::hash_bounded(password).await?)
}

/// What `add_member` decided inside its transaction: the same shape whether the e-mail had an
/// account or not.
pub struct Added {
    /// The new account's id, or for an existing account a placeholder (see `Membership`).
    pub member_id: UserId,
    pub membership: Membership,
    /// Stored when no password was given; its token goes in the answer.
    pub invitation: Option<Invitation>,
}

/// Adds `email` to `org` with `role`: a new account with `password_hash` or, without one, an
/// invitation stored under `digest` (the SHA-256 of the token, hex); an existing account gets
/// a pending membership it accepts by proving who it is (`api_invitations.rs`).
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
/// belongs to the org or is invited to it (409 `already_member`). Nothing in the result, the
/// audit entry or the member list tells whether the e-mail had an account: a given password is
/// applied only to a new account, and an existing one shows a placeholder id until it accepts.
pub fn add_member_txn(txn: &WriteTransaction, add: &AddMember) -> Result<Added, MemberError> {
    roles::check_grant(live_role(txn, &add.org, &add.actor_id)?, add.role)?;
    if already_in_org(txn, &add.org, &add.email)? {
        return Err(MemberError::AlreadyMember(add.email.clone()));
    }
    let existing = match accounts::find_user_by_email(txn, &add.email)? {
        // Nobody can sign in to an account with no password and no organisation: it is
        // replaced by a new one, so its id (and the age it carries) is not handed out again.
        Some(user)
            if user.password_hash.is_empty()
                && accounts::memberships_of_user(txn, &user.id)?.is_empty() =>
        {
            accounts::remove_user(txn, &user)?;
            None
        }
        other => other,
    };
    let membership = match existing {
        None => {
            let password_hash = add.password_hash.clone().unwrap_or_default();
            let user = User::new(add.email.clone(), password_hash, add.now);
            accounts::insert_user(txn, &user)?;
            Membership::active(add.org.clone(), user.id, add.role, add.now)
        }
        // A pending membership under a fresh placeholder id: the account's own id stays unseen.
        Some(_) => Membership {
            invitee_email: Some(add.email.clone()),
            ..Membership::active(add.org.clone(), UserId::generate(), add.role, add.now)
        },
    };
    accounts::insert_membership(txn, &membership)?;
    let member_id = membership.user_id.clone();
    let invitation = match add.password_hash {
        Some(_) => None,
        None => {
            let created = Invitation::new(
                add.org.clone(),
                member_id.clone(),
                add.actor_id.clone(),
                add.now,
            );
            accounts::insert_invitation(txn, &add.digest, &created)?;
            Some(created)
        }
    };
    let with_password = add.password_hash.is_some();
    let detail = json!({"email": add.email, "role": add.role, "with_password": with_password});
    let target = Some(member_id.as_str());
    audit::record(
        txn,
        Some(&add.org),
        &add.actor,
        "member.added",
        target,
        detail,
        add.now,
    )?;
    Ok(Added {
        member_id,
        membership,
        invitation,
    })
}

/// Whether `email` is a member of `org` already, or has an invitation to it pending.
fn already_in_org(txn: &WriteTransaction, org: &OrgId, email: &str) -> Result<bool, StoreError> {
    if let Some(user) = accounts::find_user_by_email(txn, email)?
        && accounts::get_membership(txn, org, &user.id)?.is_some()
    {
        return Ok(true);
    }
    let pending = accounts::memberships_of_org(txn, org)?;
    Ok(pending
        .iter()
        .any(|membership| membership.invitee_email.as_deref() == Some(email)))
}
