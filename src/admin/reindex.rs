//! Online reindex over the admin socket: the server's index writer rebuilds the search index
//! from redb while ingest and searches go on (`search::rebuild`), and its progress is streamed
//! to the CLI.
//!
//! Protocol, after the request line `{"command":"reindex"}`:
//! - zero or more lines `{"progress":{"done","total"}}` (stored events indexed so far, of
//!   those stored when the rebuild began), at most every 200 ms;
//! - then one reply line: `{"ok":true,"result":{"indexed":N}}`, or `{"ok":false,"error":{…}}`
//!   (`reindex_failed`; the index is then as it was), and the server closes the connection.
//!
//! Invariants: one rebuild at a time per server (a second is refused by the writer); a client
//! that goes away cancels the rebuild at its next progress report, leaving the index as it was.

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::backup::send_line;
use super::{AdminContext, AdminFailure, AdminResponse};
use crate::errors::RebuildReport;

/// One progress line of an online reindex.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ReindexProgress {
    pub done: u64,
    pub total: u64,
}

#[derive(Serialize)]
struct ProgressLine {
    progress: ReindexProgress,
}

/// Serves one reindex request on `writer` (server side).
pub async fn serve(context: &AdminContext, writer: &mut OwnedWriteHalf) -> std::io::Result<()> {
    let Some(search) = context.search.clone() else {
        let failure = failure("this process has no search index to rebuild".into());
        return send_line(writer, &AdminResponse::from_result(Err(failure))).await;
    };
    // The writer thread reports on a blocking channel; a blocking task forwards the reports
    // until this side stops listening, and dropping its receiver then cancels the rebuild.
    let (forward, mut reports) = mpsc::channel::<RebuildReport>(16);
    tokio::task::spawn_blocking(move || {
        let receiver = search.rebuild_online();
        while let Ok(report) = receiver.recv() {
            if forward.blocking_send(report).is_err() {
                break;
            }
        }
    });
    while let Some(report) = reports.recv().await {
        match report {
            RebuildReport::Progress { done, total } => {
                let progress = ReindexProgress { done, total };
                send_line(writer, &ProgressLine { progress }).await?;
            }
            RebuildReport::Finished(result) => {
                let result = result
                    .map(|indexed| json!({ "indexed": indexed }))
                    .map_err(failure);
                send_line(writer, &AdminResponse::from_result(result)).await?;
                return writer.shutdown().await;
            }
        }
    }
    let failure = failure("the search writer stopped before the rebuild ended".into());
    send_line(writer, &AdminResponse::from_result(Err(failure))).await
}

fn failure(message: String) -> AdminFailure {
    AdminFailure {
        code: "reindex_failed".into(),
        message,
    }
}
