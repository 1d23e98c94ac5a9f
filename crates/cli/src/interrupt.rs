//! Partial output files removed when the command is interrupted. The
//! temporary files that outputs are written to (see `output`) are listed
//! here while they exist; from the first one on, SIGINT, SIGTERM and SIGHUP
//! are caught by a thread of their own, which removes the listed files and
//! exits with the status a shell reports for the signal (128 + its number:
//! 130 for Ctrl-C). Before any output is written the signals keep their
//! default action.

use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, Once};

/// The partial files that exist now.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A listed partial file; dropping it takes it off the list (once it was
/// renamed into place or removed).
pub struct Partial(PathBuf);

impl Drop for Partial {
    fn drop(&mut self) {
        let mut list = partial_files();
        if let Some(i) = list.iter().position(|p| *p == self.0) {
            list.swap_remove(i);
        }
    }
}

/// Creates a temporary file with `create` and lists it, both before a
/// signal can be handled, so that an interrupt never leaves it behind.
pub fn partial_file(
    create: impl FnOnce() -> io::Result<tempfile::NamedTempFile>,
) -> io::Result<(tempfile::NamedTempFile, Partial)> {
    catch_signals();
    let mut list = partial_files();
    let file = create()?;
    let path = file.path().to_path_buf();
    list.push(path.clone());
    Ok((file, Partial(path)))
}

/// The list, even after a thread panicked while holding it.
fn partial_files() -> MutexGuard<'static, Vec<PathBuf>> {
    PARTIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts, once, the thread that handles the signals. When they cannot be
/// caught, they keep their default action (and may leave a partial file).
fn catch_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    remove_and_exit(sig);
                }
            });
        drop(spawned);
    });
}

/// Removes the partial files and ends the process (without unwinding or
/// flushing: the main thread may be in the middle of a write).
fn remove_and_exit(sig: i32) -> ! {
    let list = partial_files();
    for path in list.iter() {
        let _ = std::fs::remove_file(path);
    }
    // SAFETY: _exit only ends the process. The list stays locked, so no
    // new partial file is listed meanwhile; one the main thread renamed into
    // place first is complete, and its old name is not found.
    unsafe { libc::_exit(128 + sig) }
}

/// Whether `path` is listed (for tests of the module).
#[cfg(test)]
fn is_listed(path: &std::path::Path) -> bool {
    partial_files().iter().any(|p| p == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_file_is_listed_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (file, partial) = partial_file(|| tempfile::NamedTempFile::new_in(dir.path())).unwrap();
        assert!(is_listed(file.path()));
        drop(partial);
        assert!(!is_listed(file.path()));
    }
}
