//! Scrubbing of likely personal data from ingested items, before the first write
//! (`WEB_INGEST_SCRUB_PII`, CONTRACT section 3).
//!
//! What is replaced, in every string of an item (messages, stacks, frames, URLs, tags, user
//! fields, span attributes):
//! - bearer tokens and JWT-looking tokens → `[token]`;
//! - the value of a sensitive field or query parameter (`password`, `passwd`, `secret`, `token`,
//!   `api_key`, `apikey`, `auth`, `authorization`, `session`, `cookie`, `email`, `phone`, `ssn`,
//!   also as the last part of a longer name such as `access_token` or `userEmail`) →
//!   `[redacted]`, both as JSON keys and as `name=value` / `name: value` inside text;
//! - e-mail addresses → `[email]`; IPv4 and IPv6 addresses → `[ip]`;
//! - Luhn-valid card numbers of 13 to 19 digits (spaces or dashes allowed between digits) →
//!   `[card]`, in text and as bare JSON integers outside the known numeric fields.
//!
//! Invariants: pure and total (no input panics, nothing is logged); the markers contain nothing
//! that a later pass would scrub again, so scrubbing twice changes nothing more. The few fields
//! whose values are validated identifiers (`release`, `environment`, `service`, `level`,
//! `trace_id`, `span_id`, `parent_span_id`) are left as they are, so a release `1.2.3.4` is not
//! mistaken for an address.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

pub const EMAIL: &str = "[email]";
pub const IP: &str = "[ip]";
pub const CARD: &str = "[card]";
pub const TOKEN: &str = "[token]";
pub const REDACTED: &str = "[redacted]";

/// Field and parameter names whose values are never stored.
const SENSITIVE_NAMES: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "auth",
    "authorization",
    "session",
    "cookie",
    "email",
    "phone",
    "ssn",
];

/// Item fields holding validated identifiers, not free text.
const IDENTIFIER_FIELDS: &[&str] = &[
    "release",
    "environment",
    "service",
    "level",
    "trace_id",
    "span_id",
    "parent_span_id",
];

/// Item fields whose integers are times, positions or counts, never card numbers.
const NUMERIC_FIELDS: &[&str] = &[
    "timestamp",
    "started_at",
    "ended_at",
    "start_time",
    "end_time",
    "duration_ms",
    "line",
    "column",
    "page_views",
    "errors",
];

static BEARER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*").expect("regex"));
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*").expect("regex")
});
/// `name=value` or `name: value` (optionally quoted, as in JSON text).
static NAMED_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z0-9_.\-\[\]]+)("?[ \t]*[=:][ \t]*"?)([^\s"'&;,}?=#<>]*)"#).expect("regex")
});
static EMAIL_ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[A-Z0-9._%+\-]+(?:@|%40)[A-Z0-9\-]+(?:\.[A-Z0-9\-]+)*\.[A-Z]{2,63}\b")
        .expect("regex")
});
static IPV6_CANDIDATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:[0-9a-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f]{0,4})")
        .expect("regex")
});
static IPV4_CANDIDATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d{1,3}(?:\.\d{1,3}){3}\b").expect("regex"));
static CARD_CANDIDATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d(?:[ -]?\d){12,18}\b").expect("regex"));

/// Scrubs every string (and card-like integer) of an ingested item in place.
pub fn scrub_item(item: &mut Value) {
    scrub_value(item, None);
}

fn scrub_value(value: &mut Value, key: Option<&str>) {
    match value {
        Value::String(text) => {
            if key.is_some_and(|key| IDENTIFIER_FIELDS.contains(&key)) {
                return;
            }
            if let Cow::Owned(scrubbed) = scrub_text(text) {
                *text = scrubbed;
            }
        }
        Value::Number(number) => {
            let exempt = key.is_some_and(|key| NUMERIC_FIELDS.contains(&key));
            if !exempt && number.as_u64().is_some_and(is_card_number) {
                *value = Value::String(CARD.to_string());
            }
        }
        Value::Array(items) => {
            for item in items {
                scrub_value(item, None);
            }
        }
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if is_sensitive_name(name) && !field.is_null() {
                    *field = Value::String(REDACTED.to_string());
                } else {
                    scrub_value(field, Some(name));
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Scrubs one text; borrows when nothing was found.
pub fn scrub_text(text: &str) -> Cow<'_, str> {
    scrub_text_with(text, &Clues::of(text))
}

/// The passes of `scrub_text`, each run only when `clues` say it may match.
fn scrub_text_with<'a>(text: &'a str, clues: &Clues) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(text);
    // Tokens first: a JWT or bearer value may itself contain `=` or look like other things.
    if clues.bearer {
        apply(&mut text, &BEARER, |caps| format!("{} {TOKEN}", &caps[1]));
    }
    if clues.jwt {
        apply(&mut text, &JWT, |_| TOKEN.to_string());
    }
    if clues.at_sign {
        apply(&mut text, &EMAIL_ADDRESS, |_| EMAIL.to_string());
    }
    if clues.colons >= 2 {
        apply_candidates(&mut text, &IPV6_CANDIDATE, is_ipv6_address, IP);
    }
    if clues.dotted_digits >= 3 {
        apply_candidates(&mut text, &IPV4_CANDIDATE, is_ipv4_address, IP);
    }
    if clues.digit_chain >= 13 {
        apply_candidates(&mut text, &CARD_CANDIDATE, is_card_text, CARD);
    }
    // Last, so that a marker written above (`[token]:x`) is judged as a name in this same
    // pass and a second pass finds nothing new.
    if clues.colons > 0 || clues.equals {
        redact_named_values(&mut text);
    }
    text
}

