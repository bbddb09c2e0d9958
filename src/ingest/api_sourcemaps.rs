//! Source map uploads (`POST /ingest/sourcemaps`): the route, its credential and limits, and
//! checking, scrubbing and compressing a map before `errors` stores it (`errors::put_sourcemap`,
//! one map per release and minified file).
//!
//! Invariants: the upload has its own size limit (`WEB_INGEST_MAX_SOURCEMAP_BYTES`), applied to
//! the declared `Content-Length` before anything else, while the body streams in and again
//! after gzip decoding; the credential is checked before a byte of the body is read; it is authorised by an ingest key
//! or by the bearer API key of a member (or above) of an organisation, whose data it then is.
//! A map is checked to be a version 3 source map without building it in memory (a 16 MiB map of
//! tiny values would otherwise cost far more than its size), and stored zstd-compressed.
//! Uploading for the same release and file again replaces the map. Maps are not scrubbed (that
//! would corrupt them); the `file` URL and the `release` are, exactly as frame URLs and event
//! releases are, so the two still match.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::body::{self, MediaType};
use super::fields::valid_name;
use super::{Ingest, gate, scrub};
use crate::accounts::model::OrgId;
use crate::auth::{Auth, Member};
use crate::clock::Timestamp;
use crate::errors::{SourceMap, SourceMapId};
use crate::http::extract::read_body;
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};

/// Longest `file` (a URL or path).
const MAX_FILE_LEN: usize = 2048;

#[derive(Debug, Serialize, ToSchema)]
pub struct SourceMapCreated {
    pub id: String,
}

/// Documentation of the JSON form of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct SourceMapUpload {
    release: String,
    /// The minified file's URL or path.
    file: String,
    /// The source map: a JSON object, or a string holding one.
    #[schema(value_type = Object)]
    sourcemap: String,
}

/// Stores a source map for a release and minified file.
#[utoipa::path(post, path = "/ingest/sourcemaps", tag = "ingest",
    description = "`multipart/form-data` (fields `release`, `file`, `sourcemap`) or JSON. Authorised by an ingest key or a member's API key as `Authorization: Bearer`.",
    request_body(content = SourceMapUpload, content_type = "application/json"),
    responses((status = 201, body = SourceMapCreated), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge, problems::UnsupportedMediaType))]
pub async fn post_sourcemap(
    State(ingest): State<Ingest>,
    State(auth): State<Auth>,
    request: Request,
) -> Result<(StatusCode, Json<SourceMapCreated>), ApiError> {
    let (mut parts, body) = request.into_parts();
    let limit = ingest.settings().max_sourcemap_bytes;
    // Size declared, credential, then the body under its cap: up to 16 MiB is buffered only for
    // a sender who may upload.
    body::check_declared_length(&parts.headers, limit)?;
    let org = uploader_org(&ingest, &auth, &mut parts).await?;
    let raw = read_body(body, ingest.body_rules(limit)).await?;
    let encoding = body::encoding(&parts.headers)?;
    let media = body::media_type(&parts.headers, true)?;
    let content_type = body::content_type(&parts.headers);
    let decoded =
        blocking(move || body::decode(&raw, encoding, limit).map(|d| d.into_owned())).await?;
    let upload = match media {
        MediaType::Json => blocking(move || parse_json_upload(&decoded)).await?,
        MediaType::Multipart => parse_multipart(decoded, &content_type).await?,
    };
    let scrub_pii = ingest.settings().scrub_pii;
    let now = ingest.clock().now();
    let (record, compressed) = blocking(move || prepare(upload, scrub_pii, now)).await?;
    let id = record.id.to_string();
    ingest
        .store()
        .write(move |txn| crate::errors::put_sourcemap(txn, &org, &record, &compressed))
        .await
        .map_err(ApiError::from)?;
    Ok((StatusCode::CREATED, Json(SourceMapCreated { id })))
}

