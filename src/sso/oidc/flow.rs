//! The OIDC authorization code flow with PKCE (RFC 7636, S256), `state` and `nonce`: the start
//! builds the provider's authorization URL and the attempt cookie; the callback checks the
//! answer against the cookie, exchanges the code, verifies the ID token and hands the
//! identity to `finish`.
//!
//! Invariants: nothing is written before an ID token's signature verified; its nonce is then
//! recorded (bounded, until the token expires) and a second use is refused; a provider's error
//! or odd answer ends in an `SsoError`, never a panic.

use std::net::IpAddr;

use serde::Deserialize;

use super::attempt::Attempt;
use super::id_token;
use crate::accounts::model::{OrgId, UserId};
use crate::sso::model::OidcSettings;
use crate::sso::{Asserted, Finished, Protocol, Sso, SsoError, config_for};

/// The scopes asked for.
pub const SCOPES: &str = "openid email profile";
/// The largest token endpoint answer read, in bytes.
const MAX_TOKEN_ANSWER_BYTES: usize = 64 * 1024;

impl Sso {
    pub(crate) fn attempt_key(&self) -> [u8; 32] {
        self.auth().derived_key("sso oidc attempt")
    }

    fn redirect_uri(&self) -> String {
        format!("{}{}", self.auth().base_url(), super::CALLBACK_PATH)
    }
}

/// The organisation's OIDC settings, with the plan checked.
async fn settings(sso: &Sso, org: &OrgId) -> Result<OidcSettings, SsoError> {
    config_for(sso.store(), org)
        .await?
        .oidc
        .ok_or(SsoError::NotConfigured)
}

/// A started sign-in: where to send the browser, and the attempt cookie's value.
pub struct Started {
    pub location: String,
    pub cookie: String,
}

/// Starts a sign-in to `org` (linking to `link_as` when set; only checking the provider's
/// answer when `test`).
pub async fn start(
    sso: &Sso,
    org: OrgId,
    link_as: Option<UserId>,
    test: bool,
) -> Result<Started, SsoError> {
    let settings = settings(sso, &org).await?;
    let discovery = sso.providers().discovery(&settings.issuer).await?;
    let attempt = Attempt {
        test,
        ..Attempt::new(org, link_as, sso.auth().clock().now())
    };
    let mut location = url::Url::parse(&discovery.authorization_endpoint)
        .map_err(|err| SsoError::Provider(format!("authorization endpoint: {err}")))?;
    location
        .query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &settings.client_id)
        .append_pair("redirect_uri", &sso.redirect_uri())
        .append_pair("scope", SCOPES)
        .append_pair("state", &attempt.state)
        .append_pair("nonce", &attempt.nonce)
        .append_pair("code_challenge", &attempt.pkce_challenge())
        .append_pair("code_challenge_method", "S256");
    Ok(Started {
        location: location.to_string(),
        cookie: attempt.seal(&sso.attempt_key()),
    })
}

/// What the provider sends back to the callback.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    /// The provider's refusal (RFC 6749 section 4.1.2.1), e.g. `access_denied`.
    pub error: Option<String>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
}

