//! Secret material shared by `accounts` and `auth`, below both: argon2id password hashes on
//! their bounded pool (`password.rs`, `hashing_pool.rs`), random tokens, the SHA-256 digests
//! stored in their place, and constant-time comparison.
//!
//! Invariants: this module knows no capability (it uses only `http` for the overload answer);
//! a token is never stored, only its digest; digests are compared in constant time.

pub mod hashing_pool;
pub mod password;
pub mod seal;

/// A random secret token: 32 bytes from the OS generator, base64url without padding.
pub fn random_token() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A freshly minted secret: shown to its creator once, then only `digest` is kept.
pub struct Minted {
    pub secret: String,
    /// `token_digest` of `secret`, hex: the key of the digest index.
    pub digest: String,
}

/// Mints `prefix` followed by a `random_token`, with its digest.
pub fn mint(prefix: &str) -> Minted {
    let secret = format!("{prefix}{}", random_token());
    let digest = digest_hex(&secret);
    Minted { secret, digest }
}

/// `token_digest` of a presented token in hex, as the digest indexes are keyed.
pub fn digest_hex(token: &str) -> String {
    hex::encode(token_digest(token))
}

/// SHA-256 of a token, as stored in place of the token itself.
pub fn token_digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// Compares two digests in constant time.
pub fn digests_match(left: &[u8], right: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    left.ct_eq(right).into()
}
