//! Fingerprints: which error group an event belongs to (CONTRACT section 3). In order of
//! preference: the client's `fingerprint`; else the error name plus the normalised in-app
//! frames (file path without origin, query and content hash; engine-neutral function, see
//! `engines.rs`); else an engine-neutral key of the message, or the message with numbers,
//! hex and quoted values masked.
//!
//! Invariants: pure and total (no input panics); the same inputs give the same fingerprint in
//! every process and version of this module. The rule is versioned: version 2 (engine-neutral)
//! is the group key, and version 1 (`fingerprint_v1`, frozen) is returned beside it so groups
//! stored before version 2 keep receiving their events (`db.rs`); a further change needs a
//! further version, never an edit of an existing one. Line and column numbers never enter a fingerprint
//! (they move with every build); neither does a frame outside the application (native code,
//! `node_modules`, browser extensions).
//!
//! Version 3 is version 2 read through source maps: a frame resolved through its release's
//! map (`"resolved"`, `resolve.rs`) enters with its original file and function, so minified
//! names, which differ between builds and say nothing, never decide a group. For an event
//! without a resolved frame it is version 2 exactly (same hash, same legacy key). An event with
//! resolved frames has no legacy key: its minified frames name another build's group as likely
//! as its own. Events stored before their map arrived are moved to the version 3 group when it
//! arrives (`regroup.rs`).

use std::borrow::Cow;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::engines;

/// In-app frames that enter a version 1 fingerprint (innermost first): enough to tell call sites apart
/// without letting deep recursion make every event unique.
const MAX_FINGERPRINT_FRAMES: usize = 16;

/// How a fingerprint was made (shown on the group, so users see why events share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    Client,
    Stack,
    Message,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Client => "client",
            Basis::Stack => "stack",
            Basis::Message => "message",
        }
    }
}

/// The fingerprint (32 hex digits) and how it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub hash: String,
    pub basis: Basis,
    /// The version 1 hash of the same event when it differs: a group stored before version 2
    /// is found under it (and then indexed under `hash` too).
    pub legacy: Option<String>,
}

/// What a fingerprint reads from an event.
pub struct Inputs<'a> {
    pub client: Option<&'a [Value]>,
    pub name: Option<&'a str>,
    pub frames: &'a [Value],
    pub message: &'a str,
}

/// Fingerprints of version 2 (the engine-neutral rule): the in-app frames up to the first
/// async continuation, without wrapper frames, at most this many (V8 prints 10 frames by
/// default, wrapper frames included, so a deeper prefix would differ between engines).
const MAX_ENGINE_FRAMES: usize = 6;

/// The fingerprint of an event (version 2) and, when version 1 differs, the version 1 hash
/// under which a group stored before the change is found (`Fingerprint::legacy`).
pub fn fingerprint(inputs: &Inputs<'_>) -> Fingerprint {
    if inputs.frames.iter().any(is_resolved) {
        return engine_neutral(inputs, source_view);
    }
    let mut current = engine_neutral(inputs, |frame| Cow::Borrowed(frame));
    let legacy = fingerprint_v1(inputs);
    if legacy.hash != current.hash {
        current.legacy = Some(legacy.hash);
    }
    current
}

/// Versions 2 and 3: the engine-neutral rule over each frame as `view` shows it (as sent, or
/// through its source map). Wrapper frames and async boundaries are told by the frame as the
/// engine printed it.
fn engine_neutral(inputs: &Inputs<'_>, view: fn(&Value) -> Cow<'_, Value>) -> Fingerprint {
    let mut frames: Vec<String> = Vec::new();
    for frame in inputs.frames {
        if engines::is_async_boundary(frame) || frames.len() == MAX_ENGINE_FRAMES {
            break;
        }
        let shown = view(frame);
        if is_in_app(&shown) && !engines::is_wrapper(frame) {
            frames.push(frame_part(&shown, engines::function_key));
        }
    }
    let message = || {
        engines::message_key(inputs.message)
            .unwrap_or_else(|| mask_message(engines::strip_message_prefix(inputs.message)))
    };
    from_parts(inputs, &frames, message)
}

