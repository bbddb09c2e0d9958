//! `API_RATE_PER_MIN` per credential (a session's user or an API key), GCRA via governor.
//!
//! Invariant: memory stays bounded — idle buckets are dropped by `retain_recent` from the
//! server's housekeeping tick.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

pub struct ApiRateLimiter {
    limiter: RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock>,
    clock: DefaultClock,
}

impl ApiRateLimiter {
    pub fn new(per_minute: u32) -> Self {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        ApiRateLimiter {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            clock: DefaultClock::default(),
        }
    }

    /// `Ok` when `credential` may make a request now, else how long until it may.
    pub fn check(&self, credential: &str) -> Result<(), Duration> {
        match self.limiter.check_key(&credential.to_string()) {
            Ok(()) => Ok(()),
            Err(not_until) => Err(not_until.wait_time_from(self.clock.now())),
        }
    }

    pub fn retain_recent(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_is_per_credential() {
        let limiter = ApiRateLimiter::new(3);
        for _ in 0..3 {
            assert!(limiter.check("usr_a").is_ok());
        }
        let wait = limiter.check("usr_a").unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        assert!(
            limiter.check("key_b").is_ok(),
            "another credential has its own bucket"
        );
    }
}
