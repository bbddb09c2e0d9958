//! The connection's edge: request heads checked on the wire, before hyper parses them.
//!
//! Two refusals cannot be made after hyper: a request target longer than the whole head buffer
//! gets hyper's own bodiless 431, and a request carrying both `Content-Length` and
//! `Transfer-Encoding` reaches the router with the length already removed (hyper then trusts
//! the chunked framing, which a proxy in front may read differently: request smuggling). So
//! `EdgeGuard` wraps the socket and feeds the bytes it passes on to a `HeadScanner`
//! (`head_scan.rs`). A target over `max_uri_bytes` is answered 414 `uri_too_long` as soon as
//! it passes the limit, and a head with both framings 400 `malformed_request`. Either answer
//! is written here; the connection is then closed, after reading what the client still sends
//! (up to `LINGER_BYTES`, so the answer is not lost to a reset), and hyper sees a read error,
//! so it answers nothing itself.
//!
//! Invariant: only a decided refusal changes what hyper sees; every other byte passes as read.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::{ErrorCode, problem_body};
use super::head_scan::{HeadScanner, Refusal};

/// Most bytes read and dropped after a refusal before the connection is closed regardless
/// (the header read timeout bounds the time a silent client can hold it).
const LINGER_BYTES: usize = 2 << 20;

/// The answer written for a refusal, closing the connection.
fn refusal_response(refusal: Refusal, max_uri_bytes: usize) -> Vec<u8> {
    let (code, detail) = match refusal {
        Refusal::UriTooLong => (
            ErrorCode::UriTooLong,
            format!("the request target is longer than {max_uri_bytes} bytes"),
        ),
        Refusal::AmbiguousFraming => (
            ErrorCode::MalformedRequest,
            "send either Content-Length or Transfer-Encoding, not both".to_string(),
        ),
    };
    let body = problem_body(code, detail);
    let status = code.status();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    [head.into_bytes(), body].concat()
}

/// A refusal on its way out.
struct Refusing {
    response: Vec<u8>,
    written: usize,
    /// Bytes the client sent after the refusal, read and dropped.
    discarded: usize,
}

/// A client connection whose request heads are checked on the way to hyper.
pub struct EdgeGuard<S> {
    inner: S,
    scanner: HeadScanner,
    refusing: Option<Refusing>,
}

impl<S> EdgeGuard<S> {
    pub fn new(inner: S, max_uri_bytes: usize) -> Self {
        EdgeGuard {
            inner,
            scanner: HeadScanner::new(max_uri_bytes),
            refusing: None,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> EdgeGuard<S> {
    /// Writes the refusal, closes the sending side, reads what the client still sends (so
    /// closing does not reset the connection before the client read the answer), then fails
    /// the read so hyper gives up.
    fn poll_refuse(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(refusing) = &mut self.refusing {
            while refusing.written < refusing.response.len() {
                let unsent = &refusing.response[refusing.written..];
                let sent = ready!(Pin::new(&mut self.inner).poll_write(cx, unsent))?;
                if sent == 0 {
                    break;
                }
                refusing.written += sent;
            }
            ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
            let mut sink = [0u8; 8192];
            while refusing.discarded < LINGER_BYTES {
                let mut discard = ReadBuf::new(&mut sink);
                ready!(Pin::new(&mut self.inner).poll_read(cx, &mut discard))?;
                if discard.filled().is_empty() {
                    break;
                }
                refusing.discarded += discard.filled().len();
            }
        }
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "request refused at the connection's edge",
        )))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for EdgeGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.refusing.is_some() {
            return this.poll_refuse(cx);
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let Some((_, refusal)) = this.scanner.feed(&buf.filled()[before..]) else {
            return Poll::Ready(Ok(()));
        };
        // hyper never sees the bytes of the refused request that arrived with this read.
        buf.set_filled(before);
        let response = refusal_response(refusal, this.scanner.max_uri_bytes);
        this.refusing = Some(Refusing {
            response,
            written: 0,
            discarded: 0,
        });
        this.poll_refuse(cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for EdgeGuard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_problem_json_and_close() {
        let response = String::from_utf8(refusal_response(Refusal::AmbiguousFraming, 16)).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{response}"
        );
        assert!(
            response.contains("connection: close")
                && response.contains("\"code\":\"malformed_request\"")
        );
    }
}
