//! The one entry for telemetry that arrived in another wire format (the Sentry envelope, OTLP;
//! `compat`): items already decoded into the native item shapes (CONTRACT section 3) go through
//! the same count limit, scrubbing, item checks, grouping and durable writes as `/ingest/*`.
//!
//! Invariants: the caller has checked the rate, origin, size and key before calling; nothing is
//! written when a count is over its limit; every item is scrubbed before it is read, so no
//! other wire format has its own scrubbing or grouping; the answer comes after the commits.

use axum::http::request::Parts;
use serde_json::Value;

use super::api::{ItemContext, Rejected, store_error_events, stored_client_ip};
use super::item::Item;
use super::{Ingest, body, scrub, sessions, spans, web_errors};
use crate::alerting::SpikeWake;
use crate::http::{ApiError, ErrorCode};

/// Decoded items in the native shapes of `/ingest/web-errors`, `/ingest/web-sessions` and
/// `/ingest/spans`.
#[derive(Debug, Default)]
pub struct DecodedTelemetry {
    pub errors: Vec<Value>,
    pub sessions: Vec<Value>,
    pub spans: Vec<Value>,
}

/// What was kept of a `DecodedTelemetry`, by kind; rejected items with their reasons.
#[derive(Debug, Default)]
pub struct DecodedOutcome {
    pub errors: usize,
    pub sessions: usize,
    pub spans: usize,
    /// `(kind, index within that kind, reason)`.
    pub rejected: Vec<(&'static str, Rejected)>,
}

/// The most spans one decoded request may carry (a trace export batch is 512 by default).
pub const MAX_DECODED_SPANS: usize = 10_000;

/// Scrubs, checks and stores decoded telemetry: error events as `/ingest/web-errors` does
/// (source maps, groups, index, spike alerts), sessions and spans in one write.
pub async fn accept_decoded(
    ingest: &Ingest,
    search: &crate::errors::Search,
    spikes: &SpikeWake,
    parts: &mut Parts,
    telemetry: DecodedTelemetry,
) -> Result<DecodedOutcome, ApiError> {
    let max_events = ingest.settings().max_events;
    body::check_count(&telemetry.errors, max_events)?;
    body::check_count(&telemetry.sessions, max_events)?;
    if telemetry.spans.len() > MAX_DECODED_SPANS {
        return Err(ApiError::new(
            ErrorCode::TooManyEvents,
            format!("more than {MAX_DECODED_SPANS} spans in one request"),
        ));
    }
    let org = ingest.org().await?;
    let context = ItemContext {
        received_at: ingest.clock().now(),
        client_ip: stored_client_ip(ingest, parts).await?,
    };
    let scrub_items = ingest.settings().scrub_pii;
    let parsed = ingest
        .cpu_work(move || {
            let mut outcome = DecodedOutcome::default();
            let ip = context.client_ip.as_deref();
            let errors = read_items(
                telemetry.errors,
                scrub_items,
                "error",
                &mut outcome,
                |item| web_errors::parse_event(item, context.received_at, ip),
            );
            let sessions = read_items(
                telemetry.sessions,
                scrub_items,
                "session",
                &mut outcome,
                |item| sessions::parse_session(item, context.received_at, ip),
            );
            let spans = read_items(telemetry.spans, scrub_items, "span", &mut outcome, |item| {
                spans::parse_span(item, context.received_at)
            });
            (outcome, errors, sessions, spans)
        })
        .await?;
    let (mut outcome, errors, sessions, spans) = parsed;
    outcome.sessions = sessions.len();
    outcome.spans = spans.len();
    if !sessions.is_empty() || !spans.is_empty() {
        let write_org = org.clone();
        ingest
            .store()
            .write(move |txn| {
                sessions::upsert_sessions(txn, &write_org, &sessions)?;
                spans::store_spans(txn, &write_org, &spans)
            })
            .await
            .map_err(ApiError::from)?;
    }
    outcome.errors = store_error_events(ingest, search, spikes, org, errors).await?;
    Ok(outcome)
}

/// Scrubs and reads each item of one kind; the refused ones go to `outcome.rejected`.
fn read_items<T>(
    items: Vec<Value>,
    scrub_items: bool,
    kind: &'static str,
    outcome: &mut DecodedOutcome,
    parse: impl Fn(&Item<'_>) -> Result<T, String>,
) -> Vec<T> {
    let mut read = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let mut item = Item::from(item);
        if scrub_items {
            scrub::scrub_item(&mut item);
        }
        match parse(&item) {
            Ok(value) => read.push(value),
            Err(reason) => outcome.rejected.push((kind, Rejected { index, reason })),
        }
    }
    read
}
