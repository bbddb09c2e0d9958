//! `lookout backup --out FILE` and `lookout backup --verify FILE`, and the exit codes of
//! backup and restore failures.
//!
//! Where the snapshot is taken follows `target.rs`: when the data dir is free this process
//! takes its lock and snapshots the database file itself; when `serve` holds it, the server
//! takes the snapshot and streams the finished file over the admin socket.
//!
//! Invariants: bytes are written only to `FILE.partial` (and scratch space only to
//! `FILE.work/`); `FILE.partial` is fsynced and checked (fully when made here, by its hashes
//! when received from a server that fully checked it) before it is renamed to `FILE` and the
//! directory fsynced, so `FILE` is either absent, the previous backup, or a complete backup
//! that verifies. Leftovers of a killed run are removed by the next run for the same `FILE`.

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{ArgGroup, Args};

use super::progress::{ProgressLine, Unit, human_bytes};
use crate::admin::backup as online;
use crate::admin::client::ClientError;
use crate::config::Config;
use crate::store::data_dir::{DATABASE_FILE, DataDir, DataDirError, admin_socket_path};
use crate::store::snapshot::{self, Manifest, SnapshotError};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").required(true).args(["out", "verify"])))]
pub struct BackupArgs {
    /// Write a backup of the data dir to FILE (replacing it only once the new one is complete)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Check FILE completely (hashes, then the database inside) without restoring it
    #[arg(long, value_name = "FILE")]
    verify: Option<PathBuf>,
    /// Print the backup's manifest as JSON on standard output
    #[arg(long)]
    json: bool,
}

/// Exit codes shared by `backup --verify` and `restore` (documented in docs/cli.md).
pub const EXIT_TARGET_NOT_EMPTY: u8 = 3;
pub const EXIT_TRUNCATED: u8 = 4;
pub const EXIT_CORRUPT: u8 = 5;
pub const EXIT_NEWER_FORMAT: u8 = 6;
pub const EXIT_NEWER_SCHEMA: u8 = 7;

/// The exit code for a failed backup, verification or restore.
pub fn exit_code(error: &SnapshotError) -> u8 {
    match error {
        SnapshotError::TargetNotEmpty { .. } | SnapshotError::TargetNotDirectory { .. } => {
            EXIT_TARGET_NOT_EMPTY
        }
        SnapshotError::Truncated(_) => EXIT_TRUNCATED,
        SnapshotError::Corrupt(_) => EXIT_CORRUPT,
        SnapshotError::NewerFormat { .. } => EXIT_NEWER_FORMAT,
        SnapshotError::NewerSchema { .. } => EXIT_NEWER_SCHEMA,
        SnapshotError::DataDir(DataDirError::Locked { .. }) => super::EXIT_LOCKED,
        SnapshotError::DataDir(DataDirError::Io { .. })
        | SnapshotError::UnknownTable(_)
        | SnapshotError::Check(_)
        | SnapshotError::NoDatabase(_)
        | SnapshotError::Io { .. }
        | SnapshotError::Store(_)
        | SnapshotError::Cancelled => 1,
    }
}

pub fn run(config: &Config, args: BackupArgs) -> anyhow::Result<()> {
    super::init_quiet_logging();
    let (manifest, verb, file) = match (args.out, args.verify) {
        (Some(out), None) => (
            write_backup(&config.data_dir, &out)?,
            "backup written to",
            out,
        ),
        (None, Some(file)) => (verify_file(&file)?, "backup verified:", file),
        _ => bail!("give exactly one of --out FILE and --verify FILE"),
    };
    if args.json {
        println!("{}", serde_json::to_string(&manifest)?);
    } else {
        println!("{verb} {}", file.display());
        println!("{}", summary(&manifest));
    }
    Ok(())
}

/// One line describing a backup, for people.
pub(super) fn summary(manifest: &Manifest) -> String {
    format!(
        "{} records in {} tables, schema {}, taken {} by lookout {}; {} compressed from {}",
        manifest.records,
        manifest.tables.len(),
        manifest.schema_version,
        manifest.created_at,
        manifest.product_version,
        human_bytes(manifest.payload.length),
        human_bytes(manifest.payload.database_length),
    )
}

fn verify_file(file: &Path) -> anyhow::Result<Manifest> {
    // Unpack next to the file when possible (it has room for the file, so likely for the
    // database too), else in the temporary directory.
    let parent = parent_dir(file);
    let work = tempfile::Builder::new()
        .prefix(".lookout-verify-")
        .tempdir_in(&parent)
        .or_else(|_| {
            tempfile::Builder::new()
                .prefix(".lookout-verify-")
                .tempdir()
        })
        .context("cannot create a scratch directory to unpack the backup in")?;
    let mut display = ProgressLine::for_stderr();
    let manifest = snapshot::verify(file, work.path(), &mut |progress| {
        display.snapshot(progress);
        Ok(())
    })?;
    Ok(manifest)
}

