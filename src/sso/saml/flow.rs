//! The SAML sign-in over the SSO foundation: start (an AuthnRequest and the attempt cookie)
//! and the ACS (a posted Response verified, its assertion id recorded against replay, then
//! `sso::finish`, or for an owner's test sign-in only what the IdP asserted).
//!
//! Invariants: the ACS writes to the store only after `verify_response` accepted a Response
//! signed by the organisation's IdP (the replay row, then what `finish` writes); the RSA work
//! runs on a blocking thread; every refusal maps to an `SsoError`, so the browser always gets a
//! redirect, never a 500.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{
    ATTEMPT_LIFETIME, Attempt, AttemptKey, IdpMetadata, SamlError, ServiceProvider,
    VerifiedAssertion, verify_response,
};
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::sso::{Asserted, Finished, Landing, Protocol, Sso, SsoError, config_for};

/// Where `start` sends the browser.
pub enum Departure {
    /// 302 to this URL (HTTP-Redirect binding).
    Redirect(String),
    /// A form to post to the IdP (HTTP-POST binding): its action and fields.
    Post(String, Vec<(String, String)>),
}

/// The attempt cookie's MAC key, derived from the server's key for this purpose only.
pub fn attempt_key(sso: &Sso) -> AttemptKey {
    AttemptKey::new(sso.auth().derived_key("saml attempt cookie"))
}

fn unix_seconds(at: Timestamp) -> i64 {
    at.unix_millis().div_euclid(1000)
}

/// The organisation's IdP metadata and our service provider for it.
async fn parties(sso: &Sso, org: &OrgId) -> Result<(IdpMetadata, ServiceProvider), SsoError> {
    let config = config_for(sso.store(), org).await?;
    let settings = config.saml.ok_or(SsoError::NotConfigured)?;
    let idp = IdpMetadata::parse(&settings.idp_metadata_xml)
        .map_err(|error| SsoError::Provider(error.to_string()))?;
    let sp = ServiceProvider::for_org(sso.auth().base_url(), org.as_str());
    Ok((idp, sp))
}

/// Starts a sign-in at `org`'s IdP (only checking its answer when `test`): where to send the
/// browser, and the sealed attempt cookie.
pub async fn start(sso: &Sso, org: &OrgId, test: bool) -> Result<(Departure, String), SsoError> {
    let (idp, sp) = parties(sso, org).await?;
    let started = sp
        .start(&idp, org.as_str())
        .map_err(|error| SsoError::Provider(error.to_string()))?;
    let attempt = Attempt {
        request_id: started.request_id,
        org: org.to_string(),
        expires_at: unix_seconds(sso.auth().clock().now()) + ATTEMPT_LIFETIME,
        test,
    };
    let cookie = attempt
        .seal(&attempt_key(sso))
        .ok_or_else(|| SsoError::Signing("the attempt cannot be sealed".to_string()))?;
    let departure = match (started.redirect_url, started.post_form) {
        (Some(url), _) => Departure::Redirect(url),
        (None, Some((action, fields))) => Departure::Post(action, fields),
        (None, None) => {
            return Err(SsoError::Provider("no way to reach the IdP".to_string()));
        }
    };
    Ok((departure, cookie))
}

/// Where the browser of the attempt in `cookie` lands: the settings page for a test sign-in,
/// the sign-in page otherwise (a missing or altered cookie included).
pub fn landing(sso: &Sso, cookie: Option<&str>) -> Landing {
    let now = unix_seconds(sso.auth().clock().now());
    match cookie.and_then(|value| Attempt::open(value, &attempt_key(sso), now)) {
        Some(attempt) if attempt.test => Landing::Test,
        _ => Landing::SignIn,
    }
}

/// The ACS: verifies `saml_response` for the attempt in `cookie` and signs the person in (or,
/// for a test attempt, answers what the IdP asserted: nobody signs in, nothing is created).
pub async fn consume(
    sso: &Sso,
    saml_response: String,
    relay_state: Option<String>,
    cookie: Option<&str>,
    client: IpAddr,
) -> Result<Finished, SsoError> {
    let now = sso.auth().clock().now();
    let attempt = cookie
        .and_then(|value| Attempt::open(value, &attempt_key(sso), unix_seconds(now)))
        .ok_or(SsoError::AttemptInvalid)?;
    let org = OrgId::parse(&attempt.org).map_err(|_| SsoError::AttemptInvalid)?;
    let test = attempt.test;
    let (idp, sp) = parties(sso, &org).await?;
    let at = UNIX_EPOCH + Duration::from_millis(now.unix_millis().max(0).unsigned_abs());
    let verified = tokio::task::spawn_blocking(move || {
        verify_response(
            &sp,
            &idp,
            &attempt,
            &saml_response,
            relay_state.as_deref(),
            at,
        )
    })
    .await
    .map_err(|error| SsoError::Signing(error.to_string()))?
    .map_err(refusal)?;
    // Verified and signed by the IdP from here on: refusals are audited.
    if let Err(why) = record_assertion(sso, &verified).await {
        crate::sso::finish::audit_refusal(sso, &org, &verified.email, Protocol::Saml, &why, client)
            .await?;
        return Err(why);
    }
    let email = crate::accounts::model::normalize_email(&verified.email)
        .map_err(|_| SsoError::EmailUnverified)?;
    if test {
        return Ok(Finished::Tested {
            email,
            mfa: verified.mfa,
        });
    }
    let asserted = Asserted {
        org,
        issuer: verified.issuer,
        subject: verified.subject,
        email,
        name: verified.name,
        mfa: verified.mfa,
        protocol: Protocol::Saml,
    };
    crate::sso::finish(sso, asserted, None, client).await
}

/// A refused Response as the foundation's error; the SAML reason is logged with its code.
fn refusal(error: SamlError) -> SsoError {
    tracing::info!(code = error.code(), %error, "saml response refused");
    match error {
        SamlError::Replayed => SsoError::Replayed,
        SamlError::NoEmail => SsoError::EmailUnverified,
        SamlError::NoAttempt | SamlError::WrongRequest => SsoError::AttemptInvalid,
        other => SsoError::Rejected(format!("{}: {other}", other.code())),
    }
}

/// Records the assertion id as used until the replay window closes; a second use is
/// `Replayed`. Shares the bounded, swept table of used OIDC nonces (digests only).
async fn record_assertion(sso: &Sso, verified: &VerifiedAssertion) -> Result<(), SsoError> {
    let key = format!("saml\n{}\n{}", verified.issuer, verified.assertion_id);
    let until_ms = verified
        .replay_until
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let until = Timestamp::from_unix_millis(until_ms);
    crate::sso::use_once(sso, crate::secrets::digest_hex(&key), until).await
}
