//! Many files on several threads: each thread takes the next file not yet
//! taken, so a slow file does not hold the others up; the outcomes come
//! back in the order of the files, whatever the order they finished in.

use crate::{analyze_file_with_problems, Error, Options, TraceResult};
use critpath_import::input::{given_before, given_twice_message};
use critpath_trace::{Location, ReadError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One file's outcome: its results and a problem that let the analysis
/// finish, or the error that stopped it.
pub type FileOutcome = Result<(Vec<TraceResult>, Option<Error>), Error>;

/// Analyzes `paths` on `threads` threads (at least 1); `done` is called
/// with the number of files finished after each file. Outcomes are in the
/// order of `paths`. A file given again, under its name or another, is
/// analyzed once: the later argument's outcome is an error naming the
/// first (its requests would count twice).
pub fn analyze_files(
    paths: &[PathBuf],
    opts: &Options,
    threads: usize,
    done: impl Fn(usize) + Sync,
) -> Vec<FileOutcome> {
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let before = given_before(paths);
    let slots: Vec<Mutex<Option<FileOutcome>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = paths.get(i) else { break };
        let outcome = match before[i] {
            Some(first) => Err(given_twice(path, &paths[first])),
            None => analyze_file_with_problems(path, opts),
        };
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

/// The error of `path`, the same file as `first` given before it.
fn given_twice(path: &Path, first: &Path) -> Error {
    let name = path.display().to_string();
    let why = given_twice_message(first, "analyzed once");
    Error::Read(ReadError::new(&name, Location::File, why, true))
}
