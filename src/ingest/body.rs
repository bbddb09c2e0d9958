//! Reading an ingest body: media type and encoding (415), the size limit while the raw bytes
//! stream in and again on the decoded bytes (413), and the JSON batch shape (400). `decode` is
//! the one body decoder of the server (gzip, deflate and br): native ingest accepts gzip only
//! (`encoding`), the Sentry and OTLP routes of `compat` all three (`Encoding::parse`).
//!
//! Invariants: no more than `limit + 1` bytes are ever buffered or inflated, so a compression
//! bomb costs at most the limit; JSON is parsed with serde_json's recursion limit on, and a batch
//! is only ever an object holding one array of items, so hostile nesting, invalid UTF-8, lone
//! surrogates and out-of-range numbers (`1e400`) all end as 400 `invalid_payload`. Error
//! details never quote the body.

use std::borrow::Cow;
use std::io::Read;

use axum::http::{HeaderMap, header};
use serde_json::Value;

use super::item::{self, Batch, Item};
use crate::http::{ApiError, ErrorCode};

/// How the body bytes are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    /// zlib-wrapped as RFC 9110 says, or raw as some clients send it.
    Deflate,
    Brotli,
}

impl Encoding {
    /// The encoding one `Content-Encoding` value names (case-insensitive); `None` for others.
    pub fn parse(value: &str) -> Option<Encoding> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Encoding::Identity),
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" => Some(Encoding::Brotli),
            _ => None,
        }
    }
}

/// What the body is, by its `Content-Type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaType {
    /// `application/json`, or `text/plain` as `navigator.sendBeacon` sends it: both are JSON.
    Json,
    /// `multipart/form-data` with its boundary (source map uploads only).
    Multipart,
}

fn unsupported(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::UnsupportedMediaType, detail)
}

pub use crate::http::extract::body_too_large as too_large;

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload, detail)
}

/// 413 at once when the declared `Content-Length` is over `limit`: nothing of such a body is
/// read, whoever sends it (CONTRACT order: size before key). A chunked body declares nothing
/// and is capped while it streams in instead (`read_body`).
pub fn check_declared_length(headers: &HeaderMap, limit: usize) -> Result<(), ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => Err(too_large(limit)),
        _ => Ok(()),
    }
}

/// The body's encoding from `Content-Encoding`: none, `identity` or `gzip`; anything else
/// (including a chain of encodings) is 415.
pub fn encoding(headers: &HeaderMap) -> Result<Encoding, ApiError> {
    let mut values = headers.get_all(header::CONTENT_ENCODING).iter();
    let Some(value) = values.next() else {
        return Ok(Encoding::Identity);
    };
    if values.next().is_some() {
        return Err(unsupported("send at most one Content-Encoding: gzip"));
    }
    match Encoding::parse(value.to_str().unwrap_or("?")) {
        Some(accepted @ (Encoding::Identity | Encoding::Gzip)) => Ok(accepted),
        _ => Err(unsupported("the only Content-Encoding accepted is gzip")),
    }
}

/// The `Content-Type` as sent (empty when absent or not text): what a multipart reader needs
/// for its boundary.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The body's media type; `allow_multipart` only for source map uploads.
pub fn media_type(headers: &HeaderMap, allow_multipart: bool) -> Result<MediaType, ApiError> {
    if headers
        .get_all(header::CONTENT_TYPE)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(unsupported("send exactly one Content-Type"));
    }
    let essence = crate::http::extract::media_type(headers);
    match essence.as_str() {
        "application/json" | "text/plain" => Ok(MediaType::Json),
        "multipart/form-data" if allow_multipart => Ok(MediaType::Multipart),
        _ if allow_multipart => Err(unsupported(
            "send application/json, text/plain or multipart/form-data",
        )),
        _ => Err(unsupported("send application/json or text/plain")),
    }
}

