//! Organisations, users and memberships: the stored records and the pure rules about them.
//!
//! Invariants: an e-mail is stored normalised (trimmed, lower-cased), so lookups and the
//! unique index agree; an organisation name is unique case-insensitively; a user's role lives
//! on the membership, never on the user.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::typed_id;

typed_id!(
    /// `org_…`
    OrgId,
    "org_"
);
typed_id!(
    /// `usr_…`
    UserId,
    "usr_"
);

/// Roles in an organisation, highest first: owner > admin > member > viewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Member,
    Viewer,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Member, Role::Viewer];

    fn rank(self) -> u8 {
        match self {
            Role::Owner => 3,
            Role::Admin => 2,
            Role::Member => 1,
            Role::Viewer => 0,
        }
    }

    /// Whether this role has at least the rights of `required`.
    pub fn at_least(self, required: Role) -> bool {
        self.rank() >= required.rank()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| {
                format!("unknown role {text:?}: expected owner, admin, member or viewer")
            })
    }
}

/// The commercial plan of an organisation, set by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Enterprise,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Enterprise => "enterprise",
        }
    }
}

impl std::str::FromStr for Plan {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "free" => Ok(Plan::Free),
            "enterprise" => Ok(Plan::Enterprise),
            _ => Err(format!(
                "unknown plan {text:?}: expected free or enterprise"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Org {
    pub id: OrgId,
    pub name: String,
    pub plan: Plan,
    #[serde(default)]
    pub two_factor_required: bool,
    /// CIDRs allowed to use the API on behalf of this org; empty = no restriction.
    #[serde(default)]
    pub ip_allowlist: Vec<ipnet::IpNet>,
    /// Members sign in only through the org's SSO (set by the SSO configuration; owners keep
    /// a password path). It applies while the org is on the enterprise plan.
    #[serde(default)]
    pub sso_required: bool,
    pub created_at: Timestamp,
}

impl Record for Org {
    const KIND: &'static str = "org";
}

impl Org {
    /// A new organisation on the free plan, without 2FA enforcement or allowlist.
    pub fn new(name: String, now: Timestamp) -> Org {
        Org {
            id: OrgId::generate(),
            name,
            plan: Plan::Free,
            two_factor_required: false,
            ip_allowlist: Vec::new(),
            sso_required: false,
            created_at: now,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: UserId,
    /// Normalised, see `normalize_email`.
    pub email: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    pub created_at: Timestamp,
    /// Set by the operator (`lookout user disable`): the account signs in no more and its
    /// sessions and API keys are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<Timestamp>,
}

impl Record for User {
    const KIND: &'static str = "user";
}

impl User {
    /// A new account with a fresh id; an empty `password_hash` means "invited, no password yet".
    pub fn new(email: String, password_hash: String, now: Timestamp) -> User {
        User {
            id: UserId::generate(),
            email,
            password_hash,
            created_at: now,
            disabled_at: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Membership {
    pub org_id: OrgId,
    pub user_id: UserId,
    pub role: Role,
    pub created_at: Timestamp,
    /// Set while an account that already existed has not accepted its invitation: `user_id`
    /// is then a placeholder no account has (the account's own id, which tells its age, is
    /// not shown to an organisation it has not joined), and nobody acts through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invitee_email: Option<String>,
}

impl Membership {
    /// A membership that takes effect at once.
    pub fn active(org_id: OrgId, user_id: UserId, role: Role, now: Timestamp) -> Membership {
        Membership {
            org_id,
            user_id,
            role,
            created_at: now,
            invitee_email: None,
        }
    }

    /// Whether this is an existing account's invitation, not yet accepted.
    pub fn awaits_existing_account(&self) -> bool {
        self.invitee_email.is_some()
    }
}

impl Record for Membership {
    const KIND: &'static str = "membership";
}

/// How long an invitation link stays valid.
pub const INVITATION_TTL: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// An invitation to set the password of a user added without one. Stored under the SHA-256 of
/// its token (the token itself is only in the link) and deleted when accepted, so it works once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invitation {
    pub org_id: OrgId,
    pub user_id: UserId,
    /// The admin or owner who added the user.
    pub invited_by: UserId,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

impl Record for Invitation {
    const KIND: &'static str = "invitation";
}

impl Invitation {
    pub fn new(org_id: OrgId, user_id: UserId, invited_by: UserId, now: Timestamp) -> Self {
        Invitation {
            org_id,
            user_id,
            invited_by,
            created_at: now,
            expires_at: now.plus(INVITATION_TTL),
        }
    }

    pub fn usable_at(&self, now: Timestamp) -> bool {
        now < self.expires_at
    }
}

/// Why an input was refused; the message is written for the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

/// Trims and lower-cases an address and checks its shape (one `@`, a dotted domain).
pub fn normalize_email(raw: &str) -> Result<String, InvalidInput> {
    let email = raw.trim().to_lowercase();
    let invalid = || InvalidInput(format!("{:?} is not an e-mail address", raw.trim()));
    if email.len() > 254 || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    let domain_ok = domain.contains('.')
        && !domain.contains('@')
        && domain.split('.').all(|label| !label.is_empty());
    if local.is_empty() || !domain_ok {
        return Err(invalid());
    }
    Ok(email)
}

pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 1024;

pub fn validate_password(password: &str) -> Result<(), InvalidInput> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(InvalidInput(format!(
            "the password needs at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(InvalidInput(format!(
            "the password may have at most {MAX_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

/// Trims an organisation name and checks it is 1 to 100 printable characters.
pub fn normalize_org_name(raw: &str) -> Result<String, InvalidInput> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(InvalidInput(
            "an organisation name has 1 to 100 printable characters".into(),
        ));
    }
    Ok(name.to_string())
}

/// The key of the case-insensitive name index.
pub fn org_name_key(name: &str) -> String {
    name.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_or_refused() {
        assert_eq!(
            normalize_email("  Ada@Example.COM ").unwrap(),
            "ada@example.com"
        );
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@",
            "ada@example",
            "a da@example.com",
            "a@b@c.d",
            "ada@example..com",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn password_length_edges() {
        assert!(validate_password(&"x".repeat(MIN_PASSWORD_CHARS - 1)).is_err());
        assert!(validate_password(&"x".repeat(MIN_PASSWORD_CHARS)).is_ok());
        assert!(validate_password(&"é".repeat(MAX_PASSWORD_CHARS)).is_ok());
        assert!(validate_password(&"x".repeat(MAX_PASSWORD_CHARS + 1)).is_err());
    }

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Owner.at_least(Role::Admin));
        assert!(Role::Admin.at_least(Role::Admin));
        assert!(!Role::Member.at_least(Role::Admin));
        assert!(Role::Viewer.at_least(Role::Viewer));
        assert_eq!("admin".parse::<Role>().unwrap(), Role::Admin);
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn invitations_last_seven_days() {
        let now = Timestamp(1_000_000);
        let invitation = Invitation::new(
            OrgId::generate(),
            UserId::generate(),
            UserId::generate(),
            now,
        );
        let week_ms = 7 * 24 * 3600 * 1000;
        assert!(invitation.usable_at(Timestamp(now.0 + week_ms - 1)));
        assert!(!invitation.usable_at(Timestamp(now.0 + week_ms)));
    }

    #[test]
    fn org_names() {
        assert_eq!(normalize_org_name("  Acme ").unwrap(), "Acme");
        assert!(normalize_org_name("   ").is_err());
        assert!(normalize_org_name(&"a".repeat(101)).is_err());
        assert!(normalize_org_name("a\nb").is_err());
        assert_eq!(org_name_key("Acme"), org_name_key("ACME"));
    }
}
