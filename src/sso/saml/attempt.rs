//! The browser's pending SAML sign-in: which AuthnRequest it started, for which organisation,
//! until when, and whether it is an owner's test sign-in. It lives in an HMAC-signed cookie, so
//! an unauthenticated caller makes the server store nothing.
//!
//! Invariants: a cookie is accepted only with a valid MAC under the server's key and before its
//! expiry; its fields cannot contain the separator, so no two attempts encode alike. The cookie
//! is `SameSite=None; Secure; HttpOnly` on the SAML path only: the identity provider's POST to
//! the ACS is a cross-site navigation, on which browsers do not send a `Lax` cookie (docs/sso.md).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie's name.
pub const ATTEMPT_COOKIE: &str = "lookout_saml_attempt";
/// How long a browser has to come back from the identity provider, in seconds.
pub const ATTEMPT_LIFETIME: i64 = 600;
/// The longest cookie value read; anything longer is refused before any work.
const MAX_COOKIE_BYTES: usize = 512;
const SEPARATOR: char = '|';
const VERSION: &str = "v2";

/// The MAC key of attempt cookies (derived by the caller from the server's own key).
#[derive(Clone)]
pub struct AttemptKey([u8; 32]);

impl AttemptKey {
    pub fn new(bytes: [u8; 32]) -> AttemptKey {
        AttemptKey(bytes)
    }

    fn mac(&self) -> Hmac<Sha256> {
        // An HMAC takes a key of any length, so this cannot fail.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("hmac accepts any key length")
    }
}

/// One pending sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The `ID` of our AuthnRequest, which the Response's `InResponseTo` must repeat.
    pub request_id: String,
    /// The organisation (its id) whose identity provider was asked.
    pub org: String,
    /// Unix seconds after which the attempt is void.
    pub expires_at: i64,
    /// An owner's test sign-in (`test=1`): the answer is checked and shown, nobody signs in.
    pub test: bool,
}

impl Attempt {
    /// The cookie value: the fields and their MAC, base64url.
    pub fn seal(&self, key: &AttemptKey) -> Option<String> {
        let fields = [self.request_id.as_str(), self.org.as_str()];
        if fields
            .iter()
            .any(|field| field.is_empty() || field.contains(SEPARATOR))
        {
            return None;
        }
        let payload = format!(
            "{VERSION}{SEPARATOR}{}{SEPARATOR}{}{SEPARATOR}{}{SEPARATOR}{}",
            self.request_id,
            self.org,
            self.expires_at,
            if self.test { "test" } else { "sign-in" }
        );
        let mut mac = key.mac();
        mac.update(payload.as_bytes());
        let tag = mac.finalize().into_bytes();
        Some(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        ))
    }

    /// The attempt in `value` if its MAC is valid and it has not expired at `now` (unix s).
    pub fn open(value: &str, key: &AttemptKey, now: i64) -> Option<Attempt> {
        if value.len() > MAX_COOKIE_BYTES {
            return None;
        }
        let (payload, tag) = value.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let mut mac = key.mac();
        mac.update(&payload);
        mac.verify_slice(&tag).ok()?;
        let payload = String::from_utf8(payload).ok()?;
        let mut fields = payload.split(SEPARATOR);
        let (version, request_id, org, expires_at, purpose) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        if version != VERSION || fields.next().is_some() {
            return None;
        }
        let test = match purpose {
            "test" => true,
            "sign-in" => false,
            _ => return None,
        };
        let expires_at: i64 = expires_at.parse().ok()?;
        if now >= expires_at {
            return None;
        }
        Some(Attempt {
            request_id: request_id.to_owned(),
            org: org.to_owned(),
            expires_at,
            test,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            request_id: "_2a1b".into(),
            org: "org_01J".into(),
            expires_at: 1_000,
            test: false,
        }
    }

    #[test]
    fn a_sealed_attempt_opens_until_it_expires() {
        let key = AttemptKey::new([7; 32]);
        let value = attempt().seal(&key).expect("seal");
        assert_eq!(Attempt::open(&value, &key, 999), Some(attempt()));
        assert_eq!(
            Attempt::open(&value, &key, 1_000),
            None,
            "expired at expires_at"
        );
        let test = Attempt {
            test: true,
            ..attempt()
        };
        let sealed = test.seal(&key).expect("seal");
        assert_eq!(Attempt::open(&sealed, &key, 999), Some(test));
    }

    #[test]
    fn a_changed_or_foreign_cookie_is_refused() {
        let key = AttemptKey::new([7; 32]);
        let value = attempt().seal(&key).expect("seal");
        let other = AttemptKey::new([8; 32]);
        assert_eq!(Attempt::open(&value, &other, 0), None, "another key");
        let forged = Attempt {
            org: "org_other".into(),
            ..attempt()
        }
        .seal(&other)
        .expect("seal");
        assert_eq!(
            Attempt::open(&forged, &key, 0),
            None,
            "forged by another key"
        );
        let (payload, tag) = value.split_once('.').unwrap();
        let swapped = format!(
            "{}.{tag}",
            URL_SAFE_NO_PAD.encode(b"v2|_x|org_01J|1000|sign-in")
        );
        assert_eq!(Attempt::open(&swapped, &key, 0), None, "payload changed");
        assert_eq!(Attempt::open(payload, &key, 0), None, "no tag");
        assert_eq!(
            Attempt::open(&"a".repeat(513), &key, 0),
            None,
            "over the limit"
        );
    }

    #[test]
    fn fields_with_the_separator_are_not_sealed() {
        let key = AttemptKey::new([7; 32]);
        let bad = Attempt {
            org: "org|x".into(),
            ..attempt()
        };
        assert_eq!(bad.seal(&key), None);
    }
}
