//! The critical path's edges as the engine's walk back hands them over,
//! from the last to the first: spooled as records of a fixed size, read
//! back from the spool's end, so the path comes out first to last without
//! being held.

use critpath_engine::PathEdge;
use critpath_trace::Sym;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

/// Bytes of an edge in the spool: four symbols, a byte of flags, two times.
const SIZE: usize = 4 * 4 + 1 + 2 * 8;
/// Edges read back at a time.
const CHUNK: u64 = 2048;

fn encode(e: &PathEdge) -> [u8; SIZE] {
    let mut b = [0u8; SIZE];
    let syms = [e.sys, e.sm, e.state.unwrap_or_default(), e.from_sm];
    for (i, s) in syms.iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&s.0.to_le_bytes());
    }
    b[16] = u8::from(e.inter) | u8::from(e.state.is_some()) << 1 | u8::from(e.inferred) << 2;
    b[17..25].copy_from_slice(&e.start_ns.to_le_bytes());
    b[25..33].copy_from_slice(&e.end_ns.to_le_bytes());
    b
}

fn decode(b: &[u8]) -> PathEdge {
    let sym = |i: usize| {
        Sym(u32::from_le_bytes(
            b[i * 4..i * 4 + 4].try_into().expect("4"),
        ))
    };
    let time = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
    PathEdge {
        sys: sym(0),
        sm: sym(1),
        state: (b[16] & 2 != 0).then(|| sym(2)),
        from_sm: sym(3),
        inter: b[16] & 1 != 0,
        start_ns: time(17),
        end_ns: time(25),
        inferred: b[16] & 4 != 0,
    }
}

/// The path's edges written as they come (last first).
pub struct PathSpool<W: Write + Read + Seek> {
    out: BufWriter<W>,
    edges: u64,
}

impl<W: Write + Read + Seek> PathSpool<W> {
    pub fn new(spool: W) -> Self {
        PathSpool {
            out: BufWriter::with_capacity(1 << 16, spool),
            edges: 0,
        }
    }

    pub fn push(&mut self, e: &PathEdge) -> io::Result<()> {
        self.edges += 1;
        self.out.write_all(&encode(e))
    }

    /// Edges spooled.
    pub fn len(&self) -> u64 {
        self.edges
    }

    /// The edges in the order opposite to the one they came in.
    pub fn reversed(self) -> io::Result<Reversed<W>> {
        Ok(Reversed {
            spool: self.out.into_inner().map_err(|e| e.into_error())?,
            left: self.edges,
            chunk: Vec::new(),
        })
    }
}

/// See [`PathSpool::reversed`].
pub struct Reversed<W: Read + Seek> {
    spool: W,
    /// Edges not yet read from the spool.
    left: u64,
    /// Edges read and not yet handed out, the next one last.
    chunk: Vec<u8>,
}

impl<W: Read + Seek> Reversed<W> {
    /// Reads the last `CHUNK` edges not read yet.
    fn refill(&mut self) -> io::Result<()> {
        let n = self.left.min(CHUNK);
        self.left -= n;
        self.spool.seek(SeekFrom::Start(self.left * SIZE as u64))?;
        self.chunk.resize(n as usize * SIZE, 0);
        self.spool.read_exact(&mut self.chunk)
    }
}

impl<W: Read + Seek> Iterator for Reversed<W> {
    type Item = io::Result<PathEdge>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.chunk.is_empty() {
            if self.left == 0 {
                return None;
            }
            if let Err(e) = self.refill() {
                self.left = 0;
                return Some(Err(e));
            }
        }
        let at = self.chunk.len() - SIZE;
        let e = decode(&self.chunk[at..]);
        self.chunk.truncate(at);
        Some(Ok(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn edges_come_back_last_first_across_chunks() {
        let edge = |i: u64| PathEdge {
            sys: Sym(i as u32 % 3),
            sm: Sym(u32::MAX - i as u32),
            state: (!i.is_multiple_of(4)).then_some(Sym(i as u32)),
            from_sm: Sym(7),
            inter: i.is_multiple_of(3),
            start_ns: i * 10,
            end_ns: u64::MAX - i,
            inferred: i.is_multiple_of(5),
        };
        let mut spool = PathSpool::new(Cursor::new(Vec::new()));
        let n = 2 * CHUNK + 5;
        for i in 0..n {
            spool.push(&edge(i)).unwrap();
        }
        assert_eq!(spool.len(), n);
        let back: Vec<PathEdge> = spool.reversed().unwrap().map(Result::unwrap).collect();
        let want: Vec<PathEdge> = (0..n).rev().map(edge).collect();
        assert_eq!(back, want);
    }
}
