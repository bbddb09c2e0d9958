//! The endpoints `sentry-cli sourcemaps upload` calls (`--url` this server, `--auth-token` a
//! member's API key; `--org` and `--project` are any names): the chunk-upload options, the
//! chunk upload, and the assembly of an artifact bundle, whose source maps go to `errors`
//! through its one put path (`errors::put_sourcemap`), found by debug id and, when the upload
//! names a release, by release and minified file.
//!
//! Invariants: the declared size, then the API key of a member or above (401, 403), then the
//! body under its cap: nothing of an unauthenticated request is read or kept. Chunks are
//! checked against their SHA-1 names and kept in `Artifacts` within its per-organisation
//! bounds; a bundle is assembled only from chunks of its own organisation, checked against its
//! checksum, read within `bundle`'s bounds, and its maps checked as `POST /ingest/sourcemaps`
//! checks an upload (`ingest::api_sourcemaps::prepare`); a bundle with a refused map stores
//! nothing and answers `state: "error"` with the reason, which the CLI prints.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Path, Request, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::CompatError;
use super::artifacts::{self, Artifacts, Outcome};
use super::bundle;
use crate::accounts::model::OrgId;
use crate::auth::{Auth, Member};
use crate::http::extract::read_body;
use crate::http::problems;
use crate::http::{ApiError, ErrorCode};
use crate::ingest::Ingest;
use crate::ingest::api_sourcemaps::{MapUpload, prepare};
use crate::ingest::body::{self, Encoding};

/// The largest assemble request (its chunk list).
const MAX_ASSEMBLE_BYTES: usize = 64 << 10;

/// What the CLI reads before it uploads (Sentry's field names).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChunkUploadOptions {
    /// Where chunks go: this route, relative, so the CLI sends its token with them.
    pub url: String,
    pub chunk_size: usize,
    pub chunks_per_request: usize,
    pub max_file_size: usize,
    pub max_request_size: usize,
    pub concurrency: u8,
    pub hash_algorithm: &'static str,
    pub compression: Vec<&'static str>,
    pub accept: Vec<&'static str>,
}

/// `sentry-cli`'s request to assemble a bundle from its chunks.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssembleRequest {
    /// The SHA-1 of the whole bundle.
    pub checksum: String,
    /// The SHA-1 of each chunk, in order.
    pub chunks: Vec<String>,
    /// The `--release`, when given: the maps are also found by release and minified file.
    #[serde(default)]
    pub version: Option<String>,
}

/// The state of an assembly: `not_found` (chunks missing), `ok` or `error`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssembleResponse {
    pub state: &'static str,
    pub missing_chunks: Vec<String>,
    pub detail: Option<String>,
}

/// Size declared, then the member's API key; the caller's organisation.
async fn uploader(
    auth: &Auth,
    request: Request,
    limit: usize,
) -> Result<(OrgId, axum::http::request::Parts, Body), ApiError> {
    let (mut parts, body) = request.into_parts();
    body::check_declared_length(&parts.headers, limit)?;
    let Member(caller) = Member::from_request_parts(&mut parts, auth).await?;
    Ok((caller.org_id, parts, body))
}

/// Chunk-upload options for `sentry-cli`: chunk size, limits, SHA-1, gzip, artifact bundles.
#[utoipa::path(get, path = "/api/0/organizations/{org}/chunk-upload/", tag = "compat",
    description = "For `sentry-cli sourcemaps upload` with a member's API key as `--auth-token`; `{org}` is any name. See docs/compat.md.",
    params(("org" = String, Path, description = "Any organisation name; the API key decides")),
    responses((status = 200, body = ChunkUploadOptions), problems::Unauthenticated, problems::Forbidden))]
pub async fn chunk_upload_options(
    Member(caller): Member,
    Path(_org): Path<String>,
) -> Json<ChunkUploadOptions> {
    Json(ChunkUploadOptions {
        url: format!("/api/0/organizations/{}/chunk-upload/", caller.org_id),
        chunk_size: artifacts::CHUNK_SIZE,
        chunks_per_request: artifacts::CHUNKS_PER_REQUEST,
        max_file_size: artifacts::MAX_PENDING_BYTES,
        max_request_size: artifacts::MAX_REQUEST_BYTES,
        concurrency: 1,
        hash_algorithm: "sha1",
        compression: vec!["gzip"],
        // `_v2`: sentry-cli 2.x then asks which chunks are missing first, as 3.x always does.
        accept: vec!["artifact_bundles", "artifact_bundles_v2"],
    })
}

