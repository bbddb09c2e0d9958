//! Password hashing with Argon2id (OWASP parameters: 19 MiB, 2 passes, 1 lane).
//!
//! Invariants: only PHC strings are stored; verification uses the parameters inside the
//! stored hash, so raising the cost later keeps old hashes valid. Both calls take tens of
//! milliseconds and 19 MiB: async callers go through `hash_bounded` and `verify_bounded`, which
//! run them on the hashing pool (`hashing_pool.rs`), one per core, with a bounded queue that
//! answers `Overloaded` when full.
//!
//! Verification reuses one 19 MiB work area per thread. Allocating it afresh each time made
//! the kernel fault in 19 MiB of pages per sign-in (about 8 ms here), and whether that happened
//! depended on which thread served the request: a timing difference unrelated to the account,
//! but noise on top of a check whose timing must not depend on whether the account exists.

use std::cell::RefCell;

pub use super::hashing_pool::HashingError;
use super::hashing_pool::run_on_hashing_pool;

use argon2::password_hash::PasswordHasher;
use argon2::password_hash::phc::PasswordHash;
use argon2::{Algorithm, Argon2, Block, Params, Version};

thread_local! {
    /// The argon2 work area of this thread, kept between verifications.
    static WORK_AREA: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

pub fn hash_password(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|err| format!("cannot hash password: {err}"))
}

/// Whether `password` matches the stored PHC hash. A malformed hash never matches.
pub fn verify_password(password: &str, stored: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (&parsed.salt, &parsed.hash) else {
        return false;
    };
    let Ok(algorithm) = Algorithm::new(parsed.algorithm.as_str()) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(version)) => version,
        Some(Err(_)) => return false,
    };
    let Ok(params) = Params::try_from(&parsed) else {
        return false;
    };
    let blocks = params.block_count();
    let hasher = Argon2::new(algorithm, version, params);
    let mut computed = vec![0u8; expected.as_bytes().len()];
    let hashed = WORK_AREA.with_borrow_mut(|area| {
        area.resize(blocks, Block::default());
        hasher.hash_password_into_with_memory(
            password.as_bytes(),
            salt.as_ref(),
            &mut computed,
            &mut area[..blocks],
        )
    });
    hashed.is_ok() && super::digests_match(&computed, expected.as_bytes())
}

/// Hashes `password` on the hashing pool.
pub async fn hash_bounded(password: String) -> Result<String, HashingError> {
    run_on_hashing_pool(move || hash_password(&password))
        .await?
        .map_err(HashingError::Failed)
}

/// Verifies `password` against `stored` on the hashing pool; counted in
/// `lookout_password_verifications_total`.
pub async fn verify_bounded(password: String, stored: String) -> Result<bool, HashingError> {
    let matches = run_on_hashing_pool(move || verify_password(&password, &stored)).await?;
    metrics::counter!("lookout_password_verifications_total").increment(1);
    Ok(matches)
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