/// Whether a source map gave the frame its original file.
fn is_resolved(frame: &Value) -> bool {
    frame["resolved"]["file"].is_string()
}

/// The frame as its source map gives it (original file, line and function; the client's
/// `in_app` kept), or as sent when it was not resolved.
pub fn source_view(frame: &Value) -> Cow<'_, Value> {
    if !is_resolved(frame) {
        return Cow::Borrowed(frame);
    }
    let resolved = &frame["resolved"];
    Cow::Owned(json!({
        "file": resolved["file"],
        "line": resolved["line"],
        "function": resolved["function"],
        "in_app": frame["in_app"],
    }))
}

/// Version 1, kept so that groups stored under it are still found (never change it).
fn fingerprint_v1(inputs: &Inputs<'_>) -> Fingerprint {
    let frames: Vec<String> = inputs
        .frames
        .iter()
        .filter(|frame| is_in_app(frame))
        .take(MAX_FINGERPRINT_FRAMES)
        .map(|frame| frame_part(frame, normalise_function))
        .collect();
    from_parts(inputs, &frames, || mask_message(inputs.message))
}

/// `file|function` of one frame, its function normalised by `function_key`.
fn frame_part(frame: &Value, function_key: fn(&str) -> String) -> String {
    let file = frame["file"]
        .as_str()
        .map(normalise_file)
        .unwrap_or_default();
    let function = frame["function"]
        .as_str()
        .map(function_key)
        .unwrap_or_default();
    format!("{file}|{function}")
}

/// The client's parts, else the name and frame parts, else the message key.
fn from_parts(inputs: &Inputs<'_>, frames: &[String], message: impl Fn() -> String) -> Fingerprint {
    // NUL separates parts: it cannot occur in a JSON-decoded string the client meant as text
    // without also being in the part, so distinct part lists hash distinct byte strings.
    if let Some(parts) = inputs.client.filter(|parts| !parts.is_empty()) {
        let parts = parts.iter().map(|part| part.as_str().unwrap_or_default());
        return digest(Basis::Client, parts);
    }
    if !frames.is_empty() {
        let name = inputs.name.unwrap_or("Error");
        return digest(
            Basis::Stack,
            std::iter::once(name).chain(frames.iter().map(String::as_str)),
        );
    }
    digest(Basis::Message, std::iter::once(message().as_str()))
}

fn digest<'a>(basis: Basis, parts: impl Iterator<Item = &'a str>) -> Fingerprint {
    let mut hasher = Sha256::new();
    hasher.update(basis.as_str());
    for part in parts {
        hasher.update([0]);
        hasher.update(part);
    }
    Fingerprint {
        hash: hex::encode(&hasher.finalize()[..16]),
        basis,
        legacy: None,
    }
}

/// A frame of the application's own code: it has a position, a real script URL, and is not
/// a dependency or an extension. A client's explicit `"in_app"` wins.
pub fn is_in_app(frame: &Value) -> bool {
    if let Some(in_app) = frame["in_app"].as_bool() {
        return in_app;
    }
    let Some(file) = frame["file"].as_str() else {
        return false;
    };
    let outside = ["<anonymous>", "native", "[native code]", ""].contains(&file)
        || file.starts_with("node:")
        || file.contains("/node_modules/")
        || [
            "chrome-extension:",
            "moz-extension:",
            "safari-extension:",
            "safari-web-extension:",
        ]
        .iter()
        .any(|scheme| file.starts_with(scheme));
    !outside && frame["line"].is_u64()
}

/// A script path without origin, query, fragment and content hashes: the same file in every
/// deployment. Blob URLs are random per page load, so they all become `blob:`.
pub fn normalise_file(file: &str) -> String {
    if file.starts_with("blob:") {
        return "blob:".to_string();
    }
    let without_query = file.split(['?', '#']).next().unwrap_or_default();
    let path = match without_query.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |slash| &rest[slash..]),
        None => without_query,
    };
    let (directory, name) = path.rsplit_once('/').unwrap_or(("", path));
    let name = mask_hashes(name);
    match path.contains('/') {
        true => format!("{directory}/{name}"),
        false => name,
    }
}

