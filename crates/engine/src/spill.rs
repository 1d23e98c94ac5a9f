//! The node log's spill file: an anonymous temporary file appended to while
//! the engine streams, then read back through a large window, so that
//! walking it backwards block by block costs a system call a megabyte
//! rather than two a block.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// Bytes read from the file at once when walking it backwards.
const WINDOW: usize = 1 << 20;

/// An anonymous temporary file, appended to, then read (by several
/// readers at once, each through its own [`Window`]).
#[derive(Default)]
pub struct SpillFile {
    file: Option<File>,
    len: u64,
}

/// A reader's window on a [`SpillFile`]: the bytes `at..` it read last.
#[derive(Default)]
pub struct Window {
    bytes: Vec<u8>,
    at: u64,
}

impl SpillFile {
    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Has anything been appended?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `bytes`, making the file on first use.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.file.is_none() {
            self.file = Some(tempfile::tempfile()?);
        }
        self.file
            .as_mut()
            .expect("file just made")
            .write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Fills `out` from the file at byte `at`, through `w`. The window is
    /// refilled to end where the read ends, so reading ever earlier bytes
    /// reads the file once, a megabyte at a time.
    pub fn read_at(&self, w: &mut Window, at: u64, out: &mut [u8]) -> io::Result<()> {
        let end = at + out.len() as u64;
        if at < w.at || end > w.at + w.bytes.len() as u64 {
            let file = self
                .file
                .as_ref()
                .ok_or_else(|| io::Error::other("node log: nothing was spilled"))?;
            let start = end.saturating_sub(WINDOW.max(out.len()) as u64);
            w.bytes.resize((end - start) as usize, 0);
            file.read_exact_at(&mut w.bytes, start)?;
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
            f.append(&part).unwrap();
            all.extend_from_slice(&part);
        }
        assert_eq!(f.len(), all.len() as u64);
        let (mut w, mut w2) = (Window::default(), Window::default());
        let mut out = vec![0u8; 5000];
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
