//! The web UI, embedded in the binary (`web/`), served like a product: the app's shell for
//! every page route, its modules under `/assets/`, third-party modules under `/vendor/`.
//!
//! Invariants:
//! - A GET outside the machine prefixes (`MACHINE_PREFIXES`) answers the shell, so every link the
//!   product hands out opens its page; under a machine prefix an unknown path is a 404 problem,
//!   so API clients never receive HTML by accident.
//! - Every UI response carries the same strict Content-Security-Policy: scripts only from this
//!   origin plus the shell's one inline import map, pinned by its SHA-256. The one exception is
//!   the terminal page's document, which also allows inline styles (the emulator draws with
//!   them); its scripts are held to the same policy.
//! - Files are sent gzip-compressed when the client accepts it, with a strong ETag per
//!   representation; vendored paths carry their version and are cached as immutable.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};

use super::error::{ApiError, ErrorCode};

#[derive(RustEmbed)]
#[folder = "web/"]
#[exclude = "vendor/update"]
#[exclude = "vendor/MANIFEST.json"]
struct Assets;

/// Paths that belong to machines (APIs, ingest, the app's own files): never the shell.
const MACHINE_PREFIXES: &[&str] = &[
    "/api", "/ingest", "/scim", "/v1", "/assets", "/vendor", "/sdk", "/healthz", "/metrics",
];

/// Files smaller than this are sent as they are: gzip would not pay for its header.
const COMPRESS_FROM_BYTES: usize = 512;

/// How a file may be cached by the browser.
#[derive(Clone, Copy)]
enum Caching {
    /// Revalidate every time (cheap: a 304 on a matching ETag).
    Revalidate,
    /// The path names a version, so its content never changes.
    Immutable,
}

/// One file's compressed form, kept per content digest so a changed file (development builds read
/// `web/` from disk) is never answered with a stale body. Bounded by the number of files.
type GzipCache = Mutex<HashMap<[u8; 32], Arc<Vec<u8>>>>;

fn gzip_cache() -> &'static GzipCache {
    static CACHE: OnceLock<GzipCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn gzipped(digest: [u8; 32], data: &[u8]) -> Arc<Vec<u8>> {
    if let Some(hit) = gzip_cache()
        .lock()
        .ok()
        .and_then(|cache| cache.get(&digest).cloned())
    {
        return hit;
    }
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 3), Compression::best());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(data);
    let compressed = Arc::new(encoder.finish().unwrap_or_default());
    if let Ok(mut cache) = gzip_cache().lock() {
        cache.insert(digest, compressed.clone());
    }
    compressed
}

/// The Content-Security-Policy of every UI response. The shell's import map is its only inline
/// script, allowed by its hash; styles are files too (element styles set from script are CSSOM,
/// which `style-src` does not restrict).
pub fn content_security_policy() -> &'static HeaderValue {
    static POLICY: OnceLock<HeaderValue> = OnceLock::new();
    POLICY.get_or_init(|| policy_with_styles("'self'"))
}

/// The policy of the terminal page's document (`/agents/{id}/terminal`): the same, but for
/// inline styles, which the terminal emulator writes into `<style>` elements and `style`
/// attributes as it draws (its colours, fonts and cell sizes). Scripts stay as strict.
pub fn terminal_page_policy() -> &'static HeaderValue {
    static POLICY: OnceLock<HeaderValue> = OnceLock::new();
    POLICY.get_or_init(|| policy_with_styles("'self' 'unsafe-inline'"))
}

fn policy_with_styles(style_src: &str) -> HeaderValue {
    let import_map = Assets::get("index.html")
        .map(|file| inline_import_map(&String::from_utf8_lossy(&file.data)))
        .unwrap_or_default();
    let digest =
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(import_map.as_bytes()));
    let policy = format!(
        "default-src 'self'; script-src 'self' 'sha256-{digest}'; style-src {style_src}; \
         img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("default-src 'none'"))
}

/// Whether `path` is the terminal page, `/agents/{id}/terminal`.
fn is_terminal_page(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(parts.as_slice(), ["agents", id, "terminal"] if !id.is_empty())
}

/// The text of the shell's `<script type="importmap">` element, exactly as the browser hashes it.
fn inline_import_map(html: &str) -> String {
    const OPEN: &str = "<script type=\"importmap\">";
    let Some(start) = html.find(OPEN).map(|at| at + OPEN.len()) else {
        return String::new();
    };
    let end = html[start..]
        .find("</script>")
        .map_or(start, |len| start + len);
    html[start..end].to_string()
}

pub(super) fn accepts_gzip(request: &HeaderMap) -> bool {
    request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|param| param.replace(' ', "") == "q=0");
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

pub(super) fn not_modified(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|candidate| {
            let candidate = candidate.trim();
            candidate == "*" || candidate.trim_start_matches("W/") == etag
        })
}

