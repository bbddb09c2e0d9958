//! Request bodies read into buffers that are used again: an ingest body of a few hundred KB is
//! copied chunk by chunk, as it arrives, into a buffer taken from a small shared stock, and the
//! buffer goes back to the stock when the body has been parsed. Allocating one per request
//! (and concatenating the connection's chunks into it) took a fresh allocation of the body's
//! size per request, often straight from the kernel, and kept the connection's read buffer from
//! being used again while its chunks were held.
//!
//! Invariants: the stock holds at most `STOCK` buffers of at most `KEEP_UP_TO` bytes of
//! capacity each, so what it keeps is bounded whatever the body limit; a buffer given out is
//! always empty; a body is never read without both its byte limit (413 `body_too_large`, checked
//! before a chunk is copied) and its deadline (408 `request_timeout`), as `read_body`.

use std::ops::Deref;
use std::sync::Mutex;

use axum::body::Body;

use super::error::ApiError;
use super::extract::{BodyRules, read_frames};

/// Buffers kept for the next requests: two CPU threads parse while more bodies stream in.
pub const STOCK: usize = 16;
/// The largest capacity a returned buffer may have and still be kept (a few times the default
/// ingest limit of 256 KiB): one of a larger limit's bodies is freed instead.
pub const KEEP_UP_TO: usize = 1 << 20;

/// Buffers waiting for a body.
#[derive(Debug, Default)]
pub struct Stock(Mutex<Vec<Vec<u8>>>);

/// The server's one stock.
static STOCKED: Stock = Stock(Mutex::new(Vec::new()));

impl Stock {
    fn buffers(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn take(&'static self) -> ReusedBody {
        let buffer = self.buffers().pop().unwrap_or_default();
        ReusedBody {
            buffer,
            stock: self,
        }
    }

    fn give_back(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() == 0 || buffer.capacity() > KEEP_UP_TO {
            return;
        }
        buffer.clear();
        let mut buffers = self.buffers();
        if buffers.len() < STOCK {
            buffers.push(buffer);
        }
    }
}

/// A body read into a buffer from the stock; the buffer goes back when this is dropped.
#[derive(Debug)]
pub struct ReusedBody {
    buffer: Vec<u8>,
    stock: &'static Stock,
}

impl Deref for ReusedBody {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for ReusedBody {
    fn drop(&mut self) {
        self.stock.give_back(std::mem::take(&mut self.buffer));
    }
}

/// Reads a whole body under `rules` into a buffer from the stock.
pub async fn read_body_reused(body: Body, rules: BodyRules) -> Result<ReusedBody, ApiError> {
    read_into(STOCKED.take(), body, rules).await
}

async fn read_into(
    mut read: ReusedBody,
    body: Body,
    rules: BodyRules,
) -> Result<ReusedBody, ApiError> {
    read_frames(body, rules, &mut read.buffer).await?;
    Ok(read)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::Bytes;
    use futures_util::stream;

    use super::*;
    use crate::http::ErrorCode;
    use crate::http::extract::{RESERVED_UP_FRONT, read_body};

    fn rules(max_bytes: usize) -> BodyRules {
        BodyRules {
            max_bytes,
            read_timeout: Duration::from_secs(5),
        }
    }

    /// A body that arrives in `chunks` pieces, as a connection delivers a large one.
    fn chunked(bytes: &[u8], chunks: usize) -> Body {
        let size = bytes.len().div_ceil(chunks.max(1)).max(1);
        let pieces: Vec<Result<Bytes, std::io::Error>> = bytes
            .chunks(size)
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect();
        Body::from_stream(stream::iter(pieces))
    }

    #[tokio::test]
    async fn a_body_of_many_chunks_is_read_whole_up_to_its_limit_exactly() {
        let bytes: Vec<u8> = (0..10_000u32).map(|n| (n % 251) as u8).collect();
        let read = read_body_reused(chunked(&bytes, 7), rules(10_000))
            .await
            .unwrap();
        assert_eq!(&*read, bytes.as_slice());
        let over = read_body_reused(chunked(&bytes, 7), rules(9_999))
            .await
            .unwrap_err();
        assert_eq!(over.code, ErrorCode::BodyTooLarge);
        let empty = read_body_reused(Body::empty(), rules(10)).await.unwrap();
        assert!(empty.is_empty());
    }

    #[tokio::test]
    async fn a_stalled_body_ends_at_its_deadline() {
        let never = Body::from_stream(stream::pending::<Result<Bytes, std::io::Error>>());
        let slow = BodyRules {
            max_bytes: 10,
            read_timeout: Duration::from_millis(50),
        };
        let error = read_body_reused(never, slow).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::RequestTimeout);
    }

