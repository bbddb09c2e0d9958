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

/// A file without its `#[cfg(test)]` items (a `use` up to its `;`, a module or function up to
/// its matching `}`), so code written after a tests module is still checked.
fn without_tests(text: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at..];
        let (semicolon, brace) = (item.find(';'), item.find('{'));
        let end = match (semicolon, brace) {
            (Some(semicolon), Some(brace)) if semicolon < brace => Some(semicolon + 1),
            (_, Some(brace)) => matching_brace(item, brace),
            (Some(semicolon), None) => Some(semicolon + 1),
            (None, None) => None,
        };
        match end {
            Some(end) => rest = &item[end..],
            None => return kept,
        }
    }
    kept.push_str(rest);
    kept
}

/// The end (one past) of the block opened at `open`, counting braces.
fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, character) in text[open..].char_indices() {
        match character {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + index + 1);
                }
            }
            _ => {}
        }
    }
    None
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
            lines <= 500,
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

/// The capabilities (one folder each under `src/`).
const CAPABILITIES: [&str; 11] = [
    "accounts", "admin", "agents", "alerting", "auth", "compat", "errors", "ingest", "notify",
    "scim", "sso",
];

/// The modules above the capabilities (the composition root and the command line) and the
/// loose files beside them.
const UPPER_AND_LOOSE: [&str; 7] = [
    "server.rs",
    "cli",
    "config",
    "clock.rs",
    "systemd.rs",
    "lib.rs",
    "main.rs",
];

/// The layers below every capability: they know none.
const LOWER_LAYERS: [&str; 3] = ["store", "http", "secrets"];

/// Every arrow one capability may have to another (ARCHITECTURE.md draws the same list). An
/// arrow not listed here fails `capabilities_use_only_the_arrows_listed`.
const ALLOWED_ARROWS: &[(&str, &[&str])] = &[
    ("accounts", &[]),
    ("admin", &["accounts", "auth", "errors"]),
    ("agents", &["accounts", "auth"]),
    ("alerting", &["accounts", "agents", "auth", "notify"]),
    ("auth", &["accounts"]),
    (
        "compat",
        &["accounts", "alerting", "auth", "errors", "ingest"],
    ),
    ("errors", &["accounts", "alerting", "auth"]),
    ("ingest", &["accounts", "alerting", "auth", "errors"]),
    ("notify", &["accounts", "auth"]),
    ("scim", &["accounts", "auth"]),
    ("sso", &["accounts", "auth", "scim"]),
];

/// The top-level modules of the crate a piece of code names (`crate::x…` and
/// `use crate::{x…, y…}`).
fn crate_modules(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's outer level: `{a::b, c::{d, e}, f}` gives a, c, f.
            let (mut depth, mut start) = (0usize, 0usize);
            for (index, character) in group.char_indices() {
                match character {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push(first_name(&group[start..index]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(first_name(&group[start..index]));
                        start = index + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(first_name(rest));
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

fn first_name(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// `store`, `http` and `secrets` know no capability; capabilities never reach up into
/// `server` or `cli`.
#[test]
fn dependencies_flow_one_way() {
    for (path, text) in sources() {
        let code = without_tests(&text);
        let layer = path.split('/').next().unwrap_or("");
        let used = crate_modules(&code);
        if LOWER_LAYERS.contains(&layer) {
            for capability in CAPABILITIES {
                assert!(
                    !used.iter().any(|name| name == capability),
                    "{path} ({layer}) must not use crate::{capability}"
                );
            }
        }
        if CAPABILITIES.contains(&layer) || LOWER_LAYERS.contains(&layer) {
            for upper in ["server", "cli"] {
                assert!(
                    !used.iter().any(|name| name == upper),
                    "{path} must not use crate::{upper}"
                );
            }
        }
    }
}

/// Every folder and file under `src/` is a capability, a lower layer or above them, so none
/// escapes the arrow checks.
#[test]
fn every_module_has_its_place_in_the_layers() {
    for (path, _) in sources() {
        let top = path.split('/').next().unwrap_or("");
        assert!(
            CAPABILITIES.contains(&top)
                || LOWER_LAYERS.contains(&top)
                || UPPER_AND_LOOSE.contains(&top),
            "src/{path}: {top} is neither a capability, a lower layer nor above them \
             (tests/integration/tidy.rs CAPABILITIES, LOWER_LAYERS, UPPER_AND_LOOSE)"
        );
    }
}

/// A capability uses another only along an arrow of `ALLOWED_ARROWS`.
#[test]
fn capabilities_use_only_the_arrows_listed() {
    for (path, text) in sources() {
        let layer = path.split('/').next().unwrap_or("");
        let Some((_, allowed)) = ALLOWED_ARROWS.iter().find(|(from, _)| *from == layer) else {
            continue;
        };
        for name in crate_modules(&without_tests(&text)) {
            if CAPABILITIES.contains(&name.as_str()) && name != layer {
                assert!(
                    allowed.contains(&name.as_str()),
                    "{path} uses crate::{name}: {layer} -> {name} is not an allowed arrow \
                     (tests/integration/tidy.rs ALLOWED_ARROWS, ARCHITECTURE.md)"
                );
            }
        }
    }
}

/// The allow-list itself has no cycle: dependencies between capabilities flow one way.
#[test]
fn the_allowed_arrows_have_no_cycle() {
    fn visit<'a>(node: &'a str, path: &mut Vec<&'a str>) {
        assert!(
            !path.contains(&node),
            "a cycle between capabilities: {} -> {node}",
            path.join(" -> ")
        );
        path.push(node);
        let targets = ALLOWED_ARROWS
            .iter()
            .find(|(from, _)| *from == node)
            .map_or(&[][..], |(_, to)| to);
        for next in targets {
            visit(next, path);
        }
        path.pop();
    }
    for capability in CAPABILITIES {
        visit(capability, &mut Vec::new());
    }
}

/// A capability reads another only through its public face, never its `db` module.
#[test]
fn no_capability_reaches_into_anothers_db() {
    for (path, text) in sources() {
        let layer = path.split('/').next().unwrap_or("");
        let code = without_tests(&text);
        for other in CAPABILITIES.iter().filter(|other| **other != layer) {
            let pattern = format!("{other}::db");
            let reaches = code.match_indices(&pattern).any(|(at, _)| {
                let after = code[at + pattern.len()..].chars().next();
                !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            assert!(
                !reaches,
                "{path} reaches into {other}'s db (`{pattern}`); use {other}'s public face"
            );
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
