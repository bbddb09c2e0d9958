//! `GET /api/v1/stats/errors`: error events per interval for the overview chart, read from the
//! rollup counters (`rollup.rs`) rather than from the events.
//!
//! Invariants: the answer has one bucket per interval from the one holding `from` to the one
//! holding the last millisecond before `to`, zero buckets included, at most `MAX_BUCKETS`
//! (else 400 `invalid_parameter`); 60 s and 300 s buckets sum minute rows (kept
//! `rollup::MINUTE_ROWS_KEPT`), 3600 s buckets read hour rows (kept `rollup::HOUR_ROWS_KEPT`),
//! so buckets older than that read as zero. One bounded scan in one read transaction.

use axum::Json;
use axum::extract::{FromRef, RawQuery, State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::accounts::model::OrgId;
use crate::alerting::Alerting;
use crate::alerting::rollup::{self, Metric};
use crate::auth::{Auth, Viewer};
use crate::clock::Timestamp;
use crate::http::ApiError;
use crate::http::error::Problem;
use crate::http::query::{filters, parameter_error, time_filter};
use crate::store::{ReadTxn, StoreError};

/// Most buckets one answer holds.
pub const MAX_BUCKETS: i64 = 1_500;
/// The intervals offered, in seconds.
pub const INTERVALS: [i64; 3] = [60, 300, 3_600];
/// The range when `from` is omitted: the last 24 hours.
const DEFAULT_RANGE_SECONDS: i64 = 86_400;

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Auth: FromRef<S>,
    Alerting: FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(error_stats))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Bucket {
    /// Start of the bucket (RFC 3339).
    pub at: String,
    pub count: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorStats {
    pub interval_seconds: i64,
    pub buckets: Vec<Bucket>,
}

/// The buckets asked for: `interval` seconds each, the first starting at second `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    first: i64,
    count: i64,
    interval: i64,
}

/// Reads `from`, `to` and `interval` (defaults: the last 24 h, 60 s) into aligned buckets.
fn range_of(
    from: Option<Timestamp>,
    to: Option<Timestamp>,
    interval: Option<&str>,
    now: Timestamp,
) -> Result<Range, ApiError> {
    let interval = match interval {
        None => 60,
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|seconds| INTERVALS.contains(seconds))
            .ok_or_else(|| parameter_error("interval: one of 60, 300 or 3600 seconds"))?,
    };
    let to = to.unwrap_or(now);
    let from = from.unwrap_or(Timestamp(to.0 - DEFAULT_RANGE_SECONDS * 1000));
    if from.0 >= to.0 {
        return Err(parameter_error("from: must be before to"));
    }
    let first = from.unix_seconds().div_euclid(interval) * interval;
    let last = Timestamp(to.0 - 1).unix_seconds().div_euclid(interval) * interval;
    let count = (last - first) / interval + 1;
    if count > MAX_BUCKETS {
        return Err(parameter_error(format!(
            "the range holds {count} buckets of {interval} s; at most {MAX_BUCKETS}: \
             narrow from/to or choose a longer interval"
        )));
    }
    Ok(Range {
        first,
        count,
        interval,
    })
}

/// The error counts of each bucket of `range`, from one scan of the rows of one level.
fn error_counts(
    txn: &impl ReadTxn,
    org: &OrgId,
    service: Option<&str>,
    environment: Option<&str>,
    range: Range,
) -> Result<Vec<u64>, StoreError> {
    let prefix = rollup::prefix(
        org.as_str(),
        Metric::Errors,
        service.unwrap_or(""),
        environment.unwrap_or(""),
    );
    let (letter, size) = if range.interval == 3_600 {
        ('h', 3_600)
    } else {
        ('m', 60)
    };
    let first_row = range.first / size;
    let last_row = (range.first + range.count * range.interval) / size - 1;
    let rows = rollup::rows_between(txn, &prefix, letter, first_row, last_row)?;
    let mut counts = vec![0_u64; usize::try_from(range.count).unwrap_or(0)];
    for (row, counted) in rows {
        let index = (row * size - range.first).div_euclid(range.interval);
        if let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|at| counts.get_mut(at))
        {
            *slot += counted.count;
        }
    }
    Ok(counts)
}

/// Error events (levels `error` and `warning`) per interval, zero buckets included.
#[utoipa::path(get, path = "/api/v1/stats/errors", tag = "stats",
    params(
        ("from" = Option<String>, Query, description = "start (RFC 3339 or epoch ms); default 24 h before `to`"),
        ("to" = Option<String>, Query, description = "end, exclusive; default now"),
        ("interval" = Option<i64>, Query, description = "bucket size in seconds: 60 (default), 300 or 3600"),
        ("service" = Option<String>, Query, description = "only this service"),
        ("environment" = Option<String>, Query, description = "only this environment"),
    ),
    responses((status = 200, body = ErrorStats),
        (status = 400, description = "invalid_parameter: a bad time or interval, or more than 1,500 buckets", body = Problem, content_type = "application/problem+json")))]
async fn error_stats(
    State(alerting): State<Alerting>,
    Viewer(caller): Viewer,
    RawQuery(query): RawQuery,
) -> Result<Json<ErrorStats>, ApiError> {
    let names = ["from", "to", "interval", "service", "environment"];
    let filters = filters(query.as_deref(), &names)?;
    let range = range_of(
        time_filter(&filters, "from")?,
        time_filter(&filters, "to")?,
        filters.get("interval").map(String::as_str),
        alerting.clock().now(),
    )?;
    let (service, environment) = (
        filters.get("service").cloned().filter(|s| !s.is_empty()),
        filters
            .get("environment")
            .cloned()
            .filter(|e| !e.is_empty()),
    );
    let org = caller.org_id;
    let counts = alerting
        .store()
        .read(move |txn| error_counts(txn, &org, service.as_deref(), environment.as_deref(), range))
        .await?;
    let buckets = (0_i64..)
        .zip(counts)
        .map(|(index, count)| Bucket {
            at: Timestamp((range.first + index * range.interval) * 1000).to_rfc3339(),
            count,
        })
        .collect();
    Ok(Json(ErrorStats {
        interval_seconds: range.interval,
        buckets,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_align_default_and_refuse_too_many_buckets() {
        let now = Timestamp(1_795_348_830_500);
        let day = range_of(None, None, None, now).unwrap();
        assert_eq!(day.interval, 60);
        assert_eq!(day.first % 60, 0);
        assert!(day.count == 1_440 || day.count == 1_441, "{day:?}");
        let hour = range_of(
            Some(Timestamp(0)),
            Some(Timestamp(3_600_000)),
            Some("300"),
            now,
        );
        assert_eq!(hour.unwrap().count, 12);
        assert!(range_of(None, None, Some("120"), now).is_err());
        assert!(range_of(Some(now), Some(now), None, now).is_err());
        let long = range_of(
            Some(Timestamp(0)),
            Some(Timestamp(86_400_000 * 2)),
            None,
            now,
        );
        assert!(long.is_err());
        let month = Some(Timestamp(86_400_000 * 31));
        assert_eq!(
            range_of(Some(Timestamp(0)), month, Some("3600"), now)
                .unwrap()
                .count,
            744
        );
    }
}
