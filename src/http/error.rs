//! The error catalogue: every `code` of CONTRACT.md with its status, and `ApiError`, the one
//! error type handlers return. Responses are RFC 9457 `application/problem+json`.
//!
//! Invariants: a client sees only the code, a title and a detail written for it; the internal
//! cause of a 5xx travels in a response extension for the logging middleware and never in the
//! body. Each capability maps its own error enum onto `ErrorCode` with an exhaustive `match`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::store::{RETRY_AFTER, StoreError};

pub const PROBLEM_JSON: &str = "application/problem+json";

/// Defines `ErrorCode` with each variant's wire code, status and title in one table.
macro_rules! error_codes {
    ($($variant:ident => ($code:literal, $status:ident, $title:literal),)*) => {
        /// Stable, snake_case error codes that clients may branch on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $($variant),* }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code),* }
            }

            pub fn status(self) -> StatusCode {
                match self { $(ErrorCode::$variant => StatusCode::$status),* }
            }

            pub fn title(self) -> &'static str {
                match self { $(ErrorCode::$variant => $title),* }
            }
        }
    };
}

error_codes! {
    // Plumbing: routing, bodies, connection hygiene, storage.
    NotFound => ("not_found", NOT_FOUND, "Not found"),
    MethodNotAllowed => ("method_not_allowed", METHOD_NOT_ALLOWED, "Method not allowed"),
    InvalidPayload => ("invalid_payload", BAD_REQUEST, "Invalid request body"),
    InvalidParameter => ("invalid_parameter", BAD_REQUEST, "Invalid request parameter"),
    RequestTimeout => ("request_timeout", REQUEST_TIMEOUT, "Request body not received in time"),
    BodyTooLarge => ("body_too_large", PAYLOAD_TOO_LARGE, "Request body too large"),
    UriTooLong => ("uri_too_long", URI_TOO_LONG, "Request URI too long"),
    MalformedRequest => ("malformed_request", BAD_REQUEST, "Malformed request framing"),
    UnsupportedMediaType => ("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE, "Unsupported media type"),
    HeadersTooLarge => ("headers_too_large", REQUEST_HEADER_FIELDS_TOO_LARGE, "Request header fields too large"),
    RateLimited => ("rate_limited", TOO_MANY_REQUESTS, "Too many requests"),
    StoreUnavailable => ("store_unavailable", SERVICE_UNAVAILABLE, "Storage temporarily unavailable"),
    Overloaded => ("overloaded", SERVICE_UNAVAILABLE, "Server busy"),
    InternalError => ("internal_error", INTERNAL_SERVER_ERROR, "Internal error"),
    // First-run setup and accounts.
    InvalidSetupToken => ("invalid_setup_token", UNAUTHORIZED, "Invalid setup token"),
    SetupCompleted => ("setup_completed", CONFLICT, "Setup already completed"),
    EmailTaken => ("email_taken", CONFLICT, "E-mail address already registered"),
    OrgNameTaken => ("org_name_taken", CONFLICT, "Organisation name already taken"),
    // Authentication and access (CONTRACT.md section 2).
    Unauthorized => ("unauthorized", UNAUTHORIZED, "Authentication required"),
    InvalidCredentials => ("invalid_credentials", UNAUTHORIZED, "Invalid credentials"),
    InvalidEmail => ("invalid_email", BAD_REQUEST, "Invalid e-mail address"),
    AccountLocked => ("account_locked", LOCKED, "Account locked"),
    SessionRevoked => ("session_revoked", UNAUTHORIZED, "Session revoked"),
    CsrfFailed => ("csrf_failed", FORBIDDEN, "CSRF token missing or wrong"),
    InvalidCode => ("invalid_code", UNAUTHORIZED, "Invalid two-factor code"),
    TwoFactorAlreadyEnabled => ("two_factor_already_enabled", CONFLICT, "Two-factor authentication already enabled"),
    TwoFactorEnrolmentRequired => ("two_factor_enrolment_required", FORBIDDEN, "Two-factor enrolment required"),
    Forbidden => ("forbidden", FORBIDDEN, "Forbidden"),
    LastOwner => ("last_owner", CONFLICT, "The last owner cannot be removed or demoted"),
    InvalidApiKey => ("invalid_api_key", UNAUTHORIZED, "Invalid API key"),
    IpNotAllowed => ("ip_not_allowed", FORBIDDEN, "Address not in the organisation's allowlist"),
    WouldLockOut => ("would_lock_out", CONFLICT, "The allowlist would exclude your own address"),
    AlreadyMember => ("already_member", CONFLICT, "Already a member of the organisation"),
    InvalidInvitation => ("invalid_invitation", UNAUTHORIZED, "Invalid invitation"),
    PlanRequired => ("plan_required", FORBIDDEN, "Requires the enterprise plan"),
    SsoRequired => ("sso_required", FORBIDDEN, "Sign in through single sign-on"),
    SsoNotConfigured => ("sso_not_configured", NOT_FOUND, "Single sign-on is not configured"),
    SsoProviderUnavailable => ("sso_provider_unavailable", BAD_GATEWAY, "The identity provider could not be used"),
    SsoDomainTaken => ("sso_domain_taken", CONFLICT, "Domain already claimed by another organisation"),
    InvalidIssuer => ("invalid_issuer", BAD_REQUEST, "Invalid OIDC issuer"),
    InvalidClient => ("invalid_client", BAD_REQUEST, "Invalid OIDC client id or secret"),
    InvalidDomain => ("invalid_domain", BAD_REQUEST, "Invalid SSO domain"),
    InvalidRole => ("invalid_role", BAD_REQUEST, "Invalid role"),
    InvalidSamlMetadata => ("invalid_saml_metadata", BAD_REQUEST, "Invalid SAML metadata"),
    // Ingest (section 3).
    ExperimentExists => ("experiment_exists", CONFLICT, "Experiment already exists"),
    InvalidIngestKey => ("invalid_ingest_key", UNAUTHORIZED, "Invalid ingest key"),
    TooManyEvents => ("too_many_events", PAYLOAD_TOO_LARGE, "Too many events in one request"),
    IngestUnavailable => ("ingest_unavailable", SERVICE_UNAVAILABLE, "No organisation receives ingested data yet"),
    // Inbound events, agents and terminal (sections 4 and 6).
    InvalidInboundToken => ("invalid_inbound_token", UNAUTHORIZED, "Invalid inbound token"),
    WrongTokenKind => ("wrong_token_kind", FORBIDDEN, "Inbound token of another kind"),
    InvalidTicket => ("invalid_ticket", UNAUTHORIZED, "Invalid shell ticket"),
    ForbiddenOrigin => ("forbidden_origin", FORBIDDEN, "Origin not allowed"),
    // Outbound webhooks (section 5).
    DestinationRefused => ("destination_refused", BAD_REQUEST, "Webhook destination not allowed"),
    ChannelDisabled => ("channel_disabled", CONFLICT, "Channel disabled"),
    DeliveryNotDead => ("delivery_not_dead", CONFLICT, "Delivery is not in the dead-letter queue"),
    LimitReached => ("limit_reached", CONFLICT, "Limit reached"),
}

/// The RFC 9457 body.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// A URI naming the problem type.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable snake_case code (CONTRACT.md).
    pub code: String,
}

