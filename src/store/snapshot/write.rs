//! Writing a backup: the snapshot (`take`, inside one read transaction) and the file (`pack`).
//!
//! Invariants: `pack` writes only to the path it is given and fsyncs it before returning; it
//! returns the manifest only after the finished file passed the same verification a restore
//! runs; the snapshot's copy is deleted once packed, so a work dir never holds more than the
//! copy plus the file being verified.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use redb::{ReadTransaction, ReadableDatabase};
use sha2::{Digest, Sha256};

use super::copy::{self, Counts, store_error};
use super::format::{self, Manifest, PayloadInfo};
use super::{Phase, Progress, ProgressFn, SNAPSHOT_FILE, SnapshotError};
use crate::clock::Clock;
use crate::store::migrations;

/// zstd level 3 (zstd's default): most of the ratio of higher levels at several times their
/// speed; see docs/benchmarks.md.
const ZSTD_LEVEL: i32 = 3;
const CHUNK: usize = 1024 * 1024;

/// A consistent copy of the database, ready to be packed.
#[derive(Debug)]
pub struct Snapshot {
    path: PathBuf,
    counts: Counts,
    schema_version: u32,
    created_at: String,
}

impl Snapshot {
    pub fn records(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The copy's file and its rows per table.
    #[cfg(test)]
    pub fn copy(&self) -> (&Path, &Counts) {
        (&self.path, &self.counts)
    }
}

/// Copies every table seen by `txn` into `work_dir` and checks the copy.
pub fn take(
    txn: &ReadTransaction,
    work_dir: &Path,
    progress: ProgressFn<'_>,
) -> Result<Snapshot, SnapshotError> {
    let created_at = Clock::system().now().to_rfc3339();
    let schema_version = migrations::schema_version(txn)?;
    if schema_version > migrations::CURRENT_VERSION {
        return Err(SnapshotError::NewerSchema {
            found: schema_version,
            supported: migrations::CURRENT_VERSION,
        });
    }
    let counts = copy::count_rows(txn)?;
    let path = work_dir.join(SNAPSHOT_FILE);
    remove_if_present(&path)?;
    copy::copy_into(txn, &counts, &path, progress)?;
    Ok(Snapshot {
        path,
        counts,
        schema_version,
        created_at,
    })
}

/// Takes a snapshot of the database file at `database` (no server running: the caller holds
/// the data-dir lock). Opens it read-only; only a file left unrepaired by a crash is opened
/// for writing, which lets redb repair it first.
pub fn take_from_file(
    database: &Path,
    work_dir: &Path,
    progress: ProgressFn<'_>,
) -> Result<Snapshot, SnapshotError> {
    if !database.is_file() {
        return Err(SnapshotError::NoDatabase(database.to_path_buf()));
    }
    // The event records in segment files are read through them, and copied whole.
    let segments = crate::store::segments::Segments::reader(database);
    crate::store::segments::scoped(&segments, || open_and_take(database, work_dir, progress))
}

fn open_and_take(
    database: &Path,
    work_dir: &Path,
    progress: ProgressFn<'_>,
) -> Result<Snapshot, SnapshotError> {
    match redb::ReadOnlyDatabase::open(database) {
        Ok(opened) => take(
            &opened.begin_read().map_err(store_error)?,
            work_dir,
            progress,
        ),
        Err(redb::DatabaseError::RepairAborted) => {
            let opened = redb::Database::open(database).map_err(store_error)?;
            take(
                &opened.begin_read().map_err(store_error)?,
                work_dir,
                progress,
            )
        }
        Err(err) => Err(store_error(err)),
    }
}

/// Packs `snapshot` into a backup file at `out` (created with mode 0600: it holds password
/// hashes), fsyncs it, deletes the snapshot's copy and verifies the file, using `work_dir` to
/// unpack it. Returns the manifest written.
pub fn pack(
    snapshot: Snapshot,
    out: &Path,
    work_dir: &Path,
    progress: ProgressFn<'_>,
) -> Result<Manifest, SnapshotError> {
    let manifest = write_file(&snapshot, out, progress)?;
    remove_if_present(&snapshot.path)?;
    let verified = super::verify(out, work_dir, progress)?;
    if verified != manifest {
        return Err(SnapshotError::Check(
            "the written file reads back with a different manifest".into(),
        ));
    }
    Ok(manifest)
}

fn write_file(
    snapshot: &Snapshot,
    out: &Path,
    progress: ProgressFn<'_>,
) -> Result<Manifest, SnapshotError> {
    let io_out = |what| SnapshotError::io(what, out);
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(out)
        .map_err(io_out("cannot create"))?;
    let mut writer = HashingWriter::new(BufWriter::with_capacity(CHUNK, file));
    writer
        .write_all(&format::header())
        .map_err(io_out("cannot write"))?;
    writer.start_section();

    let mut source =
        File::open(&snapshot.path).map_err(SnapshotError::io("cannot read", &snapshot.path))?;
    let database_length = source
        .metadata()
        .map_err(SnapshotError::io("cannot read", &snapshot.path))?
        .len();
    let mut encoder = zstd::stream::write::Encoder::new(&mut writer, ZSTD_LEVEL)
        .map_err(io_out("cannot compress into"))?;
    // zstd's own frame checksum catches a bad decompression even before our SHA-256 is compared.
    encoder
        .include_checksum(true)
        .map_err(io_out("cannot compress into"))?;
    encoder
        .set_pledged_src_size(Some(database_length))
        .map_err(io_out("cannot compress into"))?;
    let mut buffer = vec![0u8; CHUNK];
    let mut done = 0u64;
    loop {
        let read = source
            .read(&mut buffer)
            .map_err(SnapshotError::io("cannot read", &snapshot.path))?;
        if read == 0 {
            break;
        }
        encoder
            .write_all(&buffer[..read])
            .map_err(io_out("cannot write"))?;
        done += read as u64;
        progress(Progress {
            phase: Phase::Compressing,
            done,
            total: database_length,
        })?;
    }
    encoder.finish().map_err(io_out("cannot write"))?;
    let (payload_len, payload_sha256) = writer.end_section();

    let manifest = Manifest {
        format_version: format::FORMAT_VERSION,
        product: "lookout".into(),
        product_version: env!("CARGO_PKG_VERSION").into(),
        created_at: snapshot.created_at.clone(),
        schema_version: snapshot.schema_version,
        tables: snapshot.counts.clone(),
        records: snapshot.records(),
        payload: PayloadInfo {
            compression: "zstd".into(),
            length: payload_len,
            sha256: payload_sha256,
            database_length,
        },
    };
    let manifest_bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|err| SnapshotError::Check(format!("cannot encode the manifest: {err}")))?;
    writer
        .write_all(&manifest_bytes)
        .map_err(io_out("cannot write"))?;
    writer
        .write_all(&format::footer_prefix(
            payload_len,
            manifest_bytes.len() as u64,
        ))
        .map_err(io_out("cannot write"))?;
    let (inner, whole) = writer.finish();
    let mut inner = inner;
    inner.write_all(&whole).map_err(io_out("cannot write"))?;
    let file = inner
        .into_inner()
        .map_err(|err| io_out("cannot write")(err.into_error()))?;
    file.sync_all().map_err(io_out("cannot fsync"))?;
    Ok(manifest)
}

/// Passes writes through while hashing all of them, and separately one section of them.
struct HashingWriter<W: Write> {
    inner: W,
    whole: Sha256,
    section: Sha256,
    written: u64,
    section_start: u64,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            whole: Sha256::new(),
            section: Sha256::new(),
            written: 0,
            section_start: 0,
        }
    }

    fn start_section(&mut self) {
        self.section = Sha256::new();
        self.section_start = self.written;
    }

    /// The length and lowercase hex SHA-256 of what was written since `start_section`.
    fn end_section(&mut self) -> (u64, String) {
        let digest = std::mem::take(&mut self.section).finalize();
        (self.written - self.section_start, hex::encode(digest))
    }

    fn finish(self) -> (W, [u8; 32]) {
        (self.inner, self.whole.finalize().into())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.whole.update(&buf[..written]);
        self.section.update(&buf[..written]);
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn remove_if_present(path: &Path) -> Result<(), SnapshotError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(SnapshotError::io("cannot remove", path)(err)),
    }
}
