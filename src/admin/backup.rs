//! Online backup over the admin socket: the server takes the snapshot, the CLI writes the file.
//!
//! The server builds and verifies the complete backup file in a work dir inside its data dir
//! (under systemd hardening the data dir is the only place it may write), then streams the
//! bytes to the CLI, which writes them wherever the operator asked, as the operator's user.
//!
//! Protocol, after the request line `{"command":"backup"}`:
//! - zero or more lines `{"progress":{"phase","done","total"}}` while the snapshot is taken;
//! - then one reply line: `{"ok":false,"error":{…}}`, or `{"ok":true,"result":{"bytes":N,
//!   "manifest":{…}}}` followed by exactly N raw bytes of the backup file, then end of stream.
//!
//! Invariants: one backup at a time per server (a second is refused, not queued); the work dir
//! is removed when the backup ends, whether it succeeded, failed or its client went away (a
//! client that disconnects cancels the snapshot at its next progress report); a work dir left
//! by a killed server is removed before the next backup starts.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::client::ClientError;
use super::{AdminContext, AdminFailure, AdminRequest, AdminResponse};
use crate::store::snapshot::{self, Manifest, Progress, SnapshotError};

/// Work dirs in the data dir are named `.backup-XXXXXX`.
const WORK_DIR_PREFIX: &str = ".backup-";
/// The longest gap between progress lines; also how quickly a vanished client is noticed.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// Serialises backups: each one needs up to a database's size of scratch space.
static BACKUP_RUNNING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The reply line that precedes the bytes of a backup.
#[derive(Debug, Serialize, Deserialize)]
pub struct BackupReady {
    pub bytes: u64,
    pub manifest: Manifest,
}

#[derive(Debug, Serialize, Deserialize)]
struct ProgressLine {
    progress: Progress,
}

/// Serves one backup request on `writer` (server side).
pub async fn serve(context: &AdminContext, writer: &mut OwnedWriteHalf) -> std::io::Result<()> {
    let Ok(running) = BACKUP_RUNNING.try_lock() else {
        let failure = AdminFailure {
            code: "backup_running".into(),
            message: "another backup is running on this server; try again when it ends".into(),
        };
        return send_line(writer, &AdminResponse::from_result(Err(failure))).await;
    };
    let (sender, mut reports) = mpsc::channel::<Progress>(16);
    let store = context.store.clone();
    // The task owns the guard: if this connection ends early, no other backup starts (and
    // clears work dirs) until the cancelled task has noticed and cleaned up after itself.
    let task = tokio::task::spawn_blocking(move || {
        let built = build(&store, sender);
        drop(running);
        built
    });
    // Forward progress until the snapshot is packed; a failed write means the client left,
    // and dropping `reports` then cancels the snapshot at its next report.
    while let Some(progress) = reports.recv().await {
        send_line(writer, &ProgressLine { progress }).await?;
    }
    let built = match task.await {
        Ok(result) => result,
        Err(join) => Err(SnapshotError::Check(format!(
            "the backup task failed: {join}"
        ))),
    };
    let (work_dir, file, manifest) = match built {
        Ok(built) => built,
        Err(error) => {
            tracing::error!(%error, "online backup failed");
            let failure = AdminFailure {
                code: "backup_failed".into(),
                message: with_causes(&error),
            };
            return send_line(writer, &AdminResponse::from_result(Err(failure))).await;
        }
    };
    let result = stream_file(writer, &file, manifest).await;
    // Removing the work dir is blocking file-system work: keep it off the async threads.
    let _ = tokio::task::spawn_blocking(move || drop(work_dir)).await;
    result
}

/// Takes and packs the snapshot on a blocking thread.
fn build(
    store: &crate::store::Store,
    reports: mpsc::Sender<Progress>,
) -> Result<(tempfile::TempDir, PathBuf, Manifest), SnapshotError> {
    let data_dir = store
        .path()
        .parent()
        .ok_or_else(|| SnapshotError::Check("the database has no parent directory".into()))?;
    remove_stale_work_dirs(data_dir);
    let work_dir = tempfile::Builder::new()
        .prefix(WORK_DIR_PREFIX)
        .tempdir_in(data_dir)
        .map_err(SnapshotError::io("cannot create a work dir in", data_dir))?;
    let mut last_sent: Option<Instant> = None;
    let mut report = |progress: Progress| {
        if last_sent.is_some_and(|at| at.elapsed() < PROGRESS_EVERY)
            && progress.done != progress.total
        {
            return Ok(());
        }
        last_sent = Some(Instant::now());
        reports
            .blocking_send(progress)
            .map_err(|_| SnapshotError::Cancelled)
    };
    let snapshot = store.snapshot_blocking(work_dir.path(), &mut report)?;
    let file = work_dir.path().join("backup");
    let manifest = snapshot::pack(snapshot, &file, work_dir.path(), &mut report)?;
    Ok((work_dir, file, manifest))
}

