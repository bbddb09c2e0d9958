//! Source map resolution: each frame is looked up in the map uploaded with the frame's
//! `debug_id` (Sentry's `debug_meta`, carried onto the frame by `compat`), else in the map
//! uploaded for the event's `release` and the frame's file, and gains
//! `"resolved":{"file","line","column","function","context"?}`. Runs at ingest (before the
//! write) and again on read for events that arrived before their map.
//!
//! Invariants: resolution never fails an event — a missing, broken or non-matching map leaves
//! the frame as it was; it runs on blocking threads only (decoding a map is CPU work). A debug
//! id names one map whatever the release and URL, so it is tried first; by release, a map is
//! found by the frame's file exactly, then by its path without origin and query (uploads name
//! either). Decoded maps are cached by map id, so a replaced map (new id) is never served
//! stale; the cache holds at most `CACHED_MAPS` maps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use redb::ReadTransaction;
use serde_json::{Map, Value, json};
use sourcemap::DecodedMap;

use super::event::ErrorEvent;
use super::sourcemaps;
use crate::accounts::model::OrgId;
use crate::store::StoreError;

/// Decoded maps kept in memory; a typical release has a handful of bundles.
const CACHED_MAPS: usize = 64;
/// Lines of original source shown around a resolved line, each cut to `CONTEXT_LINE_CHARS`.
const CONTEXT_LINES: usize = 3;
const CONTEXT_LINE_CHARS: usize = 240;
/// Lines above a resolved position searched for the enclosing function's name.
const FUNCTION_SEARCH_LINES: usize = 60;

type Cache = Mutex<HashMap<String, Arc<DecodedMap>>>;

/// Process-wide: decoded maps are immutable and keyed by their unique id.
fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Resolves every frame that can be; `true` when at least one frame gained `resolved`.
pub fn resolve_frames(
    txn: &ReadTransaction,
    org: &OrgId,
    release: Option<&str>,
    frames: &mut [Value],
) -> Result<bool, StoreError> {
    let mut releases = ReleasesWithMaps::default();
    match lookups(txn, org, (release, &mut releases), frames)? {
        Some(release) => resolve_with_maps(txn, org, release, frames),
        None => Ok(false),
    }
}

/// Whether any frame may resolve: `Some` with the release to look maps up by (`None` inside
/// when the release has no maps, or there is no release, but some frame has a debug id);
/// `None` when nothing can resolve. Most events of most sites have neither, and need no
/// look-up per frame.
fn lookups<'a>(
    txn: &ReadTransaction,
    org: &OrgId,
    (release, releases): (Option<&'a str>, &mut ReleasesWithMaps),
    frames: &[Value],
) -> Result<Option<Option<&'a str>>, StoreError> {
    let release = match release {
        Some(release) if releases.has_maps(txn, org, release)? => Some(release),
        _ => None,
    };
    let by_debug_id = frames.iter().any(|frame| frame.get("debug_id").is_some());
    Ok((release.is_some() || by_debug_id).then_some(release))
}

/// `resolve_frames` for frames that may resolve: by their debug id, else by `release`.
fn resolve_with_maps(
    txn: &ReadTransaction,
    org: &OrgId,
    release: Option<&str>,
    frames: &mut [Value],
) -> Result<bool, StoreError> {
    let mut changed = false;
    for frame in frames.iter_mut() {
        if frame.get("resolved").is_some() {
            continue;
        }
        let (Some(line), Some(column)) = (frame["line"].as_u64(), frame["column"].as_u64()) else {
            continue;
        };
        let by_debug_id = match frame["debug_id"].as_str().and_then(sourcemaps::debug_id) {
            Some(debug_id) => map_by_debug_id(txn, org, &debug_id)?,
            None => None,
        };
        let map = match (by_debug_id, release, frame["file"].as_str()) {
            (Some(map), _, _) => map,
            (None, Some(release), Some(file)) => match map_for(txn, org, release, file)? {
                Some(map) => map,
                None => continue,
            },
            (None, _, _) => continue,
        };
        if let Some(resolved) = resolve_position(&map, line, column)
            && let Some(object) = frame.as_object_mut()
        {
            object.insert("resolved".into(), resolved);
            changed = true;
        }
    }
    Ok(changed)
}

/// Whether a map could resolve some of an event's frames, without reading the store: it has a
/// release and frames or a stack, or a frame with a debug id (with or without a release).
pub fn may_resolve(event: &ErrorEvent) -> bool {
    let by_release = event.release.is_some() && (event.frames.is_some() || event.stack.is_some());
    let by_debug_id = event
        .frames
        .iter()
        .flatten()
        .any(|frame| frame.get("debug_id").is_some());
    by_release || by_debug_id
}

/// Resolves an event's frames for a reader: frames derived from its stack are filled in
/// first (`ErrorEvent::frames_mut`), so the reader sees them, resolved or not.
pub fn resolve_for_reading(
    txn: &ReadTransaction,
    org: &OrgId,
    event: &mut ErrorEvent,
) -> Result<bool, StoreError> {
    let release = event.release.clone();
    match event.frames_mut() {
        Some(frames) => resolve_frames(txn, org, release.as_deref(), frames),
        None => Ok(false),
    }
}

