//! SSO's tables (schema 16): each organisation's configuration, the domains they claim, the
//! links from a provider's `(issuer, subject)` to an account, and the ID-token nonces already
//! used.
//!
//! Invariants: a domain row exists exactly while the configuration that lists it does, and is
//! written in the same transaction. The nonce table holds digests only, never more than
//! `MAX_USED_NONCES` rows: rows past their expiry are swept when it fills, and a sign-in is
//! refused rather than let it grow (`NonceOutcome::Full`).

use redb::WriteTransaction;

use super::model::{SsoConfig, SsoLink};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::tables::{self, composite_key};
use crate::store::{IndexTable, ReadTxn, RecordTable, Scan, StoreError};

const CONFIGS: RecordTable<SsoConfig> = RecordTable::new(tables::SSO_CONFIGS);
const DOMAINS: IndexTable = IndexTable::new(tables::SSO_DOMAINS);
const LINKS: RecordTable<SsoLink> = RecordTable::new(tables::SSO_LINKS);
const NONCES: IndexTable = IndexTable::new(tables::SSO_USED_NONCES);

/// The most used nonces remembered at once (each lives as long as its ID token).
pub const MAX_USED_NONCES: u64 = 100_000;

pub fn get_config(txn: &impl ReadTxn, org: &OrgId) -> Result<Option<SsoConfig>, StoreError> {
    CONFIGS.get(txn, org.as_str())
}

/// The organisation that claims `domain`, if any.
pub fn org_of_domain(txn: &impl ReadTxn, domain: &str) -> Result<Option<OrgId>, StoreError> {
    DOMAINS
        .get(txn, domain)?
        .map(|id| OrgId::parse(&id).map_err(|err| StoreError::Storage(err.to_string())))
        .transpose()
}

/// Saves `config`, moving its domain claims with it. The caller checked that no other
/// organisation claims one of them.
pub fn put_config(txn: &WriteTransaction, config: &SsoConfig) -> Result<(), StoreError> {
    if let Some(old) = get_config(txn, &config.org_id)? {
        for domain in &old.domains {
            DOMAINS.remove(txn, domain)?;
        }
    }
    for domain in &config.domains {
        DOMAINS.insert(txn, domain, config.org_id.as_str())?;
    }
    CONFIGS.insert(txn, config.org_id.as_str(), config)
}

fn link_key(issuer: &str, subject: &str) -> String {
    // The issuer is a URL (slashes and all): its digest keeps the key's two parts apart.
    composite_key(&crate::secrets::digest_hex(issuer), subject)
}

pub fn get_link(
    txn: &impl ReadTxn,
    issuer: &str,
    subject: &str,
) -> Result<Option<SsoLink>, StoreError> {
    LINKS.get(txn, &link_key(issuer, subject))
}

pub fn put_link(txn: &WriteTransaction, link: &SsoLink) -> Result<(), StoreError> {
    LINKS.insert(txn, &link_key(&link.issuer, &link.subject), link)
}

/// What recording a nonce found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceOutcome {
    Fresh,
    Replayed,
    Full,
}

/// Records that the nonce with digest `digest` was used, until `expires_at`.
pub fn use_nonce(
    txn: &WriteTransaction,
    digest: &str,
    expires_at: Timestamp,
    now: Timestamp,
) -> Result<NonceOutcome, StoreError> {
    if NONCES.get(txn, digest)?.is_some() {
        return Ok(NonceOutcome::Replayed);
    }
    if txn.open(NONCES.definition())?.row_count()? >= MAX_USED_NONCES {
        sweep_nonces(txn, now)?;
        if txn.open(NONCES.definition())?.row_count()? >= MAX_USED_NONCES {
            return Ok(NonceOutcome::Full);
        }
    }
    NONCES.insert(txn, digest, &expires_at.unix_millis().to_string())?;
    Ok(NonceOutcome::Fresh)
}

/// Removes every used nonce whose ID token has expired.
fn sweep_nonces(txn: &WriteTransaction, now: Timestamp) -> Result<(), StoreError> {
    let expired: Vec<String> = NONCES
        .scan(txn, Scan::all())?
        .into_iter()
        .filter(|(_, expiry)| {
            expiry
                .parse::<i64>()
                .map_or(true, |ms| ms <= now.unix_millis())
        })
        .map(|(digest, _)| digest)
        .collect();
    for digest in expired {
        NONCES.remove(txn, &digest)?;
    }
    Ok(())
}
