//! The server side of the admin socket.
//!
//! Invariants: the socket file is created inside the (0700) data dir and set to 0600; a peer
//! whose uid is neither the server's nor root is disconnected before anything is read; a
//! request line is capped at `MAX_LINE_BYTES`; the socket file is removed at shutdown.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use super::{AdminContext, AdminFailure, AdminRequest, AdminResponse, execute};

const MAX_LINE_BYTES: u64 = 1024 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A bound admin socket, ready to serve.
pub struct AdminSocket {
    listener: UnixListener,
    path: PathBuf,
    owner_uid: u32,
}

impl AdminSocket {
    /// Binds the socket at `path`, replacing a stale file (the caller holds the data-dir lock,
    /// so no other server can be using it).
    pub fn bind(path: &Path) -> std::io::Result<AdminSocket> {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let owner_uid = std::fs::metadata(path)?.uid();
        Ok(AdminSocket {
            listener,
            path: path.to_path_buf(),
            owner_uid,
        })
    }

    /// Serves until `stop` turns true, then removes the socket file.
    pub async fn serve(self, context: AdminContext, mut stop: watch::Receiver<bool>) {
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                _ = stop.wait_for(|stopped| *stopped) => break,
            };
            match accepted {
                Ok((stream, _)) => {
                    let context = context.clone();
                    let owner_uid = self.owner_uid;
                    tokio::spawn(async move {
                        if let Err(error) = handle(stream, owner_uid, context).await {
                            tracing::debug!(%error, "admin connection ended with an error");
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "admin socket accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn handle(stream: UnixStream, owner_uid: u32, context: AdminContext) -> std::io::Result<()> {
    let peer_uid = stream.peer_cred()?.uid();
    if peer_uid != owner_uid && peer_uid != 0 {
        tracing::warn!(peer_uid, "admin socket refused a peer of another user");
        return Ok(());
    }
    let (read_half, mut write_half) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    loop {
        let mut line = String::new();
        let read = tokio::time::timeout(
            IDLE_TIMEOUT,
            (&mut reader).take(MAX_LINE_BYTES).read_line(&mut line),
        )
        .await;
        let bytes = match read {
            Ok(result) => result?,
            Err(_) => return Ok(()),
        };
        if bytes == 0 {
            return Ok(());
        }
        let response = match serde_json::from_str::<AdminRequest>(line.trim_end()) {
            // A backup answers with a byte stream and then ends the connection.
            Ok(AdminRequest::Backup) => {
                return super::backup::serve(&context, &mut write_half).await;
            }
            // So does a reindex, after its progress lines.
            Ok(AdminRequest::Reindex) => {
                return super::reindex::serve(&context, &mut write_half).await;
            }
            Ok(request) => AdminResponse::from_result(execute(&context, request).await),
            Err(err) => AdminResponse::from_result(Err(AdminFailure {
                code: "invalid_payload".to_string(),
                message: format!("malformed admin request: {err}"),
            })),
        };
        let mut encoded = serde_json::to_vec(&response).map_err(std::io::Error::other)?;
        encoded.push(b'\n');
        write_half.write_all(&encoded).await?;
        if !line.ends_with('\n') {
            // The line hit the cap (or the peer closed mid-line): stop reading this stream.
            return Ok(());
        }
    }
}
