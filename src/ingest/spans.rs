//! Front-end spans (`POST /ingest/spans`): the stored span, reading one item, storing a batch.
//!
//! Invariants: `trace_id` is 32 and `span_id` 16 lower-case hex digits, not all zero (as W3C
//! trace context); a span has a start and either an end or a duration, never ending before it
//! starts. `session_id` is optional and bounded like an error event's. A span is keyed `{org}/{trace_id}/{span_id}`, so sending it again replaces it (stored
//! once) and a trace is one prefix scan.

use redb::WriteTransaction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::Fields;
use super::item::Item;
use super::session_spans;
use crate::accounts::model::OrgId;
use crate::alerting::RollupBatch;
use crate::alerting::{Activity, record_activity};
use crate::clock::Timestamp;
use crate::store::ages::{self, Kind};
use crate::store::codec::Record;
use crate::store::{RecordTable, StoreError, tables};

/// The age index tag of a span (in stored keys: never changes).
pub const SPAN_AGE: Kind = Kind::new("spn");
pub const SPANS: RecordTable<Span> = RecordTable::new(tables::SPANS);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    #[serde(default)]
    pub parent_span_id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub kind: Option<String>,
    pub start_time: Timestamp,
    pub end_time: Timestamp,
    /// As sent, or `end_time - start_time`; may have a fraction.
    pub duration_ms: f64,
    #[serde(default)]
    pub status: Option<Value>,
    #[serde(default)]
    pub attributes: Map<String, Value>,
    pub service: String,
    #[serde(default)]
    pub environment: Option<String>,
    pub received_at: Timestamp,
    /// The browser session the span belongs to (the client's id, as on error events); absent
    /// in spans stored before spans carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl Record for Span {
    const KIND: &'static str = "span";
}

impl Span {
    pub fn key(&self, org: &OrgId) -> String {
        format!("{}/{}/{}", org.as_str(), self.trace_id, self.span_id)
    }

    fn age(&self) -> Timestamp {
        ages::age_of(self.start_time, self.received_at)
    }
}

/// `digits` lower-case hex digits, not all zero; returned lower-cased.
pub fn hex_id(what: &str, text: &str, digits: usize) -> Result<String, String> {
    let ok = text.len() == digits
        && text.bytes().all(|b| b.is_ascii_hexdigit())
        && text.bytes().any(|b| b != b'0');
    if ok {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!("{what} must be {digits} hex digits, not all zero"))
    }
}

/// Reads one (already scrubbed) item.
pub fn parse_span(item: &Item<'_>, received_at: Timestamp) -> Result<Span, String> {
    let fields = Fields::of(item)?;
    let trace_id = hex_id("trace_id", &fields.required_text("trace_id")?, 32)?;
    let span_id = hex_id("span_id", &fields.required_text("span_id")?, 16)?;
    let parent_span_id = match fields.text("parent_span_id")? {
        Some(parent) if !parent.is_empty() => Some(hex_id("parent_span_id", &parent, 16)?),
        _ => None,
    };
    let start_time = fields.required_timestamp("start_time")?;
    let (end_time, duration_ms) = match (
        fields.timestamp("end_time")?,
        fields.milliseconds("duration_ms")?,
    ) {
        (Some(end), _) if end < start_time => {
            return Err("end_time must not be before start_time".into());
        }
        (Some(end), Some(ms)) => (end, ms),
        (Some(end), None) => (end, (end.unix_millis() - start_time.unix_millis()) as f64),
        (None, Some(ms)) => {
            let whole = std::time::Duration::from_millis(ms.round() as u64);
            (start_time.plus(whole), ms)
        }
        (None, None) => return Err("end_time or duration_ms is required".into()),
    };
    let status = fields.value("status");
    if status
        .as_ref()
        .is_some_and(|status| !(status.is_string() || status.is_object()))
    {
        return Err("status must be a string or an object".into());
    }
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id,
        name: fields.required_text("name")?,
        kind: fields.text("kind")?,
        start_time,
        end_time,
        duration_ms,
        status,
        attributes: fields.object("attributes")?.unwrap_or_default(),
        service: fields.required_name("service")?,
        environment: fields.name("environment")?,
        received_at,
        session_id: fields.id("session_id")?,
    })
}

