//! Indexed counters for alert rules: error events, new error groups and span durations per
//! organisation, service and environment, in buckets of 1 s, 10 s, 1 min, 10 min and 1 h,
//! written in the transaction that stores the telemetry. The evaluator reads a window as a few
//! dozen bucket rows (the fewest aligned buckets that cover it) instead of rescanning events.
//!
//! Key: `{org}/{metric}/{service}/{environment}/{level letter}{bucket, 12 digits}`; an empty
//! service or environment part is the "any" row, so an event adds to four rows per level (its
//! service and environment, each with "any"). Free-text parts are escaped like every composite
//! key (`db::key_part`). Times are arrival times (a client cannot date an event into a window).
//!
//! Invariants: a window of at most `EXACT_WINDOW_SECONDS` is summed to the second; a longer one
//! starts at a minute boundary (so it needs no second rows older than an hour). Rows of the
//! 1 s and 10 s levels older than `SECOND_ROWS_KEPT`, of the 1 min and 10 min levels older
//! than `MINUTE_ROWS_KEPT`, and hour rows older than `HOUR_ROWS_KEPT`, are swept.
//! Span durations are kept as a log-scale histogram whose bins hold a count and a sum, so a
//! percentile is the mean of the bin it falls in: exact when the bin's values are equal, and
//! within one bin's width (about 9 %) otherwise.

pub mod api;

use std::collections::HashMap;

use redb::WriteTransaction;
use serde::{Deserialize, Serialize};

use super::db::key_part;
use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::Record;
use crate::store::{ReadTxn, RecordTable, Scan, StoreError, tables};

const ROLLUPS: RecordTable<Rollup> = RecordTable::new(tables::ROLLUPS);

/// The longest window an alert rule may have.
pub const MAX_WINDOW_SECONDS: i64 = 86_400;
/// Windows up to this length are summed to the second.
pub const EXACT_WINDOW_SECONDS: i64 = 3_600;
/// How long second rows are kept (an exact window plus slack).
pub const SECOND_ROWS_KEPT: i64 = EXACT_WINDOW_SECONDS + 600;
/// How long minute and ten-minute rows are kept (the longest window plus slack; also the
/// last 24 h of the per-minute error chart, `stats.rs`).
pub const MINUTE_ROWS_KEPT: i64 = MAX_WINDOW_SECONDS + 3_600;
/// How long hour rows are kept: a month of the hourly error chart (`stats.rs`).
pub const HOUR_ROWS_KEPT: i64 = 31 * 86_400;

/// What a row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Error events (level `error` and `warning`).
    Errors,
    /// Error groups opened.
    NewGroups,
    /// Span durations.
    Spans,
}

impl Metric {
    fn as_str(self) -> &'static str {
        match self {
            Metric::Errors => "errors",
            Metric::NewGroups => "groups",
            Metric::Spans => "spans",
        }
    }
}

/// One bucket: a count, and for spans a duration histogram `(bin, count, sum of ms)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    #[serde(rename = "n")]
    pub count: u64,
    #[serde(rename = "h", default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<(u16, u64, f64)>,
}

impl Record for Rollup {
    const KIND: &'static str = "rollup";
}

/// Bucket sizes in seconds with their key letter, smallest first. Each divides the next, so
/// any whole-second range splits into aligned buckets.
const LEVELS: [(char, i64); 5] = [('s', 1), ('t', 10), ('m', 60), ('n', 600), ('h', 3600)];

/// Levels whose rows are kept only `SECOND_ROWS_KEPT`.
fn short_lived(letter: char) -> bool {
    letter == 's' || letter == 't'
}

/// The fewest aligned buckets covering the seconds `first..=last`, as runs of consecutive
/// buckets of one level: `(letter, first bucket, last bucket)`, in time order.
pub fn cover(first: i64, last: i64) -> Vec<(char, i64, i64)> {
    let mut runs: Vec<(char, i64, i64)> = Vec::new();
    let (mut at, end) = (first, last + 1);
    while at < end {
        let (letter, size) = LEVELS
            .iter()
            .rev()
            .copied()
            .find(|(_, size)| at.rem_euclid(*size) == 0 && at + size <= end)
            .unwrap_or(LEVELS[0]);
        let bucket = at.div_euclid(size);
        match runs.last_mut() {
            Some(run) if run.0 == letter && run.2 + 1 == bucket => run.2 = bucket,
            _ => runs.push((letter, bucket, bucket)),
        }
        at += size;
    }
    runs
}

/// Bins per doubling of the duration.
const BINS_PER_OCTAVE: f64 = 8.0;
const MAX_BIN: u16 = 255;

/// The histogram bin of a duration in milliseconds: 0 below 1 ms, then 8 per doubling.
pub fn bin_of(duration_ms: f64) -> u16 {
    if !duration_ms.is_finite() || duration_ms < 1.0 {
        return 0;
    }
    let bin = (duration_ms.log2() * BINS_PER_OCTAVE).floor() as i64 + 1;
    bin.clamp(1, i64::from(MAX_BIN)) as u16
}