/// The decoded body, at most `limit` bytes (413 beyond; 400 for a stream that does not
/// decode): the raw bytes themselves when nothing encoded them. Compressed bodies are inflated
/// only up to one byte past the limit, so the size of what a small compressed body would expand
/// to never matters.
pub fn decode(raw: &[u8], encoding: Encoding, limit: usize) -> Result<Cow<'_, [u8]>, ApiError> {
    if encoding == Encoding::Identity {
        return match raw.len() > limit {
            true => Err(too_large(limit)),
            false => Ok(Cow::Borrowed(raw)),
        };
    }
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut decoded = Vec::with_capacity(raw.len().saturating_mul(4).min(limit));
    let corrupt = |name: &str| invalid(format!("the body is not valid {name}"));
    match encoding {
        Encoding::Identity => {}
        Encoding::Gzip => {
            flate2::read::MultiGzDecoder::new(raw)
                .take(cap)
                .read_to_end(&mut decoded)
                .map_err(|_| corrupt("gzip"))?;
        }
        Encoding::Deflate => {
            let zlib = flate2::read::ZlibDecoder::new(raw)
                .take(cap)
                .read_to_end(&mut decoded);
            if zlib.is_err() {
                decoded.clear();
                flate2::read::DeflateDecoder::new(raw)
                    .take(cap)
                    .read_to_end(&mut decoded)
                    .map_err(|_| corrupt("deflate"))?;
            }
        }
        Encoding::Brotli => {
            brotli_decompressor::Decompressor::new(raw, 4096)
                .take(cap)
                .read_to_end(&mut decoded)
                .map_err(|_| corrupt("brotli"))?;
        }
    }
    if decoded.len() > limit {
        return Err(too_large(limit));
    }
    Ok(Cow::Owned(decoded))
}

/// Parses any JSON document, reporting only where it broke, never what it held.
pub fn parse_document(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = serde::Deserialize::deserialize(&mut deserializer).and_then(|value: Value| {
        deserializer.end()?;
        Ok(value)
    });
    parsed.map_err(not_json)
}

/// 400 for a body that is not JSON: where it broke, never what it held.
fn not_json(error: serde_json::Error) -> ApiError {
    invalid(format!(
        "the body is not valid JSON ({} at line {} column {})",
        category(&error),
        error.line(),
        error.column()
    ))
}

fn category(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Eof => "unexpected end",
        serde_json::error::Category::Data => "unsupported value",
        serde_json::error::Category::Io => "unreadable",
    }
}

/// The items of a batch body `{"<field>": [item, …]}`, their texts borrowed from `bytes`: 400
/// when the body is not that shape.
pub fn parse_batch<'a>(bytes: &'a [u8], field: &str) -> Result<Vec<Item<'a>>, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let batch = item::read_batch(&mut deserializer, field)
        .and_then(|batch| deserializer.end().map(|()| batch))
        .map_err(not_json)?;
    match batch {
        Batch::Items(items) => Ok(items),
        Batch::NotAnObject => Err(invalid(format!(
            "the body must be a JSON object with an array \"{field}\""
        ))),
        Batch::NotAnArray => Err(invalid(format!("\"{field}\" must be an array"))),
        Batch::Missing => Err(invalid(format!("the body has no \"{field}\" array"))),
    }
}

