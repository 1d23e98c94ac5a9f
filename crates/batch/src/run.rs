//! Many files on several threads: each thread takes the next file not yet
//! taken, so a slow file does not hold the others up; the outcomes come
//! back in the order of the files, whatever the order they finished in.

use crate::{analyze_file_with_problems, Error, Options, TraceResult};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One file's outcome: its results and a problem that let the analysis
/// finish, or the error that stopped it.
pub type FileOutcome = Result<(Vec<TraceResult>, Option<Error>), Error>;

/// Analyzes `paths` on `threads` threads (at least 1); `done` is called
/// with the number of files finished after each file. Outcomes are in the
/// order of `paths`.
pub fn analyze_files(
    paths: &[PathBuf],
    opts: &Options,
    threads: usize,
    done: impl Fn(usize) + Sync,
) -> Vec<FileOutcome> {
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileOutcome>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = paths.get(i) else { break };
        let outcome = analyze_file_with_problems(path, opts);
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        done(finished.fetch_add(1, Ordering::Relaxed) + 1);
    };
    let threads = threads.clamp(1, paths.len().max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every file is analyzed")
        })
        .collect()
}