/// The internal cause of a 5xx, for the logs only.
#[derive(Debug, Clone)]
pub struct InternalCause(pub String);

#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub detail: String,
    pub retry_after: Option<std::time::Duration>,
    cause: Option<String>,
}

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        ApiError {
            code,
            detail: detail.into(),
            retry_after: None,
            cause: None,
        }
    }

    pub fn with_retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// A 500 whose cause is logged but never shown.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ApiError {
            code: ErrorCode::InternalError,
            detail: "the server failed to handle this request; it has been logged".to_string(),
            retry_after: None,
            cause: Some(cause.to_string()),
        }
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::new(ErrorCode::NotFound, format!("{what} not found"))
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(_) | StoreError::Closed => {
                let mut error = ApiError::new(
                    ErrorCode::StoreUnavailable,
                    "storage cannot accept writes right now; retry later",
                )
                .with_retry_after(RETRY_AFTER);
                // The reason (e.g. "No space left on device") is for the log, not the client.
                error.cause = Some(err.to_string());
                error
            }
            StoreError::Corrupt { .. } | StoreError::Storage(_) => ApiError::internal(err),
        }
    }
}

/// A problem response for `code` (used by the fallback middleware for framework errors too).
pub fn problem_response(code: ErrorCode, detail: &str) -> Response {
    ApiError::new(code, detail).into_response()
}

/// The problem+json bytes of `code` with `detail`.
pub fn problem_body(code: ErrorCode, detail: String) -> Vec<u8> {
    let problem = Problem {
        kind: format!("urn:lookout:problem:{}", code.as_str()),
        title: code.title().to_string(),
        status: code.status().as_u16(),
        detail,
        code: code.as_str().to_string(),
    };
    serde_json::to_vec(&problem).unwrap_or_else(|_| b"{}".to_vec())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let body = problem_body(self.code, self.detail);
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(after) = self.retry_after {
            let seconds = after.as_secs().max(1);
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                headers.insert(header::RETRY_AFTER, value);
            }
        }
        if let Some(cause) = self.cause {
            response.extensions_mut().insert(InternalCause(cause));
        }
        response
    }
}

/// The code a bare framework error of `status` stands for.
pub fn code_for_status(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::BodyTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::REQUEST_TIMEOUT => ErrorCode::RequestTimeout,
        StatusCode::URI_TOO_LONG => ErrorCode::UriTooLong,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ErrorCode::HeadersTooLarge,
        StatusCode::TOO_MANY_REQUESTS => ErrorCode::RateLimited,
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::SERVICE_UNAVAILABLE => ErrorCode::StoreUnavailable,
        status if status.is_client_error() => ErrorCode::InvalidPayload,
        _ => ErrorCode::InternalError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_errors() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            let text = code.as_str();
            assert!(seen.insert(text), "duplicate code {text}");
            assert!(
                text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{text}"
            );
            assert!(code.status().is_client_error() || code.status().is_server_error());
        }
    }

    #[tokio::test]
    async fn renders_problem_json_with_retry_after() {
        let response = ApiError::from(StoreError::Unavailable("disk full".into())).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
        assert_eq!(response.headers()[header::RETRY_AFTER], "5");
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["code"], "store_unavailable");
        assert_eq!(json["status"], 503);
        assert!(
            !json["detail"].as_str().unwrap().contains("disk full"),
            "internals leaked"
        );
    }

    #[test]
    fn internal_causes_stay_out_of_the_body() {
        let response = ApiError::internal("secret path /var/x").into_response();
        assert_eq!(
            response.extensions().get::<InternalCause>().unwrap().0,
            "secret path /var/x"
        );
    }
}
