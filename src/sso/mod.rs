//! Single sign-on for organisations on the enterprise plan (CONTRACT sections 7 and 9,
//! docs/sso.md): each organisation's configuration (`/api/v1/orgs/me/sso`), OpenID Connect
//! sign-in (`oidc/`), and the step every protocol ends with (`finish.rs`).
//!
//! The face a protocol uses (SAML's as well as OIDC's):
//! - [`Asserted`]: what an identity provider asserted, after that protocol's own checks passed
//!   (signature, audience, time window, replay).
//! - [`finish`]: just-in-time membership, the linking rules and the second-factor rule, ending
//!   in the same session a password sign-in gives ([`Finished`]), or an [`SsoError`] that was
//!   audited. [`browser_answer`] turns either into the redirect a browser follows (the UI, the
//!   sign-in page's code step, or `/login?sso_error=<code>`).
//! - [`config_for`]: an organisation's saved configuration (for SAML the stored IdP metadata
//!   XML), with the enterprise plan checked.
//!
//! Invariants: nothing an unauthenticated caller sends is stored before an identity provider's
//! signed answer was verified; refusals are audited in the organisation's log; a free
//! organisation's configuration is kept but does nothing (403 `plan_required`).

pub mod api_config;
pub mod db;
mod fetch;
pub mod finish;
pub mod model;
pub mod oidc;
pub mod saml;

use std::sync::Arc;

use crate::accounts::model::{OrgId, Plan};
use crate::auth::Auth;
use crate::store::{Store, StoreError};

pub use finish::{Finished, Landing, browser_answer, browser_answer_to, finish};
pub use model::SsoConfig;

/// The sign-in protocol an assertion came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Oidc,
    Saml,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Oidc => "oidc",
            Protocol::Saml => "saml",
        }
    }
}

/// What an identity provider asserted, after the protocol's checks passed.
#[derive(Debug, Clone)]
pub struct Asserted {
    pub org: OrgId,
    /// The provider: the OIDC issuer, or the SAML IdP entity id.
    pub issuer: String,
    /// The person's stable id at the provider (OIDC `sub`, SAML NameID).
    pub subject: String,
    /// A verified e-mail address (the protocol refused unverified ones).
    pub email: String,
    pub name: Option<String>,
    /// The provider asserted a multi-factor sign-in (OIDC `amr` has `mfa`, or the SAML
    /// AuthnContext says so).
    pub mfa: bool,
    pub protocol: Protocol,
}

/// Why an SSO step was refused. `code()` is the problem code of the API answer and of the
/// `sso_error` the sign-in page shows.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("single sign-on needs the enterprise plan")]
    PlanRequired,
    #[error("single sign-on is not configured for this organisation")]
    NotConfigured,
    /// The identity provider's answer failed a check; holds which (logged, never sent whole).
    #[error("the identity provider's answer was refused: {0}")]
    Rejected(String),
    #[error("the sign-in attempt is missing, expired or was altered; start again")]
    AttemptInvalid,
    #[error("the identity provider did not confirm the e-mail address")]
    EmailUnverified,
    #[error("this ID token was already used")]
    Replayed,
    #[error("the identity provider could not be reached or answered badly: {0}")]
    Provider(String),
    /// A provider URL is, or resolves to, an address outbound requests may not reach
    /// (`WEBHOOK_ALLOW_PRIVATE`).
    #[error("the identity provider's address is not allowed: {0}")]
    DestinationRefused(String),
    /// An account with a password, or of another organisation, exists for this e-mail: its
    /// owner links it while signed in.
    #[error("an account with this e-mail exists: sign in with it and link single sign-on")]
    AccountExists,
    #[error("this identity is linked to another account")]
    LinkedElsewhere,
    #[error("this account is disabled or was deprovisioned")]
    AccountDisabled,
    /// A value the caller sent is malformed (`?org=`, `?email=`).
    #[error("{0}")]
    InvalidParameter(String),
    #[error("{0}")]
    Signing(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SsoError {
    /// The stable code of this refusal (CONTRACT style).
    pub fn code(&self) -> &'static str {
        match self {
            SsoError::PlanRequired => "plan_required",
            SsoError::NotConfigured => "sso_not_configured",
            SsoError::Rejected(_) => "sso_rejected",
            SsoError::AttemptInvalid => "sso_state_invalid",
            SsoError::EmailUnverified => "sso_email_unverified",
            SsoError::Replayed => "sso_replayed",
            SsoError::Provider(_) => "sso_provider_unavailable",
            SsoError::DestinationRefused(_) => "destination_refused",
            SsoError::AccountExists => "sso_account_exists",
            SsoError::LinkedElsewhere => "sso_linked_elsewhere",
            SsoError::AccountDisabled => "sso_account_disabled",
            SsoError::InvalidParameter(_) => "invalid_parameter",
            SsoError::Signing(_) | SsoError::Store(_) => "internal_error",
        }
    }
}

/// The SSO handle: the auth handle it signs people in with, the OIDC provider cache, and the
/// guarded HTTP client for provider URLs.
#[derive(Clone)]
pub struct Sso {
    auth: Auth,
    providers: Arc<oidc::provider::Providers>,
    fetcher: fetch::Fetcher,
}

impl Sso {
    /// `allow_private`: `WEBHOOK_ALLOW_PRIVATE`, which lets provider URLs reach private and
    /// loopback addresses as it lets webhooks.
    pub fn new(auth: Auth, allow_private: bool) -> Sso {
        Sso {
            auth,
            providers: Arc::new(oidc::provider::Providers::default()),
            fetcher: fetch::Fetcher::new(allow_private),
        }
    }

    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    pub fn store(&self) -> &Store {
        self.auth.store()
    }

    pub(crate) fn providers(&self) -> &oidc::provider::Providers {
        &self.providers
    }

    /// The guarded client for provider URLs.
    pub(crate) fn fetcher(&self) -> &fetch::Fetcher {
        &self.fetcher
    }

    /// The key secrets in SSO configurations are sealed under.
    pub(crate) fn sealing_key(&self) -> [u8; 32] {
        self.auth.derived_key("sso client secret")
    }
}

/// The saved configuration of `org`: `NotConfigured` when there is none, `PlanRequired` when
/// the organisation is not on the enterprise plan (its configuration is kept).
pub async fn config_for(store: &Store, org: &OrgId) -> Result<SsoConfig, SsoError> {
    let org = org.clone();
    let (found_org, config) = store
        .read(move |txn| {
            let found = crate::accounts::get_org(txn, &org)?;
            let config = db::get_config(txn, &org)?;
            Ok::<_, StoreError>((found, config))
        })
        .await?;
    match found_org {
        None => Err(SsoError::NotConfigured),
        Some(org) if org.plan != Plan::Enterprise => Err(SsoError::PlanRequired),
        Some(_) => config.ok_or(SsoError::NotConfigured),
    }
}

/// Records a one-time value by its digest (an ID token's nonce, a SAML assertion id) as used
/// until `until`, in the bounded table of used values; a second use is `Replayed`.
pub(crate) async fn use_once(
    sso: &Sso,
    digest: String,
    until: crate::clock::Timestamp,
) -> Result<(), SsoError> {
    let now = sso.auth().clock().now();
    let outcome = sso
        .store()
        .write(move |txn| db::use_nonce(txn, &digest, until, now))
        .await?;
    match outcome {
        db::NonceOutcome::Fresh => Ok(()),
        db::NonceOutcome::Replayed => Err(SsoError::Replayed),
        db::NonceOutcome::Full => Err(SsoError::Provider(
            "too many sign-ins in flight; try again shortly".to_string(),
        )),
    }
}
