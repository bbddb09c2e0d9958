//! The gate in front of every `/ingest/*` route: CORS (preflight and the headers of every
//! response, errors included), the per-address rate limit, and ingest key checks.
//!
//! Invariants:
//! - The rate limit is the first check of a request (CONTRACT section 3); a preflight is never
//!   counted, because browsers cache it and it carries no data.
//! - The limiter's memory is bounded: idle addresses are forgotten (an address idle for a
//!   minute has a full quota again, so forgetting it changes nothing), and while more than
//!   `MAX_TRACKED_ADDRESSES` addresses were active within the last minute, requests are refused
//!   with 429 rather than tracked. IPv6 clients are limited per /64, the block one host holds.
//! - With `WEB_INGEST_ALLOWED_ORIGINS` set to a list, a request whose `Origin` is not listed is
//!   refused (403) right after the rate limit, before its body is read; its preflight gets no
//!   `Access-Control-Allow-Origin`, so a browser never sends it in the first place.
//! - Ingest keys are compared as SHA-256 digests in constant time against every configured
//!   key, so neither the key nor which key matched shows in the timing. Keys never reach logs.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::Ingest;
use crate::config::AllowedOrigins;
use crate::http::{ApiError, ClientAddr, ErrorCode};

/// The most client addresses tracked at once (about 100 bytes each).
pub const MAX_TRACKED_ADDRESSES: usize = 100_000;
/// The header an SDK sends the ingest key in (`?key=` serves `navigator.sendBeacon`).
pub const KEY_HEADER: &str = "x-lookout-key";
/// How often a full limiter may be swept for idle addresses.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// `WEB_INGEST_RATE_PER_MIN` per client address, as a keyed GCRA.
pub struct RateGate {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
    capacity: usize,
    /// When the limiter was last swept; also keeps two requests from sweeping at once.
    last_sweep: Mutex<Instant>,
}

impl RateGate {
    pub fn new(per_minute: u32, capacity: usize) -> Self {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        RateGate {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            clock: DefaultClock::default(),
            capacity,
            last_sweep: Mutex::new(Instant::now()),
        }
    }

    /// `Ok` when `client` may send now, else how long it should wait.
    pub fn check(&self, client: IpAddr) -> Result<(), Duration> {
        if self.limiter.len() >= self.capacity {
            self.sweep(false);
            if self.limiter.len() >= self.capacity {
                return Err(Duration::from_secs(1));
            }
        }
        match self.limiter.check_key(&rate_key(client)) {
            Ok(()) => Ok(()),
            Err(not_until) => Err(not_until.wait_time_from(self.clock.now())),
        }
    }

    /// Forgets addresses whose bucket is full again. `always` skips the once-a-second throttle
    /// (the periodic housekeeping call); requests only sweep when the limiter is full.
    pub fn sweep(&self, always: bool) {
        let Ok(mut last) = self.last_sweep.try_lock() else {
            return;
        };
        if !always && last.elapsed() < SWEEP_INTERVAL {
            return;
        }
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        *last = Instant::now();
    }

    pub fn tracked(&self) -> usize {
        self.limiter.len()
    }
}

/// The address a client is limited by: IPv4 as is (also when mapped into IPv6), IPv6 by /64.
pub fn rate_key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(prefix.into())
            }
        },
    }
}

/// The configured ingest keys, as digests.
pub struct IngestKeys {
    digests: Vec<[u8; 32]>,
}

impl IngestKeys {
    pub fn new(keys: &[String]) -> Self {
        IngestKeys {
            digests: keys
                .iter()
                .map(|key| crate::secrets::token_digest(key))
                .collect(),
        }
    }

    /// Whether `presented` is one of the keys; every key is compared, in constant time.
    pub fn accepts(&self, presented: &str) -> bool {
        let digest = crate::secrets::token_digest(presented);
        self.digests.iter().fold(false, |found, key| {
            found | crate::secrets::digests_match(&digest, key)
        })
    }
}

/// The key a request presents: the `X-Lookout-Key` header, else the `key` query parameter.
pub fn presented_key(parts: &Parts) -> Option<String> {
    let header = parts
        .headers
        .get(KEY_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|key| !key.is_empty());
    if let Some(key) = header {
        return Some(key.to_string());
    }
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, value)| name == "key" && !value.is_empty())
        .map(|(_, value)| value.into_owned())
}

