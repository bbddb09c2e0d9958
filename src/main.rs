//! The `lookout` binary: parse the command line, run it, map failure to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = lookout::cli::Cli::parse();
    match lookout::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lookout: {error:#}");
            ExitCode::from(lookout::cli::exit_code(&error))
        }
    }
}
