//! The OIDC authorization code flow with PKCE (RFC 7636, S256), `state` and `nonce`, through
//! the `openidconnect` crate: the start builds the provider's authorization URL and the attempt
//! cookie; the callback checks the answer against the cookie, exchanges the code, verifies the
//! ID token (the crate's checks plus `claims.rs`) and hands the identity to `finish`.
//!
//! Invariants: nothing is written before an ID token's signature verified; its nonce is then
//! recorded (bounded, until the token expires) and a second use is refused; a token signed by
//! a key the cached set lacks makes one key-set re-fetch (`provider.rs`); a provider's error
//! or odd answer ends in an `SsoError`, never a panic.

use std::net::IpAddr;

use openidconnect::core::CoreResponseType;
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, TokenResponse,
};
use serde::Deserialize;

use super::attempt::Attempt;
use super::claims::{self, IdToken, IdTokenClaims, OidcClient};
use crate::accounts::model::{OrgId, UserId};
use crate::sso::model::OidcSettings;
use crate::sso::{Asserted, Finished, Protocol, Sso, SsoError, config_for};

/// The scopes asked for besides `openid`.
pub const SCOPES: [&str; 2] = ["email", "profile"];
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

/// The organisation's client: its provider's metadata, its id and secret, Lookout's redirect URI.
fn client(
    sso: &Sso,
    settings: &OidcSettings,
    metadata: openidconnect::core::CoreProviderMetadata,
) -> Result<OidcClient, SsoError> {
    let secret = crate::secrets::seal::open(&sso.sealing_key(), &settings.sealed_client_secret)
        .map_err(|err| SsoError::Provider(format!("client secret: {err}")))?;
    let redirect = RedirectUrl::new(sso.redirect_uri())
        .map_err(|err| SsoError::Provider(format!("redirect URI: {err}")))?;
    Ok(OidcClient::from_provider_metadata(
        metadata,
        ClientId::new(settings.client_id.clone()),
        Some(ClientSecret::new(secret)),
    )
    .set_redirect_uri(redirect))
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
    let metadata = sso
        .providers()
        .metadata(sso.fetcher(), &settings.issuer)
        .await?;
    let client = client(sso, &settings, metadata)?;
    let attempt = Attempt {
        test,
        ..Attempt::new(org, link_as, sso.auth().clock().now())
    };
    let (state, nonce) = (attempt.state.clone(), attempt.nonce.clone());
    let verifier = PkceCodeVerifier::new(attempt.pkce_verifier.clone());
    let mut request = client
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            move || CsrfToken::new(state),
            move || Nonce::new(nonce),
        )
        .set_pkce_challenge(PkceCodeChallenge::from_code_verifier_sha256(&verifier));
    for scope in SCOPES {
        request = request.add_scope(Scope::new(scope.to_string()));
    }
    let (location, _, _) = request.url();
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

/// Checks the provider's answer and signs the person in.
/// `attempt` is the browser's attempt cookie, opened (`None`: missing, altered or lapsed).
pub async fn callback(
    sso: &Sso,
    query: CallbackQuery,
    attempt: Option<Attempt>,
    client_addr: IpAddr,
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
    let metadata = sso
        .providers()
        .metadata(sso.fetcher(), &settings.issuer)
        .await?;
    let client = client(sso, &settings, metadata)?;
    let id_token = exchange(sso, client.clone(), &code, &attempt).await?;
    let verified = match verify(sso, &client, &id_token, &attempt.nonce) {
        Err(VerifyError::UnknownKey) => {
            // Key rotation: one re-fetch of the provider's key set, then the same checks.
            match sso
                .providers()
                .refetch_keys(sso.fetcher(), &settings.issuer)
                .await?
            {
                Some(metadata) => {
                    let client = self::client(sso, &settings, metadata)?;
                    verify(sso, &client, &id_token, &attempt.nonce)
                }
                None => Err(VerifyError::UnknownKey),
            }
        }
        other => other,
    };
    let claims = verified.map_err(SsoError::from)?;
    let issuer = claims.issuer().as_str().to_string();
    let email = claims.email().map(|email| email.as_str().to_string());
    // Signed by the provider from here on: refusals are audited in the organisation's log
    // (bounded by what the provider signs, not by what anyone sends).
    let checked =
        if claims::email_verified(&issuer, claims.email_verified(), claims.additional_claims())
            && email.is_some()
        {
            use_nonce(sso, &attempt.nonce, claims.expiration().timestamp()).await
        } else {
            Err(SsoError::EmailUnverified)
        };
    if let Err(why) = checked {
        let shown = email.clone().unwrap_or_default();
        crate::sso::finish::audit_refusal(
            sso,
            &attempt.org,
            &shown,
            Protocol::Oidc,
            &why,
            client_addr,
        )
        .await?;
        return Err(why);
    }
    let email = crate::accounts::model::normalize_email(email.as_deref().unwrap_or(""))
        .map_err(|_| SsoError::EmailUnverified)?;
    let mfa = claims::mfa(&claims);
    if attempt.test {
        return Ok(Finished::Tested { email, mfa });
    }
    let name = claims
        .name()
        .and_then(|name| name.get(None))
        .map(|name| name.as_str().to_string());
    let asserted = Asserted {
        org: attempt.org,
        issuer: settings.issuer,
        mfa,
        subject: claims.subject().as_str().to_string(),
        email,
        name,
        protocol: Protocol::Oidc,
    };
    crate::sso::finish(sso, asserted, attempt.link_as, client_addr).await
}

