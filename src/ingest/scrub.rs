//! Scrubbing of likely personal data from ingested items, before the first write
//! (`WEB_INGEST_SCRUB_PII`, CONTRACT section 3; docs/ingest.md lists the shapes).
//!
//! Every string of an item is scrubbed, object keys included, at every depth and whatever its
//! field is called; so is every number that is a Luhn-valid card number (it becomes the string
//! `[card]`). An item's own field names are only looked up, never stored, so they are the one
//! kind of key left as sent. The text passes are in `text.rs`, names and their values in
//! `names.rs`. Only a few top-level fields, whose values are structure rather than data, keep
//! their form:
//! - times, positions, counts and durations (`timestamp`, `started_at`, `ended_at`,
//!   `start_time`, `end_time`, `duration_ms`, `page_views`, `errors`, a frame's `line` and
//!   `column`) keep their numbers, so an epoch millisecond is never taken for a card;
//! - trace and span ids that are hex digits are kept as they are;
//! - client ids (`event_id`, `id`, `session_id`) are scrubbed except for card numbers, so a
//!   numeric id keeps the one value that deduplicates and links items;
//! - `release` is scrubbed except for IPv4 addresses: a dotted number there is a version
//!   (`1.2.3.4`, `v10.0.0.1`), and source maps are matched on it;
//! - `visitor_id` is kept: it is stored only as a digest.
//!
//! Invariants: pure and total (no input panics, nothing is logged); the markers contain nothing
//! that a later pass would scrub again, so scrubbing twice changes nothing more.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

mod clues;
mod names;
mod text;

use super::item::{Item, Slot};
use clues::Clues;
pub use names::is_sensitive_name;
use text::{Passes, is_card_number, scrub_text_with};
pub use text::{luhn_valid, scrub_text};

pub const EMAIL: &str = "[email]";
pub const IP: &str = "[ip]";
pub const CARD: &str = "[card]";
pub const TOKEN: &str = "[token]";
pub const REDACTED: &str = "[redacted]";

/// How the value of one field is scrubbed.
#[derive(Clone, Copy)]
enum Rule {
    /// Data: every string, key and card-like number, at any depth.
    Everything,
    /// A time, position, count or duration: a number is kept, anything else is data.
    Quantity,
    /// A client id: text scrubbed but for card numbers; a number is kept (and rejected later).
    ClientId,
    /// A trace or span id: kept when it is hex digits.
    HexId,
    /// `release`: text scrubbed but for IPv4 addresses (dotted numbers are versions).
    Release,
    /// `visitor_id`: kept, since only its digest is stored.
    Digested,
    /// `frames`: objects whose `line` and `column` are quantities.
    Frames,
}

/// The rule of a top-level field of an item (of any kind: the names do not clash).
fn item_field_rule(name: &str) -> Rule {
    match name {
        "timestamp" | "started_at" | "ended_at" | "start_time" | "end_time" | "duration_ms"
        | "page_views" | "errors" => Rule::Quantity,
        "event_id" | "id" | "session_id" => Rule::ClientId,
        "trace_id" | "span_id" | "parent_span_id" => Rule::HexId,
        "release" => Rule::Release,
        "visitor_id" => Rule::Digested,
        "frames" => Rule::Frames,
        _ => Rule::Everything,
    }
}

/// The rule of a field of a frame.
fn frame_field_rule(name: &str) -> Rule {
    match name {
        "line" | "column" => Rule::Quantity,
        _ => Rule::Everything,
    }
}

/// Scrubs every string (and card-like number) of an ingested item in place, each field by the
/// rule its name gives (a sensitive name's value is replaced whole, whatever it holds).
pub fn scrub_item(item: &mut Item<'_>) {
    let Some(fields) = item.fields_mut() else {
        // Not an object: refused when it is read, and nothing of it is kept.
        return;
    };
    for (name, slot) in fields.iter_mut() {
        if is_sensitive_name(name) && !slot.is_null() {
            *slot = Slot::Text(Cow::Borrowed(REDACTED));
            continue;
        }
        let rule = item_field_rule(name);
        match slot {
            Slot::Text(text) => {
                if let Some(passes) = text_passes(rule, text)
                    && let Cow::Owned(scrubbed) = scrub_text_with(text, &Clues::of(text), passes)
                {
                    *text = Cow::Owned(scrubbed);
                }
            }
            Slot::Json(value) => {
                scrub_by_rule(value, rule);
                // A card number sent as a number is now the text `[card]`, read as text.
                if let Value::String(text) = value {
                    *slot = Slot::Text(Cow::Owned(std::mem::take(text)));
                }
            }
        }
    }
}

