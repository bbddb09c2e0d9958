//! Signed tokens: the session JWT of the `lookout_session` cookie and the short-lived login
//! token of a sign-in waiting for its second factor.
//!
//! Invariants (RFC 8725): only HS256 with the server key verifies — `none`, other algorithms
//! and other keys are refused; `iss`, `aud`, `exp`, `nbf`, `iat`, `sub` and `jti` are required;
//! the `typ` claim keeps session tokens and login tokens apart, so one can never stand in for
//! the other. Time checks use the service `Clock`, not the system clock, so they are testable.

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::keys::JwtKey;
use crate::accounts::model::{OrgId, Role, UserId};
use crate::clock::Timestamp;

pub const ISSUER: &str = "lookout";
pub const AUDIENCE: &str = "lookout";
/// Lifetime of a login token (and its `lookout_login` cookie).
pub const LOGIN_TOKEN_TTL: Duration = Duration::from_secs(300);

/// What a token is for (the `typ` claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    Session,
    Login,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: UserId,
    pub org: OrgId,
    /// The role at issue time; sessions only. A role change revokes the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: String,
    pub iss: String,
    pub aud: String,
    pub typ: TokenKind,
    /// Issue time in milliseconds, so a logout and a new sign-in within the same second are
    /// told apart by RegisterUserLogout.
    pub iat_ms: i64,
    /// The sign-in was multi-factor at an identity provider (SSO with `amr` `mfa`), which
    /// satisfies the organisation's 2FA enforcement like an enrolled second factor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mfa: bool,
}

impl Claims {
    pub fn issued_at(&self) -> Timestamp {
        Timestamp(self.iat_ms)
    }

    pub fn expires_at(&self) -> Timestamp {
        Timestamp(self.exp.saturating_mul(1000))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed, forged or of another kind")]
    Invalid,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
}

/// Signs and verifies tokens with the server key.
#[derive(Clone)]
pub struct TokenSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl TokenSigner {
    pub fn new(key: &JwtKey) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "nbf", "iat", "iss", "aud", "sub", "jti"]);
        // Expiry and not-before are checked against the service clock below.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        TokenSigner {
            encoding: EncodingKey::from_secret(&key.0),
            decoding: DecodingKey::from_secret(&key.0),
            validation,
        }
    }

    /// Issues a token of `kind` for `user` in `org`, valid from `now` for `ttl`.
    pub fn issue(
        &self,
        kind: TokenKind,
        user: &UserId,
        org: &OrgId,
        role: Option<Role>,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<(String, Claims), String> {
        let claims = Claims {
            sub: user.clone(),
            org: org.clone(),
            role,
            iat: now.unix_seconds(),
            nbf: now.unix_seconds(),
            exp: now.plus(ttl).unix_seconds(),
            jti: crate::secrets::random_token(),
            iss: ISSUER.to_string(),
            aud: AUDIENCE.to_string(),
            typ: kind,
            iat_ms: now.unix_millis(),
            mfa: false,
        };
        let token = self.sign(&claims)?;
        Ok((token, claims))
    }

    /// Signs `claims` as they are.
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|err| format!("cannot sign a token: {err}"))
    }

    /// Verifies signature, algorithm, issuer, audience, kind and validity period at `now`.
    pub fn verify(
        &self,
        kind: TokenKind,
        token: &str,
        now: Timestamp,
    ) -> Result<Claims, TokenError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| TokenError::Invalid)?;
        let claims = data.claims;
        if claims.typ != kind || (kind == TokenKind::Session && claims.role.is_none()) {
            return Err(TokenError::Invalid);
        }
        let now_seconds = now.unix_seconds();
        if now_seconds >= claims.exp {
            return Err(TokenError::Expired);
        }
        if now_seconds < claims.nbf {
            return Err(TokenError::NotYetValid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn signer(byte: u8) -> TokenSigner {
        TokenSigner::new(&JwtKey(vec![byte; 64].into()))
    }

    fn session(signer: &TokenSigner, now: Timestamp) -> String {
        let user = UserId::generate();
        let org = OrgId::generate();
        signer
            .issue(
                TokenKind::Session,
                &user,
                &org,
                Some(Role::Viewer),
                now,
                Duration::from_secs(3600),
            )
            .unwrap()
            .0
    }

    /// Re-encodes a token's parts after `edit` changes the decoded header or claims.
    fn tamper(token: &str, part: usize, edit: impl Fn(&mut serde_json::Value)) -> String {
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut json: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[part]).unwrap()).unwrap();
        edit(&mut json);
        parts[part] = URL_SAFE_NO_PAD.encode(json.to_string());
        parts.join(".")
    }

    #[test]
    fn a_fresh_session_verifies_until_it_expires() {
        let signer = signer(1);
        let now = Timestamp(1_795_348_800_000);
        let token = session(&signer, now);
        let claims = signer.verify(TokenKind::Session, &token, now).unwrap();
        assert_eq!(claims.role, Some(Role::Viewer));
        let later = now.plus(Duration::from_secs(3600));
        assert_eq!(
            signer.verify(TokenKind::Session, &token, later),
            Err(TokenError::Expired)
        );
        let earlier = Timestamp(now.unix_millis() - 2000);
        assert_eq!(
            signer.verify(TokenKind::Session, &token, earlier),
            Err(TokenError::NotYetValid)
        );
    }

    #[test]
    fn forged_and_confused_tokens_are_refused() {
        let signer = signer(1);
        let now = Timestamp(1_795_348_800_000);
        let token = session(&signer, now);
        let none_alg = tamper(&token, 0, |header| header["alg"] = "none".into());
        let none_unsigned = format!("{}.", none_alg.rsplit_once('.').unwrap().0);
        let hs512 = tamper(&token, 0, |header| header["alg"] = "HS512".into());
        let promoted = tamper(&token, 1, |claims| claims["role"] = "owner".into());
        let other_key = session(&self::signer(2), now);
        let login = signer
            .issue(
                TokenKind::Login,
                &UserId::generate(),
                &OrgId::generate(),
                None,
                now,
                LOGIN_TOKEN_TTL,
            )
            .unwrap()
            .0;
        for (what, candidate) in [
            ("alg none", none_alg.as_str()),
            ("alg none without signature", none_unsigned.as_str()),
            ("algorithm switch", hs512.as_str()),
            ("tampered role", promoted.as_str()),
            ("another key", other_key.as_str()),
            ("login token as session", login.as_str()),
            ("garbage", "a.b.c"),
        ] {
            assert_eq!(
                signer.verify(TokenKind::Session, candidate, now),
                Err(TokenError::Invalid),
                "{what}"
            );
        }
        assert_eq!(
            signer.verify(TokenKind::Login, &token, now),
            Err(TokenError::Invalid),
            "session as login token"
        );
    }
}