/// The organisation an upload is for: the bearer API key's (a member or above), else the ingest
/// key's. 401 (or 403 for too low a role) without a valid one.
async fn uploader_org(ingest: &Ingest, auth: &Auth, parts: &mut Parts) -> Result<OrgId, ApiError> {
    let by_member =
        gate::presented_key(parts).is_none() && parts.headers.contains_key(header::AUTHORIZATION);
    if by_member {
        let Member(caller) = Member::from_request_parts(parts, auth).await?;
        return Ok(caller.org_id);
    }
    gate::require_key(ingest, parts)?;
    Ok(ingest.org().await?)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ApiError::internal)?
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload, detail)
}

/// A source map to store, as an upload or an artifact bundle (`compat`) names it: a release
/// and minified file, a debug id, or both, and the map's text.
pub struct MapUpload {
    pub release: Option<String>,
    /// The minified file's URL or path.
    pub file: String,
    pub map: String,
    /// A debug id sent beside the map (an artifact bundle's `debug-id` header); else the map's
    /// own `debug_id`/`debugId` is used.
    pub debug_id: Option<String>,
}

#[derive(Deserialize)]
struct JsonUpload<'a> {
    release: String,
    file: String,
    #[serde(borrow)]
    sourcemap: &'a RawValue,
}

fn parse_json_upload(bytes: &[u8]) -> Result<MapUpload, ApiError> {
    let upload: JsonUpload<'_> = serde_json::from_slice(bytes).map_err(|error| {
        invalid(format!(
            "the body must be {{\"release\",\"file\",\"sourcemap\"}} (line {} column {})",
            error.line(),
            error.column()
        ))
    })?;
    let text = upload.sourcemap.get();
    // The map may come as a JSON object or as a string holding one.
    let map = if text.starts_with('"') {
        serde_json::from_str::<String>(text)
            .map_err(|_| invalid("sourcemap is not a valid string"))?
    } else {
        text.to_string()
    };
    Ok(MapUpload {
        release: Some(upload.release),
        file: upload.file,
        map,
        debug_id: None,
    })
}

async fn parse_multipart(bytes: Vec<u8>, content_type: &str) -> Result<MapUpload, ApiError> {
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| invalid("multipart/form-data needs a boundary"))?;
    let mut form = multer::Multipart::new(Body::from(bytes).into_data_stream(), boundary);
    let (mut release, mut file, mut map) = (None, None, None);
    let broken = |_| invalid("the multipart body is malformed");
    while let Some(field) = form.next_field().await.map_err(broken)? {
        let slot = match field.name() {
            Some("release") => &mut release,
            Some("file") => &mut file,
            Some("sourcemap") => &mut map,
            _ => continue,
        };
        let bytes = field.bytes().await.map_err(broken)?;
        let text = String::from_utf8(bytes.to_vec())
            .map_err(|_| invalid("multipart fields must be UTF-8 text"))?;
        slot.get_or_insert(text);
    }
    let missing = |name: &str| invalid(format!("the multipart field {name} is missing"));
    Ok(MapUpload {
        release: Some(release.ok_or_else(|| missing("release"))?),
        file: file.ok_or_else(|| missing("file"))?,
        map: map.ok_or_else(|| missing("sourcemap"))?,
        debug_id: None,
    })
}

/// The parts of a source map that are checked; everything else is skipped unread.
#[derive(Deserialize)]
struct MapHead {
    version: u32,
    #[serde(default)]
    mappings: Option<IgnoredAny>,
    #[serde(default)]
    sections: Option<IgnoredAny>,
    /// Written by `sentry-cli sourcemaps inject` (`debug_id`) and by bundlers (`debugId`).
    #[serde(default)]
    debug_id: Option<String>,
    #[serde(default, rename = "debugId")]
    debug_id_camel: Option<String>,
}