/// Resolves an event's frames before it is stored; `releases` is shared by the events read in
/// one transaction. Frames derived from the stack are kept only when a map resolved some of
/// them; otherwise they stay unstored (a parse of the stack gives them back).
pub fn resolve_for_storing(
    txn: &ReadTransaction,
    org: &OrgId,
    event: &mut ErrorEvent,
    releases: &mut ReleasesWithMaps,
) -> Result<bool, StoreError> {
    let sent = event.frames.as_deref().unwrap_or_default();
    // Derived frames never carry a debug id: without maps for the release, nothing resolves.
    let found = lookups(txn, org, (event.release.as_deref(), releases), sent)?;
    let Some(release) = found.map(|release| release.map(str::to_string)) else {
        return Ok(false);
    };
    let derived = event.frames.is_none();
    let changed = match event.frames_mut() {
        Some(frames) => resolve_with_maps(txn, org, release.as_deref(), frames)?,
        None => false,
    };
    if derived && !changed {
        event.frames = None;
    }
    Ok(changed)
}

/// Whether each release seen has source maps, looked up once per batch of events rather than
/// once per event (most batches hold a few releases).
#[derive(Debug, Default)]
pub struct ReleasesWithMaps(HashMap<String, bool>);

impl ReleasesWithMaps {
    fn has_maps(
        &mut self,
        txn: &ReadTransaction,
        org: &OrgId,
        release: &str,
    ) -> Result<bool, StoreError> {
        if let Some(known) = self.0.get(release) {
            return Ok(*known);
        }
        let has = sourcemaps::release_has_maps(txn, org, release)?;
        self.0.insert(release.to_string(), has);
        Ok(has)
    }
}

/// The decoded map of `release` for `file`, by exact name, then by path.
fn map_for(
    txn: &ReadTransaction,
    org: &OrgId,
    release: &str,
    file: &str,
) -> Result<Option<Arc<DecodedMap>>, StoreError> {
    for candidate in candidates(file) {
        if let Some(record) = sourcemaps::find_record(txn, org, release, &candidate)? {
            return decoded(txn, &record);
        }
    }
    Ok(None)
}

/// The decoded map uploaded with `debug_id`.
fn map_by_debug_id(
    txn: &ReadTransaction,
    org: &OrgId,
    debug_id: &str,
) -> Result<Option<Arc<DecodedMap>>, StoreError> {
    match sourcemaps::find_record_by_debug_id(txn, org, debug_id)? {
        Some(record) => decoded(txn, &record),
        None => Ok(None),
    }
}

