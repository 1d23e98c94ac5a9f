//! The node log: for every node of the dependence graph, its chosen
//! predecessor and the edge that leads from it, written in node order while
//! the engine streams, and walked backwards from the path's last node at the
//! end.
//!
//! Entries are packed in blocks of [`BLOCK`] nodes, each entry three varints
//! (distance back to the predecessor, weight, tag), about 4 bytes instead of
//! 20, and a fourth, the edge's time span, in a log made [`NodeLog::timed`]
//! (for walks that place the path's edges on the clock); each block ends with a fixed trailer (payload length, first node,
//! count). The log stays in memory while small and spills to an anonymous
//! temporary file ([`SpillFile`]); reading (a [`Cursor`]) walks blocks
//! backwards from the end through their trailers, so no index is kept and
//! RAM does not grow with the trace: the critical-path walk only ever moves
//! to earlier nodes.

use crate::spill::{SpillFile, Window};
use std::io;

/// Marks a node without a predecessor.
pub const NO_PRED: u64 = u64::MAX;
/// Nodes per block.
pub const BLOCK: u64 = 4096;
const TRAILER: usize = 16;
const SPILL_BYTES: usize = 2 << 20;
/// Room for the largest block (40 bytes an entry) beyond the spill mark, its
/// trailer, and the room an entry is encoded in.
const BUF_BYTES: usize = SPILL_BYTES + BLOCK as usize * 40 + 2 * ENTRY_ROOM;

/// One node's entry. For a node with a predecessor, `weight` is the weight of
/// the edge from `pred`, `tag` the combined-graph edge it belongs to, and
/// `span` the time from `pred`'s node to this one (more than the weight for
/// a wait that weighs nothing or a state sped up by a what-if); a log that
/// is not [`NodeLog::timed`] keeps no span and reads it back as `weight`.
/// For a node without one, `weight` is the node's time and `tag` its SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub pred: u64,
    pub weight: u64,
    pub tag: u32,
    pub span: u64,
}

/// Room [`NodeLog::push`] makes before encoding an entry: four varints of
/// at most 10 bytes each.
const ENTRY_ROOM: usize = 64;

