//! What-ifs without a second pass. A what-if changes only the weights of
//! the graph's edges, never its shape: which node follows which, which send
//! a receive matches and which transition a wait awaited all come from the
//! trace's times. So while the engine streams it can write every node's
//! in-edges (their unscaled weight and the state whose speed-up scales them)
//! to a compact log, and afterwards any what-if's path length is one
//! forward walk over that log: a node's `L` is the greatest of its
//! predecessors' `L` plus their edge's scaled weight. The verdict's what-if
//! (the top state twice as fast) is answered that way, instead of replaying
//! or reading the trace again.
//!
//! The log takes a few bytes a node (a header, then per edge the distance
//! back to its predecessor, its weight and its state keys, as LEB128
//! varints), handed in 1 MiB pieces to a spill file's writer thread. The
//! walk keeps every node's `L` in an anonymous temporary file it maps,
//! beyond a million nodes. Only a pass without speed-ups and without a
//! start (`--from`) keeps the log: under `--from`, which nodes are reached
//! depends on more than the weights.

use super::names::How;
use super::whatif::{factors, Scaling, Speedup};
use crate::spill::{SpillFile, Window};
use critpath_trace::ScalesWith;
use std::io;
use std::sync::Arc;

/// Bytes of log handed to the spill file at once.
const PIECE: usize = 1 << 20;

/// Nodes whose `L` the walk keeps in memory; past them, in a mapped file.
const IN_MEMORY: usize = 1 << 20;

/// How a what-if scales an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scale {
    /// Never: a link's wait, an awaited transition.
    Not,
    /// By the factor of a state (an intra-SM edge, the piece before a send).
    Key(u32),
    /// A piece charged to a holder: by the holder's state's factor times
    /// the factor the waiting state follows (see `held.rs`).
    Held { holder: u32, own: u32 },
}

impl Scale {
    fn tag(self) -> u8 {
        match self {
            Scale::Not => 1,
            Scale::Key(_) => 2,
            Scale::Held { .. } => 3,
        }
    }
}

/// An in-edge: the predecessor node, the unscaled weight and its scale.
pub(super) type LoggedEdge = (u64, u64, Scale);

/// The log being written, one node after another (node ids are the log's
/// order).
pub(super) struct RewalkLog {
    buf: Vec<u8>,
    file: SpillFile,
    /// The length of each piece handed to the file.
    pieces: Vec<u32>,
    nodes: u64,
    error: Option<io::Error>,
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl RewalkLog {
    /// An empty log, written on the caller's thread when `one_thread`.
    pub fn new(one_thread: bool) -> RewalkLog {
        let mut file = SpillFile::default();
        if one_thread {
            file.write_inline();
        }
        RewalkLog {
            buf: Vec::with_capacity(PIECE + 64),
            file,
            pieces: Vec::new(),
            nodes: 0,
            error: None,
        }
    }

    /// Appends node `node` (the next one): `root` when a path may start at
    /// it (an SM's first node), and its in-edges.
    #[inline]
    pub fn node(&mut self, node: u64, root: bool, edges: [Option<LoggedEdge>; 2]) {
        debug_assert_eq!(node, self.nodes, "nodes are logged in order");
        let tag = |e: &Option<LoggedEdge>| e.map_or(0, |(_, _, s)| s.tag());
        let head = u8::from(root) | tag(&edges[0]) << 1 | tag(&edges[1]) << 3;
        self.buf.push(head);
        for (pred, w, scale) in edges.into_iter().flatten() {
            put_varint(&mut self.buf, node - pred);
            put_varint(&mut self.buf, w);
            match scale {
                Scale::Not => {}
                Scale::Key(k) => put_varint(&mut self.buf, u64::from(k)),
                Scale::Held { holder, own } => {
                    put_varint(&mut self.buf, u64::from(holder));
                    put_varint(&mut self.buf, u64::from(own));
                }
            }
        }
        self.nodes += 1;
        if self.buf.len() >= PIECE {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let mut next = self.file.taken();
        next.clear();
        let full = std::mem::replace(&mut self.buf, next);
        self.pieces.push(full.len() as u32);
        if let Err(e) = self.file.append(full) {
            self.error.get_or_insert(e);
        }
    }

    /// The finished log with what a what-if needs to know of each state:
    /// `keys` (SM index, state name), `sms` (system, name), the rules of
    /// `scales_with`, and where the path ends. `None` when writing the log
    /// failed (a what-if then takes a pass of its own).
    pub fn seal(mut self, names: Names, dest: PathEnd) -> Option<Rewalk> {
        if !self.pieces.is_empty() {
            self.hand_over();
            if let Err(e) = self.file.finish() {
                self.error.get_or_insert(e);
            }
        }
        if self.error.is_some() {
            return None;
        }
        Some(Rewalk {
            inner: Arc::new(Sealed {
                tail: self.buf,
                file: self.file,
                pieces: self.pieces,
                nodes: self.nodes,
                names,
                dest,
            }),
        })
    }
}

/// Where a what-if's path ends.
#[derive(Clone, Copy, Debug)]
pub(super) enum PathEnd {
    /// At the node of the greatest `L`.
    Greatest,
    /// At this node (`--to`).
    Node(u64),
    /// Nowhere (`--to` named an SM without a node).
    Nowhere,
}

/// The names a what-if matches its targets against.
pub(super) struct Names {
    /// Per state key: its SM's index and the state's name.
    pub keys: Vec<(u32, String)>,
    /// Per SM: its system and name.
    pub sms: Vec<(String, String)>,
    pub scales_with: Vec<ScalesWith>,
}

struct Sealed {
    /// The log's last bytes (all of it when nothing was spilled).
    tail: Vec<u8>,
    file: SpillFile,
    pieces: Vec<u32>,
    nodes: u64,
    names: Names,
    dest: PathEnd,
}

/// A pass's graph, kept for what-ifs (see the module's documentation);
/// cheap to clone.
#[derive(Clone)]
pub struct Rewalk {
    inner: Arc<Sealed>,
}

impl std::fmt::Debug for Rewalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rewalk({} nodes)", self.inner.nodes)
    }
}

