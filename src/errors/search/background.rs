//! The search index's threads yield the CPU to ingest: the index writer thread, and every
//! thread tantivy starts for it (its indexing worker, the doc store's compressor, the merge
//! and segment-updater pools), run at a lower scheduling priority (nice `NICE`).
//!
//! On a busy machine an acknowledgement waits on the request's parsing and on the store's
//! writer; on the index only while its byte-bounded inbox is past half its bound (`inbox.rs`),
//! and the index drains that inbox with the CPU they leave. At full speed the index is most of
//! the work that can wait. A thread's nice value is inherited by the threads it starts, so
//! lowering the index writer thread once, and opening each tantivy `IndexWriter` from a lowered
//! thread, covers every thread tantivy starts, then or later.
//!
//! Invariant: only threads of the search index are lowered; a caller's thread never is (an
//! `IndexWriter` opened from another thread is opened on a short-lived lowered one).

/// The nice value of the search index's threads (0 is the default; 19 the lowest priority).
pub const NICE: i32 = 5;

/// Lowers the calling thread's scheduling priority to `NICE` (never raises it). On Linux the
/// nice value is a per-thread attribute; an unprivileged thread may always lower itself.
pub fn lower_this_thread() {
    // SAFETY: getpriority and setpriority take plain integers and touch no memory of ours;
    // `who` 0 names the calling thread.
    unsafe {
        // getpriority may legitimately return -1: errno tells an error apart, and on either
        // the thread is simply set to NICE below.
        let current = libc::getpriority(libc::PRIO_PROCESS as _, 0);
        if current < NICE {
            libc::setpriority(libc::PRIO_PROCESS as _, 0, NICE);
        }
    }
}

/// Runs `open` on a short-lived thread at the lowered priority and returns what it returns:
/// the threads it starts (tantivy's pools) inherit the priority; the caller's thread keeps its
/// own. A thread that cannot be started is an error, as it would be for tantivy's own.
pub fn opened_lowered<T: Send>(
    open: impl FnOnce() -> tantivy::Result<T> + Send,
) -> tantivy::Result<T> {
    std::thread::scope(|scope| {
        let opener = std::thread::Builder::new()
            .name("search-open".into())
            .spawn_scoped(scope, || {
                lower_this_thread();
                open()
            })
            .map_err(|error| {
                tantivy::TantivyError::SystemError(format!("no thread to open an index: {error}"))
            })?;
        match opener.join() {
            Ok(opened) => opened,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The nice value of the thread `tid` of this process, from `/proc` (Linux).
#[cfg(test)]
pub fn nice_of(tid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields follow the last `)`.
    let after = &stat[stat.rfind(')')? + 2..];
    // Field 19 of the line (nice) is the 17th after the name.
    after.split(' ').nth(16)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (tid, nice) of this process's tantivy merge threads.
    fn merge_threads() -> Vec<(String, i32)> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|entry| {
                let tid = entry.ok()?.file_name().into_string().ok()?;
                let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
                let nice = nice_of(&tid)?;
                name.starts_with("merge_thread").then_some((tid, nice))
            })
            .collect()
    }

    fn own_nice() -> i32 {
        // SAFETY: as in `lower_this_thread`.
        unsafe { libc::getpriority(libc::PRIO_PROCESS as _, 0) }
    }

    #[test]
    fn an_index_writer_opened_lowered_runs_its_threads_lowered_and_leaves_the_caller_alone() {
        let before = own_nice();
        let existing = merge_threads();
        let (schema, _) = super::super::schema::schema();
        let index = tantivy::Index::create_in_ram(schema);
        let writer: tantivy::IndexWriter =
            opened_lowered(|| index.writer_with_num_threads(1, 15_000_000)).unwrap();
        // Tests running alongside may start writers of their own (lowered or not): among the
        // merge threads started meanwhile are this writer's, lowered. A new thread names itself
        // once it runs, so its name may lag its start by a moment: look again until it shows.
        let lowered = |threads: &[(String, i32)]| threads.iter().any(|(_, nice)| *nice >= NICE);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let started = loop {
            let started: Vec<(String, i32)> = merge_threads()
                .into_iter()
                .filter(|thread| !existing.iter().any(|(tid, _)| *tid == thread.0))
                .collect();
            if lowered(&started) || std::time::Instant::now() > deadline {
                break started;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(lowered(&started), "{started:?}");
        assert_eq!(own_nice(), before);
        drop(writer);
    }

    #[test]
    fn a_lowered_thread_stays_lowered_and_what_it_starts_is_lowered() {
        let nice = std::thread::spawn(|| {
            lower_this_thread();
            lower_this_thread();
            let own = own_nice();
            let child = std::thread::spawn(own_nice).join().unwrap();
            (own, child)
        })
        .join()
        .unwrap();
        assert_eq!(nice, (NICE, NICE));
    }
}
