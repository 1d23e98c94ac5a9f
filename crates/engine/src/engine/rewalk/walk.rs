//! The walk of a kept graph under a what-if's factors, in two stages:
//! scaling each edge's weight by its states' factors, and chaining the
//! lengths in node order (each node's `L` the greatest of its
//! predecessors' plus the scaled weight). With threads a helper reads and
//! scales the next piece of the log while the caller chains the one
//! before, so the chain (each `L` waits for an earlier one) has the core
//! to itself.

use super::layout::{read_edge, EDGE, PAD};
use super::{Factors, PathEnd, Prediction, Sealed, RING};
use crate::engine::whatif::Scaling;
use crate::engine::UNREACHED;
use std::io;
use std::sync::mpsc::{channel, sync_channel};

/// The path's length under `factors` (see [`super::Rewalk::predict`]):
/// `None` when reading the log failed or a length overflowed.
pub(super) fn walk(s: &Sealed, factors: &Factors) -> Option<Prediction> {
    let mut w = Walk {
        lengths: Lengths::new(&s.far),
        node: 0,
        best: 0,
        dest: s.dest,
        overflow: Scaling::default(),
    };
    let mut scaling = each_piece(s, factors, |next| w.piece(&next.piece, &next.weights)).ok()?;
    let mut weights = Vec::new();
    scale(&s.tail, factors, &mut scaling, &mut weights);
    w.piece(&s.tail, &weights);
    (!(scaling.overflow || w.overflow.overflow)).then_some(Prediction {
        length_ns: w.best.max(0) as u64,
        scaled_edges: scaling.edges,
    })
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

/// A piece of the log read, and its edges' weights scaled (one per edge,
/// in order).
#[derive(Default)]
struct Scaled {
    piece: Vec<u8>,
    weights: Vec<u64>,
}

/// The scaled weights of the edges of `b` (a piece of the log and its
/// padding), into `out`.
fn scale(b: &[u8], factors: &[f64], scaling: &mut Scaling, out: &mut Vec<u64>) {
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
            out.push(scaling.by(factors[own as usize] * factors[follows as usize], w));
        }
    }
}

/// Calls `walk` with each spilled piece of the log in order, its weights
/// scaled by `factors`; the scaling's count. With threads a helper reads
/// and scales the next piece while `walk` goes through one: the walk's
/// chain of lengths waits for neither.
fn each_piece(s: &Sealed, factors: &[f64], mut walk: impl FnMut(&Scaled)) -> io::Result<Scaling> {
    let starts = s.pieces.iter().scan(0u64, |at, &len| {
        let start = *at;
        *at += u64::from(len);
        Some((start, len as usize))
    });
    let read = |mut next: Scaled, (at, len), scaling: &mut Scaling| {
        next.piece.resize(len, 0);
        s.file.read_exact_at(at, &mut next.piece)?;
        scale(&next.piece, factors, scaling, &mut next.weights);
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

/// The running state of a walk.
struct Walk<'a> {
    lengths: Lengths<'a>,
    node: u64,
    best: i64,
    dest: PathEnd,
    /// Whether a length went past i64::MAX.
    overflow: Scaling,
}

impl Walk<'_> {
    /// Walks the nodes of one piece of the log (and its padding), its
    /// edges' weights scaled. The walk's state stays in locals while it
    /// goes: each node's `L` waits for its predecessors', and nothing else
    /// should stand in that chain.
    fn piece(&mut self, b: &[u8], weights: &[u64]) {
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
                let ([back, ..], len) = read_edge(e);
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