/// 401 unless the request carries a configured ingest key.
pub fn require_key(ingest: &Ingest, parts: &Parts) -> Result<(), ApiError> {
    let presented = presented_key(parts).unwrap_or_default();
    if !presented.is_empty() && ingest.keys().accepts(&presented) {
        return Ok(());
    }
    let detail = if ingest.settings().keys.is_empty() {
        "ingest is not configured on this server (set WEB_INGEST_KEY)"
    } else {
        "send a valid ingest key in X-Lookout-Key or ?key="
    };
    Err(ApiError::new(ErrorCode::InvalidIngestKey, detail))
}

/// The middleware around the ingest routes: CORS on everything, preflight answered here, and
/// the rate limit before anything else looks at a request.
pub async fn ingest_gate(request: Request, next: Next) -> Response {
    let Some(ingest) = request.extensions().get::<Ingest>().cloned() else {
        return ApiError::internal("the ingest handle is missing from the router").into_response();
    };
    let origin = request.headers().get(header::ORIGIN).cloned();
    let mut response = if request.method() == Method::OPTIONS {
        preflight()
    } else {
        let (mut parts, body) = request.into_parts();
        match ClientAddr::from_request_parts(&mut parts, &()).await {
            Err(error) => error.into_response(),
            Ok(ClientAddr(client)) => match ingest.rate().check(client) {
                Err(wait) => ApiError::new(
                    ErrorCode::RateLimited,
                    "too many ingest requests from this address (WEB_INGEST_RATE_PER_MIN)",
                )
                .with_retry_after(wait.max(Duration::from_secs(1)))
                .into_response(),
                Ok(()) => match check_origin(&parts.headers, &ingest.settings().allowed_origins) {
                    Err(refused) => refused.into_response(),
                    Ok(()) => next.run(Request::from_parts(parts, body)).await,
                },
            },
        }
    };
    let allowed = &ingest.settings().allowed_origins;
    add_cors_headers(response.headers_mut(), origin.as_ref(), allowed);
    response
}

/// 403 `forbidden_origin` when `WEB_INGEST_ALLOWED_ORIGINS` is a list and the request carries
/// an `Origin` outside it (`null`, from sandboxed frames and `file:` pages, is never listed).
/// A request without `Origin` (a server-side sender, curl) is not a browser's and passes.
pub fn check_origin(headers: &HeaderMap, allowed: &AllowedOrigins) -> Result<(), ApiError> {
    if let AllowedOrigins::Any = allowed {
        return Ok(());
    }
    // Every `Origin` line must be listed: a second one must not smuggle a foreign origin in.
    let foreign = headers
        .get_all(header::ORIGIN)
        .iter()
        .any(|value| !value.to_str().is_ok_and(|text| allowed.allows(text)));
    if foreign {
        return Err(ApiError::new(
            ErrorCode::ForbiddenOrigin,
            "this origin may not send ingest data (WEB_INGEST_ALLOWED_ORIGINS)",
        ));
    }
    Ok(())
}

/// 204 with the CORS preflight headers (Allow-Origin is added with every response).
fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, X-Lookout-Key"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    response
}