fn write_backup(data_dir: &Path, out: &Path) -> anyhow::Result<Manifest> {
    if out.is_dir() {
        bail!(
            "{} is a directory; name the backup file to write",
            out.display()
        );
    }
    let partial = with_suffix(out, ".partial");
    let work = with_suffix(out, ".work");
    remove_leftovers(&partial, &work)?;
    let result = write_partial(data_dir, &partial, &work);
    let _ = fs::remove_dir_all(&work);
    let manifest = match result {
        Ok(manifest) => manifest,
        Err(error) => {
            let _ = fs::remove_file(&partial);
            return Err(error);
        }
    };
    fs::rename(&partial, out)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), out.display()))?;
    fs::File::open(parent_dir(out))
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot fsync the directory of {}", out.display()))?;
    Ok(manifest)
}

/// Writes a complete, checked backup at `partial`.
fn write_partial(data_dir: &Path, partial: &Path, work: &Path) -> anyhow::Result<Manifest> {
    let database = data_dir.join(DATABASE_FILE);
    if !database.is_file() {
        return Err(SnapshotError::NoDatabase(database).into());
    }
    let mut display = ProgressLine::for_stderr();
    match DataDir::open(data_dir, "backup") {
        Ok(lock) => {
            fs::create_dir(work).with_context(|| {
                format!("cannot create the scratch directory {}", work.display())
            })?;
            let mut report = |progress| {
                display.snapshot(progress);
                Ok(())
            };
            let snapshot = snapshot::take_from_file(&database, work, &mut report)?;
            // The copy is taken: a server may start on the data dir while the file is packed.
            drop(lock);
            let manifest = snapshot::pack(snapshot, partial, work, &mut report)?;
            Ok(manifest)
        }
        Err(DataDirError::Locked { path, holder }) => {
            fetch_from_server(data_dir, partial, &mut display).map_err(|error| match error {
                FetchError::Client(ClientError::Connect { .. }) => {
                    DataDirError::Locked { path, holder }.into()
                }
                FetchError::Client(other) => anyhow::Error::from(other),
                FetchError::Other(other) => other,
            })
        }
        Err(other) => Err(other.into()),
    }
}

enum FetchError {
    Client(ClientError),
    Other(anyhow::Error),
}

/// Receives a backup from the server holding `data_dir` into `partial` and checks its hashes.
fn fetch_from_server(
    data_dir: &Path,
    partial: &Path,
    display: &mut ProgressLine,
) -> Result<Manifest, FetchError> {
    let other = |error: anyhow::Error| FetchError::Other(error);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(partial)
        .with_context(|| format!("cannot create {}", partial.display()))
        .map_err(other)?;
    let announced = online::fetch(
        &admin_socket_path(data_dir),
        &mut std::io::BufWriter::new(&mut file),
        &mut |progress, done, total| match progress {
            Some(progress) => display.snapshot(progress),
            None => display.update("receiving", done, total, Unit::Bytes),
        },
    )
    .map_err(FetchError::Client)?;
    file.flush()
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot fsync {}", partial.display()))
        .map_err(other)?;
    // The server unpacked and checked this exact file; the hashes prove these are its bytes.
    let received = snapshot::inspect(partial, &mut |progress| {
        display.snapshot(progress);
        Ok(())
    })
    .map_err(|error| other(error.into()))?;
    if received != announced {
        return Err(other(anyhow::anyhow!(
            "the received backup's manifest differs from the one the server announced"
        )));
    }
    Ok(received)
}

/// Removes what a killed run for the same output left behind.
fn remove_leftovers(partial: &Path, work: &Path) -> anyhow::Result<()> {
    match fs::remove_file(partial) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            return Err(err).with_context(|| format!("cannot remove {}", partial.display()));
        }
    }
    match fs::remove_dir_all(work) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).with_context(|| format!("cannot remove {}", work.display())),
    }
}

/// `FILE` + `suffix`, e.g. `nightly.lookout-backup.partial`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// The directory holding `file` (`.` for a bare file name).
fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_and_work_names_sit_beside_the_output() {
        let out = Path::new("/backups/nightly.lookout-backup");
        assert_eq!(
            with_suffix(out, ".partial"),
            Path::new("/backups/nightly.lookout-backup.partial")
        );
        assert_eq!(parent_dir(Path::new("file")), Path::new("."));
        assert_eq!(parent_dir(out), Path::new("/backups"));
    }

    #[test]
    fn refusals_have_distinct_exit_codes() {
        let refusals = [
            SnapshotError::TargetNotEmpty {
                path: "/d".into(),
                first: "x".into(),
            },
            SnapshotError::Truncated("t".into()),
            SnapshotError::Corrupt("c".into()),
            SnapshotError::NewerFormat {
                found: 2,
                supported: 1,
            },
            SnapshotError::NewerSchema {
                found: 9,
                supported: 3,
            },
        ];
        let codes: Vec<u8> = refusals.iter().map(exit_code).collect();
        assert_eq!(codes, [3, 4, 5, 6, 7]);
        assert_eq!(exit_code(&SnapshotError::Cancelled), 1);
    }
}
