//! Fuzz target for the ingest body decoder (`lookout::ingest::body`): `decode` under a size
//! limit, then `parse_batch` and `check_count`, as `/ingest/*` runs them on a request body.
//!
//! Input: one mode byte (bits 0–1: the body's `Content-Encoding`: none, gzip, deflate, br),
//! the limit as a big-endian `u16`, then the body as it arrives on the wire.
//!
//! Properties, beyond "never panics": a decoded body is never longer than the limit and the
//! limit is exact (the same body passes at its own length and is 413 one byte below); inflating
//! gzip and deflate allocates in proportion to the limit, not to what the body would expand to
//! (brotli's ring buffer is sized by the window the stream declares, at most 16 MiB); gzip of any
//! body, and of any accepted batch, decodes back to the same bytes and items; an accepted batch
//! serialised again is accepted again with the same items; every rejection has the expected
//! code and a detail that is one of the fixed messages, so it never quotes the body.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use lookout::http::{ApiError, ErrorCode};
use lookout::ingest::body::{Encoding, check_count, decode, parse_batch};
use lookout::ingest::item::Item;
use serde_json::Value;

const FIELD: &str = "events";

/// What inflating may allocate besides the decoded bytes (twice the limit, as a growing `Vec`
/// doubles) and copies of the input: flate2's 32 KiB input buffer and the inflater's 32 KiB
/// window and tables (about 74 KiB measured), and the `extra` field of a gzip header, which
/// flate2 allocates at the length the header claims before reading it (at most `u16::MAX`,
/// and the header of the previous member may still be held). A constant, whatever the body.
const INFLATER_ALLOWANCE: usize = (96 << 10) + 2 * (64 << 10);

fuzz_target!(|data: &[u8]| {
    let [mode, limit_high, limit_low, raw @ ..] = data else {
        return;
    };
    let limit = usize::from(u16::from_be_bytes([*limit_high, *limit_low]));
    let encoding = match mode & 3 {
        0 => Encoding::Identity,
        1 => Encoding::Gzip,
        2 => Encoding::Deflate,
        _ => Encoding::Brotli,
    };

    let (decoded, peak) = measure_peak(|| decode(raw, encoding, limit));
    let allowed = 2 * (limit + 1) + 2 * raw.len() + INFLATER_ALLOWANCE;
    assert!(
        encoding == Encoding::Brotli || peak <= allowed,
        "decoding allocated {peak} bytes, allowed {allowed}"
    );
    match (&decoded, encoding) {
        (Ok(bytes), Encoding::Identity) => assert_eq!(&**bytes, raw),
        (Err(error), Encoding::Identity) => {
            assert!(raw.len() > limit);
            assert_eq!(error.code, ErrorCode::BodyTooLarge);
        }
        (Ok(bytes), compressed) => check_limit_is_exact(raw, bytes, compressed),
        (Err(error), _) => assert!(
            matches!(
                error.code,
                ErrorCode::BodyTooLarge | ErrorCode::InvalidPayload
            ),
            "{error:?}"
        ),
    }
    if let Err(error) = &decoded {
        check_detail(error);
    }
    if let Ok(bytes) = &decoded {
        assert!(
            bytes.len() <= limit,
            "{} bytes past the limit {limit}",
            bytes.len()
        );
    }

    check_gzip_round_trip(raw, limit);
    if let Ok(bytes) = decoded {
        check_batch(&bytes);
    }
});

/// A compressed body that decodes to `bytes` decodes the same at exactly its length, and is
/// 413 at one byte less.
fn check_limit_is_exact(raw: &[u8], bytes: &[u8], encoding: Encoding) {
    let at_length = decode(raw, encoding, bytes.len());
    assert_eq!(at_length.as_deref().ok(), Some(bytes));
    if let Some(below) = bytes.len().checked_sub(1) {
        let error = decode(raw, encoding, below).expect_err("one byte past the limit");
        assert_eq!(error.code, ErrorCode::BodyTooLarge);
    }
}