/// Checks an upload and compresses its map: a release (when given) that is a valid name, a
/// file, a version 3 map, and a debug id that is a UUID when one is given; a map must be
/// findable by its release or its debug id.
pub fn prepare(
    upload: MapUpload,
    scrub_pii: bool,
    now: Timestamp,
) -> Result<(SourceMap, Vec<u8>), ApiError> {
    if let Some(release) = &upload.release {
        valid_name("release", release).map_err(invalid)?;
    }
    let file_ok = !upload.file.is_empty()
        && upload.file.len() <= MAX_FILE_LEN
        && !upload.file.chars().any(char::is_control);
    if !file_ok {
        return Err(invalid(format!(
            "file must be 1 to {MAX_FILE_LEN} bytes without control characters"
        )));
    }
    let head: MapHead = serde_json::from_str(&upload.map)
        .map_err(|_| invalid("sourcemap is not a JSON source map"))?;
    if head.version != 3 || (head.mappings.is_none() && head.sections.is_none()) {
        return Err(invalid(
            "sourcemap must be a version 3 source map with mappings or sections",
        ));
    }
    let debug_id = match upload.debug_id.or(head.debug_id).or(head.debug_id_camel) {
        Some(sent) => Some(
            crate::errors::debug_id(&sent).ok_or_else(|| invalid("the debug id must be a UUID"))?,
        ),
        None => None,
    };
    if upload.release.is_none() && debug_id.is_none() {
        return Err(invalid("a source map needs a release or a debug id"));
    }
    let compressed =
        zstd::stream::encode_all(upload.map.as_bytes(), 3).map_err(ApiError::internal)?;
    // Scrubbed as the events' `release` and frame files are, so the two still match.
    let release = upload.release.unwrap_or_default();
    let (release, file) = match scrub_pii {
        true => (
            scrub::scrub_release(&release).into_owned(),
            scrub::scrub_text(&upload.file).into_owned(),
        ),
        false => (release, upload.file),
    };
    let record = SourceMap {
        id: SourceMapId::generate(),
        release,
        file,
        size: upload.map.len() as u64,
        uploaded_at: now,
        debug_id,
    };
    Ok((record, compressed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp(1_795_348_800_000);

    fn upload(map: &str) -> MapUpload {
        MapUpload {
            release: Some("1.0".into()),
            file: "https://cdn.test/app.js?token=abc".into(),
            map: map.into(),
            debug_id: None,
        }
    }

    #[test]
    fn maps_are_checked_scrubbed_and_compressed() {
        let map = r#"{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA"}"#;
        let (record, compressed) = prepare(upload(map), true, NOW).unwrap();
        assert_eq!(record.file, "https://cdn.test/app.js?token=[redacted]");
        assert_eq!(
            zstd::stream::decode_all(&compressed[..]).unwrap(),
            map.as_bytes()
        );

        for bad in [
            "{}",
            "[]",
            r#"{"version":2,"mappings":""}"#,
            r#"{"version":3}"#,
            "nope",
        ] {
            assert!(prepare(upload(bad), true, NOW).is_err(), "{bad}");
        }
        let with_id =
            r#"{"version":3,"mappings":"","debugId":"68393A25-88EE-5071-AD32-702DF8B402AD"}"#;
        let (record, _) = prepare(upload(with_id), true, NOW).unwrap();
        assert_eq!(
            record.debug_id.as_deref(),
            Some("68393a25-88ee-5071-ad32-702df8b402ad")
        );
        let bad_id = r#"{"version":3,"mappings":"","debug_id":"not-a-uuid"}"#;
        assert!(prepare(upload(bad_id), true, NOW).is_err());
        let mut nameless = upload(map);
        nameless.release = None;
        assert!(
            prepare(nameless, true, NOW).is_err(),
            "neither release nor id"
        );
        let json =
            br#"{"release":"1.0","file":"a.js","sourcemap":"{\"version\":3,\"mappings\":\"\"}"}"#;
        assert_eq!(
            parse_json_upload(json).unwrap().map,
            r#"{"version":3,"mappings":""}"#
        );
        let object = br#"{"release":"1.0","file":"a.js","sourcemap":{"version":3,"mappings":""}}"#;
        assert_eq!(
            parse_json_upload(object).unwrap().map,
            r#"{"version":3,"mappings":""}"#
        );
    }
}
