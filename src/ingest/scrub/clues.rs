//! Clues: what a text holds that each scrubbing pass needs in order to match, found with
//! vectorised searches for rare bytes and one loop over the rest, so that a pass whose clue is
//! missing is skipped (`text.rs`). Most texts need only a few of the passes; a browser stack
//! needs none of the regex ones.
//!
//! Invariants: a clue is never missing when its pass could change the text, also after the
//! markers an earlier pass writes (`[token]`, `[email]`, `[ip]`, `[card]`); `Clues::of` is
//! tested against separate scans, and skipping against running every pass (`tests.rs`).

use std::sync::LazyLock;

use super::names::SENSITIVE_NAMES;

/// What a text holds that each pattern needs in order to match: a pattern whose clue is
/// missing cannot match, so its scan is skipped (most strings need only a few of the eight).
/// The markers written by a pass add none of the characters counted here; where a marker can
/// still let a later pass match (its `]` starting an address, its word ending a sensitive
/// name), the clue of the pass that may write it counts too (`marker_may_be_written`).
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) struct Clues {
    pub(super) bearer: bool,
    pub(super) basic: bool,
    pub(super) jwt: bool,
    /// `@` or `%40` (an e-mail address).
    pub(super) at_sign: bool,
    colons: usize,
    equals: bool,
    /// `digit.digit` places (an IPv4 address has three).
    pub(super) dotted_digits: usize,
    /// Thirteen digits in a row with at most one space or dash between two (what
    /// `CARD_CANDIDATE` needs).
    pub(super) card_chain: bool,
    /// A run of hex digits, `:` and `.` holding two colons that no letter, digit or `_` glues
    /// onto from the left: where an IPv6 address can start (`is_ipv6_address`).
    ipv6_run: bool,
    /// A run of name characters (`NAMED_VALUE`'s) right before a separator (after an optional
    /// quote and blanks) whose letters and digits end like a sensitive name (the last eight of
    /// them compared; `ends_like_sensitive_name` decides): where `NAMED_VALUE` can match one.
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
                || self.card_chain)
    }

    /// The clues of `text` (this runs for every scrubbed text: a pass per clue over every
    /// byte was the largest single cost of ingest's request threads). What is rare in text is
    /// found by memchr's vectorised searches (`b`, `@`, `%40`, `=`, `eyJ`, `.`, `:`); names
    /// are read only backwards from a separator, an IPv6 run only around colons, and digit
    /// chains from every twelfth byte: no clue takes a step per byte.
    pub(super) fn of(text: &str) -> Clues {
        let bytes = text.as_bytes();
        let colons = memchr::memchr_iter(b':', bytes).count();
        Clues {
            bearer: has_word(bytes, b"bearer"),
            basic: has_word(bytes, b"basic"),
            jwt: JWT_START.find(bytes).is_some(),
            at_sign: memchr::memchr(b'@', bytes).is_some() || ESCAPED_AT.find(bytes).is_some(),
            colons,
            equals: memchr::memchr(b'=', bytes).is_some(),
            dotted_digits: memchr::memchr_iter(b'.', bytes)
                .filter(|&at| {
                    at > 0
                        && bytes[at - 1].is_ascii_digit()
                        && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
                })
                .count(),
            card_chain: has_card_chain(bytes),
            ipv6_run: colons >= 2 && has_ipv6_run(bytes),
            sensitive_name: has_sensitive_name_before_separator(bytes),
        }
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
            // From every digit, the chain it starts: digits, each after the last or after
            // one space or dash following it.
            card_chain: (0..bytes.len()).any(|start| {
                let mut at = start;
                let mut count = 0;
                while at < bytes.len() && bytes[at].is_ascii_digit() {
                    count += 1;
                    at += 1;
                    if at + 1 < bytes.len()
                        && matches!(bytes[at], b' ' | b'-')
                        && bytes[at + 1].is_ascii_digit()
                    {
                        at += 1;
                    }
                }
                count >= CARD_DIGITS
            }),
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
            // Every run of name characters, then whether a quote and blanks and a separator
            // follow it as `NAMED_VALUE` reads them.
            sensitive_name: (0..bytes.len()).any(|start| {
                let is_name = |b: &u8| b.is_ascii_alphanumeric() || b"_.-[]".contains(b);
                if !is_name(&bytes[start]) || (start > 0 && is_name(&bytes[start - 1])) {
                    return false;
                }
                let name: Vec<u8> = bytes[start..].iter().copied().take_while(is_name).collect();
                let mut rest = &bytes[start + name.len()..];
                for quote in [&b"\\\""[..], b"\\'", b"\"", b"'"] {
                    if let Some(after) = rest.strip_prefix(quote) {
                        rest = after;
                        break;
                    }
                }
                let rest: Vec<u8> = rest
                    .iter()
                    .copied()
                    .skip_while(|b| matches!(b, b' ' | b'\t'))
                    .collect();
                let letters: Vec<u8> = name
                    .iter()
                    .filter(|b| b.is_ascii_alphanumeric())
                    .map(u8::to_ascii_lowercase)
                    .collect();
                let last_eight = &letters[letters.len().saturating_sub(8)..];
                matches!(rest.first(), Some(b':' | b'='))
                    && SENSITIVE_NAMES.iter().any(|sensitive| {
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
            card_chain: true,
            ipv6_run: true,
            sensitive_name: true,
        }
    }
}

/// The start of a JWT's header (`{"` in base64url), searched for as is.
static JWT_START: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"eyJ"));
/// `@` percent-encoded.
static ESCAPED_AT: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"%40"));

/// Whether `word` (lower case, starting with `b`) is in `bytes`, in any case.
fn has_word(bytes: &[u8], word: &[u8]) -> bool {
    memchr::memchr2_iter(b'b', b'B', bytes).any(|at| {
        bytes
            .get(at..at + word.len())
            .is_some_and(|here| here.eq_ignore_ascii_case(word))
    })
}

