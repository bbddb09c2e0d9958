//! `AccessWatch`: a terminal's watch on its user's rights. A role change, a removal from the
//! organisation, a second-factor reset, a password change and "log out everywhere" all end in
//! one RegisterUserLogout (`Revocations::note_user_logout`); a terminal whose user is named in
//! one later than its ticket's minting closes.
//!
//! Invariants: the watch subscribes before the ticket is redeemed, and redemption reads the
//! revocation map after that, so a logout is either seen at redemption or heard by the relay:
//! none falls between. A subscriber that lagged behind the published logouts reads the map,
//! which holds every logout before it is published, so lagging can delay nothing.

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::accounts::model::UserId;
use crate::auth::Auth;
use crate::auth::revocation::UserLogout;
use crate::clock::Timestamp;

/// Why a terminal ended when its user's rights went away, in its audit entry and session row.
pub const ACCESS_REVOKED: &str = "access_revoked";
/// The close code the browser gets then (4401: the credential the terminal rests on is void).
pub const ACCESS_REVOKED_CLOSE_CODE: u16 = 4401;
/// The close reason the browser gets then (a close reason holds at most 123 bytes).
pub const ACCESS_REVOKED_CLOSE_REASON: &str =
    "access_revoked: your role, membership or sessions changed; open the terminal again";

/// Published logouts heard since before redemption; bound to a user once the ticket is known.
pub struct Subscription {
    auth: Auth,
    logouts: broadcast::Receiver<UserLogout>,
}

impl Subscription {
    /// Starts hearing logouts; call before the ticket is redeemed.
    pub fn start(auth: &Auth) -> Subscription {
        Subscription {
            logouts: auth.revocations().subscribe(),
            auth: auth.clone(),
        }
    }

    /// Whether `user` was logged out everywhere after `issued_at`.
    pub fn cut_off(&self, user: &UserId, issued_at: Timestamp) -> bool {
        self.auth.revocations().user_cut_off(user, issued_at)
    }

    /// Watches `user`, whose ticket was minted at `issued_at`.
    pub fn watch(self, user: UserId, issued_at: Timestamp) -> AccessWatch {
        AccessWatch {
            subscription: self,
            user,
            issued_at,
        }
    }
}

pub struct AccessWatch {
    subscription: Subscription,
    user: UserId,
    issued_at: Timestamp,
}

impl AccessWatch {
    /// Resolves once the user's access is revoked; never otherwise. Cancel-safe: dropping it
    /// loses no logout, since the receiver keeps its place.
    pub async fn revoked(&mut self) {
        loop {
            match self.subscription.logouts.recv().await {
                Ok(logout) => {
                    if logout.user == self.user && logout.at > self.issued_at {
                        return;
                    }
                }
                // Some logouts were missed: the map has them all.
                Err(RecvError::Lagged(_)) => {
                    if self.subscription.cut_off(&self.user, self.issued_at) {
                        return;
                    }
                }
                // The sender lives as long as `Auth`, which this watch holds: unreachable, but
                // if it were, no logout could come any more.
                Err(RecvError::Closed) => std::future::pending::<()>().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_close_reason_fits_a_close_frame() {
        assert!(ACCESS_REVOKED_CLOSE_REASON.len() <= 123);
        assert!(ACCESS_REVOKED_CLOSE_REASON.starts_with(ACCESS_REVOKED));
    }
}