impl Rollup {
    fn add(&mut self, other: &Rollup) {
        self.count += other.count;
        for &(bin, count, sum) in &other.histogram {
            match self.histogram.binary_search_by_key(&bin, |entry| entry.0) {
                Ok(at) => {
                    self.histogram[at].1 += count;
                    self.histogram[at].2 += sum;
                }
                Err(at) => self.histogram.insert(at, (bin, count, sum)),
            }
        }
    }

    fn add_duration(&mut self, duration_ms: f64) {
        let duration_ms = if duration_ms.is_finite() {
            duration_ms.max(0.0)
        } else {
            0.0
        };
        self.add(&Rollup {
            count: 1,
            histogram: vec![(bin_of(duration_ms), 1, duration_ms)],
        });
    }

    /// The `quantile` (0..=1) of the durations by nearest rank, or `None` without spans.
    pub fn quantile(&self, quantile: f64) -> Option<f64> {
        let total: u64 = self.histogram.iter().map(|entry| entry.1).sum();
        if total == 0 {
            return None;
        }
        let rank = ((quantile * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for &(_, count, sum) in &self.histogram {
            seen += count;
            if seen >= rank {
                return Some(sum / count as f64);
            }
        }
        None
    }
}

pub(super) fn prefix(org: &str, metric: Metric, service: &str, environment: &str) -> String {
    format!(
        "{org}/{}/{}/{}/",
        metric.as_str(),
        key_part(service),
        key_part(environment)
    )
}

fn bucket_key(prefix: &str, granularity: char, bucket: i64) -> String {
    format!("{prefix}{granularity}{:012}", bucket.max(0))
}

/// The counts of one batch of telemetry, folded in memory and written once per row.
///
/// Items are first folded per metric, service, environment and second (a batch's events
/// mostly share them), and spread over their 20 rows (four service/environment combinations,
/// five levels) only once per distinct second, when the batch is flushed.
#[derive(Default)]
pub struct RollupBatch {
    seconds: HashMap<SecondKey, Rollup>,
    /// The key of the latest item and what was folded under it since: consecutive items
    /// mostly share it, and are then folded without building a key.
    latest: Option<(SecondKey, Rollup)>,
}

/// Metric, service, environment and second of folded items.
#[derive(PartialEq, Eq, Hash)]
struct SecondKey {
    org: String,
    metric: Metric,
    service: Option<String>,
    environment: Option<String>,
    second: i64,
}

impl RollupBatch {
    pub fn new() -> Self {
        RollupBatch::default()
    }

    fn touch(
        &mut self,
        org: &OrgId,
        metric: Metric,
        service: Option<&str>,
        environment: Option<&str>,
        at: Timestamp,
        change: &Rollup,
    ) {
        let second = at.unix_seconds();
        if let Some((key, folded)) = &mut self.latest
            && key.second == second
            && key.metric == metric
            && key.org == org.as_str()
            && key.service.as_deref() == service
            && key.environment.as_deref() == environment
        {
            folded.add(change);
            return;
        }
        let key = SecondKey {
            org: org.as_str().to_string(),
            metric,
            service: service.map(str::to_string),
            environment: environment.map(str::to_string),
            second,
        };
        let mut folded = Rollup::default();
        folded.add(change);
        if let Some((key, folded)) = self.latest.replace((key, folded)) {
            self.seconds.entry(key).or_default().add(&folded);
        }
    }

    /// The stored rows each folded second adds to, with what it adds.
    fn rows(mut self) -> HashMap<String, Rollup> {
        if let Some((key, folded)) = self.latest.take() {
            self.seconds.entry(key).or_default().add(&folded);
        }
        let mut rows: HashMap<String, Rollup> = HashMap::new();
        for (key, change) in self.seconds {
            let services = [key.service.as_deref(), None];
            let environments = [key.environment.as_deref(), None];
            for (index, service) in services.iter().enumerate() {
                // A missing service or environment adds to the "any" row only, once.
                if index == 0 && service.is_none() {
                    continue;
                }
                for (index, environment) in environments.iter().enumerate() {
                    if index == 0 && environment.is_none() {
                        continue;
                    }
                    let prefix = prefix(
                        &key.org,
                        key.metric,
                        service.unwrap_or(""),
                        environment.unwrap_or(""),
                    );
                    for (letter, size) in LEVELS {
                        rows.entry(bucket_key(&prefix, letter, key.second.div_euclid(size)))
                            .or_default()
                            .add(&change);
                    }
                }
            }
        }
        rows
    }

    /// Counts one event (`metric` `Errors` or `NewGroups`).
    pub fn count(
        &mut self,
        org: &OrgId,
        metric: Metric,
        service: Option<&str>,
        environment: Option<&str>,
        at: Timestamp,
    ) {
        let one = Rollup {
            count: 1,
            histogram: Vec::new(),
        };
        self.touch(org, metric, service, environment, at, &one);
    }

    /// Records one span's duration.
    pub fn span(
        &mut self,
        org: &OrgId,
        service: &str,
        environment: Option<&str>,
        at: Timestamp,
        duration_ms: f64,
    ) {
        let mut one = Rollup::default();
        one.add_duration(duration_ms);
        self.touch(org, Metric::Spans, Some(service), environment, at, &one);
    }

    /// Adds the batch to the stored rows: one read and one write per row touched.
    pub fn flush(self, txn: &WriteTransaction) -> Result<(), StoreError> {
        for (key, change) in self.rows() {
            let mut row = ROLLUPS.get(txn, &key)?.unwrap_or_default();
            row.add(&change);
            ROLLUPS.insert(txn, &key, &row)?;
        }
        Ok(())
    }
}

/// The rows of `granularity` from bucket `first` to `last` inclusive, with their bucket
/// numbers, in time order. Reads at most one row per bucket (there is at most one).
pub(super) fn rows_between(
    txn: &impl ReadTxn,
    prefix: &str,
    granularity: char,
    first: i64,
    last: i64,
) -> Result<Vec<(i64, Rollup)>, StoreError> {
    if first > last {
        return Ok(Vec::new());
    }
    let rows_prefix = format!("{prefix}{granularity}");
    let end = bucket_key(prefix, granularity, last);
    // `after` is exclusive: start just below the first bucket's key.
    let before_first = bucket_key(prefix, granularity, first - 1);
    let scan = Scan {
        prefix: &rows_prefix,
        after: (first > 0).then_some(before_first.as_str()),
        limit: usize::try_from(last - first + 1).unwrap_or(usize::MAX),
    };
    let rows = txn
        .open(ROLLUPS.definition())?
        .scan_with(scan, |key, bytes| {
            if key > end.as_str() {
                return Ok(None);
            }
            let bucket = key[rows_prefix.len()..].parse::<i64>().unwrap_or(-1);
            crate::store::codec::decode::<Rollup>(bytes).map(|row| Some((bucket, row)))
        })?;
    Ok(rows.into_iter().flatten().collect())
}

/// Sums the buckets of `granularity` from `first` to `last` inclusive.
fn sum_range(
    txn: &impl ReadTxn,
    prefix: &str,
    granularity: char,
    first: i64,
    last: i64,
    into: &mut Rollup,
) -> Result<(), StoreError> {
    for (_, row) in rows_between(txn, prefix, granularity, first, last)? {
        into.add(&row);
    }
    Ok(())
}

/// The totals of the window of `seconds` ending at `now` (inclusive of `now`'s second).
pub fn window(
    txn: &impl ReadTxn,
    org: &OrgId,
    metric: Metric,
    service: Option<&str>,
    environment: Option<&str>,
    now: Timestamp,
    seconds: i64,
) -> Result<Rollup, StoreError> {
    let prefix = prefix(
        org.as_str(),
        metric,
        service.unwrap_or(""),
        environment.unwrap_or(""),
    );
    let last = now.unix_seconds();
    let seconds = seconds.clamp(1, MAX_WINDOW_SECONDS);
    let mut first = last - seconds + 1;
    if seconds > EXACT_WINDOW_SECONDS {
        first = first.div_euclid(60) * 60;
    }
    let mut total = Rollup::default();
    for (letter, from, to) in cover(first, last) {
        sum_range(txn, &prefix, letter, from, to, &mut total)?;
    }
    Ok(total)
}

/// The keys of rows older than they are needed. A read: the whole table is scanned, so the
/// evaluator does it every few minutes, outside the writer, and removes the keys in chunks
/// (`remove_rows`). A row this returns is never written again (arrival times only move on).
pub fn stale_rows(txn: &impl ReadTxn, now: Timestamp) -> Result<Vec<String>, StoreError> {
    let now = now.unix_seconds();
    let cutoff = |letter: char| {
        if short_lived(letter) {
            now - SECOND_ROWS_KEPT
        } else if letter == 'h' {
            now - HOUR_ROWS_KEPT
        } else {
            now - MINUTE_ROWS_KEPT
        }
    };
    let table = txn.open(ROLLUPS.definition())?;
    let stale = table.scan_with(Scan::all(), |key, _| {
        let Some((_, last)) = key.rsplit_once('/') else {
            return Ok(None);
        };
        let mut chars = last.chars();
        let Some(letter) = chars.next() else {
            return Ok(None);
        };
        let (Some((_, size)), Ok(bucket)) = (
            LEVELS.iter().find(|(known, _)| *known == letter),
            chars.as_str().parse::<i64>(),
        ) else {
            return Ok(None);
        };
        // A bucket is old when it ended before the cutoff.
        let old = (bucket + 1) * size <= cutoff(letter);
        Ok(old.then(|| key.to_string()))
    })?;
    Ok(stale.into_iter().flatten().collect())
}

/// Removes the rows named by `keys`; returns how many were there.
pub fn remove_rows(txn: &WriteTransaction, keys: &[String]) -> Result<usize, StoreError> {
    let mut removed = 0;
    for key in keys {
        removed += usize::from(ROLLUPS.remove(txn, key)?);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests;
