//! Sensitive names and the values written after them in text: `password=…`, `token: …`,
//! `"secret": "…"`, `api_key='…'`, `Cookie: a=1; b=2`.
//!
//! Invariants: a value is replaced whole, as far as its quotes or its header line reach, never
//! word by word; a value that is already `[redacted]` is left alone, so a second pass finds
//! nothing new; a name that does not end like a sensitive one costs no allocation.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::REDACTED;

/// Field and parameter names whose values are never stored.
pub(super) const SENSITIVE_NAMES: &[&str] = &[
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

/// Last words of header names whose values hold spaces and `;` (`Cookie: a=1; b=2`,
/// `Authorization: Basic …`): after `:` their value runs to the end of the line.
const WHOLE_LINE_NAMES: &[&str] = &["cookie", "authorization"];

/// A name, its separator (`=` or `:`, after an optional closing quote of the name) and the
/// opening quote of a quoted value (`"`, `'` or a backquote, each also as `\"` inside JSON
/// text). The value itself is measured by hand (`value_end`): a regex cannot match quotes.
pub(super) static NAMED_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z0-9_.\-\[\]]+)(?:\\?["'])?[ \t]*([=:])[ \t]*(\\?["'`])?"#).expect("regex")
});

/// Replaces the value of every `name=value` or `name: value` whose name is sensitive. Stacks
/// and URLs are full of `file:line` and `key=value` pairs with harmless names, so the text is
/// copied only once a value is replaced.
pub(super) fn redact_named_values(text: &mut Cow<'_, str>) {
    let source: &str = text;
    let mut output = String::new();
    let mut copied = 0;
    let mut position = 0;
    // Finding is much cheaper than capturing: a match's name is its leading run of name
    // characters (a separator cannot start with one), and only a name that ends like a
    // sensitive one is worth its groups.
    while let Some(found) = NAMED_VALUE.find_at(source, position) {
        position = found.end();
        let name_length = found.as_str().bytes().take_while(is_name_byte).count();
        if !ends_like_sensitive_name(&found.as_str()[..name_length]) {
            continue;
        }
        let Some(value) = sensitive_value(source, found.start()) else {
            continue;
        };
        output.push_str(&source[copied..value.start]);
        output.push_str(REDACTED);
        copied = value.end;
        position = value.end;
    }
    if copied > 0 {
        output.push_str(&source[copied..]);
        *text = Cow::Owned(output);
    }
}

/// Where the value of the pair that starts at `start` lies, when its name is sensitive and the
/// value is neither empty nor already redacted.
pub(super) fn sensitive_value(source: &str, start: usize) -> Option<std::ops::Range<usize>> {
    let groups = NAMED_VALUE.captures_at(source, start)?;
    let (name, separator) = (groups.get(1)?.as_str(), groups.get(2)?.as_str());
    if !is_sensitive_name(name) {
        return None;
    }
    let value_start = groups.get(0)?.end();
    let quote = groups.get(3).map(|quote| quote.as_str());
    let whole_line = separator == ":" && has_whole_line_value(name);
    let value_end = value_end(source, value_start, quote, whole_line);
    let value = &source[value_start..value_end];
    (!value.is_empty() && value != REDACTED).then_some(value_start..value_end)
}

/// The end of a value starting at `start`: its closing quote when it opened with one (the
/// line's end when the quote never closes), the line's end for a whole-line header, else the
/// end of one unquoted word.
fn value_end(source: &str, start: usize, quote: Option<&str>, whole_line: bool) -> usize {
    let rest = &source[start..];
    let line_end = rest.find(['\n', '\r']).unwrap_or(rest.len());
    let length = match quote {
        Some(quote) => closing_quote(rest, quote).unwrap_or(line_end),
        None if whole_line => line_end,
        None => rest
            .find(|c: char| c.is_whitespace() || "\"'&;,}?#<>".contains(c))
            .unwrap_or(rest.len()),
    };
    start + length
}

/// The offset of the quote that closes a value opened by `quote` (`"`, `'`, a backquote, or
/// one of them escaped as in JSON text, `\"`); escaped quotes inside do not close it.
fn closing_quote(rest: &str, quote: &str) -> Option<usize> {
    if quote.len() == 2 {
        return rest.find(quote);
    }
    let quote = quote.as_bytes()[0];
    let mut bytes = rest.bytes().enumerate();
    while let Some((offset, byte)) = bytes.next() {
        match byte {
            b'\\' => {
                bytes.next();
            }
            byte if byte == quote => return Some(offset),
            _ => {}
        }
    }
    None
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

/// Whether a sensitive name is a header whose value runs to the end of its line.
fn has_whole_line_value(name: &str) -> bool {
    name_parts(name)
        .last()
        .is_some_and(|last| WHOLE_LINE_NAMES.contains(&last.as_str()))
}

/// Whether the name's letters and digits, lower-cased, end with one of `SENSITIVE_NAMES`. Every
/// name `is_sensitive_name` accepts does (the whole name, its last word and its last two words
/// all end where it ends), so a name that does not needs no closer look, and no allocation.
pub(super) fn ends_like_sensitive_name(name: &str) -> bool {
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
