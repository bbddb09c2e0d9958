//! The one place alerting's errors become problem answers: each `AlertingError` variant's
//! code and detail, in an exhaustive `match` (no `_` arm).

use super::AlertingError;
use crate::http::{ApiError, ErrorCode};

impl From<AlertingError> for ApiError {
    fn from(error: AlertingError) -> ApiError {
        match error {
            AlertingError::Store(error) => ApiError::from(error),
            AlertingError::NotFound(what) => ApiError::not_found(what),
            AlertingError::InvalidRule(detail) => ApiError::new(ErrorCode::InvalidPayload, detail),
            AlertingError::UnknownChannel(_) | AlertingError::TimelineFull(_) => {
                ApiError::new(ErrorCode::InvalidPayload, error.to_string())
            }
            AlertingError::RuleLimit(_) => {
                ApiError::new(ErrorCode::LimitReached, error.to_string())
            }
        }
    }
}