    /// A body that declares `length` up front (as `Content-Length` does) and then yields
    /// `chunks` and ends, or (`None`) never yields anything.
    struct Declared {
        length: u64,
        chunks: Option<Vec<Bytes>>,
    }

    impl hyper::body::Body for Declared {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
            match self.chunks.as_mut() {
                None => std::task::Poll::Pending,
                Some(chunks) if chunks.is_empty() => std::task::Poll::Ready(None),
                Some(chunks) => {
                    let chunk = chunks.remove(0);
                    std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(chunk))))
                }
            }
        }

        fn size_hint(&self) -> hyper::body::SizeHint {
            hyper::body::SizeHint::with_exact(self.length)
        }
    }

    #[tokio::test]
    async fn a_fresh_buffer_is_read_by_the_same_rules_and_takes_a_declared_length_at_once() {
        let bytes: Vec<u8> = (0..10_000u32).map(|n| (n % 251) as u8).collect();
        let read = read_body(chunked(&bytes, 7), rules(10_000)).await.unwrap();
        assert_eq!(read, bytes.as_slice());
        let over = read_body(chunked(&bytes, 7), rules(9_999)).await;
        assert_eq!(over.unwrap_err().code, ErrorCode::BodyTooLarge);

        // Declared within the limit: one allocation of that size, never grown.
        let pieces = bytes.chunks(1000).map(Bytes::copy_from_slice).collect();
        let mut into = Vec::new();
        let declared = Declared {
            length: 10_000,
            chunks: Some(pieces),
        };
        read_frames(Body::new(declared), rules(10_000), &mut into)
            .await
            .unwrap();
        assert_eq!((into.len(), into.capacity()), (10_000, 10_000));
        assert_eq!(into, bytes);

        // Declared large: only `RESERVED_UP_FRONT` is taken on the client's word.
        let mut into = Vec::new();
        let claims_more = Declared {
            length: 1 << 20,
            chunks: Some(vec![Bytes::from_static(b"{}")]),
        };
        read_frames(Body::new(claims_more), rules(1 << 20), &mut into)
            .await
            .unwrap();
        assert_eq!((into.len(), into.capacity()), (2, RESERVED_UP_FRONT));

        // Declared over the limit: 413 at once, before a frame is awaited (this one never
        // comes, so reading would end at the deadline with 408 instead).
        let never = Declared {
            length: 10_001,
            chunks: None,
        };
        let refused = read_body(Body::new(never), rules(10_000)).await;
        assert_eq!(refused.unwrap_err().code, ErrorCode::BodyTooLarge);
    }

    fn own_stock() -> &'static Stock {
        Box::leak(Box::default())
    }

    #[tokio::test]
    async fn a_buffer_goes_back_empty_and_is_given_out_again() {
        let stock = own_stock();
        let body = vec![b'x'; 4096];
        let first = read_into(stock.take(), chunked(&body, 3), rules(1 << 20))
            .await
            .unwrap();
        let (address, capacity) = (first.as_ptr(), first.buffer.capacity());
        drop(first);
        let again = read_into(stock.take(), chunked(b"{}", 1), rules(10))
            .await
            .unwrap();
        assert_eq!(&*again, b"{}", "nothing of the last body is left");
        assert_eq!(
            (again.as_ptr(), again.buffer.capacity()),
            (address, capacity)
        );
        // A body that fails still gives its buffer back.
        drop(again);
        let failed = read_into(stock.take(), chunked(&body, 2), rules(100)).await;
        assert_eq!(failed.unwrap_err().code, ErrorCode::BodyTooLarge);
        assert_eq!(stock.buffers().len(), 1);
    }

    #[test]
    fn the_stock_keeps_at_most_its_count_of_buffers_not_over_its_size() {
        let stock = own_stock();
        let given: Vec<ReusedBody> = (0..STOCK + 3)
            .map(|_| ReusedBody {
                buffer: Vec::with_capacity(1024),
                stock,
            })
            .collect();
        drop(given);
        assert_eq!(stock.buffers().len(), STOCK);
        stock.buffers().clear();
        for capacity in [KEEP_UP_TO + 1, 0, KEEP_UP_TO] {
            stock.give_back(Vec::with_capacity(capacity));
        }
        let kept: Vec<usize> = stock.buffers().iter().map(Vec::capacity).collect();
        assert_eq!(kept, vec![KEEP_UP_TO]);
    }
}