/// What a text holds that each pattern needs in order to match: a pattern whose clue is
/// missing cannot match, so its scan is skipped (most strings need only a few of the seven).
/// The markers written by a pass add none of these characters, so the clues of the original
/// text are good for every pass.
struct Clues {
    bearer: bool,
    jwt: bool,
    /// `@` or `%40` (an e-mail address).
    at_sign: bool,
    colons: usize,
    equals: bool,
    /// `digit.digit` places (an IPv4 address has three).
    dotted_digits: usize,
    /// The most digits in a row with at most one space or dash between two (a card has 13).
    digit_chain: usize,
}

impl Clues {
    fn of(text: &str) -> Clues {
        let bytes = text.as_bytes();
        let dotted_digits = bytes
            .windows(3)
            .filter(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
            .count();
        Clues {
            bearer: bytes
                .windows(6)
                .any(|window| window.eq_ignore_ascii_case(b"bearer")),
            jwt: text.contains("eyJ"),
            at_sign: bytes.contains(&b'@') || text.contains("%40"),
            colons: bytes.iter().filter(|b| **b == b':').count(),
            equals: bytes.contains(&b'='),
            dotted_digits,
            digit_chain: longest_digit_chain(bytes),
        }
    }

    /// Clues that run every pass: what skipping passes is tested against.
    #[cfg(test)]
    fn every_pass() -> Clues {
        Clues {
            bearer: true,
            jwt: true,
            at_sign: true,
            colons: usize::MAX,
            equals: true,
            dotted_digits: usize::MAX,
            digit_chain: usize::MAX,
        }
    }
}

/// The most digits in one chain where two digits are adjacent or have one space or dash
/// between them: what `CARD_CANDIDATE` needs 13 of.
fn longest_digit_chain(bytes: &[u8]) -> usize {
    let (mut longest, mut chain, mut previous_digit) = (0, 0, false);
    for &byte in bytes {
        if byte.is_ascii_digit() {
            chain += 1;
            longest = longest.max(chain);
            previous_digit = true;
        } else if matches!(byte, b' ' | b'-') && previous_digit {
            previous_digit = false;
        } else {
            chain = 0;
            previous_digit = false;
        }
    }
    longest
}

/// Replaces every match of `pattern` in `text` with what `replace` makes of it.
fn apply(text: &mut Cow<'_, str>, pattern: &Regex, replace: impl Fn(&Captures) -> String) {
    if let Cow::Owned(replaced) = pattern.replace_all(text, |caps: &Captures| replace(caps)) {
        *text = Cow::Owned(replaced);
    }
}

/// Replaces the matches of `pattern` that `accept` confirms (given the text around them).
fn apply_candidates(
    text: &mut Cow<'_, str>,
    pattern: &Regex,
    accept: fn(&str, &str, &str) -> bool,
    marker: &str,
) {
    let source: &str = text;
    let mut output = String::new();
    let mut copied = 0;
    for found in pattern.find_iter(source) {
        let (before, after) = (&source[..found.start()], &source[found.end()..]);
        if accept(found.as_str(), before, after) {
            output.push_str(&source[copied..found.start()]);
            output.push_str(marker);
            copied = found.end();
        }
    }
    if copied > 0 {
        output.push_str(&source[copied..]);
        *text = Cow::Owned(output);
    }
}

/// Replaces the value of every `name=value` or `name: value` whose name is sensitive. Stacks
/// and URLs are full of `file:line` and `key=value` pairs with harmless names, so the text is
/// copied only once a value is replaced.
fn redact_named_values(text: &mut Cow<'_, str>) {
    let source: &str = text;
    let mut output = String::new();
    let mut copied = 0;
    // Finding is much cheaper than capturing: a match's name is its leading run of name
    // characters (a separator cannot start with one), and only a name that ends like a
    // sensitive one is worth its groups.
    for found in NAMED_VALUE.find_iter(source) {
        let name_length = found.as_str().bytes().take_while(is_name_byte).count();
        if !ends_like_sensitive_name(&found.as_str()[..name_length]) {
            continue;
        }
        let Some(groups) = NAMED_VALUE.captures_at(source, found.start()) else {
            continue;
        };
        let (Some(name), Some(value)) = (groups.get(1), groups.get(3)) else {
            continue;
        };
        let value_text = value.as_str();
        if value_text.is_empty() || value_text == REDACTED || !is_sensitive_name(name.as_str()) {
            continue;
        }
        output.push_str(&source[copied..value.start()]);
        output.push_str(REDACTED);
        copied = value.end();
    }
    if copied > 0 {
        output.push_str(&source[copied..]);
        *text = Cow::Owned(output);
    }
}

/// The characters of a name in `NAMED_VALUE`.
fn is_name_byte(byte: &u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-' | b'[' | b']')
}

/// Whether a field or parameter name is one whose value must not be stored: one of
/// `SENSITIVE_NAMES`, written in any case and with any separators (`API-Key`, `api_key`), or a
/// longer name ending in one (`access_token`, `userEmail`, `X-Auth-Token`).
pub fn is_sensitive_name(name: &str) -> bool {
    if !ends_like_sensitive_name(name) {
        return false;
    }
    let parts = name_parts(name);
    let Some(last) = parts.last() else {
        return false;
    };
    let joined: String = parts.concat();
    let last_two = match parts.len() {
        0 | 1 => last.clone(),
        n => format!("{}{}", parts[n - 2], parts[n - 1]),
    };
    [joined.as_str(), last.as_str(), last_two.as_str()]
        .iter()
        .any(|candidate| SENSITIVE_NAMES.contains(candidate))
}

/// Whether the name's letters and digits, lower-cased, end with one of `SENSITIVE_NAMES`. Every
/// name `is_sensitive_name` accepts does (the whole name, its last word and its last two words
/// all end where it ends), so a name that does not needs no closer look, and no allocation.
fn ends_like_sensitive_name(name: &str) -> bool {
    let tail = name
        .bytes()
        .rev()
        .filter(u8::is_ascii_alphanumeric)
        .map(|byte| byte.to_ascii_lowercase());
    SENSITIVE_NAMES
        .iter()
        .any(|word| word.bytes().rev().eq(tail.clone().take(word.len())))
}

/// The lower-cased words of a name: split at separators and at camelCase humps.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if !ch.is_ascii_alphanumeric() {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        current.push(ch.to_ascii_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

fn is_ipv6_address(candidate: &str, before: &str, after: &str) -> bool {
    // `std::vec`, `12:00:00` inside `T12:00:00Z` and the like sit inside a longer word.
    let glued_before = before
        .chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.'));
    let glued_after = after
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'));
    if glued_before || glued_after || !candidate.bytes().any(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    candidate.parse::<Ipv6Addr>().is_ok()
}

fn is_ipv4_address(candidate: &str, before: &str, after: &str) -> bool {
    // Part of a longer dotted number (a version such as 1.2.3.4.5).
    if before.ends_with('.')
        || after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        return false;
    }
    // A product version in a user agent (`Chrome/120.0.0.0`), unlike a URL host (`//1.2.3.4`).
    let mut tail = before.chars().rev();
    if tail.next() == Some('/') && tail.next().is_some_and(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    candidate.parse::<Ipv4Addr>().is_ok()
}

fn is_card_text(candidate: &str, _before: &str, _after: &str) -> bool {
    let digits: Vec<u8> = candidate
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    luhn_card(&digits)
}

/// A bare integer that is a Luhn-valid 13–19 digit number.
fn is_card_number(number: u64) -> bool {
    let digits: Vec<u8> = number.to_string().bytes().map(|b| b - b'0').collect();
    luhn_card(&digits)
}

fn luhn_card(digits: &[u8]) -> bool {
    (13..=19).contains(&digits.len()) && luhn_valid(digits)
}

/// The Luhn checksum: doubling every second digit from the right, the sum ends in 0.
pub fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(position, &digit)| {
            let digit = u32::from(digit);
            if position % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests;
