//! The browser SDK (`web/sdk/`), served for pages on any origin: `/sdk/lookout.js` (ES module)
//! and `/sdk/lookout.iife.js` (global `Lookout`), the same files at `/sdk/<version>/…` cached as
//! immutable, and `/sdk/manifest.json` with each versioned file's SRI hash for the UI's snippet.
//!
//! Invariants:
//! - Every `/sdk/*` answer (problems included) carries `Access-Control-Allow-Origin: *` and
//!   `Cross-Origin-Resource-Policy: cross-origin`, so a customer's page may load it with
//!   `crossorigin` and an `integrity` attribute.
//! - Only this build's version exists under `/sdk/<version>/`: a hash pinned in a page never
//!   meets other bytes at the same address.
//! - The integrity is the SHA-384 of the uncompressed file, what a browser checks after decoding.

use std::io::Write;
use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use rust_embed::RustEmbed;
use serde::Serialize;
use sha2::{Digest, Sha256, Sha384};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::{ApiError, ErrorCode};
use super::ui::{accepts_gzip, not_modified};

#[derive(RustEmbed)]
#[folder = "web/sdk/"]
#[include = "lookout.js"]
#[include = "lookout.iife.js"]
struct SdkFiles;

/// The version in the immutable paths: the SDK ships with the binary, so it is the binary's.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The files served, in the manifest's order.
const FILE_NAMES: [&str; 2] = ["lookout.js", "lookout.iife.js"];

/// One served file, prepared once: its bytes, gzipped bytes, strong ETag and SRI hash.
struct SdkFile {
    name: &'static str,
    plain: Vec<u8>,
    gzipped: Vec<u8>,
    etag: String,
    integrity: String,
}

fn prepare(name: &'static str) -> Option<SdkFile> {
    let plain = SdkFiles::get(name)?.data.into_owned();
    let mut encoder = GzEncoder::new(Vec::with_capacity(plain.len() / 2), Compression::best());
    // Writing into a Vec cannot fail.
    encoder.write_all(&plain).ok()?;
    let gzipped = encoder.finish().ok()?;
    let digest = Sha256::digest(&plain);
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let sri = base64::engine::general_purpose::STANDARD.encode(Sha384::digest(&plain));
    Some(SdkFile {
        name,
        plain,
        gzipped,
        etag,
        integrity: format!("sha384-{sri}"),
    })
}

fn sdk_files() -> &'static [SdkFile] {
    static FILES: OnceLock<Vec<SdkFile>> = OnceLock::new();
    FILES.get_or_init(|| FILE_NAMES.into_iter().filter_map(prepare).collect())
}

/// The headers that let any origin load and read an SDK answer.
fn open_to_every_origin(headers: &mut HeaderMap) {
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("cross-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

fn not_found() -> Response {
    let mut response =
        ApiError::new(ErrorCode::NotFound, "no SDK file at this path").into_response();
    open_to_every_origin(response.headers_mut());
    response
}

/// One SDK file for `request`, gzipped when accepted, with `cache_control`.
fn serve(name: &str, cache_control: &'static str, request: &HeaderMap) -> Response {
    let Some(file) = sdk_files().iter().find(|file| file.name == name) else {
        return not_found();
    };
    let gzip = accepts_gzip(request);
    // Strong ETags name one representation: the compressed body gets its own.
    let etag = match gzip {
        true => format!("{}-gz\"", file.etag.trim_end_matches('"')),
        false => file.etag.clone(),
    };
    let mut response = if not_modified(request, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if gzip {
        let mut response = file.gzipped.clone().into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response
    } else {
        file.plain.clone().into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    open_to_every_origin(headers);
    response
}

/// The latest SDK file (`lookout.js` or `lookout.iife.js`), revalidated on every use.
#[utoipa::path(get, path = "/sdk/{file}", tag = "sdk",
    description = "The browser SDK at its unversioned path: `lookout.js` (ES module) or `lookout.iife.js` (global `Lookout`). `Access-Control-Allow-Origin: *`, `Cross-Origin-Resource-Policy: cross-origin`, `Cache-Control: no-cache`.",
    params(("file" = String, Path, description = "`lookout.js` or `lookout.iife.js`")),
    responses((status = 200, content_type = "text/javascript"), (status = 304),
        (status = 404, body = super::error::Problem, content_type = "application/problem+json")))]
async fn latest_sdk_file(Path(file): Path<String>, request: HeaderMap) -> Response {
    serve(&file, "no-cache", &request)
}

/// An SDK file at this build's versioned path, cached as immutable (safe to pin with SRI).
#[utoipa::path(get, path = "/sdk/{version}/{file}", tag = "sdk",
    description = "The browser SDK of this server's version, `Cache-Control: immutable`: the path a page pins with an `integrity` attribute. Any other version is 404.",
    params(("version" = String, Path, description = "this server's version, as in `/sdk/manifest.json`"),
        ("file" = String, Path, description = "`lookout.js` or `lookout.iife.js`")),
    responses((status = 200, content_type = "text/javascript"), (status = 304),
        (status = 404, body = super::error::Problem, content_type = "application/problem+json")))]
