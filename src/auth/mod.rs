//! Authentication and access: passwords, session and login tokens, RegisterUserLogout,
//! lockout, TOTP, API keys, CSRF, the IP allowlist, per-credential rate limits and the audit
//! log. `Auth` is the handle handlers and extractors share; `Caller` (in `caller.rs`) is how a
//! handler states what it requires.
//!
//! Auth sits above `accounts` (the directory of orgs, users and memberships) and uses it only
//! through `accounts`'s face; accounts never uses auth. So the changes that move a membership
//! together with credentials (members, invitations, the operator's recovery) live here.

pub mod account_locks;
pub mod allowlist;
pub mod api_audit;
pub mod api_invitations;
pub mod api_keys;
pub mod api_members;
pub mod api_org;
pub mod api_orgs;
pub mod api_session;
pub mod api_twofactor;
pub mod audit;
pub mod caller;
pub mod db;
mod invitation_proof;
pub mod key_usage;
pub mod keys;
pub mod login;
pub mod members;
pub mod model;
pub mod operator;
pub mod ratelimit;
pub mod revocation;
pub mod sweep;
pub mod token_flow;
pub mod tokens;
pub mod totp;

use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::clock::Clock;
use crate::config::{AuthSettings, Config};
use crate::secrets::{password, random_token};
use crate::store::{Store, StoreError};
use keys::JwtKey;
use revocation::Revocations;
use tokens::TokenSigner;

pub use caller::{Admin, Caller, Credential, Member, Owner, Viewer};
/// Whether an account has a second factor, in a caller's transaction (SSO's sign-in reads it).
pub use db::two_factor_enabled;

/// Cookie carrying the session JWT.
pub const SESSION_COOKIE: &str = "lookout_session";
/// Cookie carrying the login token while a second factor is awaited.
pub const LOGIN_COOKIE: &str = "lookout_login";
/// Readable (not HttpOnly) cookie with the CSRF token of the session.
pub const CSRF_COOKIE: &str = "lookout_csrf";
/// Header that must echo the CSRF token on cookie-authenticated unsafe requests.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The shared authentication handle.
#[derive(Clone)]
pub struct Auth {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Clock,
    settings: AuthSettings,
    signer: TokenSigner,
    key: JwtKey,
    revocations: Revocations,
    limiter: ratelimit::ApiRateLimiter,
    /// API key uses noted in memory, written by the housekeeping tick (`key_usage.rs`).
    key_usage: key_usage::KeyUsage,
    /// Sign-in decisions of one e-mail happen one at a time (see `account_locks.rs`).
    account_locks: account_locks::AccountLocks,
    /// `scheme://host[:port]` of BASE_URL: the only Origin accepted on cookie requests.
    base_origin: String,
    base_url: String,
    /// A real argon2id hash nobody knows the password of, verified against when the e-mail is
    /// unknown so both outcomes cost the same time.
    dummy_password_hash: String,
}

impl Auth {
    pub async fn new(
        store: Store,
        clock: Clock,
        config: &Config,
        key: JwtKey,
        base_url: &url::Url,
    ) -> Result<Auth, StoreError> {
        let revocations = Revocations::load(&store, clock.now()).await?;
        // Shown in /metrics from the start, so a reader sees 0 rather than nothing.
        metrics::counter!("lookout_password_verifications_total").increment(0);
        let dummy_password_hash = password::hash_bounded(random_token())
            .await
            .map_err(|err| StoreError::Storage(err.to_string()))?;
        Ok(Auth {
            inner: Arc::new(Inner {
                store,
                signer: TokenSigner::new(&key),
                key,
                revocations,
                limiter: ratelimit::ApiRateLimiter::new(config.auth.api_rate_per_min),
                key_usage: key_usage::KeyUsage::default(),
                account_locks: account_locks::AccountLocks::default(),
                settings: config.auth.clone(),
                base_origin: base_url.origin().ascii_serialization(),
                base_url: base_url.as_str().trim_end_matches('/').to_string(),
                dummy_password_hash,
                clock,
            }),
        })
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.inner.settings
    }

    pub fn signer(&self) -> &TokenSigner {
        &self.inner.signer
    }

    pub fn revocations(&self) -> &Revocations {
        &self.inner.revocations
    }

    pub fn limiter(&self) -> &ratelimit::ApiRateLimiter {
        &self.inner.limiter
    }

    pub fn key_usage(&self) -> &key_usage::KeyUsage {
        &self.inner.key_usage
    }

    /// Writes the API key uses noted since the last call (at shutdown too, so none is lost).
    pub async fn flush_key_usage(&self) {
        if let Err(error) = key_usage::flush(self).await {
            tracing::warn!(%error, "cannot record when api keys were last used");
        }
    }

    pub fn account_locks(&self) -> &account_locks::AccountLocks {
        &self.inner.account_locks
    }

    pub fn base_origin(&self) -> &str {
        &self.inner.base_origin
    }

    /// BASE_URL without a trailing slash, for links (invitations).
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    pub fn dummy_password_hash(&self) -> &str {
        &self.inner.dummy_password_hash
    }

    /// The CSRF token of a session: an HMAC of its `jti` under the server key, so it needs no
    /// storage and dies with the session.
    pub fn csrf_token(&self, jti: &str) -> String {
        use base64::Engine;
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.inner.key.0)
            .expect("hmac takes any key length");
        mac.update(b"csrf\0");
        mac.update(jti.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// A 32-byte key for `purpose`, derived from the server key (HMAC), so each use of the
    /// key (sealed secrets, signed SSO attempt cookies) has its own.
    pub fn derived_key(&self, purpose: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.inner.key.0)
            .expect("hmac takes any key length");
        mac.update(b"derive\0");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// RegisterUserLogout on its own: every session of `user` issued until now is void.
    pub async fn register_user_logout(
        &self,
        user: &crate::accounts::model::UserId,
    ) -> Result<(), StoreError> {
        let now = self.inner.clock.now();
        let target = user.clone();
        self.inner
            .store
            .write(move |txn| Revocations::write_user_logout(txn, &target, now))
            .await?;
        self.inner.revocations.note_user_logout(user, now);
        Ok(())
    }

    /// Periodic upkeep: forget expired revocations and idle rate-limit buckets, record when
    /// API keys were last used, remove expired login states and audit entries past their
    /// retention.
    pub async fn housekeeping(&self) {
        self.inner.revocations.prune(self.inner.clock.now());
        self.inner.limiter.retain_recent();
        self.flush_key_usage().await;
        sweep::sweep_login_states(self).await;
        sweep::sweep_audit_events(self).await;
    }
}