/// `app.3f9a1c2b.js`, `index-BxVz9a3K.js`, `chunk_77ab12cd.js` → `app.[hash].js`, …: a piece
/// of the name of at least 6 letters and digits holding a digit is taken for a content hash.
fn mask_hashes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut piece = String::new();
    let flush = |piece: &mut String, out: &mut String| {
        let is_hash = piece.len() >= 6
            && piece.chars().all(|c| c.is_ascii_alphanumeric())
            && piece.chars().any(|c| c.is_ascii_digit());
        out.push_str(if is_hash { "[hash]" } else { piece });
        piece.clear();
    };
    for c in name.chars() {
        if matches!(c, '.' | '-' | '_') {
            flush(&mut piece, &mut out);
            out.push(c);
        } else {
            piece.push(c);
        }
    }
    flush(&mut piece, &mut out);
    out
}

/// A function name without what varies between engines and call paths: V8's `async ` and
/// `[as alias]`, Gecko's `/<` closure markers.
pub fn normalise_function(function: &str) -> String {
    let function = function.strip_prefix("async ").unwrap_or(function);
    let function = match function.find(" [as ") {
        Some(at) => &function[..at],
        None => function,
    };
    function.trim_end_matches(['/', '<']).trim().to_string()
}

/// The message with quoted values, hex (including UUIDs) and numbers masked, so
/// `"user 42 not found"` and `"user 7 not found"` share a group.
pub fn mask_message(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    // Where each quote character next occurs, found once from the end, so masking stays
    // linear even for a message full of unclosed quotes.
    let mut next_quote = vec![None; chars.len() + 1];
    let mut seen: [Option<usize>; 3] = [None; 3];
    for index in (0..chars.len()).rev() {
        next_quote[index] = Some(seen);
        if let Some(slot) = quote_slot(chars[index]) {
            seen[slot] = Some(index);
        }
    }
    let mut out = String::with_capacity(message.len());
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if let Some(slot) = quote_slot(c)
            && let Some(Some(close)) = next_quote[index].map(|seen| seen[slot])
        {
            out.push_str("<quoted>");
            index = close + 1;
            continue;
        }
        if c.is_ascii_alphanumeric() {
            let start = index;
            while index < chars.len()
                && (chars[index].is_ascii_alphanumeric()
                    || chars[index] == '-' && chars[start..index].iter().all(is_hex_or_dash))
            {
                index += 1;
            }
            let word: String = chars[start..index].iter().collect();
            match mask_word(&word) {
                Some(mask) => out.push_str(mask),
                None => out.push_str(&mask_leading_number(&word)),
            }
            continue;
        }
        out.push(c);
        index += 1;
    }
    out
}

fn quote_slot(c: char) -> Option<usize> {
    match c {
        '\'' => Some(0),
        '"' => Some(1),
        '`' => Some(2),
        _ => None,
    }
}

fn is_hex_or_dash(c: &char) -> bool {
    c.is_ascii_hexdigit() || *c == '-'
}

/// `30s`, `500ms`, `2nd` → `<n>s`, …: a number with a unit is still a number.
fn mask_leading_number(word: &str) -> String {
    let digits = word.chars().take_while(char::is_ascii_digit).count();
    let rest = &word[digits..];
    match digits > 0 && rest.chars().all(|c| c.is_ascii_alphabetic()) {
        true => format!("<n>{rest}"),
        false => word.to_string(),
    }
}

fn word_is_hexish(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// The mask of a number or hex word; `None` keeps the word.
fn mask_word(word: &str) -> Option<&'static str> {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits == word.len() {
        return Some("<n>");
    }
    let hex = word
        .strip_prefix("0x")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_hexdigit()))
        || (word.len() >= 8 && digits > 0 && word_is_hexish(word));
    hex.then_some("<hex>")
}

#[cfg(test)]
#[path = "fingerprint_tests.rs"]
mod tests;
