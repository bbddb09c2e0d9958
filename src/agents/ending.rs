//! Why a terminal ended: the close code and reason the browser's websocket hears, and the
//! reason recorded in the session row and the `agent.shell.ended` audit entry.
//!
//! Invariants: each end the terminal page must tell apart has its own close code, and its close
//! reason starts with a stable word (`shell_exited`, `agent_gone`, `access_revoked`, …) followed
//! by a sentence a person can read; a close reason fits the 123 bytes a close frame allows.
//! Ends the browser caused itself send no close frame (the browser is already gone).

use super::access;
use super::hub::OpenRefusal;

/// Longest close reason a websocket close frame carries.
const MAX_CLOSE_REASON_BYTES: usize = 123;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalEnd {
    /// The shell ended on the agent (exited, or was refused there); the agent's words.
    ShellExited(String),
    /// The agent's connection went away (or was replaced) while the terminal ran.
    AgentGone(String),
    /// The user was logged out everywhere (role change, removal, 2FA reset, password change…).
    AccessRevoked,
    /// The agent was not connected when the terminal opened.
    AgentOffline,
    /// The agent runs with `--no-shell`.
    ShellDisabled,
    ServerStopping,
    /// A text frame that is not a control message.
    BadControl,
    /// The session's start could not be audited, so it did not run.
    NotRecorded,
    /// The browser closed the terminal or its connection dropped.
    BrowserLeft(&'static str),
}

impl From<OpenRefusal> for TerminalEnd {
    fn from(refusal: OpenRefusal) -> Self {
        match refusal {
            OpenRefusal::Offline => TerminalEnd::AgentOffline,
            OpenRefusal::ShellDisabled => TerminalEnd::ShellDisabled,
        }
    }
}

impl TerminalEnd {
    /// The websocket close code; None when the browser left (nobody to tell).
    pub fn close_code(&self) -> Option<u16> {
        match self {
            TerminalEnd::ShellExited(_) => Some(1000),
            TerminalEnd::ServerStopping => Some(1001),
            TerminalEnd::BadControl => Some(1008),
            TerminalEnd::NotRecorded => Some(1011),
            TerminalEnd::AccessRevoked => Some(access::ACCESS_REVOKED_CLOSE_CODE),
            TerminalEnd::ShellDisabled => Some(4403),
            TerminalEnd::AgentOffline => Some(4404),
            TerminalEnd::AgentGone(_) => Some(4410),
            TerminalEnd::BrowserLeft(_) => None,
        }
    }

    /// `word: sentence`, cut to what a close frame holds.
    pub fn close_reason(&self) -> String {
        let reason = match self {
            TerminalEnd::ShellExited(why) => format!("shell_exited: {why}"),
            TerminalEnd::AgentGone(why) => format!("agent_gone: {why}"),
            TerminalEnd::AccessRevoked => access::ACCESS_REVOKED_CLOSE_REASON.to_string(),
            TerminalEnd::AgentOffline => "agent_offline: the agent is offline".to_string(),
            TerminalEnd::ShellDisabled => {
                "shell_disabled: the agent runs with --no-shell".to_string()
            }
            TerminalEnd::ServerStopping => {
                "server_stopping: the server is shutting down".to_string()
            }
            TerminalEnd::BadControl => {
                "bad_control: text frames must be JSON control messages".to_string()
            }
            TerminalEnd::NotRecorded => {
                "not_recorded: the server cannot record this session".to_string()
            }
            TerminalEnd::BrowserLeft(why) => (*why).to_string(),
        };
        cut(reason, MAX_CLOSE_REASON_BYTES)
    }

    /// What the session row and the audit entry say.
    pub fn recorded_reason(&self) -> String {
        match self {
            TerminalEnd::ShellExited(why) | TerminalEnd::AgentGone(why) => why.clone(),
            TerminalEnd::AccessRevoked => access::ACCESS_REVOKED.to_string(),
            TerminalEnd::BrowserLeft(why) => (*why).to_string(),
            other => other
                .close_reason()
                .split_once(": ")
                .map_or_else(String::new, |(_, sentence)| sentence.to_string()),
        }
    }
}

/// `text` cut at a character boundary to at most `max` bytes.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_the_page_tells_apart_has_its_own_code_and_word() {
        let ends = [
            TerminalEnd::ShellExited("the shell exited".into()),
            TerminalEnd::AgentGone("the agent disconnected".into()),
            TerminalEnd::AccessRevoked,
            TerminalEnd::AgentOffline,
            TerminalEnd::ShellDisabled,
            TerminalEnd::ServerStopping,
            TerminalEnd::BadControl,
            TerminalEnd::NotRecorded,
        ];
        let codes: std::collections::HashSet<u16> =
            ends.iter().filter_map(TerminalEnd::close_code).collect();
        assert_eq!(codes.len(), ends.len());
        for end in &ends {
            let reason = end.close_reason();
            let word = reason.split_once(": ").map(|(word, _)| word).unwrap_or("");
            assert!(!word.is_empty() && !word.contains(' '), "{reason}");
            assert!(!end.recorded_reason().is_empty(), "{end:?}");
        }
        assert_eq!(
            TerminalEnd::AccessRevoked.recorded_reason(),
            "access_revoked"
        );
        assert_eq!(TerminalEnd::BrowserLeft("gone").close_code(), None);
    }

    #[test]
    fn long_reasons_are_cut_to_a_close_frame() {
        let end = TerminalEnd::ShellExited("é".repeat(200));
        let reason = end.close_reason();
        assert!(reason.len() <= MAX_CLOSE_REASON_BYTES);
        assert!(reason.starts_with("shell_exited: "));
    }
}
