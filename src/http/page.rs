//! The list convention of CONTRACT.md section 1: `?limit=` (default 50, at most 500) and
//! `?cursor=`, answered with `{"items":[…],"next_cursor":…|null}`.
//!
//! Invariants: a limit above the maximum is lowered to it (as most list APIs do) rather than
//! refused; a limit that is not a positive integer, an empty cursor or a repeated parameter is
//! 400 `invalid_parameter`. The cursor stays an opaque string here: each list parses its own.
//! Other query parameters are left to the handler.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorCode};

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;

/// One page of a list, as every list answers: the rows and the cursor of the next page
/// (`null` on the last one).
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    pub fn new(items: Vec<T>, next_cursor: Option<String>) -> Page<T> {
        Page { items, next_cursor }
    }
}

/// Which page of a list the client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: usize,
    pub cursor: Option<String>,
}

impl PageRequest {
    /// Reads `limit` and `cursor` from a raw query string.
    pub fn from_query(query: Option<&str>) -> Result<PageRequest, ApiError> {
        let mut limit = None;
        let mut cursor = None;
        for (name, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let slot = match name.as_ref() {
                "limit" => &mut limit,
                "cursor" => &mut cursor,
                _ => continue,
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidParameter,
                    format!("{name}: given more than once"),
                ));
            }
        }
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => match text.parse::<usize>() {
                Ok(0) | Err(_) => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidParameter,
                        format!("limit: expected an integer from 1 to {MAX_LIMIT}"),
                    ));
                }
                Ok(limit) => limit.min(MAX_LIMIT),
            },
        };
        if cursor.as_deref() == Some("") {
            return Err(ApiError::new(
                ErrorCode::InvalidParameter,
                "cursor: empty; omit it for the first page",
            ));
        }
        Ok(PageRequest { limit, cursor })
    }

    /// The cursor read by `parse` (the list's id parser); one it refuses is `bad_cursor`.
    pub fn cursor_as<T, E>(
        &self,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, ApiError> {
        self.cursor
            .as_deref()
            .map(|cursor| parse(cursor).map_err(|_| PageRequest::bad_cursor()))
            .transpose()
    }

    /// The page of `rows`, read with `limit + 1` so that a further page shows, and the cursor
    /// of the next page (`cursor_of` the last row kept) when there is one.
    pub fn split<T>(
        &self,
        mut rows: Vec<T>,
        cursor_of: impl Fn(&T) -> String,
    ) -> (Vec<T>, Option<String>) {
        if rows.len() <= self.limit {
            return (rows, None);
        }
        rows.truncate(self.limit);
        let next = rows.last().map(cursor_of);
        (rows, next)
    }

    /// The answer of a list read with `limit + 1` rows: the page of `rows` as `view` shows
    /// them, with the next page's cursor (`cursor_of` the last row kept).
    pub fn answer<R, T>(
        &self,
        rows: Vec<R>,
        cursor_of: impl Fn(&R) -> String,
        view: impl FnMut(&R) -> T,
    ) -> Page<T> {
        let (rows, next_cursor) = self.split(rows, cursor_of);
        Page::new(rows.iter().map(view).collect(), next_cursor)
    }

    /// The page of a whole list already in the order of `key_of` (a list computed in memory,
    /// such as aggregates): the rows after the cursor's key, split as `split` does.
    pub fn of_sorted<T>(
        &self,
        rows: impl IntoIterator<Item = T>,
        key_of: impl Fn(&T) -> String,
    ) -> (Vec<T>, Option<String>) {
        let after_cursor = |row: &T| {
            self.cursor
                .as_deref()
                .is_none_or(|cursor| key_of(row).as_str() > cursor)
        };
        let rows = rows
            .into_iter()
            .filter(after_cursor)
            .take(self.limit + 1)
            .collect();
        self.split(rows, &key_of)
    }

    /// The error for a cursor this list did not hand out.
    pub fn bad_cursor() -> ApiError {
        ApiError::new(
            ErrorCode::InvalidParameter,
            "cursor: not a cursor of this list; pass next_cursor back unchanged",
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PageRequest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        PageRequest::from_query(parts.uri.query())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_cursors() {
        let page = |query| PageRequest::from_query(query);
        assert_eq!(
            page(None).unwrap(),
            PageRequest {
                limit: DEFAULT_LIMIT,
                cursor: None
            }
        );
        assert_eq!(page(Some("limit=7&x=1")).unwrap().limit, 7);
        assert_eq!(page(Some("limit=100000")).unwrap().limit, MAX_LIMIT);
        assert_eq!(
            page(Some("cursor=aud_1%2F")).unwrap().cursor.as_deref(),
            Some("aud_1/")
        );
        for bad in [
            "limit=0",
            "limit=-1",
            "limit=ten",
            "limit=",
            "cursor=",
            "limit=1&limit=2",
        ] {
            let err = page(Some(bad)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidParameter, "{bad}");
        }
    }

    #[test]
    fn cursors_parse_with_the_lists_parser_and_pages_split_on_one_more_row() {
        let page = PageRequest::from_query(Some("limit=2&cursor=7")).unwrap();
        assert_eq!(page.cursor_as(|text| text.parse::<u32>()).unwrap(), Some(7));
        let refused = page.cursor_as(|_| Err::<u32, ()>(())).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidParameter);
        let first = PageRequest::from_query(None).unwrap();
        assert_eq!(first.cursor_as(|text| text.parse::<u32>()).unwrap(), None);

        let name = |row: &u32| row.to_string();
        assert_eq!(
            page.split(vec![1, 2, 3], name),
            (vec![1, 2], Some("2".into()))
        );
        assert_eq!(page.split(vec![1, 2], name), (vec![1, 2], None));
        assert_eq!(page.split(Vec::new(), name), (vec![], None));
    }

    #[test]
    fn sorted_lists_page_after_the_cursor_key() {
        let name = |row: &&str| row.to_string();
        let rows = ["a", "b", "c", "d"];
        let first = PageRequest::from_query(Some("limit=2")).unwrap();
        assert_eq!(
            first.of_sorted(rows, name),
            (vec!["a", "b"], Some("b".into()))
        );
        let second = PageRequest::from_query(Some("limit=2&cursor=b")).unwrap();
        assert_eq!(second.of_sorted(rows, name), (vec!["c", "d"], None));
        let between = PageRequest::from_query(Some("limit=9&cursor=bb")).unwrap();
        assert_eq!(between.of_sorted(rows, name), (vec!["c", "d"], None));
    }
}
