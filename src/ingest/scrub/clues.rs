//! Clues: what a text holds that each scrubbing pass needs in order to match, found in one
//! pass over its bytes, so that a pass whose clue is missing is skipped (`text.rs`). Most
//! texts need only a few of the passes; a browser stack needs none of the regex ones.
//!
//! Invariants: a clue is never missing when its pass could change the text, also after the
//! markers an earlier pass writes (`[token]`, `[email]`, `[ip]`, `[card]`); the one pass is
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
    /// The most digits in a row with at most one space or dash between two (a card has 13).
    pub(super) digit_chain: usize,
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
    /// a pass per clue was the largest single cost of ingest's request threads). A run of
    /// letters holding one that is not a hex digit is taken whole, a table lookup per byte,
    /// since every state moves the same way over it; `eyJ` is searched on its own.
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
        let mut at = 0;
        while at < bytes.len() {
            // A run of letters moves every clue's state the same way, whatever its letters
            // are, once one of them is not a hex digit: it is taken whole.
            let (letters, not_hex) = letter_run(&bytes[at..]);
            if not_hex {
                let run_of_letters = &bytes[at..at + letters];
                digits.letters();
                run.letters(run_of_letters);
                name.letters(run_of_letters);
                at += letters;
                continue;
            }
            let byte = bytes[at];
            match byte {
                b':' => clues.colons += 1,
                b'=' => clues.equals = true,
                b'@' => clues.at_sign = true,
                b'%' if bytes[at + 1..].starts_with(b"40") => clues.at_sign = true,
                b'b' | b'B' => {
                    clues.bearer |= starts(at, b"bearer");
                    clues.basic |= starts(at, b"basic");
                }
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
            at += 1;
        }
        clues.jwt = text.contains("eyJ");
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

/// A letter that a run taken whole may hold: every ASCII letter but `b` and `B`, which may
/// start `bearer` or `basic` (the other clues see a letter only as a letter).
const LETTER: u8 = 1;
/// A letter that is not a hex digit.
const NOT_HEX: u8 = 2;

/// `LETTER` and `NOT_HEX` of every byte.
static LETTER_CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        let letter = byte as u8;
        if letter.is_ascii_alphabetic() && letter != b'b' && letter != b'B' {
            classes[byte] = LETTER
                | if letter.is_ascii_hexdigit() {
                    0
                } else {
                    NOT_HEX
                };
        }
        byte += 1;
    }
    classes
};

/// How many bytes from the start are `LETTER`s, and whether one of them is not a hex digit.
fn letter_run(bytes: &[u8]) -> (usize, bool) {
    let mut not_hex = 0;
    for (count, &byte) in bytes.iter().enumerate() {
        let class = LETTER_CLASSES[usize::from(byte)];
        if class & LETTER == 0 {
            return (count, not_hex != 0);
        }
        not_hex |= class & NOT_HEX;
    }
    (bytes.len(), not_hex != 0)
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

    /// What `step` over a run of letters leaves.
    fn letters(&mut self) {
        self.chain = 0;
        self.previous_digit = false;
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
                self.lead = self.lead.saturating_add(1);
                self.can_start &= self.lead <= 4;
            }
            _ => {}
        }
        self.can_start && self.colons >= 2
    }

    /// What `step` over a run of letters, one of them not a hex digit, leaves: that letter
    /// ends the run it is in, and a run its hex letters start after it is glued on; a run
    /// the letters continue that can already report did so at its second colon. So no
    /// letter reports, and a run still open at the end cannot start a candidate.
    fn letters(&mut self, letters: &[u8]) {
        let last = letters[letters.len() - 1];
        self.inside = last.is_ascii_hexdigit();
        self.can_start = false;
        self.colons = 0;
        self.lead = 0;
        self.previous = last;
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

    /// What `step` over a run of letters leaves (a letter never ends a name).
    fn letters(&mut self, letters: &[u8]) {
        let tail = &letters[letters.len().saturating_sub(8)..];
        for &letter in tail {
            self.last_eight = self.last_eight << 8 | u64::from(letter.to_ascii_lowercase());
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