/// 413 `too_many_events` when a batch holds more than `max` items.
pub fn check_count<T>(items: &[T], max: usize) -> Result<(), ApiError> {
    if items.len() > max {
        return Err(ApiError::new(
            ErrorCode::TooManyEvents,
            format!(
                "{} items in one request; the limit is {max} (WEB_INGEST_MAX_EVENTS)",
                items.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use axum::http::HeaderValue;
    use proptest::prelude::*;

    use super::*;

    /// Batch bodies near the shape: objects with `events` (given twice at times) holding
    /// items of every JSON type, texts with and without escapes, repeated fields, and
    /// truncations and stray bytes now and then.
    fn batch_text() -> impl Strategy<Value = String> {
        let text = prop_oneof![
            Just("\"plain\"".to_string()),
            Just("\"esc\\\"aped \\u00e9\\n\"".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("\"jane@example.com\"".to_string()),
        ];
        let scalar = prop_oneof![
            text.clone(),
            Just("1".to_string()),
            Just("-2.5".to_string()),
            Just("1e400".to_string()),
            Just("18446744073709551616".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
        ];
        let value = scalar.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec(("[a-c]", inner), 0..3).prop_map(|fields| {
                    let fields: Vec<String> =
                        fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        });
        let field = (
            prop::sample::select(vec!["message", "level", "tags", "me\\u0073sage", "x"]),
            value.clone(),
        )
            .prop_map(|(name, value)| format!("\"{name}\":{value}"));
        let item = prop_oneof![
            proptest::collection::vec(field, 0..5)
                .prop_map(|fields| format!("{{{}}}", fields.join(","))),
            value.clone(),
        ];
        let items = proptest::collection::vec(item, 0..4)
            .prop_map(|items| format!("[{}]", items.join(",")));
        let events = prop_oneof![items, value.clone()];
        let body = (
            events.clone(),
            prop::option::of(events),
            prop::option::of(value),
        )
            .prop_map(|(events, again, other)| {
                let mut fields = vec![format!("\"events\":{events}")];
                if let Some(other) = other {
                    fields.insert(0, format!("\"other\":{other}"));
                }
                if let Some(again) = again {
                    fields.push(format!("\"events\":{again}"));
                }
                format!("{{{}}}", fields.join(","))
            });
        (body, 0usize..40, any::<bool>()).prop_map(|(body, cut, damage)| {
            if damage && cut < body.len() {
                // A cut at a byte boundary that may split nothing (ASCII only here).
                body[..body.len() - cut].to_string()
            } else {
                body
            }
        })
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn media_types_and_encodings() {
        let json = |ct: &'static str| media_type(&headers(&[(header::CONTENT_TYPE, ct)]), false);
        assert_eq!(json("application/json").unwrap(), MediaType::Json);
        assert_eq!(json("text/plain;charset=UTF-8").unwrap(), MediaType::Json);
        for bad in [
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
        ] {
            assert_eq!(json(bad).unwrap_err().code, ErrorCode::UnsupportedMediaType);
        }
        let multipart = headers(&[(header::CONTENT_TYPE, "multipart/form-data; boundary=x")]);
        assert_eq!(media_type(&multipart, true).unwrap(), MediaType::Multipart);

        let enc = |v: &'static str| encoding(&headers(&[(header::CONTENT_ENCODING, v)]));
        assert_eq!(encoding(&HeaderMap::new()).unwrap(), Encoding::Identity);
        assert_eq!(enc("GZIP").unwrap(), Encoding::Gzip);
        for bad in ["br", "deflate", "gzip, gzip"] {
            assert_eq!(enc(bad).unwrap_err().code, ErrorCode::UnsupportedMediaType);
        }
        let twice = headers(&[
            (header::CONTENT_ENCODING, "gzip"),
            (header::CONTENT_ENCODING, "gzip"),
        ]);
        assert!(encoding(&twice).is_err());
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_limit() {
        let bomb = gzip(&vec![b' '; 16 << 20]);
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let error = decode(&bomb, Encoding::Gzip, 256 << 10).unwrap_err();
        assert_eq!(error.code, ErrorCode::BodyTooLarge);
    }

    #[test]
    fn hostile_json_is_invalid_payload() {
        let deep = format!(
            "{{\"events\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let cases: Vec<Vec<u8>> = vec![
            deep.into_bytes(),
            b"{\"events\":[1e400]}".to_vec(),
            b"{\"events\":[\"\\ud800\"]}".to_vec(),
            b"{\"events\":[\"\xff\xfe\"]}".to_vec(),
            b"{\"events\":{}}".to_vec(),
            b"[]".to_vec(),
            b"{\"events\":[]} trailing".to_vec(),
            b"{\"other\":[]}".to_vec(),
        ];
        for body in cases {
            let error = parse_batch(&body, "events").unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidPayload);
            assert!(!error.detail.contains("ud800"), "{}", error.detail);
        }
        let items = parse_batch(br#"{"events":[{},1,"x"],"extra":true}"#, "events").unwrap();
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn counts_are_exact() {
        let items = vec![Value::Null; 3];
        assert!(check_count(&items, 3).is_ok());
        assert_eq!(
            check_count(&items, 2).unwrap_err().code,
            ErrorCode::TooManyEvents
        );
    }

    #[test]
    fn every_encoding_inflates_under_its_cap() {
        let body = b"{\"hello\":\"world\"}".repeat(100);
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&body).unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&body).unwrap();
        let cases = [
            (Encoding::Gzip, gzip(&body)),
            (Encoding::Deflate, zlib.finish().unwrap()),
            (Encoding::Deflate, raw.finish().unwrap()),
            (Encoding::Identity, body.clone()),
        ];
        for (encoding, bytes) in cases {
            assert_eq!(decode(&bytes, encoding, body.len()).unwrap(), body);
            let error = decode(&bytes, encoding, body.len() - 1).unwrap_err();
            assert_eq!(error.code, ErrorCode::BodyTooLarge);
        }
        let error = decode(b"garbage", Encoding::Brotli, 100).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        assert_eq!(Encoding::parse("BR"), Some(Encoding::Brotli));
        assert_eq!(Encoding::parse("zstd"), None);
    }

    proptest! {
        #[test]
        fn limits_are_exact_for_raw_and_gzip(body in proptest::collection::vec(any::<u8>(), 0..2048), limit in 0usize..2048) {
            let fits = body.len() <= limit;
            let raw = decode(&body, Encoding::Identity, limit);
            let compressed = gzip(&body);
            let zipped = decode(&compressed, Encoding::Gzip, limit);
            prop_assert_eq!(raw.is_ok(), fits);
            prop_assert_eq!(zipped.is_ok(), fits);
            if fits {
                prop_assert!(matches!(raw, Ok(Cow::Borrowed(_))), "raw bytes are not copied");
                prop_assert_eq!(&*raw.unwrap(), body.as_slice());
                prop_assert_eq!(&*zipped.unwrap(), body.as_slice());
            } else {
                prop_assert_eq!(raw.unwrap_err().code, ErrorCode::BodyTooLarge);
                prop_assert_eq!(zipped.unwrap_err().code, ErrorCode::BodyTooLarge);
            }
        }

        // The batch is read as the JSON document it is: refused exactly when a parse into a
        // `Value` refuses it, and each item's fields (the last of a repeated one) as that parse
        // holds them.
        #[test]
        fn batches_read_as_their_json_documents(body in batch_text()) {
            let items = parse_batch(body.as_bytes(), "events");
            let document = parse_document(body.as_bytes());
            let expected = match document {
                Err(_) => None,
                Ok(Value::Object(mut map)) => match map.remove("events") {
                    Some(Value::Array(items)) => Some(items),
                    _ => None,
                },
                Ok(_) => None,
            };
            match (items, expected) {
                (Ok(items), Some(expected)) => {
                    let read: Vec<Value> = items
                        .iter()
                        .map(Item::to_value)
                        .collect();
                    let expected: Vec<Value> = expected
                        .into_iter()
                        .map(|item| if item.is_object() { item } else { Value::Null })
                        .collect();
                    prop_assert_eq!(read, expected);
                }
                (Err(_), None) => {}
                (items, expected) => prop_assert!(false, "{:?} against {:?}", items.map(|i| i.len()), expected),
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(decoded) = decode(&bytes, Encoding::Gzip, 4096) {
                let _ = parse_batch(&decoded, "events");
            }
            let _ = parse_batch(&bytes, "events");
        }

        #[test]
        fn batches_of_objects_round_trip(count in 0usize..50) {
            let body = serde_json::json!({"events": vec![serde_json::json!({"a": 1}); count]});
            let body = body.to_string();
            let items = parse_batch(body.as_bytes(), "events").unwrap();
            prop_assert_eq!(items.len(), count);
        }
    }
}
