//! Stored records of inbound tokens: which token kinds exist and what a token holds.
//!
//! Invariants: records are not wire types (`api.rs` renders them); a token of one kind opens
//! only its kind's endpoint.

use serde::{Deserialize, Serialize};

use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// An inbound token (`tok_…`): authenticates a build server, CI system or monitor.
    InboundTokenId,
    "tok_"
);

/// Which inbound endpoint a token opens; a token of one kind is refused by the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    Jenkins,
    Deployments,
    Alerts,
}

impl TokenKind {
    pub fn parse(text: &str) -> Option<TokenKind> {
        match text {
            "jenkins" => Some(TokenKind::Jenkins),
            "deployments" => Some(TokenKind::Deployments),
            "alerts" => Some(TokenKind::Alerts),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Jenkins => "jenkins",
            TokenKind::Deployments => "deployments",
            TokenKind::Alerts => "alerts",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboundToken {
    pub id: InboundTokenId,
    pub org_id: OrgId,
    pub kind: TokenKind,
    pub name: String,
    /// The first characters of the secret, to tell tokens apart in lists.
    pub prefix: String,
    pub created_by: UserId,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl Record for InboundToken {
    const KIND: &'static str = "inbound_token";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        for kind in [
            TokenKind::Jenkins,
            TokenKind::Deployments,
            TokenKind::Alerts,
        ] {
            assert_eq!(TokenKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(TokenKind::parse("Jenkins"), None);
    }
}
