//! Read APIs over spans for the performance pages: `GET /api/v1/spans/series` (duration
//! percentiles per time bucket) and `GET /api/v1/traces` (traces summarised by their root
//! span, newest first).
//!
//! Invariants: both read the organisation's spans in one read transaction on a blocking thread,
//! as `GET /api/v1/spans` does (spans are keyed by trace, so there is no time index to narrow
//! the scan); what they keep is bounded: a series has at most `MAX_POINTS` buckets, a trace
//! list at most `limit + 1` summaries at a time, and a trace's spans are held only while the
//! scan is inside that trace (its spans are adjacent in key order).

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::api_reads::{for_each_span, read};
use super::session_spans::root_of;
use super::spans::{Span, hex_id};
use super::traces::nearest_rank;
use crate::auth::Viewer;
use crate::clock::{Clock, Timestamp};
use crate::http::ApiError;
use crate::http::page::{Page, PageRequest};
use crate::http::problems;
use crate::http::query::{filters, parameter_error as parameter, time_filter};
use crate::store::Store;

/// Most buckets in one series; a finer `interval` is widened to fit.
pub const MAX_POINTS: i64 = 500;
/// Buckets a series aims at when no `interval` is given.
const DEFAULT_POINTS: i64 = 120;
/// Bucket widths (seconds) chosen from when no `interval` is given.
const STEPS: [i64; 9] = [60, 300, 600, 900, 1800, 3600, 10_800, 21_600, 86_400];
/// The window of a series without `from`.
const DEFAULT_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// One bucket of a series: the spans that started in `[at, at + interval)`.
#[derive(Debug, Serialize, ToSchema, PartialEq)]
pub struct SeriesPoint {
    /// The bucket's start (RFC 3339).
    pub at: String,
    pub count: u64,
    /// Null when the bucket has no span.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SpanSeries {
    pub interval_seconds: i64,
    pub points: Vec<SeriesPoint>,
}

/// The width of a series' buckets over `[from, to)`: `asked` when it fits `MAX_POINTS`, else
/// the smallest whole number of seconds that does (one bucket is kept for the alignment of the
/// first); without `asked`, the first of `STEPS` giving about `DEFAULT_POINTS` buckets.
pub fn bucket_seconds(from: Timestamp, to: Timestamp, asked: Option<i64>) -> i64 {
    let span_ms = (to.unix_millis() - from.unix_millis()).max(1);
    let fitting = |points: i64| (span_ms + points * 1000 - 1) / (points * 1000);
    match asked {
        Some(asked) => asked.max(fitting(MAX_POINTS - 1)),
        None => STEPS
            .into_iter()
            .find(|step| step * 1000 * DEFAULT_POINTS >= span_ms)
            .unwrap_or_else(|| fitting(DEFAULT_POINTS)),
    }
}

/// Every bucket of `[from, to)` (starts aligned to multiples of `interval` seconds since the
/// epoch) with the percentiles of the durations that fell in it.
pub fn series_points(
    from: Timestamp,
    to: Timestamp,
    interval: i64,
    mut buckets: BTreeMap<i64, Vec<f64>>,
) -> Vec<SeriesPoint> {
    let width = interval * 1000;
    let first = from.unix_millis().div_euclid(width) * width;
    let mut points = Vec::new();
    let mut at = first;
    while at < to.unix_millis() {
        let mut values = buckets.remove(&at).unwrap_or_default();
        values.sort_by(f64::total_cmp);
        let rank = |p| (!values.is_empty()).then(|| nearest_rank(&values, p));
        points.push(SeriesPoint {
            at: Timestamp(at).to_rfc3339(),
            count: values.len() as u64,
            p50_ms: rank(50.0),
            p95_ms: rank(95.0),
            p99_ms: rank(99.0),
        });
        at += width;
    }
    points
}

/// Whether a span's status says it failed: the word `error` (or OpenTelemetry's
/// `STATUS_CODE_ERROR`), alone or as an object's `code` (also OpenTelemetry's numeric `2`).
pub fn is_error_status(status: Option<&Value>) -> bool {
    let word = |text: &str| {
        text.eq_ignore_ascii_case("error") || text.eq_ignore_ascii_case("status_code_error")
    };
    match status {
        Some(Value::String(text)) => word(text),
        Some(Value::Object(fields)) => match fields.get("code") {
            Some(Value::String(code)) => word(code),
            Some(Value::Number(code)) => code.as_u64() == Some(2),
            _ => false,
        },
        _ => false,
    }
}

/// One trace, summarised by its root span (the earliest without a parent in the trace).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct TraceSummary {
    pub trace_id: String,
    pub root_name: String,
    /// The root span's service.
    pub service: String,
    /// The earliest start of the trace's spans (RFC 3339).
    pub started_at: String,
    /// From the earliest start to the latest end of the trace's spans.
    pub duration_ms: f64,
    pub span_count: usize,
    /// Spans whose status says they failed.
    pub error_count: usize,
    #[serde(skip)]
    started_ms: i64,
}

