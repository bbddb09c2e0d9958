//! SCIM's own records: the tokens identity providers use, and what a provider said about each
//! member it provisioned (the attributes Lookout keeps, the role, and whether it is active).
//!
//! Invariants: a token is stored under the SHA-256 of its secret only; it acts with its
//! creator's current role, so it can never grant more than its creator may. A provisioned
//! user's record outlives a deactivation (the membership goes, the record keeps the role to
//! restore) and goes with a delete.

use serde::{Deserialize, Serialize};

use super::user::UserAttributes;
use crate::accounts::model::{OrgId, Role, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// A SCIM token (`sct_…`).
    ScimTokenId,
    "sct_"
);

/// What a SCIM token's secret starts with, so a leaked one is recognisable.
pub const TOKEN_PREFIX: &str = "lkscim_";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScimToken {
    pub id: ScimTokenId,
    pub org_id: OrgId,
    pub name: String,
    /// The admin or owner who created it: the token acts with their current role.
    pub created_by: UserId,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl Record for ScimToken {
    const KIND: &'static str = "scim_token";
}

/// A member as its identity provider describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProvisionedUser {
    pub org_id: OrgId,
    pub user_id: UserId,
    pub attributes: UserAttributes,
    /// The role the membership has, or gets back when the user is activated again.
    pub role: Role,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Record for ProvisionedUser {
    const KIND: &'static str = "scim_user";
}
