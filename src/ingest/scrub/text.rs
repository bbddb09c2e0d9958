//! The passes over one text: tokens, credentials, e-mail addresses, IP addresses, card numbers
//! and sensitive named values, each skipped when the text lacks what it needs to match.
//!
//! Invariants: pure and total (no input panics); a pass never writes what a later pass, or the
//! same passes run again, would replace, so scrubbing twice changes nothing more; the clues of
//! the original text are good for every pass (markers add no clue).

use std::borrow::Cow;
use std::net::Ipv6Addr;
use std::sync::LazyLock;

use base64::Engine;
use regex::{Captures, Regex};

use super::names::{SENSITIVE_NAMES, redact_named_values};
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
    if passes.cards && clues.digit_chain >= 13 {
        apply_candidates(&mut text, &CARD_CANDIDATE, is_card_text, CARD);
    }
    // Last, so that a marker written above (`[token]:x`) is judged as a name in this same
    // pass and a second pass finds nothing new.
    if clues.may_hold_named_value() {
        redact_named_values(&mut text);
    }
    text
}

/// What a text holds that each pattern needs in order to match: a pattern whose clue is
/// missing cannot match, so its scan is skipped (most strings need only a few of the eight).
/// The markers written by a pass add none of these characters, so the clues of the original
/// text are good for every pass.
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) struct Clues {
    bearer: bool,
    basic: bool,
    jwt: bool,
    /// `@` or `%40` (an e-mail address).
    at_sign: bool,
    colons: usize,
    equals: bool,
    /// `digit.digit` places (an IPv4 address has three).
    dotted_digits: usize,
    /// The most digits in a row with at most one space or dash between two (a card has 13).
    digit_chain: usize,
    /// A run of hex digits, `:` and `.` holding two colons that no letter, digit or `_` glues
    /// onto from the left: where an IPv6 address can start (`is_ipv6_address`).
    ipv6_run: bool,
    /// A run of name characters (`NAMED_VALUE`'s) whose letters and digits end like a
    /// sensitive name (the last eight of them compared; `ends_like_sensitive_name` decides).
    sensitive_name: bool,
}

impl Clues {
    /// A pass writing a marker (`[token]`, `[email]`) ran, or may run.
    fn marker_may_be_written(&self) -> bool {
        self.bearer || self.basic || self.jwt || self.at_sign
    }

    /// Whether the IPv6 pass may find something. A marker written before it ends with `]`,
    /// which lets a run right after it start an address: then a run glued in the text counts.
    pub(super) fn may_hold_ipv6(&self) -> bool {
        self.colons >= 2 && (self.ipv6_run || self.marker_may_be_written())
    }

    /// Whether the named-values pass may find something: a separator, and a sensitive name in
    /// the text or a marker written before it that may end one (`[token]:`, `[ip]-hone:`).
    pub(super) fn may_hold_named_value(&self) -> bool {
        (self.colons > 0 || self.equals)
            && (self.sensitive_name
                || self.marker_may_be_written()
                || self.may_hold_ipv6()
                || self.dotted_digits >= 3
                || self.digit_chain >= 13)
    }

    /// The clues of `text`, in one pass over its bytes (this runs for every scrubbed text:
    /// a pass per clue was the largest single cost of ingest's request threads).
    pub(super) fn of(text: &str) -> Clues {
        let bytes = text.as_bytes();
        let starts = |at: usize, word: &[u8]| {
            bytes
                .get(at..at + word.len())
                .is_some_and(|here| here.eq_ignore_ascii_case(word))
        };
        let mut clues = Clues {
            bearer: false,
            basic: false,
            jwt: false,
            at_sign: false,
            colons: 0,
            equals: false,
            dotted_digits: 0,
            digit_chain: 0,
            ipv6_run: false,
            sensitive_name: false,
        };
        let mut digits = DigitChain::default();
        let mut run = HexRun::default();
        let mut name = NameTail::default();
        for (at, &byte) in bytes.iter().enumerate() {
            match byte {
                b':' => clues.colons += 1,
                b'=' => clues.equals = true,
                b'@' => clues.at_sign = true,
                b'%' if bytes[at + 1..].starts_with(b"40") => clues.at_sign = true,
                b'b' | b'B' => {
                    clues.bearer |= starts(at, b"bearer");
                    clues.basic |= starts(at, b"basic");
                }
                b'e' if bytes[at + 1..].starts_with(b"yJ") => clues.jwt = true,
                b'.' if at > 0
                    && bytes[at - 1].is_ascii_digit()
                    && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) =>
                {
                    clues.dotted_digits += 1;
                }
                _ => {}
            }
            digits.step(byte);
            clues.ipv6_run |= run.step(byte);
            clues.sensitive_name |= name.step(byte);
        }
        clues.digit_chain = digits.longest;
        clues.sensitive_name |= name.ends_sensitive();
        clues
    }

    /// The clues as separate scans, one per clue: what the one pass is tested against.
    #[cfg(test)]
    pub(super) fn of_by_scans(text: &str) -> Clues {
        let bytes = text.as_bytes();
        let dotted_digits = bytes
            .windows(3)
            .filter(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
            .count();
        let has_word = |word: &[u8]| {
            bytes
                .windows(word.len())
                .any(|window| window.eq_ignore_ascii_case(word))
        };
        Clues {
            bearer: has_word(b"bearer"),
            basic: has_word(b"basic"),
            jwt: text.contains("eyJ"),
            at_sign: bytes.contains(&b'@') || text.contains("%40"),
            colons: bytes.iter().filter(|b| **b == b':').count(),
            equals: bytes.contains(&b'='),
            dotted_digits,
            digit_chain: {
                let mut digits = DigitChain::default();
                bytes.iter().for_each(|&byte| digits.step(byte));
                digits.longest
            },
            ipv6_run: {
                let in_run = |b: &u8| b.is_ascii_hexdigit() || *b == b':' || *b == b'.';
                let glues = |b: u8| in_run(&b) || b.is_ascii_alphanumeric() || b == b'_';
                (0..bytes.len())
                    .filter(|&at| in_run(&bytes[at]) && (at == 0 || !glues(bytes[at - 1])))
                    .any(|start| {
                        let run: Vec<u8> =
                            bytes[start..].iter().copied().take_while(in_run).collect();
                        let lead = run.iter().take_while(|b| b.is_ascii_hexdigit()).count();
                        let colons = run.iter().filter(|&&b| b == b':').count();
                        lead <= 4 && run.get(lead) == Some(&b':') && colons >= 2
                    })
            },
            sensitive_name: text
                .split(|c: char| !(c.is_ascii_alphanumeric() || "_.-[]".contains(c)))
                .any(|name| {
                    let letters: Vec<u8> = name
                        .bytes()
                        .filter(u8::is_ascii_alphanumeric)
                        .map(|byte| byte.to_ascii_lowercase())
                        .collect();
                    let last_eight = &letters[letters.len().saturating_sub(8)..];
                    SENSITIVE_NAMES.iter().any(|sensitive| {
                        let sensitive = sensitive.as_bytes();
                        last_eight.ends_with(&sensitive[sensitive.len().saturating_sub(8)..])
                    })
                }),
        }
    }

    /// Clues that run every pass: what skipping passes is tested against.
    #[cfg(test)]
    pub(super) fn every_pass() -> Clues {
        Clues {
            bearer: true,
            basic: true,
            jwt: true,
            at_sign: true,
            colons: usize::MAX,
            equals: true,
            dotted_digits: usize::MAX,
            digit_chain: usize::MAX,
            ipv6_run: true,
            sensitive_name: true,
        }
    }
}

