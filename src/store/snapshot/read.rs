//! Reading a backup file: `inspect` checks its structure and hashes, `verify` also unpacks the
//! database and checks it row by row against the manifest.
//!
//! Invariants: checks run from the cheapest and most fundamental outwards (signature and format
//! version, footer, whole-file SHA-256, manifest, payload SHA-256, schema, then the unpacked
//! database), and nothing read from the file is used before the check that covers it passed;
//! unpacking never writes more bytes than the manifest announced (a crafted payload cannot fill
//! the disk); bad input yields a `SnapshotError`, never a panic.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use redb::ReadableDatabase;
use sha2::{Digest, Sha256};

use super::copy::{self, Counts};
use super::format::{self, FOOTER_LEN, HEADER_LEN, Layout, Manifest};
use super::{Phase, Progress, ProgressFn, SnapshotError};
use crate::store::migrations;

const CHUNK: usize = 1024 * 1024;

/// Checks a backup file's structure, hashes and manifest without unpacking it.
pub fn inspect(path: &Path, progress: ProgressFn<'_>) -> Result<Manifest, SnapshotError> {
    let (manifest, _) = inspect_layout(path, progress)?;
    Ok(manifest)
}

/// Checks a backup file completely: `inspect`, then unpacks the database into `work_dir`,
/// opens it read-only and compares its tables, row counts and schema with the manifest. The
/// unpacked copy is removed before returning.
pub fn verify(
    path: &Path,
    work_dir: &Path,
    progress: ProgressFn<'_>,
) -> Result<Manifest, SnapshotError> {
    let (manifest, layout) = inspect_layout(path, progress)?;
    let unpacked = work_dir.join("verify.redb");
    let _ = std::fs::remove_file(&unpacked);
    let result = unpack(path, &layout, &manifest, &unpacked, progress)
        .and_then(|()| check_database(&unpacked, &manifest));
    let _ = std::fs::remove_file(&unpacked);
    result.map(|()| manifest)
}

/// `inspect`, also returning where the payload is.
pub(super) fn inspect_layout(
    path: &Path,
    progress: ProgressFn<'_>,
) -> Result<(Manifest, Layout), SnapshotError> {
    let io_path = |what| SnapshotError::io(what, path);
    let mut file = File::open(path).map_err(io_path("cannot open"))?;
    let file_len = file.metadata().map_err(io_path("cannot read"))?.len();

    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    (&mut file)
        .take(HEADER_LEN)
        .read_to_end(&mut header)
        .map_err(io_path("cannot read"))?;
    let format_version = format::parse_header(&header, file_len)?;

    let footer_start = file_len.checked_sub(FOOTER_LEN).ok_or_else(|| {
        SnapshotError::Truncated(format!("only {file_len} bytes, too short to hold a footer"))
    })?;
    let mut footer = vec![0u8; FOOTER_LEN as usize];
    file.seek(SeekFrom::Start(footer_start))
        .and_then(|_| file.read_exact(&mut footer))
        .map_err(io_path("cannot read"))?;
    let layout = format::parse_footer(&footer, file_len)?;

    let payload_sha256 = hash_file(&mut file, &layout, path, progress)?;

    let mut manifest_bytes = vec![0u8; layout.manifest_len as usize];
    file.seek(SeekFrom::Start(layout.manifest_offset()))
        .and_then(|_| file.read_exact(&mut manifest_bytes))
        .map_err(io_path("cannot read"))?;
    let manifest = format::parse_manifest(&manifest_bytes, &layout, format_version)?;
    if manifest.payload.sha256 != payload_sha256 {
        return Err(SnapshotError::Corrupt(
            "the payload's SHA-256 differs from the manifest's".into(),
        ));
    }
    if manifest.schema_version > migrations::CURRENT_VERSION {
        return Err(SnapshotError::NewerSchema {
            found: manifest.schema_version,
            supported: migrations::CURRENT_VERSION,
        });
    }
    Ok((manifest, layout))
}

