//! A one-line progress display on standard error for `backup` and `restore`.
//!
//! Invariants: it draws only when standard error is a terminal (scripts, systemd and tests see
//! nothing), redraws at most ten times a second, and always leaves the cursor at the start of
//! a clean line, so a later message is never appended to a half-drawn bar.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::store::snapshot::{Phase, Progress};

const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// What a count counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Rows,
    Bytes,
}

pub struct ProgressLine {
    enabled: bool,
    last_label: &'static str,
    last_draw: Option<Instant>,
    drawn: bool,
}

impl ProgressLine {
    /// A display that draws only if standard error is a terminal.
    pub fn for_stderr() -> Self {
        ProgressLine {
            enabled: std::io::stderr().is_terminal(),
            last_label: "",
            last_draw: None,
            drawn: false,
        }
    }

    /// Shows a report of the snapshot code.
    pub fn snapshot(&mut self, progress: Progress) {
        let unit = match progress.phase {
            Phase::Copying | Phase::Checking => Unit::Rows,
            Phase::Compressing | Phase::Verifying | Phase::Unpacking => Unit::Bytes,
        };
        self.update(progress.phase.label(), progress.done, progress.total, unit);
    }

    pub fn update(&mut self, label: &'static str, done: u64, total: u64, unit: Unit) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let changed = label != self.last_label;
        let due = self
            .last_draw
            .is_none_or(|last| now.duration_since(last) >= REDRAW_EVERY);
        if !changed && !due && done != total {
            return;
        }
        self.last_label = label;
        self.last_draw = Some(now);
        self.drawn = true;
        let line = render(label, done, total, unit);
        let mut stderr = std::io::stderr().lock();
        // \r and "erase line": the bar redraws in place.
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
    }

    /// Erases the bar, leaving a clean line for what comes next.
    pub fn finish(&mut self) {
        if self.drawn {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
            self.drawn = false;
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `label: 42% (4.2 MiB of 10.0 MiB)`; without a total, only the count.
pub fn render(label: &str, done: u64, total: u64, unit: Unit) -> String {
    let amount = |value: u64| match unit {
        Unit::Rows => format!("{value} rows"),
        Unit::Bytes => human_bytes(value),
    };
    if total == 0 {
        return format!("{label}: {}", amount(done));
    }
    let percent = (done.min(total) as u128 * 100 / total as u128) as u64;
    format!(
        "{label}: {percent:>3}% ({} of {})",
        amount(done),
        amount(total)
    )
}

/// Bytes in binary units with one decimal: `512 B`, `1.5 KiB`, `3.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_percentages() {
        let cases = [
            (
                "copying rows",
                50,
                200,
                Unit::Rows,
                "copying rows:  25% (50 rows of 200 rows)",
            ),
            ("receiving", 0, 0, Unit::Bytes, "receiving: 0 B"),
            (
                "unpacking",
                1536,
                3072,
                Unit::Bytes,
                "unpacking:  50% (1.5 KiB of 3.0 KiB)",
            ),
            // A count past its total (a growing estimate) never shows more than 100%.
            (
                "verifying",
                7,
                5,
                Unit::Bytes,
                "verifying: 100% (7 B of 5 B)",
            ),
        ];
        for (label, done, total, unit, expected) in cases {
            assert_eq!(render(label, done, total, unit), expected);
        }
    }

    #[test]
    fn human_bytes_uses_binary_units() {
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
    }
}
