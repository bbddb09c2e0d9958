//! Time as the rest of the code sees it: a `Clock` handle and the `Timestamp` stored in records.
//!
//! Invariants: every "now" in the service comes from a `Clock`, so tests and the alert
//! evaluator can be driven without sleeping; a `Timestamp` is milliseconds since the Unix epoch
//! in UTC and always renders as RFC 3339 with millisecond precision (`2026-11-22T12:00:00.000Z`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Milliseconds since the Unix epoch, UTC. Stored as a plain integer, shown as RFC 3339.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_unix_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub fn unix_millis(self) -> i64 {
        self.0
    }

    pub fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// Adds a duration, saturating instead of overflowing on absurd inputs.
    pub fn plus(self, duration: Duration) -> Self {
        let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Timestamp(self.0.saturating_add(ms))
    }

    /// RFC 3339 UTC with exactly three fractional digits, as CONTRACT.md section 1 shows.
    pub fn to_rfc3339(self) -> String {
        let seconds = self.0.div_euclid(1000);
        let millis = self.0.rem_euclid(1000);
        match OffsetDateTime::from_unix_timestamp(seconds) {
            Ok(at) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                at.year(),
                u8::from(at.month()),
                at.day(),
                at.hour(),
                at.minute(),
                at.second(),
                millis
            ),
            // Out of the calendar's range: still say something parseable rather than panic.
            Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
        }
    }

    /// Parses an RFC 3339 timestamp with any offset into UTC milliseconds.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        let ms = at.unix_timestamp_nanos() / 1_000_000;
        i64::try_from(ms).ok().map(Timestamp)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// The source of "now". Cloning shares the same offset, so a test that advances one handle
/// advances every component holding a clone.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Milliseconds added to the system time; zero in production.
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn system() -> Self {
        Clock::default()
    }

    pub fn now(&self) -> Timestamp {
        let system_ms = OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
        let system_ms = i64::try_from(system_ms).unwrap_or(i64::MAX);
        Timestamp(system_ms.saturating_add(self.offset_ms.load(Ordering::Relaxed)))
    }

    /// Moves this clock (and its clones) forward; used by tests of time-driven behaviour.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_rfc3339_with_millis() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_795_348_800_123, "2026-11-22T12:00:00.123Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
        ];
        for (ms, text) in cases {
            assert_eq!(Timestamp(ms).to_rfc3339(), text);
            assert_eq!(Timestamp::parse_rfc3339(text), Some(Timestamp(ms)));
        }
    }

    #[test]
    fn parses_offsets_into_utc() {
        let at = Timestamp::parse_rfc3339("2026-11-22T13:00:00+01:00").unwrap();
        assert_eq!(at.to_rfc3339(), "2026-11-22T12:00:00.000Z");
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn advancing_a_clone_moves_the_original() {
        let clock = Clock::system();
        let before = clock.now();
        clock.clone().advance(Duration::from_secs(3600));
        assert!(clock.now().unix_millis() - before.unix_millis() >= 3_600_000);
    }
}
