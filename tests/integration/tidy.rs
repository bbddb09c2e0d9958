//! Tidy checks over the source tree: rules of ARCHITECTURE.md that a compiler cannot see.

use std::path::{Path, PathBuf};

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} source files", files.len());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read source");
            let relative = path.strip_prefix(&root).unwrap().display().to_string();
            (relative, text)
        })
        .collect()
}

/// The part of a file before its unit tests.
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

#[test]
fn every_file_opens_with_a_module_doc() {
    for (path, text) in sources() {
        assert!(
            text.starts_with("//!"),
            "{path} must open with a //! comment saying what it owns"
        );
    }
}

#[test]
fn files_stay_small() {
    for (path, text) in sources() {
        let lines = text.lines().count();
        assert!(
            lines <= 650,
            "{path} has {lines} lines: split it by meaning"
        );
    }
}

/// API routes must be mounted through `OpenApiRouter::routes(routes!(..))` so that the
/// OpenAPI document lists every one of them.
#[test]
fn api_routes_are_never_mounted_around_the_openapi_router() {
    let forbidden = [
        ".route(\"/api",
        ".route(\"/ingest",
        ".nest(\"/api",
        ".nest(\"/ingest",
        "_service(\"/api",
        "_service(\"/ingest",
    ];
    for (path, text) in sources() {
        for pattern in forbidden {
            assert!(
                !text.contains(pattern),
                "{path} mounts an API route with `{pattern}` outside the OpenAPI router"
            );
        }
    }
}

/// `store` and `http` know no capability; capabilities never reach up into `server` or `cli`.
#[test]
fn dependencies_flow_one_way() {
    let capabilities = [
        "accounts", "auth", "admin", "ingest", "search", "alerting", "notify", "agents",
    ];
    for (path, text) in sources() {
        let code = without_tests(&text);
        let layer = path.split('/').next().unwrap_or("");
        if layer == "store" || layer == "http" {
            for capability in capabilities {
                let reference = format!("crate::{capability}");
                assert!(
                    !code.contains(&reference),
                    "{path} ({layer}) must not use {reference}"
                );
            }
        }
        if capabilities.contains(&layer) || layer == "store" || layer == "http" {
            for upper in ["crate::server", "crate::cli"] {
                assert!(!code.contains(upper), "{path} must not use {upper}");
            }
        }
    }
}

/// Configuration is the only reader of the environment.
#[test]
fn only_config_reads_the_environment() {
    for (path, text) in sources() {
        if path.starts_with("config") {
            continue;
        }
        for pattern in ["env::var(", "env::vars(", "env::var_os("] {
            assert!(
                !text.contains(pattern),
                "{path} reads the environment; go through Config"
            );
        }
    }
}
