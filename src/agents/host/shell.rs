//! One terminal session on the agent: a shell on a fresh PTY, its output framed for the
//! server, the server's keystrokes and resizes applied to it.
//!
//! Invariants: the shell is the leader of its own session with the PTY as controlling
//! terminal (pty-process calls setsid), so closing the PTY hangs up everything it started; the
//! child is killed when the session ends for any reason (`kill_on_drop` covers a panic or a
//! dropped task too); exactly one `shell_closed` is sent per session, last.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::agents::protocol::{self, AgentMessage};

/// What the server asks of a running shell.
#[derive(Debug)]
pub enum ShellInput {
    Data(Vec<u8>),
    Resize { cols: u16, rows: u16 },
}

/// Runs `program` for `session` until it exits or `input` closes.
pub async fn run(
    session: u32,
    program: PathBuf,
    cols: u16,
    rows: u16,
    input: mpsc::Receiver<ShellInput>,
    outbox: mpsc::Sender<Message>,
) {
    let reason = match spawn(&program, cols, rows) {
        Ok((pty, child)) => {
            if send(&outbox, &AgentMessage::ShellOpened { session }).await {
                relay(session, pty, child, input, &outbox).await
            } else {
                "the connection closed".to_string()
            }
        }
        Err(error) => format!("cannot start {}: {error}", program.display()),
    };
    send(&outbox, &AgentMessage::ShellClosed { session, reason }).await;
}

fn spawn(
    program: &PathBuf,
    cols: u16,
    rows: u16,
) -> pty_process::Result<(pty_process::Pty, tokio::process::Child)> {
    let (pty, pts) = pty_process::open()?;
    pty.resize(pty_process::Size::new(rows, cols))?;
    let child = pty_process::Command::new(program)
        .env("TERM", "xterm-256color")
        .kill_on_drop(true)
        .spawn(pts)?;
    Ok((pty, child))
}

async fn relay(
    session: u32,
    pty: pty_process::Pty,
    mut child: tokio::process::Child,
    mut input: mpsc::Receiver<ShellInput>,
    outbox: &mpsc::Sender<Message>,
) -> String {
    let (mut reader, mut writer) = pty.into_split();
    let mut buffer = vec![0u8; protocol::MAX_CHUNK_BYTES];
    let reason = loop {
        tokio::select! {
            read = reader.read(&mut buffer) => match read {
                // Linux answers EIO once the last process holding the terminal is gone.
                Ok(0) | Err(_) => break "the shell exited".to_string(),
                Ok(n) => {
                    let frame = protocol::encode_data(session, &buffer[..n]);
                    // Waits while the connection is busy: the shell's output is back-pressured.
                    if outbox.send(Message::Binary(frame.into())).await.is_err() {
                        break "the connection closed".to_string();
                    }
                }
            },
            received = input.recv() => match received {
                Some(ShellInput::Data(bytes)) => {
                    if writer.write_all(&bytes).await.is_err() {
                        break "the shell exited".to_string();
                    }
                }
                Some(ShellInput::Resize { cols, rows }) => {
                    let _ = writer.resize(pty_process::Size::new(rows, cols));
                }
                None => break "closed by the server".to_string(),
            },
        }
    };
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    reason
}

async fn send(outbox: &mpsc::Sender<Message>, message: &AgentMessage) -> bool {
    match serde_json::to_string(message) {
        Ok(text) => outbox.send(Message::Text(text.into())).await.is_ok(),
        Err(_) => false,
    }
}
