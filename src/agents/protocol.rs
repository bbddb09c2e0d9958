//! The agent protocol (version 1), spoken over the `/api/v1/agent/connect` websocket by the
//! server and by `lookout agent`. docs/agents.md is its reference.
//!
//! Text frames carry one JSON message each, tagged by `type`. Binary frames carry terminal
//! bytes: a 4-byte big-endian session id, then the bytes, so keystrokes and output cost no
//! JSON or base64. Unknown fields are ignored so that a newer peer can add some.
//! Invariants: the agent speaks first (`hello`), the server answers `welcome`
//! or closes; a session id is chosen by the server and unique within one connection; an
//! unknown message type is an error that closes the connection (no silent skipping).

use serde::{Deserialize, Serialize};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Largest websocket message either side accepts.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// Largest chunk of terminal bytes put in one binary frame.
pub const MAX_CHUNK_BYTES: usize = 16 * 1024;

/// Host figures an agent reports with each heartbeat. Every field is optional: a host that
/// cannot tell one (no `/proc`) leaves it out rather than inventing a zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HostMetrics {
    pub load1: Option<f64>,
    pub load5: Option<f64>,
    pub load15: Option<f64>,
    /// Percent of CPU time busy since the previous report.
    pub cpu_percent: Option<f64>,
    pub memory_total_bytes: Option<u64>,
    pub memory_available_bytes: Option<u64>,
    /// Of the file system holding `/`.
    pub disk_total_bytes: Option<u64>,
    pub disk_available_bytes: Option<u64>,
    pub uptime_seconds: Option<u64>,
}

/// What an agent sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMessage {
    Hello {
        protocol: u32,
        hostname: String,
        os: String,
        arch: String,
        version: String,
        /// False when started with `--no-shell`.
        shell: bool,
    },
    Heartbeat {
        metrics: HostMetrics,
    },
    /// The PTY of `session` is running.
    ShellOpened {
        session: u32,
    },
    /// The shell of `session` ended (exited, refused, or closed on request).
    ShellClosed {
        session: u32,
        reason: String,
    },
    Ping,
    Pong,
}

/// What the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Welcome {
        protocol: u32,
        agent_id: String,
        heartbeat_seconds: u64,
    },
    ShellOpen {
        session: u32,
        cols: u16,
        rows: u16,
    },
    ShellResize {
        session: u32,
        cols: u16,
        rows: u16,
    },
    ShellClose {
        session: u32,
    },
    Ping,
    Pong,
}

/// A control message of the browser's terminal websocket.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TerminalControl {
    Resize { cols: u16, rows: u16 },
}

/// Frames terminal bytes for `session`.
pub fn encode_data(session: u32, bytes: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&session.to_be_bytes());
    frame.extend_from_slice(bytes);
    frame
}

/// Splits a binary frame into its session id and bytes; `None` when shorter than the header.
pub fn decode_data(frame: &[u8]) -> Option<(u32, &[u8])> {
    let (header, bytes) = frame.split_at_checked(4)?;
    let session = u32::from_be_bytes(header.try_into().ok()?);
    Some((session, bytes))
}

/// A terminal size is usable when neither side is zero and both fit a real screen.
pub fn valid_size(cols: u16, rows: u16) -> bool {
    (1..=1000).contains(&cols) && (1..=1000).contains(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames_round_trip_and_short_frames_are_refused() {
        let frame = encode_data(7, b"echo hello\n");
        assert_eq!(decode_data(&frame), Some((7, &b"echo hello\n"[..])));
        assert_eq!(decode_data(&encode_data(1, b"")), Some((1, &b""[..])));
        assert_eq!(decode_data(&[0, 0, 1]), None);
    }

    #[test]
    fn messages_use_their_documented_json() {
        let hello = r#"{"type":"hello","protocol":1,"hostname":"h","os":"linux","arch":"x86_64","version":"0.1.0","shell":true}"#;
        assert!(matches!(
            serde_json::from_str::<AgentMessage>(hello).unwrap(),
            AgentMessage::Hello { shell: true, .. }
        ));
        let open = ServerMessage::ShellOpen {
            session: 3,
            cols: 80,
            rows: 24,
        };
        assert_eq!(
            serde_json::to_string(&open).unwrap(),
            r#"{"type":"shell_open","session":3,"cols":80,"rows":24}"#
        );
        assert!(serde_json::from_str::<AgentMessage>(r#"{"type":"launch"}"#).is_err());
        let resize = r#"{"type":"resize","cols":120,"rows":40}"#;
        assert_eq!(
            serde_json::from_str::<TerminalControl>(resize).unwrap(),
            TerminalControl::Resize {
                cols: 120,
                rows: 40
            }
        );
    }

    #[test]
    fn sizes_must_be_screens() {
        assert!(valid_size(80, 24));
        assert!(!valid_size(0, 24));
        assert!(!valid_size(80, 5000));
    }
}
