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
//! pieces to a spill file's writer thread. The
//! walk keeps the `L` of the latest 65,536 nodes in a ring, and beside it
//! that of each older node an edge reaches back to (the log lists them, 16
//! bytes each in the walk), so its memory follows the trace's long-range
//! edges, not its length. The log also marks the states that have edges
//! with time: a what-if whose factors touch none of them changes no length,
//! and its prediction is the pass's own path, without a walk. Only a pass
//! without speed-ups keeps the log. Under a start (`--from`) the only root
//! is the start's first node, and which nodes a path from it reaches is
//! the graph's shape too: a node whose in-edges all come from unreached
//! nodes stays unreached in the walk, as in the pass.
//!
//! The walk is two stages: scaling each edge's weight by its states'
//! factors, and chaining the lengths in node order. With threads a helper
//! reads and scales the next piece of the log while the caller chains the
//! one before, so the chain (each `L` waits for an earlier one) has the
//! core to itself.

use super::names::How;
use super::whatif::{factors, Scaling, Speedup};
use super::UNREACHED;
use crate::spill::SpillFile;
use critpath_trace::ScalesWith;
use std::io;
use std::sync::mpsc::{channel, sync_channel};
use std::sync::Arc;

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
    /// the factor the waiting state follows (see `held.rs`).
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
    /// time scales by its factor, bit 1 when one scales by the factor it
    /// follows.
    timed: Vec<u8>,
    file: SpillFile,
    /// The length of each piece handed to the file.
    pieces: Vec<u32>,
    nodes: u64,
    error: Option<io::Error>,
    /// Written, and walked, on the caller's thread.
    one_thread: bool,
}

/// The bytes an edge takes at most: its control byte and four fields of
/// eight bytes.
const EDGE: usize = 1 + 4 * 8;

/// Bytes after each piece of the log, so that a field is always read as
/// eight bytes and masked to its length, and an edge's bytes are always
/// its word or its marker and [`EDGE`] (the shortest edge takes six in
/// the long form).
const PAD: usize = 1 + EDGE - 6;

/// An edge's word, the short form of most edges: bit 0 clear, the
/// distance back in the next [`WORD_BACK`] bits, the state key whose
/// factor scales it (one more than its index, or 0) in the next
/// [`WORD_KEY`], its weight in the top 32 (no key that it follows). An
/// edge that does not fit is the byte [`LONG`], then its control byte
/// and four fields.
const WORD_BACK: u32 = 16;
const WORD_KEY: u32 = 15;

/// The marker of an edge in the long form.
const LONG: u8 = 1;

/// The edge's word, if it has one (see [`WORD_BACK`]).
#[inline(always)]
fn word([back, w, own, follows]: [u64; 4]) -> Option<u64> {
    let fits = back < 1 << WORD_BACK && own < 1 << WORD_KEY && w <= u64::from(u32::MAX);
    (fits && follows == 0).then_some(back << 1 | own << (1 + WORD_BACK) | w << 32)
}

/// The distance back of the edge at the start of `b`, and the bytes it
/// takes (what [`read_edge`] reads of it).
#[inline(always)]
fn read_back(b: &[u8; 1 + EDGE]) -> (u64, usize) {
    let word = u64::from_le_bytes(b[..8].try_into().unwrap());
    if word & 1 == 0 {
        return (word >> 1 & ((1 << WORD_BACK) - 1), 8);
    }
    let e: &[u8; EDGE] = b[1..].try_into().unwrap();
    let c = e[0];
    (edge_field(e, c, 0), 1 + PLACES[c as usize][4] as usize)
}

/// The fields of the edge at the start of `b` (`[back, w, own,
/// follows]`) and the bytes it takes.
#[inline(always)]
fn read_edge(b: &[u8; 1 + EDGE]) -> ([u64; 4], usize) {
    let word = u64::from_le_bytes(b[..8].try_into().unwrap());
    if word & 1 == 0 {
        let back = word >> 1 & ((1 << WORD_BACK) - 1);
        let own = word >> (1 + WORD_BACK) & ((1 << WORD_KEY) - 1);
        return ([back, word >> 32, own, 0], 8);
    }
    let e: &[u8; EDGE] = b[1..].try_into().unwrap();
    let c = e[0];
    let fields = [
        edge_field(e, c, 0),
        edge_field(e, c, 1),
        edge_field(e, c, 2),
        edge_field(e, c, 3),
    ];
    (fields, 1 + PLACES[c as usize][4] as usize)
}