/// Hashes the file once: the whole-file digest is compared with the footer's; the payload's
/// digest is returned for comparison with the manifest.
fn hash_file(
    file: &mut File,
    layout: &Layout,
    path: &Path,
    progress: ProgressFn<'_>,
) -> Result<String, SnapshotError> {
    let payload = HEADER_LEN..HEADER_LEN + layout.payload_len;
    let total = layout.hashed_len();
    let mut whole = Sha256::new();
    let mut payload_hash = Sha256::new();
    let mut buffer = vec![0u8; CHUNK];
    let mut offset = 0u64;
    file.seek(SeekFrom::Start(0))
        .map_err(SnapshotError::io("cannot read", path))?;
    while offset < total {
        let want = (total - offset).min(CHUNK as u64) as usize;
        file.read_exact(&mut buffer[..want])
            .map_err(SnapshotError::io("cannot read", path))?;
        let chunk = &buffer[..want];
        whole.update(chunk);
        // The part of this chunk that lies inside the payload.
        let start = payload.start.max(offset);
        let end = payload.end.min(offset + want as u64);
        if start < end {
            payload_hash.update(&chunk[(start - offset) as usize..(end - offset) as usize]);
        }
        offset += want as u64;
        progress(Progress {
            phase: Phase::Verifying,
            done: offset,
            total,
        })?;
    }
    let digest: [u8; 32] = whole.finalize().into();
    if digest != layout.sha256 {
        return Err(SnapshotError::Corrupt(
            "checksum mismatch: the file's SHA-256 differs from the one recorded when it was \
             written"
                .into(),
        ));
    }
    Ok(hex::encode(payload_hash.finalize()))
}

/// Decompresses the payload into a new file at `destination` (mode 0600) and fsyncs it.
pub(super) fn unpack(
    path: &Path,
    layout: &Layout,
    manifest: &Manifest,
    destination: &Path,
    progress: ProgressFn<'_>,
) -> Result<(), SnapshotError> {
    let mut file = File::open(path).map_err(SnapshotError::io("cannot open", path))?;
    file.seek(SeekFrom::Start(HEADER_LEN))
        .map_err(SnapshotError::io("cannot read", path))?;
    let payload = BufReader::with_capacity(CHUNK, file.take(layout.payload_len));
    let mut decoder = zstd::stream::read::Decoder::with_buffer(payload)
        .map_err(|err| {
            SnapshotError::Corrupt(format!("the payload cannot be decompressed: {err}"))
        })?
        .single_frame();
    let io_destination = |what| SnapshotError::io(what, destination);
    let mut output = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(destination)
        .map_err(io_destination("cannot create"))?;
    let expected = manifest.payload.database_length;
    let mut buffer = vec![0u8; CHUNK];
    let mut written = 0u64;
    loop {
        let read = decoder.read(&mut buffer).map_err(|err| {
            SnapshotError::Corrupt(format!("the payload does not decompress: {err}"))
        })?;
        if read == 0 {
            break;
        }
        written += read as u64;
        if written > expected {
            return Err(SnapshotError::Corrupt(format!(
                "the payload decompresses to more than the {expected} bytes the manifest announces"
            )));
        }
        output
            .write_all(&buffer[..read])
            .map_err(io_destination("cannot write"))?;
        progress(Progress {
            phase: Phase::Unpacking,
            done: written,
            total: expected,
        })?;
    }
    if written != expected {
        return Err(SnapshotError::Corrupt(format!(
            "the payload decompresses to {written} bytes, the manifest announces {expected}"
        )));
    }
    output.sync_all().map_err(io_destination("cannot fsync"))
}

/// Opens an unpacked database read-only and compares it with the manifest.
pub(super) fn check_database(database: &Path, manifest: &Manifest) -> Result<(), SnapshotError> {
    let unreadable = |err: SnapshotError| {
        SnapshotError::Corrupt(format!("the database inside is unreadable: {err}"))
    };
    let (counts, schema) = read_back(database).map_err(unreadable)?;
    if counts != manifest.tables {
        return Err(SnapshotError::Corrupt(format!(
            "the database inside holds {} rows in {} tables, the manifest {} in {}",
            counts.values().sum::<u64>(),
            counts.len(),
            manifest.records,
            manifest.tables.len()
        )));
    }
    if schema != manifest.schema_version {
        return Err(SnapshotError::Corrupt(format!(
            "the database inside has schema {schema}, the manifest {}",
            manifest.schema_version
        )));
    }
    Ok(())
}

fn read_back(database: &Path) -> Result<(Counts, u32), SnapshotError> {
    let opened = redb::ReadOnlyDatabase::open(database).map_err(copy::store_error)?;
    let txn = opened.begin_read().map_err(copy::store_error)?;
    let counts = copy::count_rows(&txn)?;
    let schema = migrations::schema_version(&txn)?;
    Ok((counts, schema))
}
