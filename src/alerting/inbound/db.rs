//! Typed table access for inbound tokens.
//!
//! Invariant: a token has one row in `INBOUND_TOKENS` and one in `INBOUND_TOKEN_DIGESTS`,
//! written together by `SecretTable`.

use super::model::InboundToken;
use crate::store::SecretTable;
use crate::store::tables;

/// Inbound tokens and their digests (created, listed and revoked by `auth::token_flow`).
pub static TOKENS: SecretTable<InboundToken> =
    SecretTable::new(tables::INBOUND_TOKENS, tables::INBOUND_TOKEN_DIGESTS);

crate::store::secret_record!(InboundToken);
