//! OTLP protobuf (`application/x-protobuf`) turned into the OTLP/JSON form `otlp.rs` reads: a
//! small reader of the protobuf wire format for the fields of `ExportTraceServiceRequest` that
//! Lookout keeps (opentelemetry-proto's `trace/v1/trace.proto`, `common/v1/common.proto`,
//! `resource/v1/resource.proto`), so the build needs neither `protoc` nor generated code.
//!
//! Invariants: every length is checked against what is left before it is used, nesting of
//! attribute values stops at `MAX_DEPTH`, unknown fields are skipped by their wire type, and a
//! malformed body is `Invalid` (never a panic); ids (bytes) become lower-case hex and 64-bit
//! times become decimal text, as OTLP/JSON writes them.

use serde_json::{Map, Value, json};

use super::CompatError;

/// How deep `AnyValue`s (arrays, key-value lists) may nest.
const MAX_DEPTH: usize = 16;

/// One field off the wire.
enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    /// Read past: no kept field is a fixed32 (span `flags` is not kept).
    Fixed32,
}

fn invalid() -> CompatError {
    CompatError::Invalid("the body is not a valid OTLP protobuf message".into())
}

/// The fields of one message, in order, as `(number, field)`.
fn fields(mut bytes: &[u8]) -> Result<Vec<(u64, Field<'_>)>, CompatError> {
    let mut found = Vec::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let field = match key & 7 {
            0 => Field::Varint(varint(&mut bytes)?),
            1 => Field::Fixed64(u64::from_le_bytes(
                take(&mut bytes, 8)?.try_into().map_err(|_| invalid())?,
            )),
            2 => {
                let length = usize::try_from(varint(&mut bytes)?).map_err(|_| invalid())?;
                Field::Bytes(take(&mut bytes, length)?)
            }
            5 => {
                take(&mut bytes, 4)?;
                Field::Fixed32
            }
            _ => return Err(invalid()),
        };
        found.push((key >> 3, field));
    }
    Ok(found)
}

fn varint(bytes: &mut &[u8]) -> Result<u64, CompatError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or_else(invalid)?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(invalid())
}

fn take<'a>(bytes: &mut &'a [u8], length: usize) -> Result<&'a [u8], CompatError> {
    if length > bytes.len() {
        return Err(invalid());
    }
    let (taken, rest) = bytes.split_at(length);
    *bytes = rest;
    Ok(taken)
}

fn string(bytes: &[u8]) -> Result<Value, CompatError> {
    std::str::from_utf8(bytes)
        .map(|text| json!(text))
        .map_err(|_| invalid())
}

/// `ExportTraceServiceRequest` as OTLP/JSON.
pub fn export_request(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut resource_spans = Vec::new();
    for (number, field) in fields(bytes)? {
        if let (1, Field::Bytes(inner)) = (number, field) {
            resource_spans.push(resource_spans_of(inner)?);
        }
    }
    Ok(json!({"resourceSpans": resource_spans}))
}

fn resource_spans_of(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut out = Map::new();
    let mut scopes = Vec::new();
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(resource)) => {
                let mut attributes = Vec::new();
                for (number, field) in fields(resource)? {
                    if let (1, Field::Bytes(pair)) = (number, field) {
                        attributes.push(key_value(pair, 0)?);
                    }
                }
                out.insert("resource".into(), json!({"attributes": attributes}));
            }
            (2, Field::Bytes(scope)) => scopes.push(scope_spans_of(scope)?),
            _ => {}
        }
    }
    out.insert("scopeSpans".into(), Value::Array(scopes));
    Ok(Value::Object(out))
}

fn scope_spans_of(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut spans = Vec::new();
    for (number, field) in fields(bytes)? {
        if let (2, Field::Bytes(span)) = (number, field) {
            spans.push(span_of(span)?);
        }
    }
    Ok(json!({"spans": spans}))
}

fn span_of(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut span = Map::new();
    let (mut attributes, mut events) = (Vec::new(), Vec::new());
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(id)) => _ = span.insert("traceId".into(), json!(hex::encode(id))),
            (2, Field::Bytes(id)) => _ = span.insert("spanId".into(), json!(hex::encode(id))),
            (4, Field::Bytes(id)) => _ = span.insert("parentSpanId".into(), json!(hex::encode(id))),
            (5, Field::Bytes(name)) => _ = span.insert("name".into(), string(name)?),
            (6, Field::Varint(kind)) => _ = span.insert("kind".into(), json!(kind)),
            (7, Field::Fixed64(time)) => {
                _ = span.insert("startTimeUnixNano".into(), json!(time.to_string()))
            }
            (8, Field::Fixed64(time)) => {
                _ = span.insert("endTimeUnixNano".into(), json!(time.to_string()))
            }
            (9, Field::Bytes(pair)) => attributes.push(key_value(pair, 0)?),
            (11, Field::Bytes(event)) => events.push(event_of(event)?),
            (15, Field::Bytes(status)) => _ = span.insert("status".into(), status_of(status)?),
            _ => {}
        }
    }
    span.insert("attributes".into(), Value::Array(attributes));
    span.insert("events".into(), Value::Array(events));
    Ok(Value::Object(span))
}

fn event_of(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut event = Map::new();
    let mut attributes = Vec::new();
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Fixed64(time)) => {
                _ = event.insert("timeUnixNano".into(), json!(time.to_string()))
            }
            (2, Field::Bytes(name)) => _ = event.insert("name".into(), string(name)?),
            (3, Field::Bytes(pair)) => attributes.push(key_value(pair, 0)?),
            _ => {}
        }
    }
    event.insert("attributes".into(), Value::Array(attributes));
    Ok(Value::Object(event))
}

