//! The documented error answers shared by every route's OpenAPI annotation: each type is one
//! RFC 9457 response (`application/problem+json`, body `Problem`) for one status. A route lists
//! those it can answer, beside its success responses:
//! `responses((status = 200, body = Thing), problems::NotFound, problems::Invalid)`.
//!
//! Invariant: documentation only. The answers themselves come from `ApiError`; the `code` a
//! client reads is CONTRACT.md's, named in each description.

use utoipa::IntoResponses;

use super::error::Problem;

/// 400: the request is malformed (`invalid_parameter`, `invalid_payload` or a
/// more precise code of CONTRACT.md).
#[derive(IntoResponses)]
#[response(
    status = 400,
    description = "invalid_parameter or invalid_payload (or a more precise code): the detail names the field",
    content_type = "application/problem+json"
)]
pub struct Invalid(pub Problem);

/// 401: no credentials, or credentials that are unknown, expired or revoked.
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "unauthorized (or the credential's own code, such as invalid_api_key or session_revoked): missing, unknown, expired or revoked credentials",
    content_type = "application/problem+json"
)]
pub struct Unauthenticated(pub Problem);

/// 403: the caller is known but may not do this (role, key scope, token kind or origin).
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "forbidden (or csrf_failed, ip_not_allowed, wrong_token_kind): the caller may not do this",
    content_type = "application/problem+json"
)]
pub struct Forbidden(pub Problem);

/// 404: no such record in the caller's organisation.
#[derive(IntoResponses)]
#[response(
    status = 404,
    description = "not_found: no such record in this organisation",
    content_type = "application/problem+json"
)]
pub struct NotFound(pub Problem);

/// 413: the body is over the route's limit.
#[derive(IntoResponses)]
#[response(
    status = 413,
    description = "body_too_large: the body is over this route's limit",
    content_type = "application/problem+json"
)]
pub struct TooLarge(pub Problem);

/// 415: the body is not in a media type the route reads.
#[derive(IntoResponses)]
#[response(
    status = 415,
    description = "unsupported_media_type: send the Content-Type this route reads",
    content_type = "application/problem+json"
)]
pub struct UnsupportedMediaType(pub Problem);

/// 423: the account is locked after too many failed attempts.
#[derive(IntoResponses)]
#[response(
    status = 423,
    description = "account_locked: too many failed attempts; Retry-After says when to try again",
    content_type = "application/problem+json"
)]
pub struct Locked(pub Problem);

/// 429: over a rate limit.
#[derive(IntoResponses)]
#[response(
    status = 429,
    description = "rate_limited: Retry-After says when to try again",
    content_type = "application/problem+json"
)]
pub struct RateLimited(pub Problem);

/// 503: the store or the queue cannot take the request now.
#[derive(IntoResponses)]
#[response(
    status = 503,
    description = "store_unavailable or overloaded: try again",
    content_type = "application/problem+json"
)]
pub struct Unavailable(pub Problem);

/// 409: the request conflicts with what is stored; the `code` names the conflict.
#[derive(IntoResponses)]
#[response(
    status = 409,
    description = "the request conflicts with what is stored; the code names the conflict",
    content_type = "application/problem+json"
)]
pub struct Conflict(pub Problem);