impl TraceSummary {
    /// The list's order and cursor: newest first, then by trace id (descending).
    fn position(&self) -> (i64, String) {
        (self.started_ms, self.trace_id.clone())
    }
}

// The heap keeps the newest summaries: reversed, so its top is the oldest kept.
impl Eq for TraceSummary {}
impl Ord for TraceSummary {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.position().cmp(&self.position())
    }
}
impl PartialOrd for TraceSummary {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The summary of one trace's spans; `None` for none.
pub fn summarise_trace(spans: &[Span]) -> Option<TraceSummary> {
    let root = root_of(spans)?;
    let start = spans.iter().map(|s| s.start_time).min()?;
    let end = spans.iter().map(|s| s.end_time).max()?;
    Some(TraceSummary {
        trace_id: root.trace_id.clone(),
        root_name: root.name.clone(),
        service: root.service.clone(),
        started_at: start.to_rfc3339(),
        duration_ms: (end.unix_millis() - start.unix_millis()).max(0) as f64,
        span_count: spans.len(),
        error_count: spans
            .iter()
            .filter(|s| is_error_status(s.status.as_ref()))
            .count(),
        started_ms: start.unix_millis(),
    })
}

/// The span filters both endpoints share: a span is wanted when it has the service,
/// environment and name asked for (each when given).
#[derive(Clone)]
pub(super) struct SpanFilter {
    service: Option<String>,
    environment: Option<String>,
    name: Option<String>,
}

impl SpanFilter {
    pub(super) fn read(filters: &HashMap<String, String>) -> SpanFilter {
        SpanFilter {
            service: filters.get("service").cloned(),
            environment: filters.get("environment").cloned(),
            name: filters.get("name").cloned(),
        }
    }

    pub(super) fn wants(&self, span: &Span) -> bool {
        self.service.as_ref().is_none_or(|s| &span.service == s)
            && self
                .environment
                .as_ref()
                .is_none_or(|e| span.environment.as_ref() == Some(e))
            && self.name.as_ref().is_none_or(|n| &span.name == n)
    }
}

/// p50/p95/p99 of span durations per time bucket, for one name or all.
#[utoipa::path(get, path = "/api/v1/spans/series", tag = "ingest",
    params(("service" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("name" = Option<String>, Query),
        ("from" = Option<String>, Query, description = "spans starting at or after; default 24 h before `to`"),
        ("to" = Option<String>, Query, description = "spans starting before; default now"),
        ("interval" = Option<i64>, Query, description = "bucket width in seconds; widened to at most 500 buckets")),
    responses((status = 200, body = SpanSeries), problems::Invalid))]
pub(super) async fn span_series(
    State(store): State<Store>,
    State(clock): State<Clock>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<SpanSeries>, ApiError> {
    let names = ["service", "environment", "name", "from", "to", "interval"];
    let filters = filters(query.as_deref(), &names)?;
    let to = time_filter(&filters, "to")?.unwrap_or_else(|| clock.now());
    let from = time_filter(&filters, "from")?
        .unwrap_or_else(|| Timestamp(to.unix_millis() - DEFAULT_WINDOW.as_millis() as i64));
    if from >= to {
        return Err(parameter("from: must be before to"));
    }
    let asked = match filters.get("interval") {
        None => None,
        Some(text) => match text.parse::<i64>() {
            Ok(seconds) if (1..=31_536_000).contains(&seconds) => Some(seconds),
            _ => return Err(parameter("interval: expected seconds from 1 to 31536000")),
        },
    };
    let interval = bucket_seconds(from, to, asked);
    let (org, wanted) = (caller.org_id, SpanFilter::read(&filters));
    let width = interval * 1000;
    let buckets = read(&store, move |txn| {
        let mut buckets: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for_each_span(txn, &org, |span| {
            if span.start_time >= from && span.start_time < to && wanted.wants(&span) {
                let at = span.start_time.unix_millis().div_euclid(width) * width;
                buckets.entry(at).or_default().push(span.duration_ms);
            }
        })?;
        Ok(buckets)
    })
    .await?;
    let points = tokio::task::spawn_blocking(move || series_points(from, to, interval, buckets))
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(SpanSeries {
        interval_seconds: interval,
        points,
    }))
}

/// Reads a trace list cursor: `<started_at ms>.<trace_id>`.
fn parse_cursor(cursor: &str) -> Result<(i64, String), ()> {
    let (ms, trace) = cursor.split_once('.').ok_or(())?;
    let ms = ms.parse::<i64>().map_err(drop)?;
    Ok((ms, hex_id("trace_id", trace, 32).map_err(drop)?))
}

/// Traces newest first, each summarised by its root span; a trace is listed when one of its
/// spans has the `service`, `environment` and `name` asked for.
#[utoipa::path(get, path = "/api/v1/traces", tag = "ingest",
    params(("service" = Option<String>, Query), ("environment" = Option<String>, Query),
        ("name" = Option<String>, Query, description = "a span name the trace holds"),
        ("from" = Option<String>, Query, description = "traces starting at or after"),
        ("to" = Option<String>, Query, description = "traces starting before"),
        ("min_duration_ms" = Option<f64>, Query),
        ("limit" = Option<usize>, Query), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = Page<TraceSummary>), problems::Invalid))]
