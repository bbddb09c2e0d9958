//! The real `oidc-provider` npm package as an OpenID provider for the SSO tests
//! (`tests/fixtures/oidc-provider/`, pinned by its committed `package-lock.json`): installed into
//! `target/oidc-provider/` with `npm ci --offline-first` when the lockfile changed, started on a
//! loopback port with one confidential client, and killed when dropped. Its development sign-in
//! accepts any login, whose e-mail becomes the account (verified). Shared by the integration
//! suite (an HTTP client walks its pages) and the browser suite (Chromium does).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::harness::text;

pub const CLIENT_ID: &str = "lookout-e2e";
pub const CLIENT_SECRET: &str = "an e2e client secret";

/// The provider's files, installed under `target/` (npm only when the lockfile changed). Tests
/// run in parallel: the first to ask installs and the others wait for it.
fn installed_provider() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(install_provider).clone()
}

fn install_provider() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/fixtures/oidc-provider");
    let dir = root.join("target/oidc-provider");
    std::fs::create_dir_all(&dir).expect("target/oidc-provider");
    let lock = std::fs::read(fixture.join("package-lock.json")).expect("committed lockfile");
    let installed_lock = std::fs::read(dir.join("package-lock.json")).ok();
    let has_modules = dir.join("node_modules/oidc-provider/package.json").exists();
    for file in ["package.json", "package-lock.json", "provider.mjs"] {
        std::fs::copy(fixture.join(file), dir.join(file)).expect("copy provider file");
    }
    if has_modules && installed_lock.as_deref() == Some(lock.as_slice()) {
        return dir;
    }
    let output = Command::new("npm")
        .args([
            "ci",
            "--offline-first",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
        ])
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|err| {
            panic!("this test needs npm (Node.js) on PATH to install oidc-provider: {err}")
        });
    assert!(
        output.status.success(),
        "npm ci of oidc-provider failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    dir
}

/// The running provider; killed when dropped.
pub struct NodeProvider {
    child: Child,
    pub issuer: String,
}

impl Drop for NodeProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_provider(redirect_uri: &str) -> NodeProvider {
    let dir = installed_provider();
    let mut child = Command::new("node")
        .arg("provider.mjs")
        .current_dir(&dir)
        .env("CLIENT_ID", CLIENT_ID)
        .env("CLIENT_SECRET", CLIENT_SECRET)
        .env("REDIRECT_URI", redirect_uri)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("this test needs node on PATH: {err}"));
    let stdout = child.stdout.take().expect("provider stdout");
    let mut lines = BufReader::new(stdout).lines();
    let issuer = loop {
        let line = lines
            .next()
            .expect("the provider printed its address")
            .expect("provider output");
        if let Some(issuer) = line.strip_prefix("listening on ") {
            break issuer.to_string();
        }
    };
    // Keep reading, so a later line never meets a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    NodeProvider { child, issuer }
}