/// A record's map, decoded, from the cache when it is there.
fn decoded(
    txn: &ReadTransaction,
    record: &sourcemaps::SourceMap,
) -> Result<Option<Arc<DecodedMap>>, StoreError> {
    let id = record.id.to_string();
    if let Some(map) = lock().get(&id) {
        return Ok(Some(map.clone()));
    }
    let text = sourcemaps::map_text(txn, record)?;
    // A map that does not decode was accepted by the upload's shallow check only; frames
    // simply stay unresolved.
    let Ok(decoded) = sourcemap::decode_slice(text.as_bytes()) else {
        tracing::debug!(map = %id, "source map does not decode");
        return Ok(None);
    };
    let decoded = Arc::new(decoded);
    let mut cached = lock();
    if cached.len() >= CACHED_MAPS {
        cached.clear();
    }
    cached.insert(id, decoded.clone());
    Ok(Some(decoded))
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Arc<DecodedMap>>> {
    // A panic while holding the lock cannot leave a half-written map: entries are inserted whole.
    cache()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The names an upload may have used for `file`: as is, without query, and its path.
fn candidates(file: &str) -> Vec<String> {
    let mut names = vec![file.to_string()];
    let without_query = file.split(['?', '#']).next().unwrap_or(file);
    names.push(without_query.to_string());
    if let Some((_, rest)) = without_query.split_once("://")
        && let Some(slash) = rest.find('/')
    {
        names.push(rest[slash..].to_string());
        names.push(format!("~{}", &rest[slash..]));
    }
    names.dedup();
    names
}

/// The original position of 1-based `line` and `column`.
pub fn resolve_position(map: &DecodedMap, line: u64, column: u64) -> Option<Value> {
    let line = u32::try_from(line.checked_sub(1)?).ok()?;
    let column = u32::try_from(column.saturating_sub(1)).ok()?;
    let token = map.lookup_token(line, column)?;
    // The lookup falls back to the last mapping of an earlier line; a position on a line with
    // no mapping of its own has no original.
    if token.get_dst_line() != line {
        return None;
    }
    let file = token.get_source()?;
    let source_line = token.get_src_line();
    let view = token.get_source_view();
    let function = view
        .and_then(|view| enclosing_function(view, source_line))
        .or_else(|| token.get_name().map(str::to_string));
    let mut resolved = Map::new();
    resolved.insert("file".into(), json!(file));
    resolved.insert("line".into(), json!(source_line + 1));
    resolved.insert("column".into(), json!(token.get_src_col() + 1));
    resolved.insert("function".into(), json!(function));
    if let Some(view) = view {
        resolved.insert("context".into(), context(view, source_line));
    }
    Some(Value::Object(resolved))
}

fn cut(line: &str) -> String {
    line.chars().take(CONTEXT_LINE_CHARS).collect()
}

/// `{"pre":[…],"line":"…","post":[…]}` around the 0-based `line`.
fn context(view: &sourcemap::SourceView, line: u32) -> Value {
    let get = |index: u32| view.get_line(index).map(cut);
    let first = line.saturating_sub(CONTEXT_LINES as u32);
    let pre: Vec<String> = (first..line).filter_map(get).collect();
    let post: Vec<String> = (line + 1..=line + CONTEXT_LINES as u32)
        .filter_map(get)
        .collect();
    json!({"pre": pre, "line": get(line), "post": post})
}

/// The name of the function whose definition most closely precedes the 0-based `line`:
/// `function name(`, `name(…) {` methods, `name = (…) =>` / `name = function`.
fn enclosing_function(view: &sourcemap::SourceView, line: u32) -> Option<String> {
    static PATTERN: OnceLock<regex::Regex> = OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        regex::Regex::new(
            r"(?x)
            function\*?\s+([A-Za-z_$][\w$]*)\s*\(
            | ([A-Za-z_$][\w$]*)\s*[:=]\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)
            | ^\s*(?:async\s+|static\s+|get\s+|set\s+)*([A-Za-z_$][\w$]*)\s*\([^()]*\)\s*\{",
        )
        .expect("the function pattern is valid")
    });
    let first = line.saturating_sub(FUNCTION_SEARCH_LINES as u32);
    (first..=line).rev().find_map(|index| {
        let text = view.get_line(index)?;
        let found = pattern.captures_iter(text).last()?;
        let name = found.get(1).or(found.get(2)).or(found.get(3))?.as_str();
        (!["if", "for", "while", "switch", "catch", "return"].contains(&name))
            .then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The esbuild fixture (tests/fixtures/sourcemaps/build.sh) and the V8 stack of its bundle.
    const MAP: &str = include_str!("../../tests/fixtures/sourcemaps/app.min.js.map");
    const STACK: &str = include_str!("../../tests/fixtures/sourcemaps/stack.txt");

    #[test]
    fn bundler_positions_resolve_to_source_function_and_context() {
        let map = sourcemap::decode_slice(MAP.as_bytes()).unwrap();
        let frames = crate::errors::stack::parse(STACK);
        let top = &frames[0];
        let resolved = resolve_position(&map, top.line.unwrap().into(), top.column.unwrap().into())
            .expect("the top frame resolves");
        assert_eq!(resolved["file"], "src/cart.js");
        assert_eq!(resolved["line"], 5);
        assert_eq!(resolved["function"], "total");
        assert!(
            resolved["context"]["line"]
                .as_str()
                .unwrap()
                .contains("item.price.amount")
        );
        assert_eq!(resolved["context"]["pre"].as_array().unwrap().len(), 3);
        let caller = &frames[1];
        let resolved = resolve_position(
            &map,
            caller.line.unwrap().into(),
            caller.column.unwrap().into(),
        )
        .unwrap();
        assert_eq!(
            (resolved["line"].as_u64(), resolved["function"].as_str()),
            (Some(11), Some("checkout"))
        );
        // Outside the mapped text nothing resolves, and line 0 is not a position.
        assert_eq!(resolve_position(&map, 40, 1), None);
        assert_eq!(resolve_position(&map, 0, 1), None);
    }

    #[test]
    fn events_with_a_release_or_a_debug_id_are_looked_up() {
        let event = |value: serde_json::Value| -> ErrorEvent {
            let mut fields = json!({"id": "evt_01JDZ5YV6F3N3T8K2M4P6Q8R0S", "level": "error",
                "message": "m", "url": "u", "timestamp": 1, "received_at": 1});
            fields
                .as_object_mut()
                .unwrap()
                .extend(value.as_object().unwrap().clone());
            serde_json::from_value(fields).unwrap()
        };
        let frame = json!([{"file": "a.js", "line": 1, "column": 2}]);
        let with_id = json!([{"file": "a.js", "line": 1, "column": 2, "debug_id": "x"}]);
        assert!(may_resolve(&event(
            json!({"release": "1", "frames": frame})
        )));
        assert!(may_resolve(&event(json!({"release": "1", "stack": "s"}))));
        assert!(
            may_resolve(&event(json!({"frames": with_id}))),
            "no release"
        );
        assert!(!may_resolve(&event(json!({"frames": frame}))));
        assert!(!may_resolve(&event(json!({"release": "1"}))));
    }

    #[test]
    fn uploads_are_found_by_url_path_or_tilde_path() {
        assert_eq!(
            candidates("https://shop.example.com/assets/app.min.js?v=3"),
            [
                "https://shop.example.com/assets/app.min.js?v=3",
                "https://shop.example.com/assets/app.min.js",
                "/assets/app.min.js",
                "~/assets/app.min.js"
            ]
        );
        assert_eq!(candidates("app.js"), ["app.js"]);
    }
}
