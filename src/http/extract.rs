//! Extractors that turn every rejection into problem+json: JSON bodies read under a size
//! limit and a deadline, and the client address as seen through trusted proxies.
//!
//! Invariants: a body is never read without both a byte limit (413 `body_too_large`) and a
//! deadline (408 `request_timeout`); a body that does not parse is 400 `invalid_payload` with
//! the position of the first error, never the framework's plain-text rejection.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use http_body_util::BodyExt;
use ipnet::IpNet;
use serde::de::DeserializeOwned;

use super::error::{ApiError, ErrorCode};

/// Per-request body rules, inserted by a layer (API defaults, or a route group's own).
#[derive(Debug, Clone, Copy)]
pub struct BodyRules {
    pub max_bytes: usize,
    pub read_timeout: Duration,
}

/// Reads a whole body under `rules` into a buffer of its own.
pub async fn read_body(body: Body, rules: BodyRules) -> Result<Bytes, ApiError> {
    let mut bytes = Vec::new();
    read_frames(body, rules, &mut bytes).await?;
    Ok(Bytes::from(bytes))
}

/// The most of a declared length reserved before its bytes arrive: a client's word alone never
/// holds more than this, and a larger body's buffer grows as its bytes come (a large buffer
/// is mapped, so growing it moves no bytes).
pub(super) const RESERVED_UP_FRONT: usize = 64 << 10;

/// Appends a whole body to `into` under `rules`, chunk by chunk as it arrives: 413 for a
/// declared length over the limit before any byte is read, and before a chunk that would pass
/// the limit is copied; 408 when the whole read passes its deadline. A declared length is
/// reserved up front up to `RESERVED_UP_FRONT`.
pub(super) async fn read_frames(
    mut body: Body,
    rules: BodyRules,
    into: &mut Vec<u8>,
) -> Result<(), ApiError> {
    let declared = body.size_hint().exact().unwrap_or(0);
    let declared = usize::try_from(declared).unwrap_or(usize::MAX);
    if declared > rules.max_bytes {
        return Err(body_too_large(rules.max_bytes));
    }
    into.reserve(declared.min(RESERVED_UP_FRONT));
    let start = into.len();
    let copy = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| body_unreadable())?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if into.len() - start + data.len() > rules.max_bytes {
                return Err(body_too_large(rules.max_bytes));
            }
            into.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(rules.read_timeout, copy).await {
        Err(_) => Err(body_too_slow(rules.read_timeout)),
        Ok(copied) => copied,
    }
}

/// 408: the body did not arrive within `read_timeout`.
fn body_too_slow(read_timeout: Duration) -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        format!(
            "the request body did not arrive within {} s",
            read_timeout.as_secs()
        ),
    )
}

/// 413: the body is longer than `max_bytes`.
pub fn body_too_large(max_bytes: usize) -> ApiError {
    ApiError::new(
        ErrorCode::BodyTooLarge,
        format!("the request body exceeds {max_bytes} bytes"),
    )
}

/// 400: the connection failed while the body was read.
fn body_unreadable() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidPayload,
        "the request body could not be read",
    )
}

/// A JSON request body, deserialised into `T`.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        if !is_json_media_type(&media_type(request.headers())) {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as application/json",
            ));
        }
        let bytes = read_routed_body(request).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// The request's media type, lowercase, without parameters (`""` when there is none).
pub fn media_type(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Reads the body under the size and time limits the route's layer set (`BodyRules`).
pub async fn read_routed_body(request: Request) -> Result<Bytes, ApiError> {
    let rules = request
        .extensions()
        .get::<BodyRules>()
        .copied()
        .ok_or_else(|| {
            ApiError::internal("no body rules for this route: the router is missing its layer")
        })?;
    read_body(request.into_body(), rules).await
}

/// Parses JSON, reporting where it went wrong in terms a client can act on.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    value.map_err(|err| {
        ApiError::new(
            ErrorCode::InvalidPayload,
            format!("invalid JSON body: {err}"),
        )
    })
}

