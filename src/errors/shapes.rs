//! Fingerprints remembered by the shape of a stack: the same error arrives again and again with
//! the same frames (only line and column numbers, the message's numbers and ids, the time
//! differ), and its fingerprint is a pure function of a few facts of each frame. `fingerprints`
//! finds an event's fingerprint by those facts when a recent event had them, so the frames are
//! parsed but not turned into JSON, normalised, masked and hashed again.
//!
//! Invariants: a shape holds every input the fingerprint reads (the error name; per frame the
//! file, function, `in_app`, whether it has a line, `async`, `eval`), each length-prefixed, so
//! two events with one shape have one fingerprint; only fingerprints made from frames (basis
//! `stack`, which never read the message) are remembered; events with a client fingerprint or
//! with frames a source map resolved are fingerprinted directly. The memory is bounded
//! (`MAX_SHAPE_BYTES`, each shape at most `MAX_SHAPE_KEY`): when full it starts again empty.

use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value;

use super::db::fingerprint_of;
use super::event::ErrorEvent;
use super::fingerprint::{Basis, Fingerprint};
use super::stack::{self, Frame};

/// Bytes of shapes kept (keys and fingerprints, with a per-entry allowance) before the cache
/// starts again empty.
const MAX_SHAPE_BYTES: usize = 4 << 20;
/// What an entry costs besides its key: the fingerprint's strings and the map's slot.
const ENTRY_OVERHEAD: usize = 160;
/// The longest shape remembered: a longer one (a client's thousands of frames) is
/// fingerprinted every time rather than crowding out the others.
const MAX_SHAPE_KEY: usize = 64 << 10;

struct Shapes {
    /// Hashed with foldhash (seeded per process): a shape is a kilobyte or more, and SipHash
    /// over it, under this lock, was a twentieth of a request thread's time.
    known: foldhash::HashMap<Box<[u8]>, Arc<Fingerprint>>,
    bytes: usize,
}

static SHAPES: LazyLock<Mutex<Shapes>> = LazyLock::new(|| {
    Mutex::new(Shapes {
        known: foldhash::HashMap::default(),
        bytes: 0,
    })
});

/// Shapes found so far (tests only).
#[cfg(test)]
static HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The facts of one frame that a fingerprint reads.
struct Facts<'a> {
    file: Option<&'a str>,
    function: Option<&'a str>,
    in_app: Option<bool>,
    has_line: bool,
    is_async: bool,
    is_eval: bool,
}

impl<'a> Facts<'a> {
    fn of_json(frame: &'a Value) -> Facts<'a> {
        Facts {
            file: frame["file"].as_str(),
            function: frame["function"].as_str(),
            in_app: frame["in_app"].as_bool(),
            has_line: frame["line"].is_u64(),
            is_async: frame["async"].as_bool() == Some(true),
            is_eval: frame["eval"].as_bool() == Some(true),
        }
    }

    /// As `Frame::to_json` would show the frame.
    fn of_parsed(frame: &Frame<'a>) -> Facts<'a> {
        Facts {
            file: Some(frame.file),
            function: frame.function,
            in_app: None,
            has_line: frame.line.is_some(),
            is_async: frame.is_async,
            is_eval: frame.is_eval,
        }
    }
}

/// Appends the shape of an event to `key`: its name and the facts of each frame, each text
/// length-prefixed.
fn shape<'a>(key: &mut Vec<u8>, name: Option<&str>, frames: impl Iterator<Item = Facts<'a>>) {
    fn text(key: &mut Vec<u8>, text: Option<&str>) {
        match text {
            None => key.push(0),
            Some(text) => {
                key.push(1);
                key.extend_from_slice(&(text.len() as u32).to_le_bytes());
                key.extend_from_slice(text.as_bytes());
            }
        }
    }
    text(key, name);
    for facts in frames {
        text(key, facts.file);
        text(key, facts.function);
        let in_app = match facts.in_app {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        };
        key.push(in_app | u8::from(facts.has_line) << 2 | u8::from(facts.is_async) << 3);
        key.push(u8::from(facts.is_eval));
    }
}

/// Appends the shape of an event to `key` and answers `true`, unless it is fingerprinted
/// directly (a client fingerprint, resolved frames, or neither frames nor a stack): then
/// `key` is left as it was.
fn shape_of(event: &ErrorEvent, key: &mut Vec<u8>) -> bool {
    if event
        .fingerprint
        .as_ref()
        .is_some_and(|parts| !parts.is_empty())
    {
        return false;
    }
    let name = event.name.as_deref();
    match (&event.frames, &event.stack) {
        (Some(frames), _) if frames.iter().any(|frame| frame["resolved"].is_object()) => {
            return false;
        }
        (Some(frames), _) => shape(key, name, frames.iter().map(Facts::of_json)),
        // The frames are read as they are parsed: none is kept.
        (None, Some(text)) => shape(key, name, stack::frames(text).map(|f| Facts::of_parsed(&f))),
        (None, None) => return false,
    }
    true
}

/// The fingerprint of each event (as `fingerprint_of` gives it), by shape where one is known.
/// Events of one shape share one fingerprint (an `Arc`, not a copy each). The batch's shapes
/// are written one after another into one buffer.
pub fn fingerprints(events: &[ErrorEvent]) -> Vec<Arc<Fingerprint>> {
    let mut keys = Vec::with_capacity(events.len() * 512);
    let spans: Vec<Option<Range<usize>>> = events
        .iter()
        .map(|event| {
            let start = keys.len();
            shape_of(event, &mut keys).then_some(start..keys.len())
        })
        .collect();
    let key_of = |span: &Option<Range<usize>>| span.clone().map(|span| &keys[span]);
    let mut found: Vec<Option<Arc<Fingerprint>>> = {
        let shapes = SHAPES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let found: Vec<Option<Arc<Fingerprint>>> = spans
            .iter()
            .map(|span| shapes.known.get(key_of(span)?).cloned())
            .collect();
        #[cfg(test)]
        HITS.fetch_add(
            found.iter().flatten().count(),
            std::sync::atomic::Ordering::Relaxed,
        );
        found
    };
    let mut learned: Vec<(Box<[u8]>, Arc<Fingerprint>)> = Vec::new();
    for ((event, span), slot) in events.iter().zip(&spans).zip(found.iter_mut()) {
        if slot.is_some() {
            continue;
        }
        // A shape not known yet: fingerprinted as any event is (its stack parsed once more).
        let computed = Arc::new(fingerprint_of(event));
        if let Some(key) = key_of(span)
            && computed.basis == Basis::Stack
            && key.len() <= MAX_SHAPE_KEY
        {
            learned.push((key.into(), Arc::clone(&computed)));
        }
        *slot = Some(computed);
    }
    if !learned.is_empty() {
        let mut shapes = SHAPES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (key, fingerprint) in learned {
            let cost = key.len() + ENTRY_OVERHEAD;
            if shapes.bytes + cost > MAX_SHAPE_BYTES {
                shapes.known.clear();
                shapes.bytes = 0;
            }
            if shapes.known.insert(key, fingerprint).is_none() {
                shapes.bytes += cost;
            }
        }
    }
    found.into_iter().flatten().collect()
}

#[cfg(test)]
fn hits() -> usize {
    HITS.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
#[path = "shapes_tests.rs"]
mod tests;