/// Headers every UI response carries, whatever its body.
fn protect(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        content_security_policy().clone(),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

/// One embedded file (HEAD answers too: hyper sends its headers, with the GET body's length, and no body).
fn serve_file(path: &str, caching: Caching, request: &HeaderMap) -> Response {
    // Only plain relative names: development builds read `web/` from disk.
    let plain = path
        .split('/')
        .all(|segment| !segment.is_empty() && !segment.starts_with('.') && !segment.contains('\\'));
    let Some(file) = Assets::get(path).filter(|_| plain) else {
        return ApiError::new(ErrorCode::NotFound, "no file at this path").into_response();
    };
    let digest = file.metadata.sha256_hash();
    let hex: String = digest[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let gzip = file.data.len() >= COMPRESS_FROM_BYTES && accepts_gzip(request);
    // Strong ETags name one representation: the compressed body gets its own.
    let etag = if gzip {
        format!("\"{hex}-gz\"")
    } else {
        format!("\"{hex}\"")
    };

    let mut response = if not_modified(request, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if gzip {
        let body = gzipped(digest, &file.data);
        let mut response = (*body).clone().into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response
    } else {
        file.data.into_owned().into_response()
    };
    let headers = response.headers_mut();
    let mime = HeaderValue::from_str(file.metadata.mimetype())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_TYPE, mime);
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let cache = match caching {
        Caching::Revalidate => "no-cache",
        Caching::Immutable => "public, max-age=31536000, immutable",
    };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    protect(headers);
    response
}

/// `/assets/{path}`: the app's own modules and styles (`web/app/`).
pub async fn app_file(uri: Uri, request: HeaderMap) -> Response {
    let path = uri.path().trim_start_matches("/assets/");
    serve_file(&format!("app/{path}"), Caching::Revalidate, &request)
}

/// `/vendor/{name@version}/{file}`: pinned third-party modules, immutable by their path.
pub async fn vendor_file(uri: Uri, request: HeaderMap) -> Response {
    let path = uri.path().trim_start_matches('/');
    let versioned = path.split('/').nth(1).is_some_and(|dir| dir.contains('@'));
    let caching = if versioned {
        Caching::Immutable
    } else {
        Caching::Revalidate
    };
    serve_file(path, caching, &request)
}

/// Every request no route took: the app's shell for a page, a 404 problem for anything else.
pub async fn fallback(method: Method, uri: Uri, request: HeaderMap) -> Response {
    let path = uri.path();
    let machine = MACHINE_PREFIXES
        .iter()
        .any(|prefix| path == *prefix || path.starts_with(&format!("{prefix}/")));
    let page_method = method == Method::GET || method == Method::HEAD;
    if machine || !page_method {
        return ApiError::new(ErrorCode::NotFound, "no resource at this path").into_response();
    }
    let mut response = serve_file("index.html", Caching::Revalidate, &request);
    if is_terminal_page(path) {
        response.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            terminal_page_policy().clone(),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_map_is_read_exactly_as_written() {
        let html = "<head><script type=\"importmap\">{\n \"imports\": {}\n}</script></head>";
        assert_eq!(inline_import_map(html), "{\n \"imports\": {}\n}");
        assert_eq!(inline_import_map("<head></head>"), "");
    }

    #[test]
    fn only_the_terminal_page_allows_inline_styles() {
        assert!(is_terminal_page("/agents/agt_1/terminal"));
        for other in [
            "/agents",
            "/agents/agt_1",
            "/agents//terminal",
            "/x/agents/a/terminal",
        ] {
            assert!(!is_terminal_page(other), "{other}");
        }
        let strict = content_security_policy().to_str().unwrap();
        let terminal = terminal_page_policy().to_str().unwrap();
        assert!(strict.contains("style-src 'self';"), "{strict}");
        assert!(
            terminal.contains("style-src 'self' 'unsafe-inline';"),
            "{terminal}"
        );
        assert_eq!(
            strict.replace("style-src 'self';", ""),
            terminal.replace("style-src 'self' 'unsafe-inline';", "")
        );
    }

    #[test]
    fn gzip_is_accepted_unless_refused() {
        let cases = [
            ("gzip, deflate, br", true),
            ("br;q=1.0, gzip;q=0.8", true),
            ("gzip;q=0", false),
            ("identity", false),
            ("*", true),
        ];
        for (value, expected) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            assert_eq!(accepts_gzip(&headers), expected, "{value}");
        }
    }

    #[test]
    fn the_shell_and_its_modules_are_embedded() {
        assert!(Assets::get("index.html").is_some());
        assert!(Assets::get("app/main.js").is_some());
        assert!(
            Assets::get("vendor/update").is_none(),
            "maintainer script is not served"
        );
        assert!(
            !inline_import_map(&String::from_utf8_lossy(
                &Assets::get("index.html").unwrap().data
            ))
            .is_empty()
        );
    }
}
