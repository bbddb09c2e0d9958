//! `lookout agent`: runs on a monitored host and connects it to a server (`agents::host`).
//!
//! Invariants: it reads no server configuration and no data dir (it runs on other machines);
//! it stops with exit code 1 when the server refuses its token, and 0 on SIGTERM or SIGINT.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::agents::host::{self, AgentOptions};

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The server's base URL, e.g. https://lookout.example.com
    #[arg(long, value_name = "URL")]
    pub server: url::Url,
    /// An enrolment token from POST /api/v1/agents/enrolment-tokens
    // Tokens are base64url and may start with `-`: take the next argument as the value anyway.
    #[arg(long, value_name = "TOKEN", allow_hyphen_values = true)]
    pub token: String,
    /// Refuse every terminal session: no shell is ever started for the server
    #[arg(long)]
    pub no_shell: bool,
    /// The shell for terminal sessions (default: /bin/bash, else /bin/sh)
    #[arg(long, value_name = "PATH", conflicts_with = "no_shell")]
    pub shell: Option<PathBuf>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(std::io::stderr)
        .try_init();
    let shell = match (args.no_shell, args.shell) {
        (true, _) => None,
        (false, Some(shell)) => Some(shell),
        (false, None) => Some(default_shell()),
    };
    let options = AgentOptions {
        server: args.server,
        token: args.token,
        shell,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("lookout-agent")
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(host::run(options, crate::server::shutdown_signal()));
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
            Command::Agent(agent) => assert_eq!(agent.token, "-Jt0ken_x"),
            other => panic!("parsed as {other:?}"),
        }
    }
}
