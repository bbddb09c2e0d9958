//! Typed access to the account tables. Every function takes the transaction first so callers
//! compose them into one atomic write.
//!
//! Invariants kept here: a user row exists iff its e-mail index row does; an org row exists iff
//! its name index row does; a membership row exists iff its reverse (user -> org) row does.

use redb::WriteTransaction;

use super::AccountsError;
use super::model::{Invitation, Membership, Org, OrgId, User, UserId, org_name_key};
use crate::store::tables;
use crate::store::{IndexTable, ReadTxn, RecordTable, Scan, StoreError};

const ORGS: RecordTable<Org> = RecordTable::new(tables::ORGS);
const ORG_NAMES: IndexTable = IndexTable::new(tables::ORG_NAMES);
const USERS: RecordTable<User> = RecordTable::new(tables::USERS);
const USER_EMAILS: IndexTable = IndexTable::new(tables::USER_EMAILS);
const MEMBERSHIPS: RecordTable<Membership> = RecordTable::new(tables::MEMBERSHIPS);
const USER_ORGS: IndexTable = IndexTable::new(tables::USER_ORGS);
const INVITATIONS: RecordTable<Invitation> = RecordTable::new(tables::INVITATIONS);

pub fn get_org(txn: &impl ReadTxn, id: &OrgId) -> Result<Option<Org>, StoreError> {
    ORGS.get(txn, id.as_str())
}

pub fn find_org_by_name(txn: &impl ReadTxn, name: &str) -> Result<Option<Org>, StoreError> {
    match ORG_NAMES.get(txn, &org_name_key(name))? {
        Some(id) => ORGS.get(txn, &id),
        None => Ok(None),
    }
}

/// Finds an organisation by id or by name.
pub fn find_org(txn: &impl ReadTxn, id_or_name: &str) -> Result<Option<Org>, StoreError> {
    match OrgId::parse(id_or_name) {
        Ok(id) => get_org(txn, &id),
        Err(_) => find_org_by_name(txn, id_or_name),
    }
}

pub fn list_orgs(txn: &impl ReadTxn) -> Result<Vec<Org>, StoreError> {
    Ok(ORGS
        .scan(txn, Scan::all())?
        .into_iter()
        .map(|(_, org)| org)
        .collect())
}

pub fn insert_org(txn: &WriteTransaction, org: &Org) -> Result<(), AccountsError> {
    let name_key = org_name_key(&org.name);
    if ORG_NAMES.get(txn, &name_key)?.is_some() {
        return Err(AccountsError::OrgNameTaken(org.name.clone()));
    }
    ORGS.insert(txn, org.id.as_str(), org)?;
    ORG_NAMES.insert(txn, &name_key, org.id.as_str())?;
    Ok(())
}

/// Renames an organisation: its record and the name index change together; a name another
/// organisation holds (in any case) is refused, a change of case of its own name is not.
pub fn rename_org(
    txn: &WriteTransaction,
    org: &mut Org,
    name: String,
) -> Result<(), AccountsError> {
    let (old_key, new_key) = (org_name_key(&org.name), org_name_key(&name));
    if ORG_NAMES
        .get(txn, &new_key)?
        .is_some_and(|holder| holder != org.id.as_str())
    {
        return Err(AccountsError::OrgNameTaken(name));
    }
    ORG_NAMES.remove(txn, &old_key)?;
    ORG_NAMES.insert(txn, &new_key, org.id.as_str())?;
    org.name = name;
    ORGS.insert(txn, org.id.as_str(), org)?;
    Ok(())
}

/// Replaces an existing organisation's record (its name is changed by `rename_org` only).
pub fn update_org(txn: &WriteTransaction, org: &Org) -> Result<(), StoreError> {
    ORGS.insert(txn, org.id.as_str(), org)
}

pub fn find_user_by_email(txn: &impl ReadTxn, email: &str) -> Result<Option<User>, StoreError> {
    match USER_EMAILS.get(txn, email)? {
        Some(id) => USERS.get(txn, &id),
        None => Ok(None),
    }
}

pub fn get_user(txn: &impl ReadTxn, id: &UserId) -> Result<Option<User>, StoreError> {
    USERS.get(txn, id.as_str())
}

pub fn list_users(txn: &impl ReadTxn) -> Result<Vec<User>, StoreError> {
    Ok(USERS
        .scan(txn, Scan::all())?
        .into_iter()
        .map(|(_, user)| user)
        .collect())
}