/// Chunks of a bundle, as `multipart/form-data` fields `file` or `file_gzip`, each named by
/// the SHA-1 of its (uncompressed) bytes.
#[utoipa::path(post, path = "/api/0/organizations/{org}/chunk-upload/", tag = "compat",
    description = "At most 16 chunks of 1 MiB per request; per organisation at most 64 chunks and 32 MiB wait for assembly, for 10 minutes. See docs/compat.md.",
    params(("org" = String, Path, description = "Any organisation name; the API key decides")),
    request_body(content = String, content_type = "multipart/form-data"),
    responses((status = 200, description = "Kept"), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge, problems::UnsupportedMediaType))]
pub async fn upload_chunks(
    State(ingest): State<Ingest>,
    State(auth): State<Auth>,
    State(artifacts): State<Artifacts>,
    request: Request,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (org, parts, body) = uploader(&auth, request, artifacts::MAX_REQUEST_BYTES).await?;
    let content_type = body::content_type(&parts.headers);
    let boundary = multer::parse_boundary(&content_type).map_err(|_| {
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send multipart/form-data with a boundary",
        )
    })?;
    let raw = read_body(body, ingest.body_rules(artifacts::MAX_REQUEST_BYTES)).await?;
    let fields = chunk_fields(raw, boundary).await?;
    let chunks = ingest.cpu_work(move || checked_chunks(fields)).await??;
    artifacts.put(&org, ingest.clock().now(), chunks)?;
    Ok(Json(serde_json::json!({})))
}

/// The fields of a chunk upload: (name, gzip-compressed, bytes); at most
/// `CHUNKS_PER_REQUEST`.
async fn chunk_fields(
    raw: Bytes,
    boundary: String,
) -> Result<Vec<(String, bool, Bytes)>, ApiError> {
    let mut form = multer::Multipart::new(Body::from(raw).into_data_stream(), boundary);
    let broken = |_| CompatError::Invalid("the multipart body is malformed".into());
    let mut fields = Vec::new();
    while let Some(field) = form.next_field().await.map_err(broken)? {
        let gzip = match field.name() {
            Some("file_gzip") => true,
            Some("file") => false,
            _ => continue,
        };
        if fields.len() == artifacts::CHUNKS_PER_REQUEST {
            return Err(CompatError::TooManyChunks(artifacts::CHUNKS_PER_REQUEST).into());
        }
        let name = field.file_name().unwrap_or("").to_string();
        let bytes = field.bytes().await.map_err(broken)?;
        fields.push((name, gzip, bytes));
    }
    Ok(fields)
}

/// Each chunk inflated (at most `CHUNK_SIZE`) and checked against its SHA-1 name.
fn checked_chunks(fields: Vec<(String, bool, Bytes)>) -> Result<Vec<(String, Bytes)>, ApiError> {
    fields
        .into_iter()
        .map(|(name, gzip, bytes)| {
            if !artifacts::is_sha1(&name) {
                return Err(CompatError::Invalid(
                    "each chunk must be named by the SHA-1 of its bytes".into(),
                )
                .into());
            }
            let chunk = match gzip {
                true => Bytes::from(
                    body::decode(&bytes, Encoding::Gzip, artifacts::CHUNK_SIZE)?.into_owned(),
                ),
                false if bytes.len() > artifacts::CHUNK_SIZE => {
                    return Err(body::too_large(artifacts::CHUNK_SIZE));
                }
                false => bytes,
            };
            if artifacts::sha1_hex(&chunk) != name {
                return Err(CompatError::Invalid(format!(
                    "the chunk {name} does not have that SHA-1"
                ))
                .into());
            }
            Ok((name, chunk))
        })
        .collect()
}

/// Assembles an artifact bundle from its chunks and stores its source maps.
#[utoipa::path(post, path = "/api/0/organizations/{org}/artifactbundle/assemble/", tag = "compat",
    description = "`{\"checksum\",\"chunks\":[…],\"version\"?}`: `not_found` with `missingChunks` until every chunk is here, then `ok`, or `error` with a `detail`. See docs/compat.md.",
    params(("org" = String, Path, description = "Any organisation name; the API key decides")),
    request_body(content = AssembleRequest, content_type = "application/json"),
    responses((status = 200, body = AssembleResponse), problems::Invalid, problems::Unauthenticated,
        problems::Forbidden, problems::TooLarge))]
