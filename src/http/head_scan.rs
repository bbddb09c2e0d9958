//! Following the HTTP/1.1 framing of a client's byte stream: request line, header lines, then
//! the body by its declared length or its chunks, to find each request head on the wire.
//!
//! Invariants: the scanner never refuses what it does not understand. Anything it cannot
//! follow (a malformed line, a framing hyper will refuse itself, an upgrade to a websocket)
//! switches it to passing bytes through unexamined for the rest of the connection. It keeps at
//! most `KEPT_LINE_BYTES` of one header line; bodies are skipped by count, never copied.

/// The bytes of a header line kept to read its name and value (framing headers are short).
const KEPT_LINE_BYTES: usize = 256;
/// Longer than any method hyper accepts; more means this is not HTTP.
const MAX_METHOD_BYTES: usize = 32;

/// Where in the request stream the next byte falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the method; blank lines between requests are skipped.
    Method(usize),
    Target(usize),
    /// The protocol version, up to the end of the request line.
    Version,
    HeaderLine,
    Body(u64),
    ChunkSize {
        size: u64,
        digits: bool,
        extension: bool,
    },
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailer {
        empty: bool,
    },
    PassThrough,
}

/// What the header lines of the current head said about framing.
#[derive(Debug, Default)]
struct Framing {
    content_length: Option<Option<u64>>,
    transfer_encoding: Option<bool>,
    upgrade: bool,
    unreadable: bool,
}

/// The head scanner: fed every byte read from the client, in order.
#[derive(Debug)]
pub struct HeadScanner {
    pub max_uri_bytes: usize,
    phase: Phase,
    line: Vec<u8>,
    line_overflowed: bool,
    framing: Framing,
}

/// Why a request is answered at the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    UriTooLong,
    AmbiguousFraming,
}

impl HeadScanner {
    pub fn new(max_uri_bytes: usize) -> Self {
        HeadScanner {
            max_uri_bytes,
            phase: Phase::Method(0),
            line: Vec::new(),
            line_overflowed: false,
            framing: Framing::default(),
        }
    }

