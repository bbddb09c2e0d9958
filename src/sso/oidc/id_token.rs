//! Checking an ID token (OpenID Connect Core section 3.1.3.7): signature by a key of the
//! provider's key set with an asymmetric algorithm, issuer, audience, expiry, nonce, and a
//! verified e-mail address.
//!
//! Invariants: only the asymmetric algorithms listed in `ACCEPTED` are accepted (never `none`,
//! never an HMAC keyed with a public key); the key's own algorithm, when it names one, must
//! match the token's; `exp` is required, with `LEEWAY_SECONDS` of clock skew; `email_verified`
//! must be `true`.

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::Deserialize;

use super::super::SsoError;

/// The signature algorithms accepted in ID tokens.
pub const ACCEPTED: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];
/// Clock skew allowed on `exp`, `iat` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 60;

/// The claims Lookout reads from an ID token.
#[derive(Debug, Clone, Deserialize)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    pub exp: i64,
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// `true`, or the string `"true"` some providers send.
    #[serde(default)]
    pub email_verified: Option<serde_json::Value>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub amr: Option<Vec<String>>,
}

impl IdClaims {
    pub fn email_verified(&self) -> bool {
        match &self.email_verified {
            Some(serde_json::Value::Bool(verified)) => *verified,
            Some(serde_json::Value::String(text)) => text == "true",
            _ => false,
        }
    }

    /// The provider says the person used more than one factor (RFC 8176 `mfa`).
    pub fn mfa(&self) -> bool {
        self.amr
            .as_ref()
            .is_some_and(|amr| amr.iter().any(|method| method == "mfa"))
    }
}

fn rejected(why: impl std::fmt::Display) -> SsoError {
    SsoError::Rejected(why.to_string())
}

/// The header of a token, with its algorithm checked against `ACCEPTED`.
pub fn header(token: &str) -> Result<Header, SsoError> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|err| rejected(format!("ID token header: {err}")))?;
    if !ACCEPTED.contains(&header.alg) {
        return Err(rejected(format!(
            "ID token algorithm {:?} is not accepted",
            header.alg
        )));
    }
    Ok(header)
}

/// Verifies `token`'s signature with `key`, its issuer, audience and times, and returns its
/// claims; `check_claims` then holds them to this attempt.
pub fn verify(
    token: &str,
    header: &Header,
    key: &Jwk,
    issuer: &str,
    client_id: &str,
) -> Result<IdClaims, SsoError> {
    let key_alg = key.common.key_algorithm.map(|alg| format!("{alg:?}"));
    if key_alg.is_some_and(|alg| alg != format!("{:?}", header.alg)) {
        return Err(rejected("the key is for another algorithm"));
    }
    let decoding = DecodingKey::from_jwk(key).map_err(|err| rejected(format!("key: {err}")))?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.set_issuer(&[issuer, &format!("{issuer}/")]);
    validation.set_audience(&[client_id]);
    let claims = jsonwebtoken::decode::<IdClaims>(token, &decoding, &validation)
        .map_err(|err| rejected(format!("ID token: {err}")))?
        .claims;
    Ok(claims)
}

/// The checks of a signed token's claims: this attempt's nonce, and a verified e-mail.
pub fn check_claims(claims: &IdClaims, nonce: &str) -> Result<(), SsoError> {
    let nonce_matches = claims
        .nonce
        .as_deref()
        .is_some_and(|sent| crate::secrets::digests_match(sent.as_bytes(), nonce.as_bytes()));
    if !nonce_matches {
        return Err(rejected("the ID token's nonce is not this attempt's"));
    }
    if !claims.email_verified() || claims.email.is_none() {
        return Err(SsoError::EmailUnverified);
    }
    Ok(())
}