/// `application/json` or an `application/…+json` type (`essence` as `media_type` gives it).
fn is_json_media_type(essence: &str) -> bool {
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The proxies whose `X-Forwarded-For` is believed, shared by the router.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(pub std::sync::Arc<Vec<IpNet>>);

impl TrustedProxies {
    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client address: the peer, or, when the peer is a trusted proxy, the right-most
    /// address in `X-Forwarded-For` that is not itself a trusted proxy.
    /// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a dual-stack listener reports for an
    /// IPv4 client) are returned as the IPv4 address, so IPv4 CIDRs match them.
    pub fn client_address(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        self.forwarded_client(peer.to_canonical(), forwarded_for)
            .to_canonical()
    }

    fn forwarded_client(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let Some(chain) = forwarded_for else {
            return peer;
        };
        let mut client = peer;
        for hop in chain.rsplit(',') {
            match hop.trim().parse::<IpAddr>() {
                Ok(address) => {
                    client = address;
                    if !self.trusts(address) {
                        break;
                    }
                }
                // A malformed hop ends the trusted part of the chain.
                Err(_) => break,
            }
        }
        client
    }
}

/// The address of the client that sent the request.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip())
            .ok_or_else(|| ApiError::internal("connection info missing"))?;
        let proxies = parts
            .extensions
            .get::<TrustedProxies>()
            .cloned()
            .unwrap_or_default();
        let forwarded = parts
            .headers
            .get("x-forwarded-for")
            .and_then(|value| value.to_str().ok());
        Ok(ClientAddr(proxies.client_address(peer, forwarded)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies = TrustedProxies(std::sync::Arc::new(vec!["10.0.0.0/8".parse().unwrap()]));
        let cases = [
            ("203.0.113.9", Some("198.51.100.1"), "203.0.113.9"),
            ("10.0.0.2", Some("198.51.100.1"), "198.51.100.1"),
            ("10.0.0.2", Some("198.51.100.1, 10.0.0.7"), "198.51.100.1"),
            ("10.0.0.2", Some("1.1.1.1, 198.51.100.1"), "198.51.100.1"),
            ("10.0.0.2", Some("junk"), "10.0.0.2"),
            ("10.0.0.2", None, "10.0.0.2"),
            (
                "::ffff:10.0.0.2",
                Some("::ffff:198.51.100.1"),
                "198.51.100.1",
            ),
            ("::ffff:203.0.113.9", None, "203.0.113.9"),
        ];
        for (peer, header, expected) in cases {
            assert_eq!(
                proxies.client_address(ip(peer), header),
                ip(expected),
                "{peer} {header:?}"
            );
        }
    }

    /// `media_type` of a request whose `Content-Type` is `value`.
    fn essence_of(value: &str) -> String {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, value.parse().expect("a header value"));
        media_type(&headers)
    }

    #[test]
    fn json_media_types() {
        for good in [
            "application/json",
            "application/json; charset=utf-8",
            "application/problem+json",
            "Application/JSON ;charset=utf-8",
        ] {
            assert!(is_json_media_type(&essence_of(good)), "{good}");
        }
        for bad in ["", "text/plain", "application/jsonx", "multipart/form-data"] {
            assert!(!is_json_media_type(&essence_of(bad)), "{bad}");
        }
    }

    #[tokio::test]
    async fn body_limit_is_exact() {
        let rules = BodyRules {
            max_bytes: 4,
            read_timeout: Duration::from_secs(1),
        };
        assert_eq!(read_body(Body::from("1234"), rules).await.unwrap(), "1234");
        let err = read_body(Body::from("12345"), rules).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::BodyTooLarge);
    }

    #[test]
    fn trailing_garbage_is_invalid() {
        assert!(parse_json::<serde_json::Value>(b"{} x").is_err());
        assert!(parse_json::<serde_json::Value>(b"{}").is_ok());
    }
}