/// A field's mask by its code.
const MASK: [u64; 4] = [0xff, 0xffff, 0xffff_ffff, u64::MAX];

/// Per control byte: where each of its edge's four fields starts (after
/// the control byte) and where the edge ends.
const PLACES: [[u8; 5]; 256] = places();

const fn places() -> [[u8; 5]; 256] {
    let mut t = [[0u8; 5]; 256];
    let mut c = 0;
    while c < 256 {
        let mut at = 1u8;
        let mut i = 0;
        while i < 4 {
            t[c][i] = at;
            at += 1 << ((c >> (2 * i)) & 3);
            i += 1;
        }
        t[c][4] = at;
        c += 1;
    }
    t
}

/// Field `i` of the edge `e` whose control byte is `c`.
#[inline(always)]
fn edge_field(e: &[u8; EDGE], c: u8, i: usize) -> u64 {
    let at = PLACES[c as usize][i] as usize;
    let v = u64::from_le_bytes(e[at..at + 8].try_into().unwrap());
    v & MASK[(c >> (2 * i)) as usize & 3]
}

/// The code of the fewest bytes that hold `v` (0, 1, 2 or 3: one, two,
/// four or eight bytes), without a branch.
#[inline(always)]
fn code(v: u64) -> u8 {
    u8::from(v > 0xff) + u8::from(v > 0xffff) + u8::from(v > 0xffff_ffff)
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

/// The first `len` bytes of `buf`, then [`PAD`] zeros.
fn padded(mut buf: Vec<u8>, len: usize) -> Vec<u8> {
    buf.truncate(len + PAD);
    buf[len..].fill(0);
    buf
}

/// Writes an edge's control byte and its four fields at `at` of `b` (with
/// [`EDGE`] bytes of room), each field in as few bytes as its code says;
/// where the next edge starts.
#[inline(always)]
fn put_edge(b: &mut [u8], at: usize, fields: [u64; 4]) -> usize {
    let e: &mut [u8; EDGE + 7] = (&mut b[at..at + EDGE + 7]).try_into().expect("room");
    let (mut p, mut c) = (1, 0);
    for (i, v) in fields.into_iter().enumerate() {
        let k = code(v);
        e[p..p + 8].copy_from_slice(&v.to_le_bytes());
        c |= k << (2 * i);
        p += 1 << k;
    }
    e[0] = c;
    at + p
}

/// Writes an edge's fields at `at` of `b` (with room for the long form),
/// in its word if it has one; where the next edge starts.
#[inline(always)]
fn put_fields(b: &mut [u8], at: usize, fields: [u64; 4]) -> usize {
    match word(fields) {
        Some(word) => {
            b[at..at + 8].copy_from_slice(&word.to_le_bytes());
            at + 8
        }
        None => {
            b[at] = LONG;
            put_edge(b, at + 1, fields)
        }
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
    /// in a word (see [`WORD_BACK`]) or, when they do not fit one, after
    /// the byte [`LONG`] as a control byte (the fields' codes, 2 bits each)
    /// and each field in as few bytes as its code says (a group varint:
    /// reading one takes no branch); where the next edge starts.
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

/// The `L` of the nodes a walk can still reach back to: the latest
/// [`RING`], and the far ones the log lists.
struct Lengths<'a> {
    ring: Box<[i64; RING as usize]>,
    far: &'a [u64],
    far_l: Vec<i64>,
    /// The index in `far` of the next far node the walk comes to, and
    /// that node (`u64::MAX` after the last): a node's set compares it
    /// with one value.
    next_far: usize,
    next_far_node: u64,
}

impl Lengths<'_> {
    #[inline]
    fn get(&self, node: u64, pred: u64) -> i64 {
        if node - pred < RING {
            return self.ring[(pred % RING) as usize];
        }
        self.far_get(pred)
    }

    #[cold]
    fn far_get(&self, pred: u64) -> i64 {
        let i = self
            .far
            .binary_search(&pred)
            .expect("the log lists far nodes");
        self.far_l[i]
    }

    /// Lengths over `far` nodes; the walk starts at node 0.
    fn new(far: &[u64]) -> Lengths<'_> {
        Lengths {
            ring: vec![0; RING as usize].try_into().expect("RING lengths"),
            far,
            far_l: vec![0; far.len()],
            next_far: 0,
            next_far_node: far.first().copied().unwrap_or(u64::MAX),
        }
    }

    #[inline]
    fn set(&mut self, node: u64, l: i64) {
        self.ring[(node % RING) as usize] = l;
        if node == self.next_far_node {
            self.set_far(l);
        }
    }

    /// Keeps the next far node's length, the walk having come to it.
    #[cold]
    fn set_far(&mut self, l: i64) {
        self.far_l[self.next_far] = l;
        self.next_far += 1;
        self.next_far_node = self.far.get(self.next_far).copied().unwrap_or(u64::MAX);
    }
}

