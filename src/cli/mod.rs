//! The command line: parses arguments, loads the configuration, runs a subcommand and maps
//! its failure to an exit code.
//!
//! Exit codes: 0 success; 1 a command failed; 2 bad usage (clap); 3-7 a restore or backup
//! verification refused (`backup::exit_code`); 75 the data dir is held by another process that
//! cannot be reached; 78 invalid configuration.

mod agent;
mod backup;
mod org;
mod progress;
mod reindex;
mod restore;
mod serve;
mod target;
mod user;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{Config, ConfigError};
use crate::store::data_dir::DataDirError;

#[derive(Debug, Parser)]
#[command(
    name = "lookout",
    version,
    about = "Self-hosted monitoring in one binary"
)]
pub struct Cli {
    /// TOML configuration file (default: /etc/lookout/lookout.toml when it exists)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory, overriding LOOKOUT_DATA_DIR
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server
    Serve,
    /// Manage users
    User {
        #[command(subcommand)]
        command: user::UserCommand,
    },
    /// Manage organisations
    Org {
        #[command(subcommand)]
        command: org::OrgCommand,
    },
    /// Write a consistent backup of the data dir to a file, or verify one
    Backup(backup::BackupArgs),
    /// Restore a backup into an empty or absent data dir
    Restore(restore::RestoreArgs),
    /// Rebuild the search index from the stored events (also while the server runs)
    Reindex,
    /// Connect this host to a server as an agent (metrics, terminal)
    Agent(agent::AgentArgs),
    /// Print the version
    Version,
}

/// Exit code for a configuration error (sysexits EX_CONFIG).
pub const EXIT_CONFIG: u8 = 78;
/// Exit code when the data dir is held by a process that does not answer (EX_TEMPFAIL).
pub const EXIT_LOCKED: u8 = 75;

pub fn run(cli: Cli) -> anyhow::Result<()> {
    // Neither prints the version nor runs an agent on another host needs the server's config.
    let command = match cli.command {
        Command::Version => {
            println!("lookout {}", env!("CARGO_PKG_VERSION"));
            return Ok(());
        }
        Command::Agent(args) => return agent::run(args),
        command => command,
    };
    let mut config = Config::load(cli.config.as_deref())?;
    if let Some(data_dir) = cli.data_dir {
        config.data_dir = data_dir;
    }
    match command {
        Command::Serve => serve::run(config),
        Command::User { command } => user::run(&config, command),
        Command::Org { command } => org::run(&config, command),
        Command::Backup(args) => backup::run(&config, args),
        Command::Restore(args) => restore::run(&config, args),
        Command::Reindex => reindex::run(&config),
        Command::Version | Command::Agent(_) => Ok(()),
    }
}

/// The exit code for an error returned by `run`.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<ConfigError>().is_some() {
        return EXIT_CONFIG;
    }
    if let Some(DataDirError::Locked { .. }) = error.downcast_ref::<DataDirError>() {
        return EXIT_LOCKED;
    }
    if let Some(error) = error.downcast_ref::<crate::store::snapshot::SnapshotError>() {
        return backup::exit_code(error);
    }
    1
}

/// Logging for commands other than `serve`: warnings and errors only, on stderr.
fn init_quiet_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .try_init();
}
