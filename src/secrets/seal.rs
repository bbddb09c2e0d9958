//! Sealing a secret that must be read back (an identity provider's client secret): AES-256-GCM
//! (the RustCrypto `aes-gcm` crate) under a key derived from the server key, so the stored value
//! tells nothing and any change to it is detected before anything is decrypted.
//!
//! Construction: the AEAD key is HMAC-SHA256(key, "seal-encryption"); each value gets a random
//! 12-byte nonce. Output: base64url of `nonce || cipher text || tag`.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const NONCE_BYTES: usize = 12;
const TAG_BYTES: usize = 16;

/// A sealed value did not verify (altered, truncated or sealed under another key).
#[derive(Debug, thiserror::Error)]
#[error("the sealed value does not verify")]
pub struct Unsealable;

/// The AEAD of `key`'s sealing use.
fn cipher(key: &[u8]) -> Aes256Gcm {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("hmac takes any key length");
    mac.update(b"seal-encryption");
    let derived: [u8; 32] = mac.finalize().into_bytes().into();
    Aes256Gcm::new(&derived.into())
}

/// Seals `plain` under `key`.
pub fn seal(key: &[u8], plain: &str) -> String {
    use rand::RngCore;
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut nonce);
    let body = cipher(key)
        .encrypt(&Nonce::from(nonce), plain.as_bytes())
        .expect("AES-GCM seals any secret under 64 GiB");
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(&body);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed)
}

/// Opens what `seal` made under the same key.
pub fn open(key: &[u8], sealed: &str) -> Result<String, Unsealable> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(sealed)
        .map_err(|_| Unsealable)?;
    if bytes.len() < NONCE_BYTES + TAG_BYTES {
        return Err(Unsealable);
    }
    let (nonce, body) = bytes.split_at(NONCE_BYTES);
    let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| Unsealable)?;
    let plain = cipher(key)
        .decrypt(&Nonce::from(nonce), body)
        .map_err(|_| Unsealable)?;
    String::from_utf8(plain).map_err(|_| Unsealable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let key = [7u8; 32];
        let secret = "a client secret longer than one block of the key stream, to be sure";
        let sealed = seal(&key, secret);
        assert!(!sealed.contains("client"));
        assert_eq!(open(&key, &sealed).unwrap(), secret);
        assert_ne!(seal(&key, secret), sealed, "a fresh nonce each time");
        assert!(open(&[8u8; 32], &sealed).is_err());
        let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&sealed)
            .unwrap();
        bytes[NONCE_BYTES] ^= 1;
        let altered = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        assert!(open(&key, &altered).is_err());
        assert!(open(&key, "short").is_err());
    }
}