/// `Access-Control-Allow-Origin`: `*` when any origin may send, else the request's origin when
/// it is listed (with `Vary: Origin`, since the answer then depends on it).
pub fn add_cors_headers(
    headers: &mut HeaderMap,
    origin: Option<&HeaderValue>,
    allowed: &AllowedOrigins,
) {
    match allowed {
        AllowedOrigins::Any => {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
        AllowedOrigins::List(_) => {
            headers.append(header::VARY, HeaderValue::from_static("Origin"));
            let listed = origin
                .and_then(|value| value.to_str().ok())
                .filter(|text| allowed.allows(text));
            if let (Some(value), Some(_)) = (origin, listed) {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value.clone());
            }
        }
    }
    // Lets the SDK read the back-off and cache headers of a cross-origin response.
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag, Retry-After"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_is_per_address_and_ipv6_per_64() {
        let gate = RateGate::new(2, 1000);
        let a: IpAddr = "203.0.113.1".parse().unwrap();
        assert!(gate.check(a).is_ok() && gate.check(a).is_ok());
        let wait = gate.check(a).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(gate.check("203.0.113.2".parse().unwrap()).is_ok());
        let v6a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let v6b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert!(gate.check(v6a).is_ok() && gate.check(v6b).is_ok());
        assert!(gate.check(v6a).is_err(), "one /64 shares one quota");
        let mapped: IpAddr = "::ffff:203.0.113.1".parse().unwrap();
        assert_eq!(rate_key(mapped), a);
    }

    #[test]
    fn memory_stays_bounded() {
        let gate = RateGate::new(240, 100);
        for n in 0..100u32 {
            assert!(gate.check(IpAddr::from(n.to_be_bytes())).is_ok());
        }
        // Full, and every address was active just now: a new one is refused, not tracked.
        assert!(gate.check("198.51.100.1".parse().unwrap()).is_err());
        assert_eq!(gate.tracked(), 100);
    }

    #[test]
    fn keys_are_matched_exactly() {
        let keys = IngestKeys::new(&["k7Q2mR9xW4tY8pL3".into(), "c5H1jD0sF7gK2zX9".into()]);
        assert!(keys.accepts("k7Q2mR9xW4tY8pL3"));
        assert!(keys.accepts("c5H1jD0sF7gK2zX9"));
        for wrong in [
            "",
            "k7Q2mR9xW4tY8pL",
            "k7Q2mR9xW4tY8pL3 ",
            "K7Q2MR9XW4TY8PL3",
        ] {
            assert!(!keys.accepts(wrong), "{wrong:?}");
        }
        assert!(!IngestKeys::new(&[]).accepts("anything"));
    }

    #[test]
    fn the_key_comes_from_the_header_else_the_query() {
        let parts = |uri: &str, header: Option<&str>| {
            let mut request = axum::http::Request::builder().uri(uri);
            if let Some(value) = header {
                request = request.header(KEY_HEADER, value);
            }
            request.body(()).unwrap().into_parts().0
        };
        assert_eq!(
            presented_key(&parts("/x?key=q", Some(" h "))).as_deref(),
            Some("h")
        );
        assert_eq!(
            presented_key(&parts("/x?a=1&key=q%2B1", None)).as_deref(),
            Some("q+1")
        );
        assert_eq!(
            presented_key(&parts("/x?key=q", Some(""))).as_deref(),
            Some("q")
        );
        assert_eq!(presented_key(&parts("/x?key=", None)), None);
    }

    #[test]
    fn only_listed_origins_or_none_may_send() {
        let list = AllowedOrigins::List(vec!["https://app.example.com".into()]);
        let with = |origins: &[&'static str]| {
            let mut headers = HeaderMap::new();
            for origin in origins {
                headers.append(header::ORIGIN, HeaderValue::from_static(origin));
            }
            headers
        };
        assert!(check_origin(&with(&[]), &list).is_ok());
        assert!(check_origin(&with(&["https://APP.example.com"]), &list).is_ok());
        for refused in [
            &["null"][..],
            &["https://evil.example"],
            &["https://app.example.com", "https://evil.example"],
        ] {
            let error = check_origin(&with(refused), &list).unwrap_err();
            assert_eq!(error.code, ErrorCode::ForbiddenOrigin, "{refused:?}");
        }
        assert!(check_origin(&with(&["null"]), &AllowedOrigins::Any).is_ok());
    }

    #[test]
    fn cors_headers() {
        let origin = HeaderValue::from_static("https://app.example.com");
        let mut headers = HeaderMap::new();
        add_cors_headers(&mut headers, Some(&origin), &AllowedOrigins::Any);
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(headers.get(header::VARY).is_none());

        let list = AllowedOrigins::List(vec!["https://app.example.com".into()]);
        let mut headers = HeaderMap::new();
        add_cors_headers(&mut headers, Some(&origin), &list);
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], origin);
        assert_eq!(headers[header::VARY], "Origin");

        let other = HeaderValue::from_static("https://evil.example");
        let mut headers = HeaderMap::new();
        add_cors_headers(&mut headers, Some(&other), &list);
        assert!(headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
        assert_eq!(headers[header::VARY], "Origin");
    }
}
