//! The CLI side of the admin socket: one blocking request and its reply, which a streamed
//! command precedes with progress lines.

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

/// Sends `request` to the server listening at `socket` and returns its result, handing each
/// `{"progress":…}` line that precedes the reply to `progress` (streamed commands: reindex).
/// `wait` bounds the gap between two lines.
pub fn call_with_progress(
    socket: &Path,
    request: &AdminRequest,
    wait: Duration,
    progress: &mut dyn FnMut(serde_json::Value),
) -> Result<serde_json::Value, ClientError> {
    let stream = connect(socket, request, wait)?;
    let mut reader = BufReader::new(&stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(ClientError::Protocol(
                "the server closed the connection before replying".into(),
            ));
        }
        let mut value: serde_json::Value = serde_json::from_str(line.trim_end())
            .map_err(|err| ClientError::Protocol(err.to_string()))?;
        match value.get_mut("progress") {
            Some(report) => progress(report.take()),
            None => return result_of(value),
        }
    }
}

/// Sends `request` to the server listening at `socket` and returns its result.
pub fn call(socket: &Path, request: &AdminRequest) -> Result<serde_json::Value, ClientError> {
    let stream = connect(socket, request, Duration::from_secs(120))?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply)?;
    let value = serde_json::from_str(reply.trim_end())
        .map_err(|err| ClientError::Protocol(err.to_string()))?;
    result_of(value)
}

/// Connects and sends the request line; reads then wait at most `wait`.
fn connect(
    socket: &Path,
    request: &AdminRequest,
    wait: Duration,
) -> Result<UnixStream, ClientError> {
    let stream = UnixStream::connect(socket).map_err(|source| ClientError::Connect {
        path: socket.display().to_string(),
        source,
    })?;
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut line =
        serde_json::to_vec(request).map_err(|err| ClientError::Protocol(err.to_string()))?;
    line.push(b'\n');
    (&stream).write_all(&line)?;
    Ok(stream)
}

/// The result of a reply line, or the failure it carries.
fn result_of(reply: serde_json::Value) -> Result<serde_json::Value, ClientError> {
    let response: AdminResponse =
        serde_json::from_value(reply).map_err(|err| ClientError::Protocol(err.to_string()))?;
    match (response.ok, response.result, response.error) {
        (true, Some(result), _) => Ok(result),
        (false, _, Some(failure)) => Err(ClientError::Refused(failure)),
        _ => Err(ClientError::Protocol(
            "reply has neither result nor error".into(),
        )),
    }
}
