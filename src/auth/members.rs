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
use serde_json::{Value, json};

use crate::accounts::model::{
    InvalidInput, Invitation, Membership, OrgId, Role, User, UserId, validate_password,
};
use crate::accounts::roles::{self, MemberChange, Refusal};
use crate::accounts::{self, AccountsError};
use crate::auth::audit::{self, Actor};
use crate::auth::revocation::Revocations;
use crate::clock::{Clock, Timestamp};
use crate::secrets::hashing_pool::HashingError;
use crate::store::{ReadTxn, Store, StoreError};

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
    /// The member has no second factor to reset (404).
    #[error("this member has no second factor to reset")]
    NoSecondFactor,
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

/// The change that takes a member out of its organisation (inside `change_member`): the
/// membership goes, the member's API keys there are revoked, and its sessions end. Shared by
/// the members API and SCIM deprovisioning.
pub fn remove_from_org(
    txn: &WriteTransaction,
    membership: &Membership,
    now: Timestamp,
) -> Result<Change<()>, MemberError> {
    let (org, member) = (&membership.org_id, &membership.user_id);
    accounts::remove_membership(txn, org, member)?;
    let revoked_keys = super::db::revoke_api_keys_of_member(txn, org, member, now)?;
    Ok(Change::Made {
        action: "member.removed",
        detail: json!({"role": membership.role, "api_keys_revoked": revoked_keys}),
        ends_sessions: true,
        answer: (),
    })
}

/// The change that gives a member `role` (inside `change_member`); the member's sessions end
/// when the role changes. Shared by the members API and SCIM groups.
pub fn set_role(
    txn: &WriteTransaction,
    mut membership: Membership,
    role: Role,
) -> Result<Change<Membership>, MemberError> {
    let old_role = membership.role;
    if old_role == role {
        return Ok(Change::Unchanged(membership));
    }
    membership.role = role;
    accounts::insert_membership(txn, &membership)?;
    Ok(Change::Made {
        action: "member.role_changed",
        detail: json!({"from": old_role, "to": role}),
        ends_sessions: true,
        answer: membership,
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

/// Whose account a member change reaches, how it is found and authorised, and where its audit
/// entries go: an org admin's change to a member (`MemberOfOrg`) or the operator's to an
/// account (`operator::AccountByEmail`).
pub trait ChangeTarget: Send + 'static {
    /// What the change acts on, loaded inside its transaction.
    type Subject;
    type Error: From<StoreError> + Send + 'static;
    /// Loads the subject and refuses a change the actor may not make.
    fn load(&self, txn: &WriteTransaction) -> Result<Self::Subject, Self::Error>;
    /// The account whose sessions end and which the audit entries name.
    fn user_id(subject: &Self::Subject) -> UserId;
    /// The audit entries of the change.
    fn record(
        &self,
        txn: &WriteTransaction,
        user: &UserId,
        action: &str,
        detail: &Value,
        now: Timestamp,
    ) -> Result<(), Self::Error>;
}

/// What a member change did inside its transaction.
pub enum Change<T> {
    /// Nothing to write (a role set to the one held): no audit entry, sessions go on.
    Unchanged(T),
    /// Written: recorded as `action` with `detail`; `ends_sessions` writes RegisterUserLogout.
    Made {
        action: &'static str,
        detail: Value,
        ends_sessions: bool,
        answer: T,
    },
}

impl<T> Change<T> {
    /// The same change with its answer turned into another (read in the same transaction).
    pub fn try_map<U, E>(
        self,
        mut answer_of: impl FnMut(T) -> Result<U, E>,
    ) -> Result<Change<U>, E> {
        Ok(match self {
            Change::Unchanged(answer) => Change::Unchanged(answer_of(answer)?),
            Change::Made {
                action,
                detail,
                ends_sessions,
                answer,
            } => Change::Made {
                action,
                detail,
                ends_sessions,
                answer: answer_of(answer)?,
            },
        })
    }
}

/// The result of `change_member` after its commit.
pub struct Changed<T> {
    pub answer: T,
    /// The account's sessions ended at this instant (RegisterUserLogout), when they did: the
    /// caller notes it in the running server's memory.
    pub sessions_ended_at: Option<(UserId, Timestamp)>,
}

/// One change to a member or an account, framed as every such change is: in one write, the
/// target is loaded and authorised (`ChangeTarget::load`), `apply` makes the change, and when it
/// made one, the RegisterUserLogout it asks for and its audit entries commit with it.
///
/// The instant is read inside the transaction, on the writer thread: a sign-in that reads the
/// old state just before the commit yet is issued after the cutoff would outlive the change,
/// and reading it there shrinks that window to the commit itself.
pub async fn change_member<W, T, F>(
    store: &Store,
    clock: &Clock,
    target: W,
    mut apply: F,
) -> Result<Changed<T>, W::Error>
where
    W: ChangeTarget,
    T: Send + 'static,
    F: FnMut(&WriteTransaction, W::Subject, Timestamp) -> Result<Change<T>, W::Error>
        + Send
        + 'static,
{
    let clock = clock.clone();
    store
        .write(move |txn| {
            let now = clock.now();
            let subject = target.load(txn)?;
            let user = W::user_id(&subject);
            match apply(txn, subject, now)? {
                Change::Unchanged(answer) => Ok(Changed {
                    answer,
                    sessions_ended_at: None,
                }),
                Change::Made {
                    action,
                    detail,
                    ends_sessions,
                    answer,
                } => {
                    if ends_sessions {
                        Revocations::write_user_logout(txn, &user, now)?;
                    }
                    target.record(txn, &user, action, &detail, now)?;
                    Ok(Changed {
                        answer,
                        sessions_ended_at: ends_sessions.then_some((user, now)),
                    })
                }
            }
        })
        .await
}

/// An org admin's change to a member of the org: the membership is found in the actor's org,
/// and the change is checked against the actor's stored role and the last-owner rule.
pub struct MemberOfOrg {
    pub org: OrgId,
    pub actor: Actor,
    pub actor_id: UserId,
    pub member: UserId,
    pub change: MemberChange,
}

impl ChangeTarget for MemberOfOrg {
    type Subject = Membership;
    type Error = MemberError;

    fn load(&self, txn: &WriteTransaction) -> Result<Membership, MemberError> {
        authorize_change(txn, &self.org, &self.actor_id, &self.member, self.change)
    }

    fn user_id(membership: &Membership) -> UserId {
        membership.user_id.clone()
    }

    fn record(
        &self,
        txn: &WriteTransaction,
        user: &UserId,
        action: &str,
        detail: &Value,
        now: Timestamp,
    ) -> Result<(), MemberError> {
        let target = Some(user.as_str());
        audit::record(
            txn,
            Some(&self.org),
            &self.actor,
            action,
            target,
            detail.clone(),
            now,
        )?;
        Ok(())
    }
}
