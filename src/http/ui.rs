//! The web UI, embedded in the binary. Until the UI lands this is a placeholder home page
//! and the first-run setup form.
//!
//! Invariant: only the paths listed here serve the UI; every other unknown path is a 404
//! problem, so API clients never receive HTML by accident.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

use super::error::ApiError;

#[derive(RustEmbed)]
#[folder = "web/"]
struct Assets;

fn asset(path: &str) -> Response {
    let Some(file) = Assets::get(path) else {
        return ApiError::not_found("page").into_response();
    };
    let mime = HeaderValue::from_str(file.metadata.mimetype())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut response = file.data.into_owned().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, mime);
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

pub async fn index() -> Response {
    asset("index.html")
}

pub async fn setup_page() -> Response {
    asset("setup.html")
}

pub async fn static_asset(Path(path): Path<String>) -> Response {
    asset(&format!("assets/{path}"))
}
