//! Key helpers shared by the alerting rooms' `db.rs` files.
//!
//! Invariant: free-text key parts are escaped, so a `/` in them cannot split a composite key.

use crate::store::StoreError;

/// `/` and `%` escaped, so free text is one part of a composite key.
pub fn key_part(text: &str) -> String {
    text.replace('%', "%25").replace('/', "%2F")
}

pub(crate) fn corrupt(what: &'static str, key: &str) -> StoreError {
    StoreError::Corrupt {
        what,
        detail: format!("{key} is indexed but missing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parts_cannot_split_a_key() {
        assert_eq!(key_part("a/b%c"), "a%2Fb%25c");
        assert_ne!(key_part("a/b"), key_part("a%2Fb"));
    }
}