/// The most digits in one chain where two digits are adjacent or have one space or dash
/// between them (what `CARD_CANDIDATE` needs 13 of), counted a byte at a time.
#[derive(Default)]
struct DigitChain {
    longest: usize,
    chain: usize,
    previous_digit: bool,
}

impl DigitChain {
    fn step(&mut self, byte: u8) {
        if byte.is_ascii_digit() {
            self.chain += 1;
            self.longest = self.longest.max(self.chain);
            self.previous_digit = true;
        } else if matches!(byte, b' ' | b'-') && self.previous_digit {
            self.previous_digit = false;
        } else {
            self.chain = 0;
            self.previous_digit = false;
        }
    }
}

/// Runs of hex digits, `:` and `.`, a byte at a time: whether one that can start an IPv6
/// candidate has reached two colons. A candidate lies inside one run and starts where its run
/// starts (anything before it inside the run would glue onto it), with at most four hex digits
/// before its first colon; so a run counts when nothing glues onto it from the left (a letter,
/// a digit or `_`) and its first colon comes after at most four hex digits.
#[derive(Default)]
struct HexRun {
    inside: bool,
    can_start: bool,
    lead: u8,
    colons: u8,
    previous: u8,
}

impl HexRun {
    fn step(&mut self, byte: u8) -> bool {
        let previous = std::mem::replace(&mut self.previous, byte);
        if !(byte.is_ascii_hexdigit() || byte == b':' || byte == b'.') {
            self.inside = false;
            return false;
        }
        if !self.inside {
            self.inside = true;
            self.colons = 0;
            self.lead = 0;
            self.can_start = !(previous.is_ascii_alphanumeric() || previous == b'_');
        }
        match byte {
            b':' => self.colons = self.colons.saturating_add(1),
            b'.' if self.colons == 0 => self.can_start = false,
            b'.' => {}
            _ if self.colons == 0 => {
                self.lead += 1;
                self.can_start &= self.lead <= 4;
            }
            _ => {}
        }
        self.can_start && self.colons >= 2
    }
}

/// The letters and digits of the current run of name characters (`NAMED_VALUE`'s), the last
/// eight lower-cased in a register; checked against the sensitive names where the run ends.
#[derive(Default)]
struct NameTail {
    last_eight: u64,
}

impl NameTail {
    fn step(&mut self, byte: u8) -> bool {
        if byte.is_ascii_alphanumeric() {
            self.last_eight = self.last_eight << 8 | u64::from(byte.to_ascii_lowercase());
            false
        } else if matches!(byte, b'_' | b'.' | b'-' | b'[' | b']') {
            false
        } else {
            let sensitive = self.ends_sensitive();
            self.last_eight = 0;
            sensitive
        }
    }

    fn ends_sensitive(&self) -> bool {
        self.last_eight != 0
            && SENSITIVE_TAILS
                .iter()
                .any(|&(mask, tail)| self.last_eight & mask == tail)
    }
}

/// Each sensitive name's last eight bytes (or fewer), as `NameTail` holds them, with its mask.
static SENSITIVE_TAILS: LazyLock<Vec<(u64, u64)>> = LazyLock::new(|| {
    SENSITIVE_NAMES
        .iter()
        .map(|name| {
            let tail = &name.as_bytes()[name.len().saturating_sub(8)..];
            let value = tail
                .iter()
                .fold(0u64, |value, &byte| value << 8 | u64::from(byte));
            let mask = if tail.len() == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * tail.len())) - 1
            };
            (mask, value)
        })
        .collect()
});

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