pub(super) async fn list_traces(
    State(store): State<Store>,
    Viewer(caller): Viewer,
    page: PageRequest,
    RawQuery(query): RawQuery,
) -> Result<Json<Page<TraceSummary>>, ApiError> {
    let names = [
        "service",
        "environment",
        "name",
        "from",
        "to",
        "min_duration_ms",
    ];
    let filters = filters(query.as_deref(), &names)?;
    let (from, to) = (time_filter(&filters, "from")?, time_filter(&filters, "to")?);
    let min_duration = match filters.get("min_duration_ms") {
        None => 0.0,
        Some(text) => match text.parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => ms,
            _ => {
                return Err(parameter(
                    "min_duration_ms: expected a number of at least 0",
                ));
            }
        },
    };
    let before = page.cursor_as(parse_cursor)?;
    let (org, wanted, limit) = (caller.org_id, SpanFilter::read(&filters), page.limit);
    let keep = move |summary: &TraceSummary| {
        let started = Timestamp(summary.started_ms);
        from.is_none_or(|from| started >= from)
            && to.is_none_or(|to| started < to)
            && summary.duration_ms >= min_duration
            && before.as_ref().is_none_or(|b| summary.position() < *b)
    };
    let newest = read(&store, move |txn| {
        let mut newest: BinaryHeap<TraceSummary> = BinaryHeap::new();
        let (mut trace, mut matched): (Vec<Span>, bool) = (Vec::new(), false);
        let mut finish = |trace: &mut Vec<Span>, matched: bool| {
            let summary = summarise_trace(trace).filter(|s| matched && keep(s));
            trace.clear();
            if let Some(summary) = summary {
                newest.push(summary);
                if newest.len() > limit + 1 {
                    newest.pop();
                }
            }
        };
        for_each_span(txn, &org, |span| {
            if trace.first().is_some_and(|t| t.trace_id != span.trace_id) {
                finish(&mut trace, matched);
                matched = false;
            }
            matched |= wanted.wants(&span);
            trace.push(span);
        })?;
        finish(&mut trace, matched);
        Ok(newest.into_sorted_vec())
    })
    .await?;
    let (items, next_cursor) = page.split(newest, |s| format!("{}.{}", s.started_ms, s.trace_id));
    Ok(Json(Page::new(items, next_cursor)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const HOUR: i64 = 3_600_000;

    #[test]
    fn buckets_fit_the_window() {
        let (from, to) = (Timestamp(0), Timestamp(24 * HOUR));
        assert_eq!(bucket_seconds(from, to, None), 900, "96 quarter hours");
        assert_eq!(bucket_seconds(from, Timestamp(HOUR), None), 60);
        assert_eq!(bucket_seconds(from, to, Some(3600)), 3600);
        let widened = bucket_seconds(from, to, Some(1));
        assert_eq!(widened, 174, "24 h in at most 500 aligned buckets");
        assert!(series_points(Timestamp(1), to, widened, BTreeMap::new()).len() <= 500);
        let year = Timestamp(400 * 24 * HOUR);
        assert!((year.unix_millis() / 1000) / bucket_seconds(from, year, None) <= DEFAULT_POINTS);
    }

    #[test]
    fn every_bucket_is_a_point_and_empty_ones_have_no_percentiles() {
        let mut buckets = BTreeMap::new();
        buckets.insert(HOUR, vec![30.0, 10.0, 20.0]);
        let points = series_points(Timestamp(HOUR / 2), Timestamp(3 * HOUR), 3600, buckets);
        let counts: Vec<u64> = points.iter().map(|p| p.count).collect();
        assert_eq!(counts, [0, 3, 0]);
        assert_eq!(points[0].at, Timestamp(0).to_rfc3339());
        assert_eq!(points[0].p50_ms, None);
        assert_eq!(
            (points[1].p50_ms, points[1].p99_ms),
            (Some(20.0), Some(30.0))
        );
    }

    #[test]
    fn error_statuses() {
        for failed in [
            json!("error"),
            json!("ERROR"),
            json!({"code": "error"}),
            json!({"code": "STATUS_CODE_ERROR"}),
            json!({"code": 2}),
        ] {
            assert!(is_error_status(Some(&failed)), "{failed}");
        }
        for fine in [json!("ok"), json!({"code": 1}), json!({"message": "error"})] {
            assert!(!is_error_status(Some(&fine)), "{fine}");
        }
        assert!(!is_error_status(None));
    }

    #[test]
    fn cursors_are_a_time_and_a_trace() {
        let trace = "a".repeat(32);
        assert_eq!(parse_cursor(&format!("5.{trace}")), Ok((5, trace)));
        for bad in ["", "5", "x.ab", "5.abc"] {
            assert!(parse_cursor(bad).is_err(), "{bad}");
        }
    }
}
