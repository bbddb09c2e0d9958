//! The vendored third-party files match `web/vendor/MANIFEST.json`: each listed file has its
//! recorded SHA-256, and every file under `web/vendor/` (but the manifest and its `update`
//! script) and `tests/browser/vendor/` is listed, so nothing unrecorded is served or run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn manifest() -> Value {
    let path = Path::new(ROOT).join("web/vendor/MANIFEST.json");
    let text = std::fs::read_to_string(&path).expect("web/vendor/MANIFEST.json");
    serde_json::from_str(&text).expect("the manifest is JSON")
}

/// Every manifest entry as (path from the repository root, SHA-256 in hex).
fn listed_files(manifest: &Value) -> Vec<(String, String)> {
    let packages = manifest["packages"].as_array().expect("a `packages` list");
    packages
        .iter()
        .flat_map(|package| package["files"].as_array().expect("a `files` list"))
        .map(|file| {
            let path = file["path"].as_str().expect("a file `path`");
            let sha256 = file["sha256"].as_str().expect("a file `sha256`");
            (path.to_string(), sha256.to_string())
        })
        .collect()
}

/// Every file under `dir`, as paths from the repository root.
fn files_under(dir: &str) -> Vec<String> {
    let mut pending = vec![Path::new(ROOT).join(dir)];
    let mut found = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path: PathBuf = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(ROOT).expect("under the repository");
                found.push(relative.display().to_string());
            }
        }
    }
    found
}

#[test]
fn every_vendored_file_matches_its_manifest_digest() {
    let listed = listed_files(&manifest());
    assert!(!listed.is_empty(), "the manifest lists no file");
    for (path, expected) in listed {
        let bytes = std::fs::read(Path::new(ROOT).join(&path))
            .unwrap_or_else(|err| panic!("{path} is listed in the manifest but unreadable: {err}"));
        let actual = hex::encode(Sha256::digest(&bytes));
        assert_eq!(actual, expected, "{path} differs from its manifest SHA-256");
    }
}

#[test]
fn every_vendored_file_is_in_the_manifest() {
    let listed: BTreeSet<String> = listed_files(&manifest())
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let unlisted: Vec<String> = files_under("web/vendor")
        .into_iter()
        .chain(files_under("tests/browser/vendor"))
        .filter(|path| path != "web/vendor/MANIFEST.json" && path != "web/vendor/update")
        .filter(|path| !listed.contains(path))
        .collect();
    assert!(
        unlisted.is_empty(),
        "vendored but not in web/vendor/MANIFEST.json: {unlisted:?}"
    );
}
