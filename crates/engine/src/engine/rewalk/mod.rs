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
//! back to its predecessor, its weight and its state keys: most edges in
//! one word of eight bytes, the others as group varints), handed in 1 MiB
//! pieces to a spill file's writer thread. The walk keeps the `L` of the
//! latest 65,536 nodes in a ring, and beside it that of each older node an
//! edge reaches back to (the log lists them, 16 bytes each in the walk),
//! so its memory follows the trace's long-range edges, not its length. The log also marks the states that have edges
//! with time: a what-if whose factors touch none of them changes no length,
//! and its prediction is the pass's own path, without a walk. Only a pass
//! without speed-ups keeps the log. Under a start (`--from`) the only root
//! is the start's first node, and which nodes a path from it reaches is
//! the graph's shape too: a node whose in-edges all come from unreached
//! nodes stays unreached in the walk, as in the pass.
//!
//! The log's bytes are [`layout`]'s; the walk, in two stages on two
//! threads, is [`walk`]'s.

use super::names::How;
use super::whatif::{factors, Speedup};
use crate::spill::SpillFile;
use critpath_trace::ScalesWith;
use layout::{padded, put_fields, EDGE, PAD};
use std::io;
use std::sync::Arc;

mod layout;
mod walk;

/// Bytes of log handed to the spill file at once.
const PIECE: usize = 1 << 20;

/// The latest nodes whose `L` the walk keeps in its ring; an edge that
/// reaches further back is to a node listed as far.
const RING: u64 = 1 << 16;

/// Room in the buffer for one node past its end: a header and two edges
/// in the long form, each field written as eight bytes.
const NODE_ROOM: usize = 1 + 2 * (1 + EDGE + 7) + PAD;

/// How a what-if scales an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scale {
    /// Never: a link's wait, an awaited transition.
    Not,
    /// By the factor of a state (an intra-SM edge, the piece before a send).
    Key(u32),
    /// A piece charged to a holder: by the holder's state's factor times
    /// the waiting state's (its own, else the one it follows: see
    /// `held.rs`).
    Held { holder: u32, own: u32 },
}

/// An in-edge: the predecessor node, the unscaled weight and its scale.
pub(super) type LoggedEdge = (u64, u64, Scale);

/// The log being written, one node after another (node ids are the log's
/// order).
pub(super) struct RewalkLog {
    /// The piece being written: `len` bytes of it, and room past them.
    buf: Vec<u8>,
    len: usize,
    /// The nodes an edge reaches back to from more than [`RING`] nodes on.
    far: Vec<u64>,
    /// Per state key, one more than its index: bit 0 when an edge with
    /// time scales by its factor as the holder's or the SM's own state,
    /// bit 1 as the waiting state's.
    timed: Vec<u8>,
    file: SpillFile,
    /// The length of each piece handed to the file.
    pieces: Vec<u32>,
    nodes: u64,
    error: Option<io::Error>,
    /// Written, and walked, on the caller's thread.
    one_thread: bool,
}

/// Sets `bit` of `flags[i]` (for a key; not for 0, no key).
#[inline(always)]
fn mark(flags: &mut Vec<u8>, i: u64, bit: u8) {
    let i = i as usize;
    if i == 0 {
        return;
    }
    match flags.get_mut(i) {
        Some(f) => *f |= bit,
        None => grow(flags, i, bit),
    }
}

/// [`mark`] of a key past the flags so far.
#[cold]
#[inline(never)]
fn grow(flags: &mut Vec<u8>, i: usize, bit: u8) {
    flags.resize(i + 1, 0);
    flags[i] |= bit;
}

impl RewalkLog {
    /// An empty log, written on the caller's thread when `one_thread`.
    pub fn new(one_thread: bool) -> RewalkLog {
        let mut file = SpillFile::default();
        if one_thread {
            file.write_inline();
        }
        RewalkLog {
            buf: vec![0; PIECE + NODE_ROOM],
            len: 0,
            far: Vec::new(),
            timed: Vec::new(),
            file,
            pieces: Vec::new(),
            nodes: 0,
            error: None,
            one_thread,
        }
    }

    /// Appends node `node` (the next one): `root` when a path may start at
    /// it (an SM's first node; under `--from`, the start's only), and its
    /// in-edges. A node is a header (bit 0: a root; then its edge count),
    /// then its edges (see [`RewalkLog::edge`]).
    #[inline(always)]
    pub fn node(&mut self, node: u64, root: bool, [intra, inter]: [Option<LoggedEdge>; 2]) {
        debug_assert_eq!(node, self.nodes, "nodes are logged in order");
        let head = self.len;
        let mut at = head + 1;
        let mut count = 0;
        if let Some(e) = intra {
            at = self.edge(node, at, e);
            count += 1;
        }
        if let Some(e) = inter {
            at = self.edge(node, at, e);
            count += 1;
        }
        self.buf[head] = u8::from(root) | count << 1;
        self.len = at;
        self.nodes += 1;
        if self.len >= PIECE {
            self.hand_over();
        }
    }

