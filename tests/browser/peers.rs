//! Real third-party SDKs for the browser tests, from the npm registry: the packages pinned by
//! `tests/fixtures/compat-peers/package-lock.json` are installed once into
//! `target/compat-peers/` (`npm ci`) and bundled by esbuild into one script that sets the global
//! `LookoutPeers` (`Sentry`, `WebTracerProvider`, `SimpleSpanProcessor`, `OTLPTraceExporter`,
//! `resourceFromAttributes`). Without Node.js and npm the tests fail saying what to install.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/compat-peers");

fn run(dir: &Path, program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|err| {
            panic!(
                "cannot run {program} ({err}): the compatibility tests need Node.js and npm \
                 (apt-get install -y nodejs npm)"
            )
        });
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn build() -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/compat-peers");
    std::fs::create_dir_all(&dir).expect("target/compat-peers");
    let lock = std::fs::read(Path::new(FIXTURE).join("package-lock.json")).expect("the lockfile");
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    if installed.as_deref() != Some(lock.as_slice()) || !dir.join("node_modules").exists() {
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(Path::new(FIXTURE).join(file), dir.join(file)).expect("copy the pins");
        }
        run(
            &dir,
            "npm",
            &["ci", "--no-audit", "--no-fund", "--prefer-offline"],
        );
    }
    std::fs::copy(Path::new(FIXTURE).join("entry.js"), dir.join("entry.js")).expect("entry.js");
    run(
        &dir,
        "node_modules/.bin/esbuild",
        &[
            "entry.js",
            "--bundle",
            "--format=iife",
            "--log-level=warning",
            "--outfile=peers.js",
        ],
    );
    std::fs::read(dir.join("peers.js")).expect("the bundle")
}

/// The bundled SDKs (built once per test run).
pub fn peers_js() -> &'static [u8] {
    static BUNDLE: OnceLock<Vec<u8>> = OnceLock::new();
    BUNDLE.get_or_init(build)
}