/// Checks the provider's answer and signs the person in.
/// `attempt` is the browser's attempt cookie, opened (`None`: missing, altered or lapsed).
pub async fn callback(
    sso: &Sso,
    query: CallbackQuery,
    attempt: Option<Attempt>,
    client: IpAddr,
) -> Result<Finished, SsoError> {
    let attempt = attempt.ok_or(SsoError::AttemptInvalid)?;
    let state_matches = query.state.as_deref().is_some_and(|state| {
        crate::secrets::digests_match(state.as_bytes(), attempt.state.as_bytes())
    });
    if !state_matches {
        return Err(SsoError::AttemptInvalid);
    }
    if let Some(error) = query.error {
        let shown: String = error.chars().take(64).collect();
        return Err(SsoError::Rejected(format!("the provider answered {shown}")));
    }
    let code = query
        .code
        .filter(|code| !code.is_empty() && code.len() <= 4096)
        .ok_or_else(|| SsoError::Rejected("no authorization code".to_string()))?;
    let settings = settings(sso, &attempt.org).await?;
    let id_token = exchange(sso, &settings, &code, &attempt).await?;
    let header = id_token::header(&id_token)?;
    let key = sso
        .providers()
        .key(&settings.issuer, header.kid.as_deref())
        .await?;
    let claims = id_token::verify(
        &id_token,
        &header,
        &key,
        &settings.issuer,
        &settings.client_id,
    )?;
    // Signed by the provider from here on: refusals are audited in the organisation's log
    // (bounded by what the provider signs, not by what anyone sends).
    let checked = match id_token::check_claims(&claims, &attempt.nonce) {
        Ok(()) => use_nonce(sso, &attempt.nonce, claims.exp).await,
        Err(why) => Err(why),
    };
    if let Err(why) = checked {
        let email = claims.email.clone().unwrap_or_default();
        crate::sso::finish::audit_refusal(sso, &attempt.org, &email, Protocol::Oidc, &why, client)
            .await?;
        return Err(why);
    }
    let email = crate::accounts::model::normalize_email(claims.email.as_deref().unwrap_or(""))
        .map_err(|_| SsoError::EmailUnverified)?;
    if attempt.test {
        return Ok(Finished::Tested {
            email,
            mfa: claims.mfa(),
        });
    }
    let asserted = Asserted {
        org: attempt.org,
        issuer: settings.issuer,
        mfa: claims.mfa(),
        subject: claims.sub,
        email,
        name: claims.name,
        protocol: Protocol::Oidc,
    };
    crate::sso::finish(sso, asserted, attempt.link_as, client).await
}

/// Exchanges the code (with the PKCE verifier) for an ID token.
async fn exchange(
    sso: &Sso,
    settings: &OidcSettings,
    code: &str,
    attempt: &Attempt,
) -> Result<String, SsoError> {
    let discovery = sso.providers().discovery(&settings.issuer).await?;
    let secret = crate::secrets::seal::open(&sso.sealing_key(), &settings.sealed_client_secret)
        .map_err(|err| SsoError::Provider(format!("client secret: {err}")))?;
    let (client_id, redirect_uri) = (settings.client_id.clone(), sso.redirect_uri());
    let (code, verifier) = (code.to_string(), attempt.pkce_verifier.clone());
    let answer = tokio::task::spawn_blocking(move || {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_verifier", verifier.as_str()),
            ("client_id", client_id.as_str()),
        ];
        super::super::fetch::post_form(
            &discovery.token_endpoint,
            &form,
            (&client_id, &secret),
            MAX_TOKEN_ANSWER_BYTES,
        )
    })
    .await
    .map_err(|err| SsoError::Provider(err.to_string()))?
    .map_err(|cause| SsoError::Provider(format!("token endpoint: {cause}")))?;
    if answer.status != 200 {
        return Err(SsoError::Rejected(format!(
            "the token endpoint answered {}",
            answer.status
        )));
    }
    let token: TokenAnswer = serde_json::from_slice(&answer.body)
        .map_err(|err| SsoError::Provider(format!("token answer: {err}")))?;
    token
        .id_token
        .ok_or_else(|| SsoError::Rejected("the token answer has no ID token".to_string()))
}

/// Records the nonce as used until the token expires; a second use is `Replayed`.
async fn use_nonce(sso: &Sso, nonce: &str, exp: i64) -> Result<(), SsoError> {
    let digest = crate::secrets::digest_hex(nonce);
    // Kept past the expiry by the leeway a late token would still be accepted with.
    let leeway_ms = i64::try_from(id_token::LEEWAY_SECONDS).unwrap_or(60) * 1000;
    let until = crate::clock::Timestamp::from_unix_millis(exp.saturating_mul(1000) + leeway_ms);
    crate::sso::use_once(sso, digest, until).await
}
