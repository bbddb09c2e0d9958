//! Password hashing with Argon2id (OWASP parameters: 19 MiB, 2 passes, 1 lane).
//!
//! Invariants: only PHC strings are stored; verification uses the parameters inside the
//! stored hash, so raising the cost later keeps old hashes valid. Both calls take tens of
//! milliseconds: async callers run them on a blocking thread.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

pub fn hash_password(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|err| format!("cannot hash password: {err}"))
}

/// Whether `password` matches the stored PHC hash. A malformed hash never matches.
pub fn verify_password(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_argon2id_salted_and_verify() {
        let first = hash_password("correct horse").unwrap();
        let second = hash_password("correct horse").unwrap();
        assert!(first.starts_with("$argon2id$"), "{first}");
        assert_ne!(first, second, "salts must differ");
        assert!(verify_password("correct horse", &first));
        assert!(!verify_password("wrong horse", &first));
        assert!(!verify_password("correct horse", "not a hash"));
    }
}
