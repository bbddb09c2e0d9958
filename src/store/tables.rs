//! Every redb table of the service, in one place, named `key_value`.
//!
//! Invariants: a table listed here is created by a migration before any code reads it; its
//! name never changes once released (renaming is a migration). Composite keys join their parts
//! with `/`, which never occurs in an id, so a prefix scan over `"{first}/"` lists one owner's rows.

use redb::TableDefinition;

/// Schema version, setup token hash and other single values. Raw bytes, no codec.
pub const META: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("meta");

// Record tables: string key -> codec-encoded record. Capabilities give them their record type
// (`RecordTable::<Org>::new(tables::ORGS)`); the store itself never decodes them.

/// Organisations by id.
pub const ORGS: &str = "orgid_org";
/// Lower-cased organisation name -> org id (names are unique, case-insensitively).
pub const ORG_NAMES: &str = "orgname_orgid";
/// Users by id.
pub const USERS: &str = "userid_user";
/// Normalised e-mail -> user id.
pub const USER_EMAILS: &str = "email_userid";
/// `{org_id}/{user_id}` -> membership (role in that org).
pub const MEMBERSHIPS: &str = "orgid_userid_membership";
/// `{user_id}/{org_id}` -> org id: the reverse of MEMBERSHIPS (schema 2).
pub const USER_ORGS: &str = "userid_orgid";

/// Joins the parts of a composite key.
pub fn composite_key(first: &str, second: &str) -> String {
    format!("{first}/{second}")
}

/// The key prefix that selects every row of one owner in a composite-key table.
pub fn owner_prefix(first: &str) -> String {
    format!("{first}/")
}

/// Splits a composite key into its two parts.
pub fn split_composite_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('/')
}
