//! The passes over one text: tokens, credentials, e-mail addresses, IP addresses, card numbers
//! and sensitive named values, each skipped when the text lacks what it needs to match.
//!
//! Invariants: pure and total (no input panics); a pass never writes what a later pass, or the
//! same passes run again, would replace, so scrubbing twice changes nothing more; the clues of
//! the original text are good for every pass (`clues.rs` counts the markers a pass may write).

use std::borrow::Cow;
use std::net::Ipv6Addr;
use std::sync::LazyLock;

use base64::Engine;
use regex::{Captures, Regex};

use super::clues::Clues;
use super::names::redact_named_values;
use super::{CARD, EMAIL, IP, TOKEN};

/// Which passes run: all of them for free text; `release` keeps dotted numbers (versions) and
/// client ids keep digit runs (a time in milliseconds is not a card number).
#[derive(Clone, Copy)]
pub(super) struct Passes {
    pub ipv4: bool,
    pub cards: bool,
}

impl Passes {
    pub const ALL: Passes = Passes {
        ipv4: true,
        cards: true,
    };
    pub const RELEASE: Passes = Passes {
        ipv4: false,
        cards: true,
    };
    pub const CLIENT_ID: Passes = Passes {
        ipv4: true,
        cards: false,
    };
}

/// Products whose version follows a `/` in a user agent (`Chrome/120.0.0.0`): such a version
/// is not an address. Any other `word/1.2.3.4` is a URL path holding one.
const VERSIONED_PRODUCTS: &[&str] = &[
    "AppleWebKit",
    "Brave",
    "Chrome",
    "Chromium",
    "CriOS",
    "Edg",
    "EdgA",
    "EdgiOS",
    "Edge",
    "Electron",
    "Firefox",
    "FxiOS",
    "Gecko",
    "HeadlessChrome",
    "Mobile",
    "Mozilla",
    "OPR",
    "OPiOS",
    "Opera",
    "Safari",
    "SamsungBrowser",
    "Trident",
    "UCBrowser",
    "Version",
    "Vivaldi",
    "YaBrowser",
];

static BEARER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*").expect("regex"));
/// `Basic` and what may be its base64 `user:password`; `basic_credential` decides.
static BASIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(basic)\s+([A-Za-z0-9+/]+=*)").expect("regex"));
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*").expect("regex")
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

/// Scrubs one text; borrows when nothing was found.
pub fn scrub_text(text: &str) -> Cow<'_, str> {
    scrub_text_with(text, &Clues::of(text), Passes::ALL)
}

/// The passes of `scrub_text` that `passes` allows, each run only when `clues` say it may match.
pub(super) fn scrub_text_with<'a>(text: &'a str, clues: &Clues, passes: Passes) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(text);
    // Tokens first: a JWT or credential may itself contain `=` or look like other things.
    if clues.bearer {
        apply(&mut text, &BEARER, |caps| format!("{} {TOKEN}", &caps[1]));
    }
    if clues.basic {
        redact_basic_credentials(&mut text);
    }
    if clues.jwt {
        apply(&mut text, &JWT, |_| TOKEN.to_string());
    }
    if clues.at_sign {
        apply(&mut text, &EMAIL_ADDRESS, |_| EMAIL.to_string());
    }
    if clues.may_hold_ipv6() {
        apply_candidates(&mut text, &IPV6_CANDIDATE, is_ipv6_address, IP);
    }
    if passes.ipv4 && clues.dotted_digits >= 3 {
        apply_candidates(&mut text, &IPV4_CANDIDATE, is_ipv4_address, IP);
    }
    if passes.cards && clues.card_chain {
        apply_candidates(&mut text, &CARD_CANDIDATE, is_card_text, CARD);
    }
    // Last, so that a marker written above (`[token]:x`) is judged as a name in this same
    // pass and a second pass finds nothing new.
    if clues.may_hold_named_value() {
        redact_named_values(&mut text);
    }
    text
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

/// `Basic <base64>` → `Basic [token]` when the base64 decodes to a `user:password` pair: the
/// word alone is too common in messages (`Basic plan`) to take what follows for a credential.
fn redact_basic_credentials(text: &mut Cow<'_, str>) {
    let source: &str = text;
    let mut output = String::new();
    let mut copied = 0;
    for groups in BASIC.captures_iter(source) {
        let Some(credential) = groups.get(2) else {
            continue;
        };
        if is_basic_credential(credential.as_str()) {
            output.push_str(&source[copied..credential.start()]);
            output.push_str(TOKEN);
            copied = credential.end();
        }
    }
    if copied > 0 {
        output.push_str(&source[copied..]);
        *text = Cow::Owned(output);
    }
}

/// Base64 (padded or not) of text holding a `:`, as HTTP Basic credentials are.
fn is_basic_credential(candidate: &str) -> bool {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT
        .decode(candidate)
        .is_ok_and(|decoded| decoded.contains(&b':'))
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
    if follows_product_name(before) {
        return false;
    }
    // Four parts of 0 to 255, zero-padded or not (`010.001.002.003` is an address too).
    candidate
        .split('.')
        .all(|part| part.parse::<u16>().is_ok_and(|octet| octet <= 255))
}

/// Whether `before` ends with `Product/` for a product of `VERSIONED_PRODUCTS` that starts a
/// word (`… Chrome/`), as in a user agent, not inside a path (`/Chrome/`) or a host.
fn follows_product_name(before: &str) -> bool {
    let Some(head) = before.strip_suffix('/') else {
        return false;
    };
    let word_start = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(0, |index| index + 1);
    let starts_word = !head[..word_start].ends_with(['/', '.', ':', '@']);
    starts_word && VERSIONED_PRODUCTS.contains(&&head[word_start..])
}

fn is_card_text(candidate: &str, _before: &str, _after: &str) -> bool {
    let digits: Vec<u8> = candidate
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    luhn_card(&digits)
}

/// A whole number that is a Luhn-valid 13–19 digit number.
pub(super) fn is_card_number(number: u64) -> bool {
    // Most numbers are far shorter: no digits to collect.
    if number < 1_000_000_000_000 {
        return false;
    }
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
