//! One OIDC sign-in attempt, carried by the browser between the start and the callback in a
//! signed cookie, so nothing is stored before the provider answers.
//!
//! Invariants: the cookie's value is `base64url(JSON) "." base64url(HMAC-SHA256)` under a key
//! derived for this use only; a value whose MAC does not verify, or whose `expires_at` has
//! passed, is no attempt. It is HttpOnly, SameSite=Lax (the provider's redirect back is a
//! top-level GET, which Lax lets through) and scoped to the OIDC routes' path. It holds the
//! PKCE verifier and the nonce: both are secret to the browser's own JavaScript.

use axum::http::HeaderValue;
use axum_extra::extract::cookie::{Cookie, SameSite};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::accounts::model::{OrgId, UserId};
use crate::clock::Timestamp;
use crate::sso::Landing;

/// The attempt cookie's name.
pub const COOKIE: &str = "lookout_sso";
/// The path it is sent to.
pub const COOKIE_PATH: &str = "/api/v1/auth/sso/oidc";
/// How long a person has at the provider before the attempt lapses.
pub const TTL_SECONDS: i64 = 600;
/// The longest cookie value read, in bytes.
const MAX_COOKIE_BYTES: usize = 2048;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub org: OrgId,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// The signed-in account to link the identity to (`link=1`).
    pub link_as: Option<UserId>,
    /// An owner's test sign-in (`test=1`): the answer is checked and shown, nobody signs in.
    #[serde(default)]
    pub test: bool,
    pub expires_at: i64,
}

impl Attempt {
    /// A fresh attempt for `org`, with its own state, nonce and PKCE verifier.
    pub fn new(org: OrgId, link_as: Option<UserId>, now: Timestamp) -> Attempt {
        Attempt {
            org,
            state: crate::secrets::random_token(),
            nonce: crate::secrets::random_token(),
            // 43 base64url characters: RFC 7636's shortest verifier, from 32 random bytes.
            pkce_verifier: crate::secrets::random_token(),
            link_as,
            test: false,
            expires_at: now.unix_millis() + TTL_SECONDS * 1000,
        }
    }

    /// Where the browser lands after this attempt.
    pub fn landing(&self) -> Landing {
        match (self.test, &self.link_as) {
            (true, _) => Landing::Test,
            (false, Some(_)) => Landing::Link,
            (false, None) => Landing::SignIn,
        }
    }

    fn mac(key: &[u8], payload: &str) -> Vec<u8> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(key).expect("hmac takes any key length");
        mac.update(payload.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The signed cookie value.
    pub fn seal(&self, key: &[u8]) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let payload = URL_SAFE_NO_PAD.encode(json);
        let mac = URL_SAFE_NO_PAD.encode(Self::mac(key, &payload));
        format!("{payload}.{mac}")
    }

    /// The attempt a cookie value carries, if it verifies and has not lapsed.
    pub fn open(key: &[u8], value: &str, now: Timestamp) -> Option<Attempt> {
        if value.len() > MAX_COOKIE_BYTES {
            return None;
        }
        let (payload, mac) = value.split_once('.')?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        if !crate::secrets::digests_match(&Self::mac(key, payload), &mac) {
            return None;
        }
        let json = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let attempt: Attempt = serde_json::from_slice(&json).ok()?;
        (attempt.expires_at > now.unix_millis()).then_some(attempt)
    }
}

/// The `Set-Cookie` value carrying `value` (or clearing the cookie when it is empty).
pub fn cookie(value: String, secure: bool) -> HeaderValue {
    let max_age = if value.is_empty() { 0 } else { TTL_SECONDS };
    let cookie = Cookie::build((COOKIE, value))
        .path(COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(time::Duration::seconds(max_age))
        .build();
    HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_attempts_open_only_unaltered_and_in_time() {
        let now = Timestamp::from_unix_millis(1_000_000);
        let attempt = Attempt::new(OrgId::generate(), None, now);
        let key = [1u8; 32];
        let sealed = attempt.seal(&key);
        assert_eq!(Attempt::open(&key, &sealed, now), Some(attempt.clone()));
        assert_eq!(Attempt::open(&[2u8; 32], &sealed, now), None);
        let later = Timestamp::from_unix_millis(now.unix_millis() + TTL_SECONDS * 1000);
        assert_eq!(Attempt::open(&key, &sealed, later), None);
        let (payload, mac) = sealed.split_once('.').unwrap();
        let other = Attempt::new(attempt.org.clone(), None, now).seal(&key);
        let (other_payload, _) = other.split_once('.').unwrap();
        assert_eq!(
            Attempt::open(&key, &format!("{other_payload}.{mac}"), now),
            None
        );
        assert_eq!(Attempt::open(&key, payload, now), None);
        assert_eq!(attempt.pkce_verifier.len(), 43);
    }
}