/// Stores (or replaces) each span, with its age row, its session row (`session_spans.rs`), its
/// alert-rule rollup (new spans only) and the services registry.
pub fn store_spans(txn: &WriteTransaction, org: &OrgId, spans: &[Span]) -> Result<(), StoreError> {
    let mut activity = Vec::with_capacity(spans.len());
    let mut rollups = RollupBatch::new();
    for span in spans {
        let key = span.key(org);
        let old = SPANS.get(txn, &key)?;
        session_spans::put_row(txn, org, old.as_ref(), span)?;
        if let Some(old) = old {
            ages::remove_age(txn, SPAN_AGE, old.age(), &key)?;
        } else {
            // A span sent again replaces itself; it is counted for alert rules once.
            rollups.span(
                org,
                &span.service,
                span.environment.as_deref(),
                span.received_at,
                span.duration_ms,
            );
        }
        SPANS.insert(txn, &key, span)?;
        ages::put_age(txn, SPAN_AGE, span.age(), &key)?;
        activity.push(Activity {
            service: span.service.clone(),
            environment: span.environment.clone(),
            at: span.received_at,
            errors: 0,
        });
    }
    rollups.flush(txn)?;
    record_activity(txn, org, &activity)
}

/// Removes a span (retention).
pub fn remove_span(txn: &WriteTransaction, key: &str) -> Result<bool, StoreError> {
    let Some(span) = SPANS.get(txn, key)? else {
        return Ok(false);
    };
    ages::remove_age(txn, SPAN_AGE, span.age(), key)?;
    let org = key.split('/').next().and_then(|org| OrgId::parse(org).ok());
    if let Some(org) = org {
        session_spans::remove_row(txn, &org, &span)?;
    }
    SPANS.remove(txn, key)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);
    const TRACE: &str = "4BF92F3577B34DA6A3CE929D0E0E4736";

    #[test]
    fn spans_need_ids_a_start_and_an_end_or_duration() {
        let item = json!({"trace_id": TRACE, "span_id": "00f067aa0ba902b7", "name": "GET /",
            "start_time": NOW.0, "duration_ms": 12.5, "service": "web", "status": "ok"});
        let span = parse_span(&Item::from(item.clone()), NOW).unwrap();
        assert_eq!(span.trace_id, TRACE.to_ascii_lowercase());
        assert_eq!(span.duration_ms, 12.5);
        assert_eq!(span.end_time, Timestamp(NOW.0 + 13));
        let ended = json!({"trace_id": TRACE, "span_id": "00f067aa0ba902b7", "name": "x",
            "start_time": "2026-11-22T12:00:00.000Z", "end_time": "2026-11-22T12:00:00.250Z",
            "service": "web"});
        assert_eq!(
            parse_span(&Item::from(ended.clone()), NOW)
                .unwrap()
                .duration_ms,
            250.0
        );

        let base = item.as_object().unwrap().clone();
        let variant = |key: &str, value: Value| {
            let mut item = base.clone();
            item.insert(key.to_string(), value);
            Value::Object(item)
        };
        let bad = [
            variant("trace_id", json!("abc")),
            variant("trace_id", json!("0".repeat(32))),
            variant("span_id", json!("zz067aa0ba902b7z")),
            variant("parent_span_id", json!("123")),
            variant("duration_ms", json!(-1)),
            variant("end_time", json!(NOW.0 - 1)),
            variant("start_time", Value::Null),
            variant("service", json!("")),
            variant("status", json!(3)),
            variant("attributes", json!("x")),
        ];
        for item in bad {
            assert!(
                parse_span(&Item::from(item.clone()), NOW).is_err(),
                "{item}"
            );
        }
        let mut no_end = base.clone();
        no_end.remove("duration_ms");
        assert!(parse_span(&Item::from(Value::Object(no_end)), NOW).is_err());
        for session in [json!("a/b"), json!(""), json!("x".repeat(300)), json!(7)] {
            let item = variant("session_id", session);
            assert!(
                parse_span(&Item::from(item.clone()), NOW).is_err(),
                "{item}"
            );
        }
        let with_session = parse_span(&variant("session_id", json!("s-1")).into(), NOW).unwrap();
        assert_eq!(with_session.session_id.as_deref(), Some("s-1"));
    }

    /// A span stored before spans carried a session decodes, without one; one with a
    /// session keeps it through the codec.
    #[test]
    fn spans_stored_before_sessions_decode() {
        let old = json!({"trace_id": TRACE.to_ascii_lowercase(), "span_id": "00f067aa0ba902b7",
            "parent_span_id": null, "name": "GET /", "kind": null, "start_time": NOW.0,
            "end_time": NOW.0 + 5, "duration_ms": 5.0, "status": null, "attributes": {},
            "service": "web", "environment": null, "received_at": NOW.0});
        let mut bytes = vec![crate::store::codec::CODEC_VERSION];
        bytes.extend(serde_json::to_vec(&old).unwrap());
        let decoded: Span = crate::store::codec::decode(&bytes).unwrap();
        assert_eq!(decoded.session_id, None);
        let mut span = decoded;
        span.session_id = Some("s-1".into());
        let again: Span =
            crate::store::codec::decode(&crate::store::codec::encode(&span).unwrap()).unwrap();
        assert_eq!(again, span);
    }
}