/// A piece of the log read, and its edges' weights scaled (one a edge, in
/// order).
#[derive(Default)]
struct Scaled {
    piece: Vec<u8>,
    weights: Vec<u64>,
}

impl Scaled {
    /// Scales the weights of `self.piece`'s edges by `factors`.
    fn scale(&mut self, factors: &[(f64, f64)], scaling: &mut Scaling) {
        let (b, out) = (&self.piece, &mut self.weights);
        out.clear();
        let end = b.len() - PAD;
        let mut at = 0;
        while at < end {
            let head = b[at];
            at += 1;
            for _ in 0..head >> 1 {
                let e = b[at..at + 1 + EDGE].try_into().expect("pieces are padded");
                let ([_, w, own, follows], len) = read_edge(e);
                at += len;
                out.push(scaling.by(factors[own as usize].0 * factors[follows as usize].1, w));
            }
        }
    }
}

/// Calls `walk` with each spilled piece of the log in order, its weights
/// scaled by `factors`; the scaling's count. With threads a helper reads
/// and scales the next piece while `walk` goes through one: the walk's
/// chain of lengths waits for neither.
fn each_piece(
    s: &Sealed,
    factors: &[(f64, f64)],
    mut walk: impl FnMut(&Scaled),
) -> io::Result<Scaling> {
    let starts = s.pieces.iter().scan(0u64, |at, &len| {
        let start = *at;
        *at += u64::from(len);
        Some((start, len as usize))
    });
    let read = |mut next: Scaled, (at, len), scaling: &mut Scaling| {
        next.piece.resize(len, 0);
        s.file.read_exact_at(at, &mut next.piece)?;
        next.scale(factors, scaling);
        Ok(next)
    };
    let mut scaling = Scaling::default();
    if s.one_thread {
        let mut next = Scaled::default();
        for start in starts {
            next = read(next, start, &mut scaling)?;
            walk(&next);
        }
        return Ok(scaling);
    }
    std::thread::scope(|scope| {
        let (tx, ready) = sync_channel::<io::Result<Scaled>>(1);
        let (back, walked) = channel::<Scaled>();
        let helper = scope.spawn(move || {
            let mut scaling = Scaling::default();
            for start in starts {
                let next = walked.try_recv().unwrap_or_default();
                let res = read(next, start, &mut scaling);
                let failed = res.is_err();
                // The walk stops at an error, and no longer takes pieces.
                if tx.send(res).is_err() || failed {
                    break;
                }
            }
            scaling
        });
        for next in ready {
            let next = next?;
            walk(&next);
            // The helper may have read its last piece.
            let _ = back.send(next);
        }
        Ok(helper.join().expect("the walk's reader does not panic"))
    })
}

/// Per state key: its own factor and the one it follows.
type Factors = Vec<(f64, f64)>;