pub async fn assemble_bundle(
    State(ingest): State<Ingest>,
    State(auth): State<Auth>,
    State(artifacts): State<Artifacts>,
    request: Request,
) -> Result<Json<AssembleResponse>, ApiError> {
    let (org, _parts, body) = uploader(&auth, request, MAX_ASSEMBLE_BYTES).await?;
    let raw = read_body(body, ingest.body_rules(MAX_ASSEMBLE_BYTES)).await?;
    let request = assemble_request(&raw)?;
    let now = ingest.clock().now();
    if let Some(outcome) = artifacts.outcome(&org, now, &request.checksum) {
        return Ok(Json(answer(outcome)));
    }
    let missing = artifacts.missing(&org, now, &request.chunks);
    let bundle = match missing.is_empty() {
        true => artifacts.take_bundle(&org, now, &request.chunks),
        false => None,
    };
    let Some(bundle) = bundle else {
        return Ok(Json(AssembleResponse {
            state: "not_found",
            missing_chunks: missing,
            detail: None,
        }));
    };
    let outcome = store_bundle(&ingest, &org, bundle, &request).await?;
    artifacts.remember(&org, now, request.checksum, outcome.clone());
    Ok(Json(answer(outcome)))
}

fn assemble_request(raw: &[u8]) -> Result<AssembleRequest, ApiError> {
    let request: AssembleRequest = serde_json::from_slice(raw).map_err(|_| {
        CompatError::Invalid("the body must be {\"checksum\",\"chunks\":[…]}".into())
    })?;
    if request.chunks.len() > artifacts::MAX_PENDING_CHUNKS {
        return Err(CompatError::TooManyChunks(artifacts::MAX_PENDING_CHUNKS).into());
    }
    if !artifacts::is_sha1(&request.checksum)
        || !request.chunks.iter().all(|c| artifacts::is_sha1(c))
    {
        return Err(CompatError::Invalid("checksums must be SHA-1 in lowercase hex".into()).into());
    }
    Ok(request)
}

fn answer(outcome: Outcome) -> AssembleResponse {
    let (state, detail) = match outcome {
        Outcome::Stored => ("ok", None),
        Outcome::Failed(detail) => ("error", Some(detail)),
    };
    AssembleResponse {
        state,
        missing_chunks: Vec::new(),
        detail,
    }
}

/// Checks the bundle and stores its maps in one write; a refusal is an outcome, a failing
/// store an error.
async fn store_bundle(
    ingest: &Ingest,
    org: &OrgId,
    bundle: Vec<u8>,
    request: &AssembleRequest,
) -> Result<Outcome, ApiError> {
    let checksum = request.checksum.clone();
    let release = request
        .version
        .clone()
        .filter(|version| !version.is_empty());
    let max_map = ingest.settings().max_sourcemap_bytes;
    let scrub_pii = ingest.settings().scrub_pii;
    let now = ingest.clock().now();
    let prepared = ingest
        .cpu_work(move || {
            if artifacts::sha1_hex(&bundle) != checksum {
                return Err("the chunks do not make the bundle's checksum".to_string());
            }
            let maps = bundle::read_bundle(&bundle, max_map).map_err(|error| error.0)?;
            if maps.is_empty() {
                return Err("the bundle holds no source map".to_string());
            }
            maps.into_iter()
                .map(|found| {
                    let upload = MapUpload {
                        release: release.clone(),
                        file: found.file.clone(),
                        map: found.map,
                        debug_id: found.debug_id,
                    };
                    prepare(upload, scrub_pii, now)
                        .map_err(|error| format!("{}: {}", found.file, error.detail))
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .await?;
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(detail) => return Ok(Outcome::Failed(detail)),
    };
    let org = org.clone();
    ingest
        .store()
        .write(move |txn| {
            for (record, compressed) in &prepared {
                crate::errors::put_sourcemap(txn, &org, record, compressed)?;
            }
            Ok::<_, crate::store::StoreError>(())
        })
        .await
        .map_err(ApiError::from)?;
    Ok(Outcome::Stored)
}
