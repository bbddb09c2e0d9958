//! The SCIM wire conventions shared by every `/scim/v2` route (RFC 7644): the media type, the
//! schema URNs, the error body, and the list answer with its `startIndex`/`count` paging.
//!
//! Invariants: every answer under `/scim/v2`, errors included, is `application/scim+json`; an
//! error is the RFC's `Error` message with `status` as a string and a `scimType` where the RFC
//! names one; internal causes are logged, never sent.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub const MEDIA_TYPE: &str = "application/scim+json";
pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
/// The most resources one list answer holds (`count` above it is lowered to it).
pub const MAX_COUNT: usize = 200;

/// A SCIM error answer.
#[derive(Debug)]
pub struct ScimError {
    pub status: StatusCode,
    /// RFC 7644 table 9: `invalidFilter`, `uniqueness`, `mutability`, `invalidSyntax`,
    /// `invalidPath`, `noTarget`, `invalidValue` …
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    pub fn new(
        status: StatusCode,
        scim_type: Option<&'static str>,
        detail: impl Into<String>,
    ) -> ScimError {
        ScimError {
            status,
            scim_type,
            detail: detail.into(),
        }
    }

    /// 400 with a `scimType`.
    pub fn bad(scim_type: &'static str, detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some(scim_type), detail)
    }

    pub fn not_found(what: &str) -> ScimError {
        ScimError::new(StatusCode::NOT_FOUND, None, format!("{what} not found"))
    }

    /// 500: the cause goes to the log only.
    pub fn internal(cause: impl std::fmt::Display) -> ScimError {
        tracing::error!(cause = %cause, "scim request failed");
        ScimError::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error")
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "schemas": [ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(scim_type) = self.scim_type {
            body["scimType"] = json!(scim_type);
        }
        scim_json(self.status, body)
    }
}

/// `body` as `application/scim+json` with `status`.
pub fn scim_json(status: StatusCode, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    response
}

/// Which slice of a list the client asks for: `startIndex` is 1-based (values below 1 mean
/// 1) and `count` is at most `MAX_COUNT` (negative means 0), as RFC 7644 section 3.4.2.4 says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListWindow {
    pub start_index: usize,
    pub count: usize,
}

impl ListWindow {
    pub fn parse(start_index: Option<&str>, count: Option<&str>) -> Result<ListWindow, ScimError> {
        let number = |name: &str, text: Option<&str>, default: i64| -> Result<i64, ScimError> {
            text.map_or(Ok(default), |text| {
                text.trim().parse::<i64>().map_err(|_| {
                    ScimError::bad("invalidValue", format!("{name}: expected an integer"))
                })
            })
        };
        let start = number("startIndex", start_index, 1)?.max(1);
        let count = number("count", count, 100)?.clamp(0, MAX_COUNT as i64);
        Ok(ListWindow {
            start_index: usize::try_from(start).unwrap_or(usize::MAX),
            count: usize::try_from(count).unwrap_or(0),
        })
    }

    /// The list answer of `all` (every matching resource, rendered) seen through this window.
    pub fn answer(&self, all: Vec<Value>) -> Value {
        let total = all.len();
        let resources: Vec<Value> = all
            .into_iter()
            .skip(self.start_index - 1)
            .take(self.count)
            .collect();
        json!({
            "schemas": [LIST_SCHEMA],
            "totalResults": total,
            "startIndex": self.start_index,
            "itemsPerPage": resources.len(),
            "Resources": resources,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_the_rfc_and_page_a_list() {
        assert_eq!(
            ListWindow::parse(None, None).unwrap(),
            ListWindow {
                start_index: 1,
                count: 100
            }
        );
        let low = ListWindow::parse(Some("0"), Some("-5")).unwrap();
        assert_eq!((low.start_index, low.count), (1, 0));
        let high = ListWindow::parse(Some("3"), Some("100000")).unwrap();
        assert_eq!((high.start_index, high.count), (3, MAX_COUNT));
        assert!(ListWindow::parse(Some("x"), None).is_err());

        let all: Vec<Value> = (1..=5).map(|n| json!(n)).collect();
        let page = ListWindow::parse(Some("2"), Some("2")).unwrap().answer(all);
        assert_eq!(page["totalResults"], 5);
        assert_eq!(page["itemsPerPage"], 2);
        assert_eq!(page["Resources"], json!([2, 3]));
        assert_eq!(page["startIndex"], 2);
    }

    #[test]
    fn errors_are_scim_messages() {
        let response = ScimError::bad("invalidFilter", "filter: nope").into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(response.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
    }
}