/// The running state of a walk.
struct Walk<'a> {
    lengths: Lengths<'a>,
    node: u64,
    best: i64,
    dest: PathEnd,
    /// Whether a length went past i64::MAX.
    overflow: Scaling,
}

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
        let mut w = Walk {
            lengths: Lengths::new(&s.far),
            node: 0,
            best: 0,
            dest: s.dest,
            overflow: Scaling::default(),
        };
        let mut scaling = each_piece(s, &factors, |next| w.piece(next)).ok()?;
        let mut tail = Scaled {
            piece: s.tail.clone(),
            weights: Vec::new(),
        };
        tail.scale(&factors, &mut scaling);
        w.piece(&tail);
        (!(scaling.overflow || w.overflow.overflow)).then_some(Prediction {
            length_ns: w.best.max(0) as u64,
            scaled_edges: scaling.edges,
        })
    }

    /// Does a factor other than 1 apply to an edge with time? If not,
    /// every length stays as the pass found it.
    fn changes_a_weight(&self, factors: &Factors) -> bool {
        let timed = |i: usize| self.inner.timed.get(i).copied().unwrap_or(0);
        (factors.iter().enumerate()).any(|(i, &(own, follow))| {
            (own != 1.0 && timed(i) & 1 != 0) || (follow != 1.0 && timed(i) & 2 != 0)
        })
    }

    /// Every state key's factors under `speedups`, if any names one, after
    /// those of no state (1.0).
    fn factors(&self, speedups: &[Speedup]) -> Option<Factors> {
        let n = &self.inner.names;
        let mut any = false;
        let none = std::iter::once((1.0, 1.0));
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

impl Walk<'_> {
    /// Walks the nodes of one piece of the log (and its padding), its
    /// weights scaled. The walk's state stays in locals while it goes:
    /// each node's `L` waits for its predecessors', and nothing else
    /// should stand in that chain.
    fn piece(&mut self, next: &Scaled) {
        let (b, weights) = (&next.piece[..], &next.weights[..]);
        let end = b.len() - PAD;
        let (mut at, mut edge, mut node, mut best) = (0, 0, self.node, self.best);
        let mut overflow = self.overflow;
        // Where the path ends, as two values the loop compares with.
        let (greatest, to) = match self.dest {
            PathEnd::Greatest => (true, u64::MAX),
            PathEnd::Node(d) => (false, d),
            PathEnd::Nowhere => (false, u64::MAX),
        };
        while at < end {
            let head = b[at];
            at += 1;
            let mut l = if head & 1 != 0 { 0 } else { UNREACHED };
            for _ in 0..head >> 1 {
                let e = b[at..at + 1 + EDGE].try_into().expect("pieces are padded");
                let (back, len) = read_back(e);
                at += len;
                let w = weights[edge];
                edge += 1;
                // An edge from a node no path from the start reaches
                // (under `--from`) reaches nothing, as in the pass.
                let lp = self.lengths.get(node, node - back);
                if lp != UNREACHED {
                    l = l.max(overflow.longer(lp, w));
                }
            }
            self.lengths.set(node, l);
            if greatest {
                best = best.max(l);
            } else if node == to {
                best = l;
            }
            node += 1;
        }
        (self.node, self.best, self.overflow) = (node, best, overflow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_read_back_from_their_word_or_their_long_form() {
        let backs = [1, 2, 0xffff, 0x1_0000, RING + 5, u64::MAX];
        let ws = [0, 1, u64::from(u32::MAX), 1 << 32, u64::MAX];
        let keys = [
            0,
            1,
            (1 << WORD_KEY) - 1,
            1 << WORD_KEY,
            u64::from(u32::MAX) + 1,
        ];
        for back in backs {
            for w in ws {
                for own in keys {
                    for follows in [0, 1, u64::from(u32::MAX) + 1] {
                        let fields = [back, w, own, follows];
                        let mut b = vec![0xaa; 3 + 1 + EDGE + 7 + PAD];
                        let end = put_fields(&mut b, 3, fields);
                        let e = b[3..4 + EDGE].try_into().unwrap();
                        let (read, len) = read_edge(e);
                        assert_eq!((read, len), (fields, end - 3), "{fields:?}");
                        let short =
                            back <= 0xffff && w <= 0xffff_ffff && own < 1 << 15 && follows == 0;
                        assert_eq!(b[3] & 1 == 0, short, "{fields:?} in a word");
                        assert!(!short || len == 8, "{fields:?}: a word takes eight bytes");
                    }
                }
            }
        }
    }

    #[test]
    fn edges_read_back_in_as_few_bytes_as_they_need() {
        let vals = [
            0,
            1,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX,
        ];
        // Every value in every field, beside every other.
        for (i, &v) in vals.iter().enumerate() {
            for &u in &vals {
                let fields = [v, u, vals[(i + 3) % vals.len()], u ^ v];
                let mut b = vec![0xaa; 3 + EDGE + 7];
                let at = put_edge(&mut b, 3, fields);
                let e: &[u8; EDGE] = b[3..3 + EDGE].try_into().unwrap();
                let c = e[0];
                let width = |v: u64| match v {
                    0..=0xff => 1,
                    0x100..=0xffff => 2,
                    0x1_0000..=0xffff_ffff => 4,
                    _ => 8,
                };
                assert_eq!(at - 3, 1 + fields.map(width).iter().sum::<usize>());
                for (k, f) in fields.into_iter().enumerate() {
                    assert_eq!(edge_field(e, c, k), f, "field {k} of {fields:?}");
                }
                assert_eq!(PLACES[c as usize][4] as usize, at - 3);
            }
        }
    }
}