fn status_of(bytes: &[u8]) -> Result<Value, CompatError> {
    let mut status = Map::new();
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (2, Field::Bytes(message)) => _ = status.insert("message".into(), string(message)?),
            (3, Field::Varint(code)) => _ = status.insert("code".into(), json!(code)),
            _ => {}
        }
    }
    Ok(Value::Object(status))
}

/// `KeyValue { key = 1; value = 2 }`.
fn key_value(bytes: &[u8], depth: usize) -> Result<Value, CompatError> {
    let mut pair = Map::new();
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(key)) => _ = pair.insert("key".into(), string(key)?),
            (2, Field::Bytes(value)) => {
                _ = pair.insert("value".into(), any_value(value, depth + 1)?)
            }
            _ => {}
        }
    }
    Ok(Value::Object(pair))
}

/// `AnyValue`: the one variant set, in OTLP/JSON's spelling.
fn any_value(bytes: &[u8], depth: usize) -> Result<Value, CompatError> {
    if depth > MAX_DEPTH {
        return Err(CompatError::Invalid(
            "attribute values nest too deeply".into(),
        ));
    }
    let mut value = json!({});
    for (number, field) in fields(bytes)? {
        value = match (number, field) {
            (1, Field::Bytes(text)) => json!({"stringValue": string(text)?}),
            (2, Field::Varint(flag)) => json!({"boolValue": flag != 0}),
            (3, Field::Varint(int)) => json!({"intValue": (int as i64).to_string()}),
            (4, Field::Fixed64(bits)) => {
                let double = f64::from_bits(bits);
                json!({"doubleValue": if double.is_finite() { json!(double) } else { Value::Null }})
            }
            (5, Field::Bytes(array)) => {
                let mut values = Vec::new();
                for (number, field) in fields(array)? {
                    if let (1, Field::Bytes(item)) = (number, field) {
                        values.push(any_value(item, depth + 1)?);
                    }
                }
                json!({"arrayValue": {"values": values}})
            }
            (6, Field::Bytes(list)) => {
                let mut values = Vec::new();
                for (number, field) in fields(list)? {
                    if let (1, Field::Bytes(pair)) = (number, field) {
                        values.push(key_value(pair, depth + 1)?);
                    }
                }
                json!({"kvlistValue": {"values": values}})
            }
            (7, Field::Bytes(raw)) => json!({"bytesValue": hex::encode(raw)}),
            _ => value,
        };
    }
    Ok(value)
}

/// `ExportTraceServiceResponse`: empty when all was accepted, else `partial_success` with
/// `rejected_spans` (1) and `error_message` (2).
pub fn export_response(rejected_spans: u64, message: &str) -> Vec<u8> {
    if rejected_spans == 0 {
        return Vec::new();
    }
    let mut inner = Vec::new();
    inner.push(1 << 3);
    put_varint(&mut inner, rejected_spans);
    inner.push((2 << 3) | 2);
    put_varint(&mut inner, message.len() as u64);
    inner.extend_from_slice(message.as_bytes());
    let mut out = vec![(1 << 3) | 2];
    put_varint(&mut out, inner.len() as u64);
    out.extend(inner);
    out
}

pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(fields: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (number, bytes) in fields {
            put_varint(&mut out, (number << 3) | 2);
            put_varint(&mut out, bytes.len() as u64);
            out.extend(bytes);
        }
        out
    }

    #[test]
    fn a_request_reads_as_otlp_json() {
        let mut span = message(&[
            (1, vec![0x4b; 16]),
            (2, vec![0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]),
            (5, b"GET /".to_vec()),
        ]);
        span.push(7 << 3 | 1);
        span.extend(1_795_348_800_000_000_000u64.to_le_bytes());
        span.push(6 << 3);
        span.push(2);
        let any = message(&[(1, b"checkout".to_vec())]);
        let pair = message(&[(1, b"service.name".to_vec()), (2, any)]);
        let resource = message(&[(1, pair)]);
        let scope = message(&[(2, span)]);
        let request = message(&[(1, message(&[(1, resource), (2, scope)]))]);
        let json = export_request(&request).unwrap();
        let span = &json["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["traceId"], "4b".repeat(16));
        assert_eq!(span["spanId"], "00f067aa0ba902b7");
        assert_eq!(span["startTimeUnixNano"], "1795348800000000000");
        assert_eq!(span["kind"], 2);
        assert_eq!(
            json["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "checkout"
        );
    }

    #[test]
    fn malformed_bodies_are_invalid() {
        for body in [
            &[0x0a, 0x05, 0x01][..],
            &[0xff; 11],
            &[0x0b],
            &[0x0a, 0x02, 0x12, 0x09],
        ] {
            assert!(
                matches!(export_request(body), Err(CompatError::Invalid(_))),
                "{body:?}"
            );
        }
        let mut deep = message(&[(1, b"v".to_vec())]);
        for _ in 0..40 {
            deep = message(&[(5, message(&[(1, deep)]))]);
        }
        let pair = message(&[(1, b"k".to_vec()), (2, deep)]);
        let span = message(&[(9, pair)]);
        let request = message(&[(1, message(&[(2, message(&[(2, span)]))]))]);
        assert!(export_request(&request).is_err());
        assert_eq!(export_response(0, ""), Vec::<u8>::new());
        assert_eq!(
            export_response(2, "x"),
            vec![0x0a, 0x05, 0x08, 0x02, 0x12, 0x01, b'x']
        );
    }
}