async fn stream_file(
    writer: &mut OwnedWriteHalf,
    file: &Path,
    manifest: Manifest,
) -> std::io::Result<()> {
    let mut source = tokio::fs::File::open(file).await?;
    let bytes = source.metadata().await?.len();
    let ready =
        serde_json::to_value(BackupReady { bytes, manifest }).map_err(std::io::Error::other)?;
    send_line(writer, &AdminResponse::from_result(Ok(ready))).await?;
    let sent = tokio::io::copy(&mut source, writer).await?;
    if sent != bytes {
        return Err(std::io::Error::other(
            "the backup file changed while it was sent",
        ));
    }
    writer.shutdown().await
}

/// Work dirs of backups that a killed server never finished. Only called while holding
/// `BACKUP_RUNNING`, and a data dir has one server, so none of them is in use.
fn remove_stale_work_dirs(data_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(WORK_DIR_PREFIX)
        {
            continue;
        }
        if let Err(error) = std::fs::remove_dir_all(entry.path()) {
            tracing::warn!(%error, path = %entry.path().display(), "cannot remove a stale backup work dir");
        }
    }
}

/// `error` and its chain of sources, as one line for the operator.
fn with_causes(error: &SnapshotError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Writes `value` as one JSON line (the streamed replies share it).
pub(super) async fn send_line(
    writer: &mut OwnedWriteHalf,
    value: &impl Serialize,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    writer.write_all(&line).await
}

/// Asks the server at `socket` for a backup and writes its bytes to `out` (client side).
/// `progress` sees the server's reports, then `(None, received, total)` while bytes arrive.
/// Returns the manifest the server announced; the caller checks the written file against it.
pub fn fetch(
    socket: &Path,
    out: &mut impl Write,
    progress: &mut dyn FnMut(Option<Progress>, u64, u64),
) -> Result<Manifest, ClientError> {
    let stream = UnixStream::connect(socket).map_err(|source| ClientError::Connect {
        path: socket.display().to_string(),
        source,
    })?;
    // Generous: the server sends a progress line at least every PROGRESS_EVERY while it works,
    // but one fsync of a large file on a slow disk can take a while.
    stream.set_read_timeout(Some(Duration::from_secs(600)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut request = serde_json::to_vec(&AdminRequest::Backup)
        .map_err(|err| ClientError::Protocol(err.to_string()))?;
    request.push(b'\n');
    (&stream).write_all(&request)?;
    let mut reader = BufReader::with_capacity(1024 * 1024, &stream);
    let ready = loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(ClientError::Protocol(
                "the server closed the connection before replying".into(),
            ));
        }
        let value: serde_json::Value = serde_json::from_str(line.trim_end())
            .map_err(|err| ClientError::Protocol(err.to_string()))?;
        if value.get("progress").is_some() {
            let report: ProgressLine = serde_json::from_value(value)
                .map_err(|err| ClientError::Protocol(err.to_string()))?;
            progress(
                Some(report.progress),
                report.progress.done,
                report.progress.total,
            );
            continue;
        }
        let response: AdminResponse =
            serde_json::from_value(value).map_err(|err| ClientError::Protocol(err.to_string()))?;
        break match (response.ok, response.result, response.error) {
            (true, Some(result), _) => serde_json::from_value::<BackupReady>(result)
                .map_err(|err| ClientError::Protocol(err.to_string()))?,
            (false, _, Some(failure)) => return Err(ClientError::Refused(failure)),
            _ => {
                return Err(ClientError::Protocol(
                    "reply has neither result nor error".into(),
                ));
            }
        };
    };
    let mut received = 0u64;
    let mut buffer = vec![0u8; 1024 * 1024];
    let mut body = reader.take(ready.bytes);
    loop {
        let read = body.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        out.write_all(&buffer[..read])?;
        received += read as u64;
        progress(None, received, ready.bytes);
    }
    if received != ready.bytes {
        return Err(ClientError::Protocol(format!(
            "the server sent {received} of {} backup bytes before closing the connection",
            ready.bytes
        )));
    }
    Ok(ready.manifest)
}