async fn versioned_sdk_file(
    Path((version, file)): Path<(String, String)>,
    request: HeaderMap,
) -> Response {
    if version != SDK_VERSION {
        return not_found();
    }
    serve(&file, "public, max-age=31536000, immutable", &request)
}

#[derive(Serialize, ToSchema)]
struct SdkManifest {
    /// The version in the immutable paths.
    version: &'static str,
    files: Vec<SdkManifestFile>,
}

#[derive(Serialize, ToSchema)]
struct SdkManifestFile {
    /// `lookout.js` (ES module) or `lookout.iife.js` (global `Lookout`).
    name: &'static str,
    /// The immutable path, `/sdk/<version>/<name>`, for the snippet's `src`.
    path: String,
    /// The SRI hash for the snippet's `integrity` attribute (`sha384-…`).
    integrity: String,
    bytes: usize,
    gzip_bytes: usize,
}

/// The served SDK files with their versioned paths and SRI hashes (public: they are too).
#[utoipa::path(get, path = "/sdk/manifest.json", tag = "sdk",
    description = "`{\"version\",\"files\":[{\"name\",\"path\",\"integrity\",\"bytes\",\"gzip_bytes\"}]}`: what the ingest settings page puts in its copy-paste snippet.",
    responses((status = 200, body = SdkManifest)))]
async fn sdk_manifest() -> Response {
    let files = sdk_files()
        .iter()
        .map(|file| SdkManifestFile {
            name: file.name,
            path: format!("/sdk/{SDK_VERSION}/{}", file.name),
            integrity: file.integrity.clone(),
            bytes: file.plain.len(),
            gzip_bytes: file.gzipped.len(),
        })
        .collect();
    let manifest = SdkManifest {
        version: SDK_VERSION,
        files,
    };
    let mut response = axum::Json(manifest).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    open_to_every_origin(headers);
    response
}

/// The `/sdk` routes, documented in the OpenAPI document.
pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    OpenApiRouter::new()
        .routes(routes!(sdk_manifest))
        .routes(routes!(latest_sdk_file))
        .routes(routes!(versioned_sdk_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `web/sdk/build`'s transformation, done again: the module up to its export lines, wrapped.
    fn iife_of(module: &str) -> String {
        let body_end = module
            .find("// ES module exports:")
            .expect("the export marker");
        format!(
            "(() => {{\n{}window.Lookout = Lookout;\n}})();\n",
            &module[..body_end]
        )
    }

    fn text(name: &str) -> String {
        String::from_utf8(SdkFiles::get(name).expect(name).data.into_owned()).expect("utf-8")
    }

    #[test]
    fn the_iife_is_the_module_wrapped_by_the_build_script() {
        let module = text("lookout.js");
        assert!(
            text("lookout.iife.js") == iife_of(&module),
            "web/sdk/lookout.iife.js is stale: run web/sdk/build"
        );
    }

    #[test]
    fn the_sdk_package_and_module_carry_the_binary_version() {
        let package = include_str!("../../web/sdk/package.json");
        let package: serde_json::Value = serde_json::from_str(package).expect("package.json");
        assert_eq!(package["version"], SDK_VERSION);
        let declared = format!("const VERSION = \"{SDK_VERSION}\";");
        assert!(text("lookout.js").contains(&declared), "{declared}");
    }

    #[test]
    fn the_npm_package_packs_exactly_the_served_files() {
        let package = include_str!("../../web/sdk/package.json");
        let package: serde_json::Value = serde_json::from_str(package).expect("package.json");
        let packed: Vec<&str> = package["files"]
            .as_array()
            .expect("files")
            .iter()
            .filter_map(|file| file.as_str())
            .filter(|file| file.ends_with(".js"))
            .collect();
        assert_eq!(packed, FILE_NAMES);
        let entries = package["exports"].as_object().expect("exports");
        for (name, target) in entries {
            let target = target.as_str().expect("a path").trim_start_matches("./");
            let known = FILE_NAMES.contains(&target) || target == "package.json";
            assert!(known, "export {name} names {target}");
        }
        assert_eq!(package["module"], "./lookout.js");
    }

    #[test]
    fn both_files_are_prepared_with_a_sha384_integrity() {
        let files = sdk_files();
        assert_eq!(files.len(), FILE_NAMES.len());
        for file in files {
            assert!(file.integrity.starts_with("sha384-"), "{}", file.integrity);
            assert!(file.gzipped.len() < file.plain.len());
        }
    }
}
