//! The Sentry envelope off the wire: its content encodings (gzip, deflate, br; inflated by
//! ingest's one decoder, `ingest::body::decode`, under a cap), and the framer that cuts it into
//! a header and items.
//!
//! Invariants: the framer never copies an item larger than `MAX_ITEM_BYTES` nor reads more
//! than `MAX_ENVELOPE_ITEMS` items, and a `length` that runs past the end is an error, not a
//! short read. Item types it does not know are skipped unread (their payload is never parsed).
//! Errors name the place that broke, never the bytes.

use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

use super::CompatError;
use crate::ingest::body::Encoding;

/// The most bytes one item's payload may have (Sentry's event limit).
pub const MAX_ITEM_BYTES: usize = 1 << 20;
/// The most bytes an envelope may have, as sent and once inflated.
pub const MAX_ENVELOPE_BYTES: usize = 20 << 20;
/// The most items one envelope may hold, known or not.
pub const MAX_ENVELOPE_ITEMS: usize = 100;

/// A body's one `Content-Encoding`: gzip, deflate or br (none is identity; a chain of them is
/// refused). Inflating is ingest's one decoder, `ingest::body::decode`.
pub fn content_encoding(headers: &HeaderMap) -> Result<Encoding, CompatError> {
    let mut values = headers.get_all(header::CONTENT_ENCODING).iter();
    let Some(value) = values.next() else {
        return Ok(Encoding::Identity);
    };
    if values.next().is_some() {
        return Err(CompatError::UnsupportedEncoding);
    }
    Encoding::parse(value.to_str().unwrap_or("?")).ok_or(CompatError::UnsupportedEncoding)
}

/// One item of an envelope whose type this server reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// `event`, `transaction`, `span`, `session` or `sessions`.
    pub kind: String,
    pub payload: Vec<u8>,
}

/// An envelope cut into its parts.
#[derive(Debug, Default, PartialEq)]
pub struct Envelope {
    pub header: Map<String, Value>,
    /// The items of known types, in order.
    pub items: Vec<Item>,
    /// How many items of other types were skipped.
    pub skipped: usize,
}

/// The item types read; every other one is skipped.
pub const KNOWN_ITEM_TYPES: [&str; 5] = ["event", "transaction", "span", "session", "sessions"];

/// Frames `bytes` as an envelope: a JSON header line, then items, each a JSON header line with
/// `type` and an optional `length`, and its payload (`length` bytes, else up to the newline).
pub fn parse(bytes: &[u8]) -> Result<Envelope, CompatError> {
    let (header_line, mut rest) = split_line(bytes);
    let header = json_object(header_line, "the envelope header")?;
    let mut envelope = Envelope {
        header,
        ..Envelope::default()
    };
    let mut count = 0usize;
    loop {
        // Blank lines between items (and a trailing newline) carry nothing.
        while let Some(after) = rest.strip_prefix(b"\n") {
            rest = after;
        }
        if rest.is_empty() {
            return Ok(envelope);
        }
        count += 1;
        if count > MAX_ENVELOPE_ITEMS {
            return Err(CompatError::TooManyItems(MAX_ENVELOPE_ITEMS));
        }
        let (item_line, after_header) = split_line(rest);
        let item_header = json_object(item_line, "an item header")?;
        let kind = match item_header.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => {
                return Err(CompatError::Invalid(
                    "an item header has no \"type\"".into(),
                ));
            }
        };
        let (payload, after_payload) = match item_header.get("length") {
            None | Some(Value::Null) => split_line(after_header),
            Some(length) => {
                let length = length
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        CompatError::Invalid("an item length is not a whole number".into())
                    })?;
                if length > after_header.len() {
                    return Err(CompatError::Invalid(
                        "an item is shorter than its length".into(),
                    ));
                }
                after_header.split_at(length)
            }
        };
        rest = after_payload;
        if !KNOWN_ITEM_TYPES.contains(&kind.as_str()) {
            envelope.skipped += 1;
            continue;
        }
        if payload.len() > MAX_ITEM_BYTES {
            return Err(CompatError::TooLarge {
                what: "an envelope item",
                limit: MAX_ITEM_BYTES,
            });
        }
        envelope.items.push(Item {
            kind,
            payload: payload.to_vec(),
        });
    }
}

/// The bytes up to the first newline, and those after it (the newline dropped).
fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &[]),
    }
}

/// A JSON object, or `Invalid` naming `what`.
pub fn json_object(bytes: &[u8], what: &str) -> Result<Map<String, Value>, CompatError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(CompatError::Invalid(format!("{what} is not a JSON object"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_framed_with_and_without_length() {
        // An event payload holding a newline, framed by its length.
        let payload = b"{\"a\":\"b\nc\"}";
        let mut body = b"{\"event_id\":\"9ec79c33ec9942ab8353589fcb2e04dc\"}\n".to_vec();
        body.extend(b"{\"type\":\"attachment\",\"length\":10}\n0123456789\n");
        body.extend(format!("{{\"type\":\"event\",\"length\":{}}}\n", payload.len()).bytes());
        body.extend(payload);
        body.extend(b"\n{\"type\":\"session\"}\n{\"sid\":\"x\"}\n");
        let envelope = parse(&body).unwrap();
        assert_eq!(envelope.skipped, 1);
        assert_eq!(envelope.items.len(), 2);
        assert_eq!(envelope.items[0].kind, "event");
        assert_eq!(envelope.items[0].payload, payload);
        assert_eq!(envelope.items[1].payload, b"{\"sid\":\"x\"}");
        assert_eq!(
            envelope.header["event_id"],
            "9ec79c33ec9942ab8353589fcb2e04dc"
        );
    }

    #[test]
    fn broken_envelopes_are_invalid_not_panics() {
        for body in [
            &b""[..],
            b"not json\n",
            b"{}\n{\"length\":2}\nab",
            b"{}\n{\"type\":\"event\",\"length\":99}\nab",
            b"{}\n{\"type\":\"event\",\"length\":-1}\nab",
            b"{}\n[]\n",
        ] {
            assert!(
                matches!(parse(body), Err(CompatError::Invalid(_))),
                "{body:?}"
            );
        }
        assert!(parse(b"{}").unwrap().items.is_empty());
    }

    #[test]
    fn item_size_and_count_limits_are_exact() {
        let item = |size: usize| {
            let mut body = format!("{{}}\n{{\"type\":\"event\",\"length\":{size}}}\n").into_bytes();
            body.extend(std::iter::repeat_n(b'x', size));
            body
        };
        assert!(parse(&item(MAX_ITEM_BYTES)).is_ok());
        assert!(matches!(
            parse(&item(MAX_ITEM_BYTES + 1)),
            Err(CompatError::TooLarge { .. })
        ));
        let many = |n: usize| format!("{{}}\n{}", "{\"type\":\"x\"}\n{}\n".repeat(n)).into_bytes();
        assert_eq!(
            parse(&many(MAX_ENVELOPE_ITEMS)).unwrap().skipped,
            MAX_ENVELOPE_ITEMS
        );
        assert!(matches!(
            parse(&many(MAX_ENVELOPE_ITEMS + 1)),
            Err(CompatError::TooManyItems(_))
        ));
    }
}
