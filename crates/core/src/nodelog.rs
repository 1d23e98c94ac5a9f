//! The node log: for every node of the dependence graph, its chosen
//! predecessor and the edge that leads from it, written in node order while
//! the engine streams, and walked backwards from the path's last node at the
//! end. It stays in memory while small and spills to an anonymous temporary
//! file (read back through a memory map), so RAM does not grow with the trace.

use memmap2::Mmap;
use std::fs::File;
use std::io::{self, Write};

/// Marks a node without a predecessor.
pub const NO_PRED: u64 = u64::MAX;
const ENTRY: usize = 20;
const SPILL_BYTES: usize = 8 << 20;

/// One node's entry. For a node with a predecessor, `weight` is the weight of
/// the edge from `pred` and `tag` the combined-graph edge it belongs to. For a
/// node without one, `weight` is the node's time and `tag` its SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub pred: u64,
    pub weight: u64,
    pub tag: u32,
}

pub struct NodeLog {
    buf: Vec<u8>,
    file: Option<File>,
    file_entries: u64,
    map: Option<Mmap>,
}

impl Default for NodeLog {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeLog {
    pub fn new() -> Self {
        NodeLog {
            buf: Vec::with_capacity(64 * 1024),
            file: None,
            file_entries: 0,
            map: None,
        }
    }

    /// Appends the entry of the next node.
    #[inline]
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        self.buf.extend_from_slice(&e.pred.to_le_bytes());
        self.buf.extend_from_slice(&e.weight.to_le_bytes());
        self.buf.extend_from_slice(&e.tag.to_le_bytes());
        if self.buf.len() >= SPILL_BYTES {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        if self.file.is_none() {
            self.file = Some(tempfile::tempfile()?);
        }
        let file = self.file.as_mut().expect("file just created");
        file.write_all(&self.buf)?;
        self.file_entries += (self.buf.len() / ENTRY) as u64;
        self.buf.clear();
        Ok(())
    }

    /// Makes the whole log readable; call once writing is over.
    pub fn seal(&mut self) -> io::Result<()> {
        if let Some(file) = &self.file {
            if self.file_entries > 0 {
                // SAFETY: the file is an anonymous temporary file that only
                // this log writes, and writing is over.
                self.map = Some(unsafe { Mmap::map(file)? });
            }
        }
        Ok(())
    }

    /// Number of entries written.
    pub fn len(&self) -> u64 {
        self.file_entries + (self.buf.len() / ENTRY) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of node `i` (after [`NodeLog::seal`]).
    pub fn get(&self, i: u64) -> Entry {
        let bytes = if i < self.file_entries {
            let map = self.map.as_ref().expect("node log read before seal");
            let at = i as usize * ENTRY;
            &map[at..at + ENTRY]
        } else {
            let at = (i - self.file_entries) as usize * ENTRY;
            &self.buf[at..at + ENTRY]
        };
        Entry {
            pred: u64::from_le_bytes(bytes[0..8].try_into().unwrap()),
            weight: u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
            tag: u32::from_le_bytes(bytes[16..20].try_into().unwrap()),
        }
    }

    /// Bytes written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        self.file_entries * ENTRY as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_and_reads_back() {
        let mut log = NodeLog::new();
        let n = (SPILL_BYTES / ENTRY) as u64 * 2 + 17;
        for i in 0..n {
            log.push(Entry { pred: i.wrapping_sub(1), weight: i * 3, tag: i as u32 }).unwrap();
        }
        log.seal().unwrap();
        assert!(log.disk_bytes() > 0);
        assert_eq!(log.len(), n);
        for i in [0, 1, n / 2, n - 18, n - 17, n - 1] {
            assert_eq!(log.get(i), Entry { pred: i.wrapping_sub(1), weight: i * 3, tag: i as u32 });
        }
    }
}