    /// Writes node `node`'s in-edge at `at`: the distance back to its
    /// predecessor, its weight and the state keys whose factors scale it,
    /// in a word (see [`layout::WORD_BACK`]) or, when they do not fit one,
    /// after the byte [`layout::LONG`] as a control byte (the fields'
    /// codes, 2 bits each) and each field in as few bytes as its code says
    /// (a group varint: reading one takes no branch); where the next edge
    /// starts.
    #[inline(always)]
    fn edge(&mut self, node: u64, at: usize, (pred, w, scale): LoggedEdge) -> usize {
        let back = node - pred;
        if back >= RING {
            self.far.push(pred);
        }
        // The state keys whose factors scale the edge, one more than their
        // index (0: none, a factor of 1).
        let (own, follows) = match scale {
            Scale::Not => (0, 0),
            Scale::Key(k) => (u64::from(k) + 1, 0),
            Scale::Held { holder, own } => (u64::from(holder) + 1, u64::from(own) + 1),
        };
        if w > 0 {
            mark(&mut self.timed, own, 1);
            mark(&mut self.timed, follows, 2);
        }
        put_fields(&mut self.buf, at, [back, w, own, follows])
    }

    /// Hands the piece written so far to the file, and goes on in a
    /// buffer it gave back (or a new one).
    fn hand_over(&mut self) {
        let mut next = self.file.taken();
        next.resize(PIECE + NODE_ROOM, 0);
        let full = padded(std::mem::replace(&mut self.buf, next), self.len);
        self.len = 0;
        self.pieces.push(full.len() as u32);
        if let Err(e) = self.file.append(full) {
            self.error.get_or_insert(e);
        }
    }

    /// The finished log with what a what-if needs to know of each state:
    /// `keys` (SM index, state name), `sms` (system, name), the rules of
    /// `scales_with`, where the path ends and its length. `None` when
    /// writing the log failed (a what-if then takes a pass of its own).
    pub fn seal(mut self, names: Names, dest: PathEnd, length_ns: u64) -> Option<Rewalk> {
        if !self.pieces.is_empty() {
            if self.len > 0 {
                self.hand_over();
            }
            if let Err(e) = self.file.finish() {
                self.error.get_or_insert(e);
            }
        }
        if self.error.is_some() {
            return None;
        }
        let mut far = std::mem::take(&mut self.far);
        far.sort_unstable();
        far.dedup();
        Some(Rewalk {
            inner: Arc::new(Sealed {
                tail: padded(std::mem::take(&mut self.buf), self.len),
                far,
                timed: std::mem::take(&mut self.timed),
                length_ns,
                file: self.file,
                pieces: self.pieces,
                nodes: self.nodes,
                one_thread: self.one_thread,
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
    /// The nodes an edge reaches back to from more than [`RING`] on, in
    /// order.
    far: Vec<u64>,
    /// See [`RewalkLog`]'s.
    timed: Vec<u8>,
    /// The pass's path length.
    length_ns: u64,
    file: SpillFile,
    pieces: Vec<u32>,
    nodes: u64,
    /// Walked on the caller's thread alone.
    one_thread: bool,
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

/// Per state key: its factor (its own, else the one it follows).
type Factors = Vec<f64>;

impl Rewalk {
    /// The path under `speedups`: `None` when none of them names a state
    /// of the pass (a what-if then takes a pass of its own, which says
    /// so), or a path length overflows.
    pub fn predict(&self, speedups: &[Speedup]) -> Option<Prediction> {
        let s = &*self.inner;
        let factors = self.factors(speedups)?;
        if !self.changes_a_weight(&factors) {
            return Some(Prediction {
                length_ns: s.length_ns,
                scaled_edges: 0,
            });
        }
        walk::walk(s, &factors)
    }

    /// Does a factor other than 1 apply to an edge with time? If not,
    /// every length stays as the pass found it.
    fn changes_a_weight(&self, factors: &Factors) -> bool {
        let timed = |i: usize| self.inner.timed.get(i).copied().unwrap_or(0);
        (factors.iter().enumerate()).any(|(i, &f)| f != 1.0 && timed(i) != 0)
    }

    /// Every state key's factors under `speedups`, if any names one, after
    /// those of no state (1.0).
    fn factors(&self, speedups: &[Speedup]) -> Option<Factors> {
        let n = &self.inner.names;
        let mut any = false;
        let none = std::iter::once(1.0);
        let f: Factors = none
            .chain(n.keys.iter().map(|(sm, state)| {
                let (sys, name) = &n.sms[*sm as usize];
                let on = (speedups, &n.scales_with[..]);
                factors(on, (sys, name, state), |_, _: How| any = true)
            }))
            .collect();
        any.then_some(f)
    }
}
