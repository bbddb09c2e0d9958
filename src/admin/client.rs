//! The CLI side of the admin socket: one blocking request and its reply.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::{AdminFailure, AdminRequest, AdminResponse};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the admin socket {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("admin socket i/o failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed reply from the server: {0}")]
    Protocol(String),
    #[error(transparent)]
    Refused(#[from] AdminFailure),
}

/// Sends `request` to the server listening at `socket` and returns its result.
pub fn call(socket: &Path, request: &AdminRequest) -> Result<serde_json::Value, ClientError> {
    let stream = UnixStream::connect(socket).map_err(|source| ClientError::Connect {
        path: socket.display().to_string(),
        source,
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut line =
        serde_json::to_vec(request).map_err(|err| ClientError::Protocol(err.to_string()))?;
    line.push(b'\n');
    (&stream).write_all(&line)?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply)?;
    let response: AdminResponse = serde_json::from_str(reply.trim_end())
        .map_err(|err| ClientError::Protocol(err.to_string()))?;
    match (response.ok, response.result, response.error) {
        (true, Some(result), _) => Ok(result),
        (false, _, Some(failure)) => Err(ClientError::Refused(failure)),
        _ => Err(ClientError::Protocol(
            "reply has neither result nor error".into(),
        )),
    }
}
