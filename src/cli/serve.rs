//! `lookout serve`: logging per LOG_FORMAT, the data-dir lock, the runtime, the server.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;

use crate::config::{Config, LogFormat};
use crate::store::data_dir::DataDir;

pub fn run(config: Config) -> anyhow::Result<()> {
    init_logging(&config);
    let data_dir = DataDir::open(&config.data_dir, "serve")?;
    // Before the runtime's threads exist: large bodies then go back to the system when freed.
    crate::http::memory::configure_allocator();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lookout")
        .build()
        .context("cannot start the async runtime")?;
    // Installed before start-up begins, so a SIGTERM at any point later is a clean stop.
    let shutdown =
        crate::server::shutdown_signal(&runtime).context("cannot listen for SIGTERM and SIGINT")?;
    let result = runtime.block_on(crate::server::run(config, data_dir, shutdown));
    // Connections that outlived the grace period are dropped here, not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::new(&config.log_level);
    let colour = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let _ = match config.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