/// Writes `v` as a varint at `tmp[at..]`; returns the end. An entry's four
/// varints end by byte 40, so `at & (ENTRY_ROOM - 1)` is `at` itself; the
/// mask only spares the bounds check.
#[inline(always)]
fn put_into(tmp: &mut [u8; ENTRY_ROOM], mut at: usize, mut v: u64) -> usize {
    // Most values take one or two bytes: written without a loop.
    if v < 0x80 {
        tmp[at & (ENTRY_ROOM - 1)] = v as u8;
        return at + 1;
    }
    if v < 0x4000 {
        tmp[at & (ENTRY_ROOM - 1)] = (v as u8) | 0x80;
        tmp[(at + 1) & (ENTRY_ROOM - 1)] = (v >> 7) as u8;
        return at + 2;
    }
    while v >= 0x80 {
        tmp[at & (ENTRY_ROOM - 1)] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    tmp[at & (ENTRY_ROOM - 1)] = v as u8;
    at + 1
}

/// Reads the varint at `w[*at..]`, moving `at` past it; `None` beyond 10
/// bytes (more than 64 bits). Four varints end by byte 40 of the window, so
/// the mask, as in [`put_into`], only spares the bounds check.
#[inline(always)]
fn take(w: &[u8; ENTRY_ROOM], at: &mut usize) -> Option<u64> {
    let b = w[*at & (ENTRY_ROOM - 1)];
    *at += 1;
    if b < 0x80 {
        return Some(u64::from(b));
    }
    let mut v = u64::from(b & 0x7f);
    let mut shift = 7;
    loop {
        let b = w[*at & (ENTRY_ROOM - 1)];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Decodes one entry's varints at `bytes[*pos..]`, moving `pos` past them:
/// `(back, weight, tag, span)` (the span, in a `timed` log, else the
/// weight), or `None` for a bad or cut varint.
#[inline(always)]
fn decode_entry(bytes: &[u8], pos: &mut usize, timed: bool) -> Option<(u64, u64, u64, u64)> {
    let mut w = [0u8; ENTRY_ROOM];
    let window: &[u8; ENTRY_ROOM] = match bytes.get(*pos..*pos + ENTRY_ROOM) {
        Some(full) => full.try_into().expect("ENTRY_ROOM bytes"),
        None => {
            // The block's last entries: a zero-padded copy; a varint that
            // runs into the padding is cut.
            let rest = &bytes[*pos..];
            w[..rest.len()].copy_from_slice(rest);
            &w
        }
    };
    let mut at = 0;
    let back = take(window, &mut at)?;
    let weight = take(window, &mut at)?;
    let tag = take(window, &mut at)?;
    let span = if timed {
        take(window, &mut at)?
    } else {
        weight
    };
    if *pos + at > bytes.len() {
        return None;
    }
    *pos += at;
    Some((back, weight, tag, span))
}

/// Bit 7 of every byte of a word: a varint's last byte has it clear.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Where, going back from `end`, the `n`-th varint before it starts (`end`
/// being a varint's start or the end of the bytes): one byte past the
/// `n + 1`-th last byte of a varint before `end`, or 0 when there are only
/// `n`. Whole words whose last bytes do not reach the count are skipped at
/// once. `None` when there are fewer than `n` varints before `end`.
fn skip_back(bytes: &[u8], mut end: usize, n: u64) -> Option<usize> {
    let mut need = n + 1;
    while end >= 8 {
        let w = u64::from_le_bytes(bytes[end - 8..end].try_into().expect("8 bytes"));
        let mut lasts = !w & HIGH_BITS;
        let c = u64::from(lasts.count_ones());
        if c < need {
            need -= c;
            end -= 8;
            continue;
        }
        // The `need`-th highest marked byte of this word.
        for _ in 1..need {
            lasts &= !(1u64 << (63 - lasts.leading_zeros()));
        }
        let byte = (63 - lasts.leading_zeros()) as usize / 8;
        return Some(end - 8 + byte + 1);
    }
    while end > 0 {
        end -= 1;
        if bytes[end] < 0x80 {
            need -= 1;
            if need == 0 {
                return Some(end + 1);
            }
        }
    }
    (need == 1).then_some(0)
}

pub struct NodeLog {
    /// Encoded bytes not yet spilled (whole blocks, then the open block):
    /// `buf[..used]`. Allocated once; entries are written in place.
    buf: Vec<u8>,
    used: usize,
    /// Where the open block starts in `buf`.
    block_at: usize,
    block_first: u64,
    next: u64,
    /// Whole blocks spilled (see [`SpillFile`]).
    file: SpillFile,
    sealed_len: u64,
    /// Entries hold their span (see [`Entry`]).
    timed: bool,
}

/// A reader of a sealed [`NodeLog`]; several can read one log at once.
/// It holds the current block's bytes (the buffer is reused from block to
/// block), its first node and node count, the store offset where it starts,
/// and a position: entry `cur_k` of the block starts at byte `cur_byte`
/// (`cur_count` and the block's length at first).
#[derive(Default)]
pub struct Cursor {
    window: Window,
    /// Varints an entry (3, or 4 in a timed log).
    per_entry: u64,
    block: Vec<u8>,
    cur_first: u64,
    cur_count: u64,
    cur_at: u64,
    cur_k: u64,
    cur_byte: usize,
}

impl Default for NodeLog {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeLog {
    pub fn new() -> Self {
        NodeLog {
            buf: Vec::new(),
            used: 0,
            block_at: 0,
            block_first: 0,
            next: 0,
            file: SpillFile::default(),
            sealed_len: 0,
            timed: false,
        }
    }

    /// Spills on the caller's thread, not by a writer of its own.
    pub fn write_inline(&mut self) {
        self.file.write_inline();
    }

    /// A log whose entries also keep their span (see [`Entry`]).
    pub fn timed() -> Self {
        NodeLog {
            timed: true,
            ..Self::new()
        }
    }

    /// Appends the entry of the next node.
    #[inline(always)]
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        let back = if e.pred == NO_PRED {
            0
        } else {
            self.next - e.pred
        };
        if self.buf.len() < self.used + ENTRY_ROOM {
            self.grow();
        }
        let at = self.used;
        let tmp: &mut [u8; ENTRY_ROOM] = (&mut self.buf[at..at + ENTRY_ROOM])
            .try_into()
            .expect("ENTRY_ROOM bytes");
        let mut n = put_into(tmp, 0, back);
        n = put_into(tmp, n, e.weight);
        n = put_into(tmp, n, u64::from(e.tag));
        if self.timed {
            n = put_into(tmp, n, e.span);
        }
        self.used = at + n;
        self.next += 1;
        if self.next - self.block_first == BLOCK {
            return self.end_block();
        }
        Ok(())
    }

    /// After a block's last entry: closes it, and spills once enough is
    /// buffered.
    #[cold]
    #[inline(never)]
    fn end_block(&mut self) -> io::Result<()> {
        self.close_block();
        if self.used >= SPILL_BYTES {
            self.spill()?;
        }
        Ok(())
    }

    /// Small logs start small (a request of a span file logs a few dozen
    /// nodes); the buffer grows to its fixed size.
    #[cold]
    fn grow(&mut self) {
        let size = (self.buf.len() * 2).clamp(1024, BUF_BYTES);
        self.buf.resize(size, 0);
    }

    fn close_block(&mut self) {
        if self.buf.len() < self.used + TRAILER {
            self.grow();
        }
        let len = (self.used - self.block_at) as u32;
        let count = (self.next - self.block_first) as u32;
        let at = self.used;
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
        self.buf[at + 4..at + 12].copy_from_slice(&self.block_first.to_le_bytes());
        self.buf[at + 12..at + 16].copy_from_slice(&count.to_le_bytes());
        self.used += TRAILER;
        self.block_first = self.next;
        self.block_at = self.used;
    }

    /// Hands the whole blocks to the spill file and goes on in a buffer it
    /// gives back (or a new one), starting with the open block.
    fn spill(&mut self) -> io::Result<()> {
        let rest = self.block_at..self.used;
        let mut next = self.file.taken();
        // Stale bytes are overwritten before they are read.
        next.resize(self.buf.len(), 0);
        next[..rest.len()].copy_from_slice(&self.buf[rest.clone()]);
        let mut full = std::mem::replace(&mut self.buf, next);
        full.truncate(self.block_at);
        self.used = rest.len();
        self.block_at = 0;
        self.file.append(full)
    }

    /// Ends writing; the log can then be read.
    pub fn seal(&mut self) -> io::Result<()> {
        if self.next > self.block_first {
            self.close_block();
        }
        if !self.file.is_empty() {
            self.spill()?;
            self.file.finish()?;
        }
        self.sealed_len = self.file.len() + self.used as u64;
        Ok(())
    }

    /// Number of entries written.
    pub fn len(&self) -> u64 {
        self.next
    }

    pub fn is_empty(&self) -> bool {
        self.next == 0
    }

    fn read_at(&self, w: &mut Window, at: u64, out: &mut [u8]) -> io::Result<()> {
        if self.file.is_empty() {
            out.copy_from_slice(&self.buf[at as usize..at as usize + out.len()]);
            Ok(())
        } else {
            self.file.read_at(w, at, out)
        }
    }

    /// A reader from the end (after [`NodeLog::seal`]).
    pub fn cursor(&self) -> Cursor {
        Cursor {
            cur_at: self.sealed_len,
            cur_first: self.next,
            per_entry: if self.timed { 4 } else { 3 },
            ..Cursor::default()
        }
    }

    /// Bytes written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        self.file.len()
    }
}

impl Cursor {
    /// The entry of node `i` of `log`. Reading walks blocks backwards, so
    /// asking for ever earlier nodes, as the critical-path walk does, reads
    /// each block at most once; within a block, the cursor skips back over
    /// the entries between two nodes asked for without decoding them.
    #[inline]
    pub fn get(&mut self, log: &NodeLog, i: u64) -> io::Result<Entry> {
        // A node before the block wraps to an index far beyond it.
        let k = i.wrapping_sub(self.cur_first);
        if k < self.cur_count {
            self.entry_at(k)
        } else {
            self.load(log, i)
        }
    }

    /// Entry `k` of the current block: moves the cursor to it (back from
    /// the cursor, or from the block's end for a later entry) and decodes it.
    fn entry_at(&mut self, k: u64) -> io::Result<Entry> {
        if k > self.cur_k {
            self.cur_k = self.cur_count;
            self.cur_byte = self.block.len();
        }
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "node log: bad varint");
        let skip = self.per_entry * (self.cur_k - k);
        let at = skip_back(&self.block, self.cur_byte, skip).ok_or_else(bad)?;
        self.cur_k = k;
        self.cur_byte = at;
        let mut pos = at;
        let timed = self.per_entry == 4;
        let (back, weight, tag, span) =
            decode_entry(&self.block, &mut pos, timed).ok_or_else(bad)?;
        let pred = if back == 0 {
            NO_PRED
        } else {
            self.cur_first + k - back
        };
        Ok(Entry {
            pred,
            weight,
            tag: tag as u32,
            span,
        })
    }

    /// [`Cursor::get`] of a node outside the current block: loads the block
    /// that holds it.
    fn load(&mut self, log: &NodeLog, i: u64) -> io::Result<Entry> {
        if i >= log.next {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("node log: no node {i}"),
            ));
        }
        if i >= self.cur_first {
            // Asked for a later node than the current block: start over.
            let window = std::mem::take(&mut self.window);
            *self = Cursor {
                window,
                block: std::mem::take(&mut self.block),
                ..log.cursor()
            };
        }
        while i < self.cur_first {
            let mut t = [0u8; TRAILER];
            log.read_at(&mut self.window, self.cur_at - TRAILER as u64, &mut t)?;
            let len = u32::from_le_bytes(t[0..4].try_into().unwrap()) as u64;
            let first = u64::from_le_bytes(t[4..12].try_into().unwrap());
            let count = u32::from_le_bytes(t[12..16].try_into().unwrap()) as u64;
            let start = self.cur_at - TRAILER as u64 - len;
            self.cur_first = first;
            self.cur_at = start;
            self.cur_count = 0;
            if i >= first {
                self.block.resize(len as usize, 0);
                log.read_at(&mut self.window, start, &mut self.block)?;
                self.cur_count = count;
                self.cur_k = count;
                self.cur_byte = len as usize;
            }
        }
        self.entry_at(i - self.cur_first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u64) -> Entry {
        let pred = if i.is_multiple_of(7) {
            NO_PRED
        } else {
            i - 1 - (i % 5).min(i - 1)
        };
        let weight = i * 3 + (i % 11) * 1_000_000;
        Entry {
            pred,
            weight,
            tag: (i % 300) as u32,
            // A log that is not timed reads the span back as the weight.
            span: weight,
        }
    }

    /// [`entry`] with a span of its own, now and then far beyond the weight.
    fn timed_entry(i: u64) -> Entry {
        let span = match i % 4 {
            0 => 0,
            1 => u64::MAX,
            _ => i * 7_919,
        };
        Entry { span, ..entry(i) }
    }

    #[test]
    fn a_timed_log_keeps_each_entrys_span() {
        let mut log = NodeLog::timed();
        let n = 3_000_000u64;
        for i in 0..n {
            log.push(timed_entry(i)).unwrap();
        }
        log.seal().unwrap();
        assert!(log.disk_bytes() > 0, "a log this size spills to disk");
        let mut cur = log.cursor();
        for i in [n - 1, n - 2, n - 4097, n / 2, 4096, 4095, 3, 2, 1, 0] {
            assert_eq!(cur.get(&log, i).unwrap(), timed_entry(i), "node {i}");
        }
        for i in (0..20_000).rev().step_by(13) {
            assert_eq!(cur.get(&log, i).unwrap(), timed_entry(i), "node {i}");
        }
    }

    #[test]
    fn spills_and_reads_back_walking_backwards() {
        let mut log = NodeLog::new();
        let n = 5_000_000u64;
        for i in 0..n {
            log.push(entry(i)).unwrap();
        }
        log.seal().unwrap();
        let mut cur = log.cursor();
        assert!(log.disk_bytes() > 0, "a log this size spills to disk");
        assert_eq!(log.len(), n);
        for i in [
            n - 1,
            n - 17,
            n - 4096,
            n - 4097,
            n / 2,
            n / 2 - 1,
            70_000,
            4096,
            4095,
            1,
            0,
        ] {
            assert_eq!(cur.get(&log, i).unwrap(), entry(i), "node {i}");
        }
        // Going forward again restarts from the end.
        assert_eq!(cur.get(&log, n - 2).unwrap(), entry(n - 2));
        assert!(cur.get(&log, n).is_err());
    }

    #[test]
    fn any_order_within_and_across_blocks() {
        let mut log = NodeLog::new();
        for i in 0..20_000 {
            log.push(entry(i)).unwrap();
        }
        log.seal().unwrap();
        let mut cur = log.cursor();
        // Sparse steps back, the same node twice, and steps forward.
        for i in [
            19_999, 19_000, 19_000, 19_001, 12_289, 12_288, 12_287, 5, 8_000, 0,
        ] {
            assert_eq!(cur.get(&log, i).unwrap(), entry(i), "node {i}");
        }
        for i in (0..20_000).rev().step_by(37) {
            assert_eq!(cur.get(&log, i).unwrap(), entry(i), "node {i}");
        }
    }

    #[test]
    fn small_log_stays_in_memory() {
        let mut log = NodeLog::new();
        for i in 0..10_000 {
            log.push(entry(i)).unwrap();
        }
        log.seal().unwrap();
        let mut cur = log.cursor();
        assert_eq!(log.disk_bytes(), 0);
        for i in (0..10_000).rev() {
            assert_eq!(cur.get(&log, i).unwrap(), entry(i));
        }
    }
}
