//! Organisations, users and memberships: what the CLI, the admin socket and first-run setup
//! create, and what sign-in will authenticate against.
//!
//! The operations here are the public face other modules call. They validate input, do slow
//! work (password hashing) before entering the writer, and commit each change in one write.
//!
//! Invariant: accounts is below `auth` and never uses it; what both need (password hashing,
//! tokens and their digests) is in `crate::secrets`. `auth` reads and writes these tables only
//! through the functions re-exported here, never through `db`.

pub mod api;
pub mod db;
pub mod model;
pub mod roles;
pub mod setup;

use crate::clock::Clock;
use crate::store::{Store, StoreError};
use model::{InvalidInput, Membership, Org, Plan, Role, User};

/// Reads and writes of orgs, users, memberships and invitations inside a caller's
/// transaction. `auth` composes them with its own tables in one transaction (a sign-in reads
/// the user and its login state; removing a member also disables the member's API keys), so
/// these, not the `db` module, are what it (and any other capability reading a user, an org or
/// a membership in its own transaction) calls.
pub use db::{
    find_org, find_user_by_email, get_invitation, get_membership, get_org, get_user,
    insert_invitation, insert_membership, insert_user, memberships_of_org, memberships_of_org_page,
    memberships_of_user, remove_invitation, remove_membership, remove_user, rename_org, update_org,
    update_user,
};

/// Every org, in a caller's transaction (for sweeps over all orgs: alert evaluation, the search
/// index's rebuild, ingest's retention).
pub use db::list_orgs as all_orgs;

/// How an org and a user are shown on the wire, also in auth's answers (invitations).
pub use api::{OrgView, UserView};

/// The org `user create` puts a user in when none is named.
pub const DEFAULT_ORG_NAME: &str = "default";

#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    #[error("a user with e-mail {0} already exists")]
    EmailTaken(String),
    #[error("an organisation named {0:?} already exists")]
    OrgNameTaken(String),
    #[error("no organisation {0:?}")]
    OrgNotFound(String),
    #[error("no user with e-mail {0}")]
    UserNotFound(String),
    #[error("the setup token is missing, wrong or expired")]
    InvalidSetupToken,
    #[error("setup is already complete: sign in instead")]
    SetupCompleted,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Hashing(#[from] crate::secrets::hashing_pool::HashingError),
    #[error("{0}")]
    Internal(String),
}

/// A user to create, as typed by an operator or the setup form.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub password: String,
    pub role: Role,
    /// The organisation to join, created when missing; `DEFAULT_ORG_NAME` when `None`.
    pub org_name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct CreatedUser {
    pub user: User,
    pub org: Org,
    pub role: Role,
}

/// An organisation with its member count.
#[derive(Debug, Clone)]
pub struct OrgSummary {
    pub org: Org,
    pub members: usize,
}

/// A user with the organisations it belongs to.
#[derive(Debug, Clone)]
pub struct UserSummary {
    pub user: User,
    pub memberships: Vec<(Org, Role)>,
}

/// Validated input plus the password hash, ready to be written.
struct PreparedUser {
    email: String,
    password_hash: String,
    role: Role,
    org_name: String,
}

/// Checks a password an operator or a new user typed and hashes it off the async reactor.
pub async fn hash_new_password(password: String) -> Result<String, AccountsError> {
    model::validate_password(&password)?;
    crate::secrets::password::hash_bounded(password)
        .await
        .map_err(AccountsError::from)
}

async fn prepare_user(new: NewUser) -> Result<PreparedUser, AccountsError> {
    let email = model::normalize_email(&new.email)?;
    let org_name = model::normalize_org_name(new.org_name.as_deref().unwrap_or(DEFAULT_ORG_NAME))?;
    let password_hash = hash_new_password(new.password).await?;
    Ok(PreparedUser {
        email,
        password_hash,
        role: new.role,
        org_name,
    })
}

/// Inserts the user, its org (when new) and the membership in `txn`.
fn write_user(
    txn: &redb::WriteTransaction,
    prepared: &PreparedUser,
    clock: &Clock,
) -> Result<CreatedUser, AccountsError> {
    let now = clock.now();
    let org = match db::find_org_by_name(txn, &prepared.org_name)? {
        Some(org) => org,
        None => {
            let org = Org::new(prepared.org_name.clone(), now);
            db::insert_org(txn, &org)?;
            org
        }
    };
    let user = User::new(prepared.email.clone(), prepared.password_hash.clone(), now);
    db::insert_user(txn, &user)?;
    let membership = Membership::active(org.id.clone(), user.id.clone(), prepared.role, now);
    db::insert_membership(txn, &membership)?;
    // Once any user exists the first-run setup link is dead: retire it in the same commit.
    setup::retire_token(txn)?;
    Ok(CreatedUser {
        user,
        org,
        role: prepared.role,
    })
}

/// Adds a user to an organisation (created when missing) with `new.role`.
pub async fn create_user(
    store: &Store,
    clock: &Clock,
    new: NewUser,
) -> Result<CreatedUser, AccountsError> {
    let prepared = prepare_user(new).await?;
    let clock = clock.clone();
    store
        .write(move |txn| write_user(txn, &prepared, &clock))
        .await
}

pub async fn create_org(store: &Store, clock: &Clock, name: &str) -> Result<Org, AccountsError> {
    let name = model::normalize_org_name(name)?;
    let now = clock.now();
    store
        .write(move |txn| {
            let org = Org::new(name.clone(), now);
            db::insert_org(txn, &org)?;
            Ok(org)
        })
        .await
}

pub async fn list_orgs(store: &Store) -> Result<Vec<OrgSummary>, AccountsError> {
    store
        .read(|txn| {
            let mut summaries = Vec::new();
            for org in db::list_orgs(txn)? {
                let members = db::memberships_of_org(txn, &org.id)?.len();
                summaries.push(OrgSummary { org, members });
            }
            Ok(summaries)
        })
        .await
}

/// Sets the plan of the organisation named (or identified) by `org`.
pub async fn set_plan(store: &Store, org: &str, plan: Plan) -> Result<Org, AccountsError> {
    let org = org.to_string();
    store
        .write(move |txn| {
            let mut found =
                db::find_org(txn, &org)?.ok_or_else(|| AccountsError::OrgNotFound(org.clone()))?;
            found.plan = plan;
            db::update_org(txn, &found)?;
            Ok(found)
        })
        .await
}

pub async fn list_users(store: &Store) -> Result<Vec<UserSummary>, AccountsError> {
    store
        .read(|txn| {
            let mut summaries = Vec::new();
            for user in db::list_users(txn)? {
                let mut memberships = Vec::new();
                for membership in db::memberships_of_user(txn, &user.id)? {
                    let org = db::get_org(txn, &membership.org_id)?.ok_or_else(|| {
                        StoreError::Corrupt {
                            what: "membership",
                            detail: format!("names missing org {}", membership.org_id),
                        }
                    })?;
                    memberships.push((org, membership.role));
                }
                summaries.push(UserSummary { user, memberships });
            }
            Ok(summaries)
        })
        .await
}