    /// Follows `bytes`; `Some((offset, refusal))` when the byte at `offset` decides a refusal.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<(usize, Refusal)> {
        let mut at = 0;
        while at < bytes.len() {
            // Bodies and chunk data are skipped in one step.
            if let Phase::Body(left) | Phase::ChunkData(left) = self.phase {
                let step = left.min((bytes.len() - at) as u64);
                at += step as usize;
                self.phase = match (self.phase, left - step) {
                    (Phase::Body(_), 0) => Phase::Method(0),
                    (Phase::Body(_), rest) => Phase::Body(rest),
                    (_, 0) => Phase::ChunkEnd,
                    (_, rest) => Phase::ChunkData(rest),
                };
                continue;
            }
            if self.phase == Phase::PassThrough {
                return None;
            }
            if let Some(refusal) = self.step(bytes[at]) {
                return Some((at, refusal));
            }
            at += 1;
        }
        None
    }

    /// One byte of a head or of chunk framing.
    fn step(&mut self, byte: u8) -> Option<Refusal> {
        self.phase = match (self.phase, byte) {
            (Phase::Method(0), b'\r' | b'\n') => Phase::Method(0),
            (Phase::Method(n), b' ') if n > 0 => Phase::Target(0),
            (Phase::Method(n), _) if n < MAX_METHOD_BYTES && byte.is_ascii_graphic() => {
                Phase::Method(n + 1)
            }
            (Phase::Target(_), b' ') => Phase::Version,
            (Phase::Target(_), b'\r' | b'\n') => Phase::PassThrough,
            (Phase::Target(n), _) if n + 1 > self.max_uri_bytes => {
                return Some(Refusal::UriTooLong);
            }
            (Phase::Target(n), _) => Phase::Target(n + 1),
            (Phase::Version, b'\n') => {
                self.framing = Framing::default();
                self.line.clear();
                Phase::HeaderLine
            }
            (Phase::Version, _) => Phase::Version,
            (Phase::HeaderLine, b'\n') => return self.end_of_header_line(),
            (Phase::HeaderLine, _) => {
                if self.line.len() < KEPT_LINE_BYTES {
                    self.line.push(byte);
                } else {
                    self.line_overflowed = true;
                }
                Phase::HeaderLine
            }
            (
                Phase::ChunkSize {
                    size,
                    digits,
                    extension,
                },
                _,
            ) => self.chunk_size(size, digits, extension, byte),
            (Phase::ChunkEnd, b'\r') => Phase::ChunkEnd,
            (Phase::ChunkEnd, b'\n') => Phase::ChunkSize {
                size: 0,
                digits: false,
                extension: false,
            },
            (Phase::Trailer { empty }, b'\n') if empty => Phase::Method(0),
            (Phase::Trailer { .. }, b'\n') => Phase::Trailer { empty: true },
            (Phase::Trailer { empty }, b'\r') => Phase::Trailer { empty },
            (Phase::Trailer { .. }, _) => Phase::Trailer { empty: false },
            _ => Phase::PassThrough,
        };
        None
    }

    fn chunk_size(&mut self, size: u64, digits: bool, extension: bool, byte: u8) -> Phase {
        let digit = (byte as char).to_digit(16);
        match (byte, digit) {
            (b'\n', _) if !digits => Phase::PassThrough,
            (b'\n', _) if size == 0 => Phase::Trailer { empty: true },
            (b'\n', _) => Phase::ChunkData(size),
            (_, _) if extension => Phase::ChunkSize {
                size,
                digits,
                extension,
            },
            (_, Some(value)) => match size.checked_mul(16) {
                Some(shifted) => Phase::ChunkSize {
                    size: shifted + u64::from(value),
                    digits: true,
                    extension: false,
                },
                None => Phase::PassThrough,
            },
            (b';' | b' ' | b'\t' | b'\r', None) if digits => Phase::ChunkSize {
                size,
                digits,
                extension: true,
            },
            _ => Phase::PassThrough,
        }
    }

    /// A header line ended; an empty one ends the head and decides how the body is framed.
    fn end_of_header_line(&mut self) -> Option<Refusal> {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let line = std::mem::take(&mut self.line);
        let overflowed = std::mem::replace(&mut self.line_overflowed, false);
        if !line.is_empty() {
            self.note_header(&line, overflowed);
            self.phase = Phase::HeaderLine;
            return None;
        }
        let framing = std::mem::take(&mut self.framing);
        if framing.content_length.is_some() && framing.transfer_encoding.is_some() {
            return Some(Refusal::AmbiguousFraming);
        }
        self.phase = match framing {
            Framing {
                unreadable: true, ..
            }
            | Framing { upgrade: true, .. } => Phase::PassThrough,
            Framing {
                transfer_encoding: Some(true),
                ..
            } => Phase::ChunkSize {
                size: 0,
                digits: false,
                extension: false,
            },
            Framing {
                transfer_encoding: Some(false),
                ..
            } => Phase::PassThrough,
            Framing {
                content_length: Some(Some(0)),
                ..
            } => Phase::Method(0),
            Framing {
                content_length: Some(Some(length)),
                ..
            } => Phase::Body(length),
            Framing {
                content_length: Some(None),
                ..
            } => Phase::PassThrough,
            Framing {
                content_length: None,
                ..
            } => Phase::Method(0),
        };
        None
    }

    fn note_header(&mut self, line: &[u8], overflowed: bool) {
        let framing = &mut self.framing;
        // An obsolete line folding, or no colon: hyper refuses the head, nothing to follow.
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            framing.unreadable = true;
            return;
        };
        if line.starts_with(b" ") || line.starts_with(b"\t") {
            framing.unreadable = true;
            return;
        }
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let value = std::str::from_utf8(value)
            .map(str::trim)
            .ok()
            .filter(|_| !overflowed);
        if name.eq_ignore_ascii_case(b"content-length") {
            let length = value.and_then(|text| text.parse::<u64>().ok());
            framing.content_length = match framing.content_length {
                Some(earlier) if earlier != length => Some(None),
                _ => Some(length),
            };
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let last = value
                .and_then(|text| text.rsplit(',').next())
                .map(str::trim);
            let chunked = last.is_some_and(|coding| coding.eq_ignore_ascii_case("chunked"));
            framing.transfer_encoding = Some(chunked);
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            framing.upgrade = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `stream` in pieces of `piece` bytes; the refusal and the offset it was decided at.
    fn scan(stream: &[u8], piece: usize) -> Option<(usize, Refusal)> {
        let mut scanner = HeadScanner::new(16);
        let mut offset = 0;
        for part in stream.chunks(piece) {
            if let Some((at, refusal)) = scanner.feed(part) {
                return Some((offset + at, refusal));
            }
            offset += part.len();
        }
        None
    }

    #[test]
    fn requests_are_followed_through_bodies_and_chunks() {
        let fine: &[&[u8]] = &[
            b"GET /short HTTP/1.1\r\nHost: a\r\n\r\nGET /again HTTP/1.1\r\n\r\n",
            b"\r\nPOST /p HTTP/1.1\r\nContent-Length: 40\r\n\r\nGET /aaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n",
            b"POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.1\r\n\r\n",
            b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\nGET /xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ];
        for stream in fine {
            for piece in [1, 3, 1000] {
                assert_eq!(
                    scan(stream, piece),
                    None,
                    "{}",
                    String::from_utf8_lossy(stream)
                );
            }
        }
    }

    #[test]
    fn long_targets_and_double_framing_are_refused() {
        let long = b"GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n";
        assert_eq!(scan(long, 1), Some((20, Refusal::UriTooLong)));
        let at_limit = b"GET /aaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n";
        assert_eq!(scan(at_limit, 7), None);
        let after_body = b"POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /aaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n";
        assert!(matches!(
            scan(after_body, 2),
            Some((_, Refusal::UriTooLong))
        ));
        for both in [
            &b"POST /p HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"POST /p HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\ncontent-length: 5\r\n\r\n",
        ] {
            assert!(matches!(
                scan(both, 4),
                Some((_, Refusal::AmbiguousFraming))
            ));
        }
    }
}
