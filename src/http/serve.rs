//! The connection loop: hyper with a timer (so the header read timeout really fires), a cap
//! on concurrent connections, and graceful shutdown.
//!
//! Invariants: at most `max_connections` connections are open (the next accept waits for a
//! free slot, so the kernel backlog absorbs bursts); once `shutdown` resolves no connection is
//! accepted, in-flight requests finish, idle keep-alive connections close, and the function
//! returns within `grace` whatever the clients do. Every connection passes through
//! `EdgeGuard`, which refuses over-long targets and doubly framed requests on the wire.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

use super::edge::EdgeGuard;

#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
    /// Hard cap enforced by hyper's parser; the router's own (lower) limits answer in problem+json.
    pub max_header_count: usize,
    /// Bytes hyper buffers for one request head before answering 431 itself.
    pub max_head_bytes: usize,
    /// Longest request target; a longer one is answered 414 at the edge (`edge.rs`).
    pub max_uri_bytes: usize,
    /// How long in-flight requests get to finish after shutdown begins.
    pub grace: Duration,
}

pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let capacity = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(capacity));
    // Turns true when shutdown begins; every connection task watches it.
    let (closing, closing_seen) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_header_count)
        .max_buf_size(limits.max_head_bytes.max(8192));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or a reset before accept: pause briefly, keep serving.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut request: hyper::Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(remote));
                request
            });
        let connection = builder
            .serve_connection(
                TokioIo::new(EdgeGuard::new(stream, limits.max_uri_bytes)),
                TowerToHyperService::new(service),
            )
            .with_upgrades();
        let mut closing_seen = closing_seen.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = async { closing_seen.wait_for(|closing| *closing).await.is_ok() } => {
                    // Finish the request in flight (if any), then close instead of keeping alive.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%error, %remote, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections, finishing requests in flight");
    let _ = closing.send(true);
    // Every connection holds a slot: having them all back means every connection is closed.
    let all_slots = u32::try_from(capacity).unwrap_or(u32::MAX);
    tokio::select! {
        _ = slots.acquire_many(all_slots) => {}
        () = tokio::time::sleep(limits.grace) => {
            tracing::warn!(grace_seconds = limits.grace.as_secs(), "connections still open after the grace period; closing them");
        }
    }
}
