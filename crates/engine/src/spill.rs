//! The node log's spill file: an anonymous temporary file appended to while
//! the engine streams, then read back through a large window, so that
//! walking it backwards block by block costs a system call a megabyte
//! rather than two a block.
//!
//! Appending hands a whole buffer to a thread of the file's own that
//! writes it, so the copy into the page cache is not on the engine's
//! thread (it took a tenth of the engine's time there). The engine hands a
//! buffer over once the writer has written the previous one, and goes on
//! in one the writer gave back: at most four buffers exist.
//! `CRITPATH_THREADS=1` writes on the engine's thread.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Bytes read from the file at once when walking it backwards.
const WINDOW: usize = 1 << 20;

/// An anonymous temporary file, appended to, then read (by several
/// readers at once, each through its own [`Window`]).
#[derive(Default)]
pub struct SpillFile {
    /// The file: once [`SpillFile::finish`]ed, or written on the engine's
    /// thread (`CRITPATH_THREADS=1`).
    file: Option<File>,
    writer: Option<Writer>,
    /// The buffer written last on this thread, to be filled again.
    spare: Vec<u8>,
    len: u64,
    /// Written on the caller's thread, not by a writer of its own.
    inline: bool,
}

/// The thread that writes appended buffers, and the buffers it wrote.
struct Writer {
    tx: SyncSender<Vec<u8>>,
    /// In a mutex only so that a finished file can be shared by threads.
    written: Mutex<Receiver<Vec<u8>>>,
    thread: JoinHandle<io::Result<File>>,
}

impl Writer {
    fn spawn() -> io::Result<Writer> {
        let mut file = tempfile::tempfile()?;
        let (tx, rx) = sync_channel::<Vec<u8>>(0);
        let (back, written) = channel();
        let thread = std::thread::Builder::new()
            .name("critpath-spill".into())
            .spawn(move || {
                for buf in rx {
                    file.write_all(&buf)?;
                    // The engine may no longer take buffers back.
                    let _ = back.send(buf);
                }
                Ok(file)
            })?;
        Ok(Writer {
            tx,
            written: Mutex::new(written),
            thread,
        })
    }

    /// Waits for every write: the file, or the first error.
    fn join(self) -> io::Result<File> {
        drop(self.tx);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("node log: the spill writer panicked")))
    }
}

/// A reader's window on a [`SpillFile`]: the bytes `at..` it read last.
#[derive(Default)]
pub struct Window {
    bytes: Vec<u8>,
    at: u64,
}

impl SpillFile {
    /// Writes on the caller's thread from now on, not by a writer of its
    /// own (before the first append).
    pub fn write_inline(&mut self) {
        self.inline = true;
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Has anything been appended?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `bytes`, making the file and its writer on first use.
    pub fn append(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        let n = bytes.len() as u64;
        if self.writer.is_none() && self.file.is_none() {
            if self.inline {
                self.file = Some(tempfile::tempfile()?);
            } else {
                self.writer = Some(Writer::spawn()?);
            }
        }
        match (self.writer.as_mut(), self.file.as_mut()) {
            (Some(w), _) => {
                if w.tx.send(bytes).is_err() {
                    // The writer stopped at an error: report it.
                    let w = self.writer.take().expect("writer");
                    let e = w.join().err();
                    return Err(e.unwrap_or_else(|| {
                        io::Error::other("node log: the spill writer stopped")
                    }));
                }
            }
            // With CRITPATH_THREADS=1, on this thread.
            (None, Some(f)) => {
                f.write_all(&bytes)?;
                self.spare = bytes;
            }
            (None, None) => unreachable!("made above"),
        }
        self.len += n;
        Ok(())
    }

    /// A buffer the writer is done with (its bytes are stale), or a new
    /// one.
    pub fn taken(&mut self) -> Vec<u8> {
        match self.writer.as_mut() {
            Some(w) => w.written.get_mut().ok().and_then(|r| r.try_recv().ok()),
            None => Some(std::mem::take(&mut self.spare)),
        }
        .unwrap_or_default()
    }

    /// Waits for the writer to write everything appended; then the file
    /// can be read.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(w) = self.writer.take() {
            self.file = Some(w.join()?);
        }
        Ok(())
    }

    /// Fills `out` from the file at byte `at`, without a window (for a
    /// read of many bytes, read once).
    pub fn read_exact_at(&self, at: u64, out: &mut [u8]) -> io::Result<()> {
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| io::Error::other("node log: nothing was spilled, or not finished"))?;
        file.read_exact_at(out, at)
    }

    /// Fills `out` from the file at byte `at`, through `w`. The window is
    /// refilled to end where the read ends, so reading ever earlier bytes
    /// reads the file once, a megabyte at a time.
    pub fn read_at(&self, w: &mut Window, at: u64, out: &mut [u8]) -> io::Result<()> {
        let end = at + out.len() as u64;
        if at < w.at || end > w.at + w.bytes.len() as u64 {
            let start = end.saturating_sub(WINDOW.max(out.len()) as u64);
            w.bytes.resize((end - start) as usize, 0);
            self.read_exact_at(start, &mut w.bytes)?;
            w.at = start;
        }
        let from = (at - w.at) as usize;
        out.copy_from_slice(&w.bytes[from..from + out.len()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_reads_back_anywhere() {
        let mut f = SpillFile::default();
        let mut all = Vec::new();
        for round in 0..5u8 {
            let len = (3 << 20) - usize::from(round) * 1000;
            let part: Vec<u8> = (0..len)
                .map(|i| (i as u8).wrapping_mul(7).wrapping_add(round))
                .collect();
            all.extend_from_slice(&part);
            f.append(part).unwrap();
            assert!(f.taken().len() <= 3 << 20);
        }
        let mut out = vec![0u8; 5000];
        // Not readable before the writer (if it has one) has finished.
        let early = f.read_at(&mut Window::default(), 0, &mut out);
        assert!(early.is_err());
        f.finish().unwrap();
        assert_eq!(f.len(), all.len() as u64);
        let (mut w, mut w2) = (Window::default(), Window::default());
        // Backwards, as the walk reads, then forward, across windows.
        for at in [
            all.len() - 5000,
            9_000_000,
            4_000_000,
            1_048_000,
            0,
            7_777_777,
        ] {
            f.read_at(&mut w, at as u64, &mut out).unwrap();
            assert_eq!(out, all[at..at + 5000], "at {at}");
            // A second reader keeps its own window.
            f.read_at(&mut w2, (at / 2) as u64, &mut out).unwrap();
            assert_eq!(out, all[at / 2..at / 2 + 5000], "at {}", at / 2);
        }
        // Larger than a window.
        let mut big = vec![0u8; WINDOW + 10];
        f.read_at(&mut w, 100, &mut big).unwrap();
        assert_eq!(big, all[100..100 + WINDOW + 10]);
        assert!(f.read_at(&mut w, all.len() as u64 - 10, &mut out).is_err());
    }
}