/// Why an ID token did not verify.
enum VerifyError {
    /// Signed with a key the provider's (cached) set lacks.
    UnknownKey,
    Rejected(String),
}

impl From<VerifyError> for SsoError {
    fn from(error: VerifyError) -> SsoError {
        match error {
            VerifyError::UnknownKey => SsoError::Rejected(
                "the ID token's key is not in the provider's key set".to_string(),
            ),
            VerifyError::Rejected(why) => SsoError::Rejected(why),
        }
    }
}

/// The crate's ID-token checks (signature with an accepted algorithm, issuer, audience,
/// expiry with `LEEWAY_SECONDS` on Lookout's clock, this attempt's nonce).
fn verify(
    sso: &Sso,
    client: &OidcClient,
    id_token: &IdToken,
    nonce: &str,
) -> Result<IdTokenClaims, VerifyError> {
    let now_ms = sso.auth().clock().now().unix_millis() - claims::LEEWAY_SECONDS * 1000;
    let now = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
    let verifier = client
        .id_token_verifier()
        .set_allowed_algs(claims::accepted_algs())
        .set_time_fn(move || now);
    let expected = nonce.to_string();
    let nonce_check = move |sent: Option<&Nonce>| match sent {
        Some(sent)
            if crate::secrets::digests_match(sent.secret().as_bytes(), expected.as_bytes()) =>
        {
            Ok(())
        }
        _ => Err("the ID token's nonce is not this attempt's".to_string()),
    };
    match id_token.claims(&verifier, nonce_check) {
        Ok(claims) => Ok(claims.clone()),
        Err(ClaimsVerificationError::SignatureVerification(
            SignatureVerificationError::NoMatchingKey,
        )) => Err(VerifyError::UnknownKey),
        Err(err) => Err(VerifyError::Rejected(format!("ID token: {err}"))),
    }
}

/// Exchanges the code (with the PKCE verifier) for an ID token.
async fn exchange(
    sso: &Sso,
    client: OidcClient,
    code: &str,
    attempt: &Attempt,
) -> Result<IdToken, SsoError> {
    let fetcher = sso.fetcher().clone();
    let (code, verifier) = (code.to_string(), attempt.pkce_verifier.clone());
    let answer = tokio::task::spawn_blocking(move || {
        client
            .exchange_code(AuthorizationCode::new(code))
            .map(|request| {
                request
                    .set_pkce_verifier(PkceCodeVerifier::new(verifier))
                    .request(&fetcher.bounded(MAX_TOKEN_ANSWER_BYTES))
            })
    })
    .await
    .map_err(|err| SsoError::Provider(err.to_string()))?
    .map_err(|err| SsoError::Provider(format!("token endpoint: {err}")))?;
    match answer {
        Ok(answer) => answer
            .id_token()
            .cloned()
            .ok_or_else(|| SsoError::Rejected("the token answer has no ID token".to_string())),
        Err(RequestTokenError::Request(cause)) => {
            Err(super::provider::fetch_error("token endpoint", cause))
        }
        Err(RequestTokenError::ServerResponse(refusal)) => Err(SsoError::Rejected(format!(
            "the token endpoint answered {}",
            refusal.error()
        ))),
        Err(RequestTokenError::Parse(err, body)) => Err(unparsed(&err.to_string(), &body)),
        Err(RequestTokenError::Other(why)) => Err(SsoError::Rejected(format!(
            "the token endpoint answered {why}"
        ))),
    }
}

/// The refusal of a token answer the crate could not parse (often an ID token whose claims
/// break the standard's types).
fn unparsed(why: &str, body: &[u8]) -> SsoError {
    let raw_token = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|answer| answer.get("id_token")?.as_str().map(str::to_string));
    if raw_token.is_some_and(|token| claims::malformed_email_verified(&token)) {
        return SsoError::EmailUnverified;
    }
    SsoError::Rejected(format!("token answer: {why}"))
}

/// Records the nonce as used until the token expires; a second use is `Replayed`.
async fn use_nonce(sso: &Sso, nonce: &str, exp: i64) -> Result<(), SsoError> {
    let digest = crate::secrets::digest_hex(nonce);
    // Kept past the expiry by the leeway a late token would still be accepted with.
    let leeway_ms = claims::LEEWAY_SECONDS * 1000;
    let until = crate::clock::Timestamp::from_unix_millis(exp.saturating_mul(1000) + leeway_ms);
    crate::sso::use_once(sso, digest, until).await
}
