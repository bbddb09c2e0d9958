//! Sealing a secret that must be read back (an identity provider's client secret): encrypt,
//! then MAC, with keys derived from a server key, so the stored value tells nothing and any
//! change to it is detected.
//!
//! Construction: HMAC-SHA256 in counter mode over a random 16-byte nonce as the key stream, and
//! HMAC-SHA256 over nonce and cipher text as the tag (checked in constant time before anything
//! is decrypted). Both keys are derived from the given key with distinct labels. Output:
//! base64url of `nonce || cipher text || tag`.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const NONCE_BYTES: usize = 16;
const TAG_BYTES: usize = 32;

/// A sealed value did not verify (altered, truncated or sealed under another key).
#[derive(Debug, thiserror::Error)]
#[error("the sealed value does not verify")]
pub struct Unsealable;

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).expect("hmac takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

fn apply_key_stream(encryption_key: &[u8], nonce: &[u8], data: &mut [u8]) {
    for (counter, chunk) in data.chunks_mut(32).enumerate() {
        let block = mac(encryption_key, &[nonce, &(counter as u64).to_be_bytes()]);
        for (byte, key_byte) in chunk.iter_mut().zip(block) {
            *byte ^= key_byte;
        }
    }
}

/// Seals `plain` under `key`.
pub fn seal(key: &[u8], plain: &str) -> String {
    use rand::RngCore;
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut nonce);
    let encryption_key = mac(key, &[b"seal-encryption"]);
    let mac_key = mac(key, &[b"seal-authentication"]);
    let mut body = plain.as_bytes().to_vec();
    apply_key_stream(&encryption_key, &nonce, &mut body);
    let tag = mac(&mac_key, &[&nonce, &body]);
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(&body);
    sealed.extend_from_slice(&tag);
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
    let (nonce, rest) = bytes.split_at(NONCE_BYTES);
    let (body, tag) = rest.split_at(rest.len() - TAG_BYTES);
    let encryption_key = mac(key, &[b"seal-encryption"]);
    let mac_key = mac(key, &[b"seal-authentication"]);
    if !super::digests_match(&mac(&mac_key, &[nonce, body]), tag) {
        return Err(Unsealable);
    }
    let mut plain = body.to_vec();
    apply_key_stream(&encryption_key, nonce, &mut plain);
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