pub fn count_users(txn: &impl ReadTxn) -> Result<u64, StoreError> {
    USERS.row_count(txn)
}

pub fn insert_user(txn: &WriteTransaction, user: &User) -> Result<(), AccountsError> {
    if USER_EMAILS.get(txn, &user.email)?.is_some() {
        return Err(AccountsError::EmailTaken(user.email.clone()));
    }
    USERS.insert(txn, user.id.as_str(), user)?;
    USER_EMAILS.insert(txn, &user.email, user.id.as_str())?;
    Ok(())
}

/// Removes an account and its e-mail index row (an unclaimed account being replaced).
pub fn remove_user(txn: &WriteTransaction, user: &User) -> Result<(), StoreError> {
    USER_EMAILS.remove(txn, &user.email)?;
    USERS.remove(txn, user.id.as_str()).map(|_| ())
}

pub fn insert_membership(
    txn: &WriteTransaction,
    membership: &Membership,
) -> Result<(), StoreError> {
    let org = membership.org_id.as_str();
    let user = membership.user_id.as_str();
    MEMBERSHIPS.insert(txn, &tables::composite_key(org, user), membership)?;
    USER_ORGS.insert(txn, &tables::composite_key(user, org), org)
}

pub fn memberships_of_org(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<Membership>, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    Ok(MEMBERSHIPS
        .scan(txn, Scan::prefix(&prefix))?
        .into_iter()
        .map(|(_, m)| m)
        .collect())
}

/// A user's memberships, through the reverse index.
pub fn memberships_of_user(
    txn: &impl ReadTxn,
    user: &UserId,
) -> Result<Vec<Membership>, StoreError> {
    let prefix = tables::owner_prefix(user.as_str());
    let mut memberships = Vec::new();
    for (_, org) in USER_ORGS.scan(txn, Scan::prefix(&prefix))? {
        let key = tables::composite_key(&org, user.as_str());
        let membership = MEMBERSHIPS
            .get(txn, &key)?
            .ok_or_else(|| StoreError::Corrupt {
                what: "membership",
                detail: format!("index names {key} but no membership exists"),
            })?;
        memberships.push(membership);
    }
    Ok(memberships)
}

pub fn get_membership(
    txn: &impl ReadTxn,
    org: &OrgId,
    user: &UserId,
) -> Result<Option<Membership>, StoreError> {
    MEMBERSHIPS.get(txn, &tables::composite_key(org.as_str(), user.as_str()))
}

/// Removes a membership and its reverse index row.
pub fn remove_membership(
    txn: &WriteTransaction,
    org: &OrgId,
    user: &UserId,
) -> Result<bool, StoreError> {
    USER_ORGS.remove(txn, &tables::composite_key(user.as_str(), org.as_str()))?;
    MEMBERSHIPS.remove(txn, &tables::composite_key(org.as_str(), user.as_str()))
}

/// Replaces a user's record (its e-mail is not changed here).
pub fn update_user(txn: &WriteTransaction, user: &User) -> Result<(), StoreError> {
    USERS.insert(txn, user.id.as_str(), user)
}

/// One page of an organisation's memberships in user-id order, after the user `after`.
pub fn memberships_of_org_page(
    txn: &impl ReadTxn,
    org: &OrgId,
    after: Option<&UserId>,
    limit: usize,
) -> Result<Vec<Membership>, StoreError> {
    let prefix = tables::owner_prefix(org.as_str());
    let cursor = after.map(|user| tables::composite_key(org.as_str(), user.as_str()));
    let scan = Scan {
        prefix: &prefix,
        after: cursor.as_deref(),
        limit,
    };
    Ok(MEMBERSHIPS
        .scan(txn, scan)?
        .into_iter()
        .map(|(_, m)| m)
        .collect())
}

/// Stores an invitation under the hex SHA-256 of its token.
pub fn insert_invitation(
    txn: &WriteTransaction,
    digest_hex: &str,
    invitation: &Invitation,
) -> Result<(), StoreError> {
    INVITATIONS.insert(txn, digest_hex, invitation)
}

pub fn get_invitation(
    txn: &impl ReadTxn,
    digest_hex: &str,
) -> Result<Option<Invitation>, StoreError> {
    INVITATIONS.get(txn, digest_hex)
}

pub fn remove_invitation(txn: &WriteTransaction, digest_hex: &str) -> Result<bool, StoreError> {
    INVITATIONS.remove(txn, digest_hex)
}
