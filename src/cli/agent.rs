//! `lookout agent`: runs on a monitored host and connects it to a server (`agents::host`).
//!
//! Invariants: it reads no server configuration and no data dir (it runs on other machines);
//! it stops with exit code 1 when the server refuses its token, and 0 on SIGTERM or SIGINT.
//! The token comes from `--token`, `--token-file` or `LOOKOUT_AGENT_TOKEN`; the last two keep
//! it out of the process list, which every local user can read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::agents::host::{self, AgentOptions};
use crate::config::AGENT_TOKEN_VARIABLE;

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The server's base URL, e.g. https://lookout.example.com
    #[arg(long, value_name = "URL")]
    pub server: url::Url,
    /// An enrolment token from POST /api/v1/agents/enrolment-tokens (visible in the process
    /// list: prefer --token-file or LOOKOUT_AGENT_TOKEN)
    // Tokens are base64url and may start with `-`: take the next argument as the value anyway.
    #[arg(long, value_name = "TOKEN", allow_hyphen_values = true)]
    pub token: Option<String>,
    /// Read the enrolment token from this file (its first line)
    #[arg(long, value_name = "PATH", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Refuse every terminal session: no shell is ever started for the server
    #[arg(long)]
    pub no_shell: bool,
    /// The shell for terminal sessions (default: /bin/bash, else /bin/sh)
    #[arg(long, value_name = "PATH", conflicts_with = "no_shell")]
    pub shell: Option<PathBuf>,
}

/// The token: `--token`, else the first line of `--token-file`, else `LOOKOUT_AGENT_TOKEN`.
fn token_of(args: &AgentArgs, variable: Option<String>) -> anyhow::Result<String> {
    let token = if let Some(token) = &args.token {
        token.clone()
    } else if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?;
        warn_if_readable_by_others(path);
        text.lines().next().unwrap_or("").to_string()
    } else if let Some(token) = variable {
        token
    } else {
        anyhow::bail!(
            "no enrolment token: pass --token-file PATH, set {AGENT_TOKEN_VARIABLE}, or pass --token"
        );
    };
    let token = token.trim().to_string();
    anyhow::ensure!(!token.is_empty(), "the enrolment token is empty");
    Ok(token)
}

fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = std::fs::metadata(path)
        && metadata.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(path = %path.display(), "the token file is readable by other users: chmod 600 it");
    }
}

pub fn run(args: AgentArgs) -> anyhow::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(std::io::stderr)
        .try_init();
    let token = token_of(&args, crate::config::agent_token_from_environment())?;
    let shell = match (args.no_shell, args.shell) {
        (true, _) => None,
        (false, Some(shell)) => Some(shell),
        (false, None) => Some(default_shell()),
    };
    let options = AgentOptions {
        server: args.server,
        token,
        shell,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("lookout-agent")
        .build()
        .context("cannot start the async runtime")?;
    // As for `serve`: the handlers are installed before the agent connects.
    let shutdown =
        crate::server::shutdown_signal(&runtime).context("cannot listen for SIGTERM and SIGINT")?;
    let result = runtime.block_on(host::run(options, shutdown));
    // Shell tasks still running are dropped here, which kills their processes.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

fn default_shell() -> PathBuf {
    let bash = Path::new("/bin/bash");
    if bash.exists() {
        bash.to_path_buf()
    } else {
        PathBuf::from("/bin/sh")
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn a_token_starting_with_a_hyphen_is_a_value() {
        let args = [
            "lookout",
            "agent",
            "--server",
            "http://127.0.0.1:8080",
            "--token",
            "-Jt0ken_x",
        ];
        let cli = Cli::try_parse_from(args).expect("parses");
        match cli.command {
            Command::Agent(agent) => assert_eq!(agent.token.as_deref(), Some("-Jt0ken_x")),
            other => panic!("parsed as {other:?}"),
        }
    }

    fn agent_args(extra: &[&str]) -> super::AgentArgs {
        let mut args = vec!["lookout", "agent", "--server", "http://127.0.0.1:8080"];
        args.extend_from_slice(extra);
        match Cli::try_parse_from(args).expect("parses").command {
            Command::Agent(agent) => agent,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_token_comes_from_the_flag_the_file_or_the_environment() {
        let from_env = Some("env-token".to_string());
        let flag = agent_args(&["--token", "flag-token"]);
        assert_eq!(
            super::token_of(&flag, from_env.clone()).unwrap(),
            "flag-token"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "file-token\nignored\n").unwrap();
        let file = agent_args(&["--token-file", path.to_str().unwrap()]);
        assert_eq!(
            super::token_of(&file, from_env.clone()).unwrap(),
            "file-token"
        );
        let neither = agent_args(&[]);
        assert_eq!(super::token_of(&neither, from_env).unwrap(), "env-token");
        let error = super::token_of(&neither, None).unwrap_err().to_string();
        assert!(error.contains("LOOKOUT_AGENT_TOKEN"), "{error}");
        assert!(super::token_of(&neither, Some("  ".into())).is_err());
        let both = ["--token", "a", "--token-file", "/dev/null"];
        let mut args = vec!["lookout", "agent", "--server", "http://x"];
        args.extend_from_slice(&both);
        assert!(
            Cli::try_parse_from(args).is_err(),
            "--token and --token-file conflict"
        );
    }
}