/// Any bytes, gzipped, decode back to themselves when they fit the limit and are 413 when not.
fn check_gzip_round_trip(raw: &[u8], limit: usize) {
    let zipped = gzip(raw);
    match decode(&zipped, Encoding::Gzip, limit) {
        Ok(bytes) => assert_eq!(&*bytes, raw),
        Err(error) => {
            assert!(raw.len() > limit, "{error:?}");
            assert_eq!(error.code, ErrorCode::BodyTooLarge);
        }
    }
}

/// A batch is accepted or rejected as `invalid_payload`; an accepted one reads the same from
/// its gzip and from its own serialisation, and its count limit is exact.
fn check_batch(bytes: &[u8]) {
    let items: Vec<Value> = match parse_batch(bytes, FIELD) {
        Ok(items) => items.iter().map(Item::to_value).collect(),
        Err(error) => {
            assert_eq!(error.code, ErrorCode::InvalidPayload);
            check_detail(&error);
            return;
        }
    };
    let compressed = gzip(bytes);
    let zipped = decode(&compressed, Encoding::Gzip, bytes.len()).expect("gzip of a batch");
    let unzipped: Vec<Value> = parse_batch(&zipped, FIELD)
        .expect("gzip of a batch")
        .iter()
        .map(Item::to_value)
        .collect();
    assert_eq!(unzipped, items);

    let again = serde_json::json!({ FIELD: &items }).to_string();
    let reread: Vec<Value> = parse_batch(again.as_bytes(), FIELD)
        .expect("a batch serialised again")
        .iter()
        .map(Item::to_value)
        .collect();
    assert_eq!(reread.len(), items.len());
    for (first, second) in items.iter().zip(&reread) {
        assert!(same_value(first, second), "{first} became {second}");
    }

    assert!(check_count(&items, items.len()).is_ok());
    if let Some(fewer) = items.len().checked_sub(1) {
        let error = check_count(&items, fewer).expect_err("one item past the count");
        assert_eq!(error.code, ErrorCode::TooManyEvents);
    }
}

/// JSON equality, except that a float may move by a few ULPs: serde_json parses floats with
/// best-effort precision unless its `float_roundtrip` feature is on, and Lookout leaves it off.
fn same_value(first: &Value, second: &Value) -> bool {
    match (first, second) {
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            a == b || (a.to_bits().abs_diff(b.to_bits()) <= 4 && a.signum() == b.signum())
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, value)| b.get(key).is_some_and(|other| same_value(value, other)))
        }
        _ => first == second,
    }
}

/// Rejection details are fixed messages with numbers in them (the limit, a line and column):
/// anything else could be a piece of the body.
fn check_detail(error: &ApiError) {
    let mut shape = String::new();
    for character in error.detail.chars() {
        if !character.is_ascii_digit() {
            shape.push(character);
        } else if !shape.ends_with('N') {
            shape.push('N');
        }
    }
    let known = [
        "the request body exceeds N bytes",
        "the body is not valid gzip",
        "the body is not valid deflate",
        "the body is not valid brotli",
        "the body is not valid JSON (syntax error at line N column N)",
        "the body is not valid JSON (unexpected end at line N column N)",
        "the body is not valid JSON (unsupported value at line N column N)",
        "the body must be a JSON object with an array \"events\"",
        "\"events\" must be an array",
        "the body has no \"events\" array",
    ];
    assert!(
        known.contains(&shape.as_str()),
        "unexpected detail {:?}",
        error.detail
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("writing to a Vec");
    encoder.finish().expect("writing to a Vec")
}

/// Runs `work` and returns its result with the most heap it held at once beyond what was held
/// before (libFuzzer runs one input at a time on one thread, so nothing else allocates).
fn measure_peak<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let result = work();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    (result, peak)
}

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes live and their peak.
struct CountingAllocator;

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;
