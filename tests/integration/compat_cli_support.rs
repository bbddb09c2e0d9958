//! The real `sentry-cli` (npm `@sentry/cli` 3.8.0 with its `@sentry/cli-linux-x64` binary) and
//! esbuild, pinned by `tests/fixtures/sentry-cli/package-lock.json`, installed into
//! `target/sentry-cli/` with `npm ci` when the lockfile changed; and a small app
//! (`tests/fixtures/sentry-cli/app/`) built, minified with a source map, in a temp dir.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::text;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sentry-cli")
}

/// The installed packages (npm only when the lockfile changed). Tests run in parallel: the
/// first to ask installs and the others wait, so none runs the tool while `npm ci` replaces it.
pub(crate) fn installed() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(install).clone()
}

fn install() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sentry-cli");
    std::fs::create_dir_all(&dir).expect("target/sentry-cli");
    let lock = std::fs::read(fixture().join("package-lock.json")).expect("committed lockfile");
    let installed_lock = std::fs::read(dir.join("package-lock.json")).ok();
    let binary = dir.join("node_modules/@sentry/cli-linux-x64/bin/sentry-cli");
    if binary.exists() && installed_lock.as_deref() == Some(lock.as_slice()) {
        return dir;
    }
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(fixture().join(file), dir.join(file)).expect("copy the pins");
    }
    // `--ignore-scripts`: the platform package already holds the binary; @sentry/cli's own
    // install script would only look for it.
    let output = Command::new("npm")
        .args([
            "ci",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
        ])
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|err| panic!("this test needs npm (Node.js) on PATH: {err}"));
    check("npm ci of @sentry/cli", &output);
    dir
}

pub(crate) fn check(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// `sentry-cli` with a clean environment: no update check, no `.env`, no user config.
pub(crate) fn sentry_cli(peers: &Path, home: &Path) -> Command {
    let mut command = Command::new(peers.join("node_modules/@sentry/cli-linux-x64/bin/sentry-cli"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SENTRY_DISABLE_UPDATE_CHECK", "true")
        .env("SENTRY_LOAD_DOTENV", "0")
        .current_dir(home);
    command
}

/// The app built into `dir/dist/app.min.js` with its map, debug ids injected by
/// `sentry-cli sourcemaps inject`; its debug id.
pub(crate) fn build_app(peers: &Path, dir: &Path) -> String {
    let source = dir.join("src");
    std::fs::create_dir_all(&source).expect("src");
    for file in ["cart.js", "main.js"] {
        std::fs::copy(fixture().join("app").join(file), source.join(file)).expect("app source");
    }
    let esbuild = Command::new(peers.join("node_modules/.bin/esbuild"))
        .args([
            "src/main.js",
            "--bundle",
            "--minify",
            "--sourcemap",
            "--log-level=warning",
            "--outfile=dist/app.min.js",
        ])
        .current_dir(dir)
        .output()
        .expect("esbuild");
    check("esbuild", &esbuild);
    let inject = sentry_cli(peers, dir)
        .args(["sourcemaps", "inject", "dist"])
        .output()
        .expect("sentry-cli");
    check("sentry-cli sourcemaps inject", &inject);
    let minified = std::fs::read_to_string(dir.join("dist/app.min.js")).expect("the bundle");
    minified
        .lines()
        .find_map(|line| line.strip_prefix("//# debugId="))
        .expect("a debug id injected")
        .trim()
        .to_string()
}

/// The V8 frames (function, line, column) of `checkout([{}])` thrown in the built bundle, run
/// by Node.js: real minified positions, innermost first.
pub(crate) fn thrown_frames(dir: &Path) -> Vec<(String, u64, u64)> {
    let script =
        "require('./dist/app.min.js'); try { checkout([{}]) } catch (e) { console.log(e.stack) }";
    let output = Command::new("node")
        .args(["-e", script])
        .current_dir(dir)
        .output()
        .expect("node");
    check("node", &output);
    let stack = text(&output.stdout);
    stack
        .lines()
        .filter(|line| line.contains("app.min.js:"))
        .map(|line| {
            let line = line.trim().trim_start_matches("at ");
            let function = line.split(" (").next().unwrap_or("").to_string();
            let position = line.rsplit("app.min.js:").next().unwrap_or("");
            let mut numbers = position.trim_end_matches(')').split(':');
            let mut next = || {
                numbers
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("line:column")
            };
            (function, next(), next())
        })
        .collect()
}