/// Scrubs a release name (`release` of items and of source map uploads): as any text, except
/// that dotted numbers are versions, never addresses.
pub fn scrub_release(release: &str) -> Cow<'_, str> {
    scrub_text_with(release, &Clues::of(release), Passes::RELEASE)
}

/// Scrubs the keys of an object, then each value by the rule its key names (a sensitive key's
/// value is replaced whole, whatever it holds).
fn scrub_fields(fields: &mut Map<String, Value>, rule_of: fn(&str) -> Rule) {
    scrub_keys(fields);
    for (name, value) in fields.iter_mut() {
        if is_sensitive_name(name) && !value.is_null() {
            *value = Value::String(REDACTED.to_string());
        } else {
            scrub_by_rule(value, rule_of(name));
        }
    }
}

/// Renames the keys that hold personal data. Keys that scrub to the same text keep the value
/// of the last one (in key order).
fn scrub_keys(fields: &mut Map<String, Value>) {
    let renamed: Vec<(String, String)> = fields
        .keys()
        .filter_map(|key| match scrub_text(key) {
            Cow::Owned(scrubbed) => Some((key.clone(), scrubbed)),
            Cow::Borrowed(_) => None,
        })
        .collect();
    for (key, scrubbed) in renamed {
        if let Some(value) = fields.remove(&key) {
            fields.insert(scrubbed, value);
        }
    }
}

/// The passes a text gets under `rule`, or `None` when it is kept as it is.
fn text_passes(rule: Rule, text: &str) -> Option<Passes> {
    match rule {
        Rule::ClientId => Some(Passes::CLIENT_ID),
        Rule::HexId if text.bytes().all(|b| b.is_ascii_hexdigit()) => None,
        Rule::Release => Some(Passes::RELEASE),
        Rule::Digested => None,
        // A structural field holding text is data (and the item is rejected later).
        Rule::Everything | Rule::Quantity | Rule::HexId | Rule::Frames => Some(Passes::ALL),
    }
}

fn scrub_by_rule(value: &mut Value, rule: Rule) {
    match (rule, value) {
        (rule, Value::String(text)) => {
            if let Some(passes) = text_passes(rule, text) {
                scrub_string(text, passes);
            }
        }
        (Rule::Quantity | Rule::ClientId, Value::Number(_)) => {}
        (Rule::Frames, Value::Array(frames)) => {
            for frame in frames {
                match frame {
                    Value::Object(fields) => scrub_fields(fields, frame_field_rule),
                    other => scrub_value(other),
                }
            }
        }
        // A structural field of another type is data (and the item is rejected later).
        (_, value) => scrub_value(value),
    }
}

/// Scrubs any value with no field exempt: strings, keys and card-like numbers at every depth.
fn scrub_value(value: &mut Value) {
    match value {
        Value::String(text) => scrub_string(text, Passes::ALL),
        Value::Number(number) => {
            if is_card_like(number) {
                *value = Value::String(CARD.to_string());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(fields) => scrub_fields(fields, |_| Rule::Everything),
        Value::Null | Value::Bool(_) => {}
    }
}

fn scrub_string(text: &mut String, passes: Passes) {
    if let Cow::Owned(scrubbed) = scrub_text_with(text, &Clues::of(text), passes) {
        *text = scrubbed;
    }
}

/// A JSON number whose digits are a card number: a whole number, negative or written with a
/// fraction of zero (`4111111111111111.0`) too, since its digits are stored all the same.
fn is_card_like(number: &Number) -> bool {
    if let Some(whole) = number.as_u64() {
        return is_card_number(whole);
    }
    if let Some(negative) = number.as_i64() {
        return is_card_number(negative.unsigned_abs());
    }
    number.as_f64().is_some_and(|float| {
        let magnitude = float.abs();
        // Below 2^64 and whole: the cast is exact for every value a card could be.
        magnitude.fract() == 0.0 && magnitude < 1.8e19 && is_card_number(magnitude as u64)
    })
}

#[cfg(test)]
mod tests;
