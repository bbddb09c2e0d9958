//! `lookout restore FILE [--data-dir DIR]`: restores a backup into an empty or absent data dir.
//!
//! The work and its invariants are in `store::snapshot::restore`: every refusal (a non-empty
//! target, a truncated or corrupted file, a newer format or schema) happens before the target
//! is touched, and each has its own exit code (`backup::exit_code`). The target is the data
//! dir of the configuration, so `--data-dir` or `LOOKOUT_DATA_DIR` name it.

use std::path::PathBuf;

use clap::Args;

use super::backup::summary;
use super::progress::ProgressLine;
use crate::config::Config;
use crate::store::snapshot;

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup file to restore
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print the restored backup's manifest as JSON on standard output
    #[arg(long)]
    json: bool,
}

pub fn run(config: &Config, args: RestoreArgs) -> anyhow::Result<()> {
    super::init_quiet_logging();
    let target = &config.data_dir;
    let mut display = ProgressLine::for_stderr();
    let manifest = snapshot::restore(&args.file, target, &mut |progress| {
        display.snapshot(progress);
        Ok(())
    })?;
    display.finish();
    if args.json {
        println!("{}", serde_json::to_string(&manifest)?);
    } else {
        println!("restored {} into {}", args.file.display(), target.display());
        println!("{}", summary(&manifest));
        println!(
            "start it with: lookout serve --data-dir {}",
            target.display()
        );
    }
    Ok(())
}
