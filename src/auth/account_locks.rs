//! Per-account turns for sign-in decisions: the lockout state of one e-mail is read, the
//! password (or code) checked and the outcome written while holding that e-mail's turn, so
//! parallel guesses are decided one after another and each sees the failures of the previous.
//!
//! Invariants: the turns are a fixed array of stripes chosen by a keyed hash of the e-mail, so
//! the structure never grows whatever e-mails are tried; two e-mails sharing a stripe only wait
//! for each other. A turn is an async mutex: it may be held across the argon2 `.await`, never
//! across a store transaction (transactions run inside `Store::write` closures).

use std::hash::{BuildHasher, RandomState};

use tokio::sync::{Mutex, MutexGuard};

/// Stripes: enough that unrelated sign-ins rarely share one, few enough to be a fixed cost.
const STRIPES: usize = 1024;

pub struct AccountLocks {
    stripes: Box<[Mutex<()>]>,
    /// Keyed per process, so nobody can pick e-mails that all land on one stripe.
    hasher: RandomState,
}

impl Default for AccountLocks {
    fn default() -> Self {
        AccountLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
        }
    }
}

impl AccountLocks {
    /// Waits for the turn of `email_key` (a normalised e-mail); the turn ends when the guard drops.
    pub async fn turn(&self, email_key: &str) -> MutexGuard<'_, ()> {
        let stripe = self.hasher.hash_one(email_key) as usize % self.stripes.len();
        self.stripes[stripe].lock().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_key_takes_turns_and_other_keys_do_not_wait_forever() {
        let locks = AccountLocks::default();
        let first = locks.turn("a@example.com").await;
        let same = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            locks.turn("a@example.com"),
        )
        .await;
        assert!(same.is_err(), "a second turn of one key waits");
        drop(first);
        let _again = locks.turn("a@example.com").await;
    }
}