/// The digits of the shortest card number (`CARD_CANDIDATE`'s).
const CARD_DIGITS: usize = 13;

/// Whether thirteen digits stand in one chain, where two digits are adjacent or have one space
/// or dash between them. Such a chain spans at least thirteen bytes with no two non-digits in a
/// row, so of every twelfth byte and the one after it, one inside the chain is a digit: only
/// those are looked at, and the chain around a digit found there is walked once.
fn has_card_chain(bytes: &[u8]) -> bool {
    let gap = |byte: u8| byte == b' ' || byte == b'-';
    let mut sample = 0;
    while sample + 1 < bytes.len() {
        let Some(digit) = [sample, sample + 1]
            .into_iter()
            .find(|&at| bytes[at].is_ascii_digit())
        else {
            sample += CARD_DIGITS - 1;
            continue;
        };
        let mut start = digit;
        loop {
            if start >= 1 && bytes[start - 1].is_ascii_digit() {
                start -= 1;
            } else if start >= 2 && gap(bytes[start - 1]) && bytes[start - 2].is_ascii_digit() {
                start -= 2;
            } else {
                break;
            }
        }
        let mut end = digit + 1;
        let mut digits = 1 + bytes[start..digit]
            .iter()
            .filter(|b| b.is_ascii_digit())
            .count();
        loop {
            if end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
                digits += 1;
            } else if end + 1 < bytes.len() && gap(bytes[end]) && bytes[end + 1].is_ascii_digit() {
                end += 2;
                digits += 1;
            } else {
                break;
            }
        }
        if digits >= CARD_DIGITS {
            return true;
        }
        // The next sample past this chain (a chain is walked once).
        sample = (end / (CARD_DIGITS - 1) + 1) * (CARD_DIGITS - 1);
    }
    false
}

/// Whether a name that `NAMED_VALUE` can match ends like a sensitive name: the run of name
/// characters right before a separator (`=` or `:`), blanks before it and a quote after the
/// name (`"` or `'`, escaped with `\` or not) stepped over. Only the bytes before each
/// separator are read, back to the start of the name or its eighth letter or digit from the
/// end.
fn has_sensitive_name_before_separator(bytes: &[u8]) -> bool {
    memchr::memchr2_iter(b':', b'=', bytes).any(|separator| {
        let mut at = separator;
        while at > 0 && matches!(bytes[at - 1], b' ' | b'\t') {
            at -= 1;
        }
        if at > 0 && matches!(bytes[at - 1], b'"' | b'\'') {
            at -= 1;
            if at > 0 && bytes[at - 1] == b'\\' {
                at -= 1;
            }
        }
        let mut last_eight = 0u64;
        let mut letters = 0;
        while at > 0 && letters < 8 {
            let byte = bytes[at - 1];
            if byte.is_ascii_alphanumeric() {
                last_eight |= u64::from(byte.to_ascii_lowercase()) << (8 * letters);
                letters += 1;
            } else if !matches!(byte, b'_' | b'.' | b'-' | b'[' | b']') {
                break;
            }
            at -= 1;
        }
        last_eight != 0 && ends_sensitive(last_eight)
    })
}

/// Whether a name whose last eight letters and digits (lower-cased) are `last_eight` ends
/// like a sensitive name. Most names end in two bytes no sensitive name ends in, and one look
/// in `LAST_TWO` says so (every tail is at least three bytes long).
fn ends_sensitive(last_eight: u64) -> bool {
    let last_two = (last_eight & 0xffff) as usize;
    LAST_TWO[last_two / 64] & (1 << (last_two % 64)) != 0
        && SENSITIVE_TAILS
            .iter()
            .any(|&(mask, tail)| last_eight & mask == tail)
}

/// The last two bytes of every sensitive name, as a set of the 65,536 pairs.
static LAST_TWO: LazyLock<[u64; 1024]> = LazyLock::new(|| {
    let mut set = [0u64; 1024];
    for name in SENSITIVE_NAMES {
        let bytes = name.as_bytes();
        debug_assert!(bytes.len() >= 3, "a tail's last two bytes are not zero");
        let pair = usize::from(bytes[bytes.len() - 2]) << 8 | usize::from(bytes[bytes.len() - 1]);
        set[pair / 64] |= 1 << (pair % 64);
    }
    set
});

/// Whether a run of hex digits, `:` and `.` can start an IPv6 candidate: nothing glues onto it
/// from the left (a letter, a digit or `_`), at most four hex digits come before its first
/// colon, and it holds two colons. Such a run holds a colon, so runs are found from colons;
/// each is walked once.
fn has_ipv6_run(bytes: &[u8]) -> bool {
    let in_run = |byte: u8| byte.is_ascii_hexdigit() || byte == b':' || byte == b'.';
    let mut walked_to = 0;
    for colon in memchr::memchr_iter(b':', bytes) {
        if colon < walked_to {
            continue;
        }
        let mut start = colon;
        while start > 0 && in_run(bytes[start - 1]) {
            start -= 1;
        }
        let mut end = colon + 1;
        while end < bytes.len() && in_run(bytes[end]) {
            end += 1;
        }
        walked_to = end;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let run = &bytes[start..end];
        let lead = run
            .iter()
            .take_while(|byte| byte.is_ascii_hexdigit())
            .count();
        if lead <= 4
            && run.get(lead) == Some(&b':')
            && memchr::memchr_iter(b':', run).nth(1).is_some()
        {
            return true;
        }
    }
    false
}

/// Each sensitive name's last eight bytes (or fewer), as `has_sensitive_name_before_separator`
/// holds a name's tail, with its mask.
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