/// A kept graph is not part of a result's value: two analyses are equal
/// whether or not they kept one.
impl PartialEq for Rewalk {
    fn eq(&self, _: &Rewalk) -> bool {
        true
    }
}

/// What a what-if predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// The critical path's length under the speed-ups.
    pub length_ns: u64,
    /// Edges with time whose weight the speed-ups changed (as
    /// [`crate::results::Stats::scaled_edges`]).
    pub scaled_edges: u64,
}

/// Every node's `L` during a walk: in memory, or in a mapped temporary
/// file for many nodes.
enum Lengths {
    Memory(Vec<i64>),
    Mapped(memmap2::MmapMut),
}

impl Lengths {
    fn new(n: usize) -> io::Result<Lengths> {
        if n <= IN_MEMORY {
            return Ok(Lengths::Memory(vec![0; n]));
        }
        let f = tempfile::tempfile()?;
        f.set_len(n as u64 * 8)?;
        // SAFETY: an anonymous temporary file only this walk can reach.
        Ok(Lengths::Mapped(unsafe { memmap2::MmapMut::map_mut(&f)? }))
    }

    #[inline]
    fn get(&self, i: usize) -> i64 {
        match self {
            Lengths::Memory(v) => v[i],
            Lengths::Mapped(m) => i64::from_le_bytes(m[i * 8..i * 8 + 8].try_into().unwrap()),
        }
    }

    #[inline]
    fn set(&mut self, i: usize, l: i64) {
        match self {
            Lengths::Memory(v) => v[i] = l,
            Lengths::Mapped(m) => m[i * 8..i * 8 + 8].copy_from_slice(&l.to_le_bytes()),
        }
    }
}

/// Per state key: its own factor and the one it follows.
type Factors = Vec<(f64, f64)>;

/// The running state of a walk.
struct Walk {
    lengths: Lengths,
    factors: Factors,
    node: u64,
    best: i64,
    dest: PathEnd,
    scaling: Scaling,
}

impl Rewalk {
    /// The path under `speedups`: `None` when none of them names a state
    /// of the pass (a what-if then takes a pass of its own, which says
    /// so), or a path length overflows.
    pub fn predict(&self, speedups: &[Speedup]) -> Option<Prediction> {
        let s = &*self.inner;
        let factors = self.factors(speedups)?;
        let mut w = Walk {
            lengths: Lengths::new(s.nodes as usize).ok()?,
            factors,
            node: 0,
            best: 0,
            dest: s.dest,
            scaling: Scaling::default(),
        };
        let (mut at, mut window, mut piece) = (0u64, Window::default(), Vec::new());
        for &len in &s.pieces {
            piece.resize(len as usize, 0);
            s.file.read_at(&mut window, at, &mut piece).ok()?;
            w.piece(&piece);
            at += u64::from(len);
        }
        w.piece(&s.tail);
        (!w.scaling.overflow).then_some(Prediction {
            length_ns: w.best.max(0) as u64,
            scaled_edges: w.scaling.edges,
        })
    }

    /// Every state key's factors under `speedups`, if any names one.
    fn factors(&self, speedups: &[Speedup]) -> Option<Factors> {
        let n = &self.inner.names;
        let mut any = false;
        let f: Factors = (n.keys.iter())
            .map(|(sm, state)| {
                let (sys, name) = &n.sms[*sm as usize];
                let on = (speedups, &n.scales_with[..]);
                factors(on, (sys, name, state), |_, _: How| any = true)
            })
            .collect();
        any.then_some(f)
    }
}

impl Walk {
    /// Walks the nodes of one piece of the log.
    fn piece(&mut self, b: &[u8]) {
        let mut at = 0;
        while at < b.len() {
            let head = b[at];
            at += 1;
            let mut l = if head & 1 != 0 { 0 } else { i64::MIN };
            for tag in [(head >> 1) & 3, (head >> 3) & 3] {
                if tag == 0 {
                    continue;
                }
                let pred = self.node - get_varint(b, &mut at);
                let w = get_varint(b, &mut at);
                let f = match tag {
                    1 => 1.0,
                    2 => self.factors[get_varint(b, &mut at) as usize].0,
                    _ => {
                        let holder = self.factors[get_varint(b, &mut at) as usize].0;
                        holder * self.factors[get_varint(b, &mut at) as usize].1
                    }
                };
                let w = self.scaling.by(f, w);
                l = l.max(self.scaling.longer(self.lengths.get(pred as usize), w));
            }
            self.lengths.set(self.node as usize, l);
            match self.dest {
                PathEnd::Node(d) if d == self.node => self.best = l,
                PathEnd::Greatest => self.best = self.best.max(l),
                PathEnd::Node(_) | PathEnd::Nowhere => {}
            }
            self.node += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_back() {
        let vals = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut b = Vec::new();
        for v in vals {
            put_varint(&mut b, v);
        }
        let mut at = 0;
        for v in vals {
            assert_eq!(get_varint(&b, &mut at), v);
        }
        assert_eq!(at, b.len());
    }
}
