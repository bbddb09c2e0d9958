//! Cross-cutting layers: request-head limits, problem+json for every error the framework
//! produces on its own, request ids, metrics and the log line of each failed request.
//!
//! Invariant: whatever produced an error response (a handler, axum's router, a tower layer),
//! the client receives problem+json with a CONTRACT.md code.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::request_id::{MakeRequestId, RequestId};

use super::error::{ApiError, ErrorCode, InternalCause, PROBLEM_JSON, code_for_status};

/// Limits on the request head checked before routing.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    pub max_uri_bytes: usize,
    pub max_header_count: usize,
    pub max_header_bytes: usize,
}

/// 414 for an over-long URI, 431 for too many or too large headers.
pub async fn limit_request_head(
    State(limits): State<HeadLimits>,
    request: Request,
    next: Next,
) -> Response {
    let uri_bytes = request.uri().to_string().len();
    if uri_bytes > limits.max_uri_bytes {
        let detail = format!(
            "the request URI is {uri_bytes} bytes; the limit is {}",
            limits.max_uri_bytes
        );
        return ApiError::new(ErrorCode::UriTooLong, detail).into_response();
    }
    let headers = request.headers();
    if headers.len() > limits.max_header_count {
        let detail = format!(
            "{} header fields; the limit is {}",
            headers.len(),
            limits.max_header_count
        );
        return ApiError::new(ErrorCode::HeadersTooLarge, detail).into_response();
    }
    let header_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if header_bytes > limits.max_header_bytes {
        let detail = format!(
            "{header_bytes} bytes of header fields; the limit is {}",
            limits.max_header_bytes
        );
        return ApiError::new(ErrorCode::HeadersTooLarge, detail).into_response();
    }
    next.run(request).await
}

/// Rewrites any error response that is not already problem+json (axum's own 404, 405, 413,
/// 415, tower's 408, ...) into one, keeping its status and headers such as `Allow`.
pub async fn problem_for_framework_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_problem(&response) {
        return response;
    }
    let (parts, _) = response.into_parts();
    let code = code_for_status(status);
    let detail = match code {
        ErrorCode::NotFound => "no resource at this path".to_string(),
        ErrorCode::MethodNotAllowed => "this path does not accept that method".to_string(),
        _ => code.title().to_lowercase(),
    };
    let mut replacement = ApiError::new(code, detail).into_response();
    *replacement.status_mut() = status;
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    replacement
}

/// Whether the answer is already a structured error: problem+json, or the SCIM error message
/// (RFC 7644 section 3.12) that SCIM clients read under `/scim`.
fn is_problem(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| {
            let value = value.as_bytes();
            value.starts_with(PROBLEM_JSON.as_bytes())
                || value.starts_with(b"application/scim+json")
        })
}

/// Request ids are ULIDs: sortable, like every other id of the service.
#[derive(Debug, Clone, Copy, Default)]
pub struct MakeUlidRequestId;

impl MakeRequestId for MakeUlidRequestId {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        let id = crate::store::ids::next_ulid().to_string();
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

/// Counts requests by route and status, times them, and logs server errors with their cause.
pub async fn observe(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status();
    let labels = [
        ("method", method.as_str().to_string()),
        ("route", route.clone()),
        ("status", status.as_u16().to_string()),
    ];
    metrics::counter!("lookout_http_requests_total", &labels).increment(1);
    metrics::histogram!("lookout_http_request_duration_seconds", "route" => route.clone())
        .record(elapsed.as_secs_f64());
    let cause = response
        .extensions()
        .get::<InternalCause>()
        .map(|c| c.0.as_str())
        .unwrap_or("");
    if status == StatusCode::SERVICE_UNAVAILABLE {
        // Expected while the disk is full: worth a warning per request, not an error.
        tracing::warn!(%method, route, status = status.as_u16(), request_id, cause, "request refused");
    } else if status.is_server_error() {
        tracing::error!(%method, route, status = status.as_u16(), request_id, cause, "request failed");
    } else {
        let ms = elapsed.as_millis() as u64;
        tracing::debug!(%method, route, status = status.as_u16(), request_id, ms, "request");
    }
    response
}
