//! SCIM's tables: its tokens (a `SecretTable` shared with the token flow) and the provisioned
//! users of each organisation, keyed `{org_id}/{user_id}`.

use redb::WriteTransaction;

use super::model::{ProvisionedUser, ScimToken};
use crate::accounts::model::{OrgId, UserId};
use crate::store::tables::{self, composite_key};
use crate::store::{ReadTxn, RecordTable, SecretTable, StoreError};

pub static TOKENS: SecretTable<ScimToken> =
    SecretTable::new(tables::SCIM_TOKENS, tables::SCIM_TOKEN_DIGESTS);
const USERS: RecordTable<ProvisionedUser> = RecordTable::new(tables::SCIM_USERS);

crate::store::secret_record!(ScimToken);

fn user_key(org: &OrgId, user: &UserId) -> String {
    composite_key(org.as_str(), user.as_str())
}

pub fn get_user(
    txn: &impl ReadTxn,
    org: &OrgId,
    user: &UserId,
) -> Result<Option<ProvisionedUser>, StoreError> {
    USERS.get(txn, &user_key(org, user))
}

pub fn put_user(txn: &WriteTransaction, record: &ProvisionedUser) -> Result<(), StoreError> {
    USERS.insert(txn, &user_key(&record.org_id, &record.user_id), record)
}

pub fn remove_user(txn: &WriteTransaction, org: &OrgId, user: &UserId) -> Result<(), StoreError> {
    USERS.remove(txn, &user_key(org, user)).map(drop)
}

/// Every provisioned user of `org`, in user id order (an organisation's members are few:
/// thousands at most, read in one go for SCIM's filters and counts).
pub fn users_of_org(txn: &impl ReadTxn, org: &OrgId) -> Result<Vec<ProvisionedUser>, StoreError> {
    USERS.page_of_owner(txn, org.as_str(), None, usize::MAX)
}
