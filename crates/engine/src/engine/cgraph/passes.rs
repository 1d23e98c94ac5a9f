//! How the combined graph counts the passes over its edges: where the
//! lookup already is (the memo entry of a cgraph node, the index entry of
//! an inter-SM edge), added to `counts` when they leave it; and in a graph
//! larger than the cache, the inter-SM passes that miss their memo 256 at
//! a time, so that their lookups' cache misses overlap
//! ([`CGraphBuilder::inter_pass`]).

use super::{CEdge, CGraphBuilder, Counts};
use crate::engine::NONE32;
use crate::spare;

/// The passes over an edge counted where it was found (its memo entry or
/// its index entry), not yet added to `counts`: the edges of a trace with
/// many links do not fit in the cache, and counting where the lookup
/// already is saves a miss in `counts` a pass.
#[derive(Clone, Copy)]
pub(super) struct Tally {
    pub edge: u32,
    visits: u32,
    total: u64,
}

impl Tally {
    /// Nothing counted yet over `edge`.
    pub(super) fn new(edge: u32) -> Tally {
        Tally {
            edge,
            visits: 0,
            total: 0,
        }
    }

    /// What it counted, leaving it to count anew over the same edge.
    pub(super) fn take(&mut self) -> Tally {
        std::mem::replace(self, Tally::new(self.edge))
    }

    /// Counts one pass of `time` ns; false, uncounted, when full.
    #[inline(always)]
    fn add(&mut self, time: u64) -> bool {
        if self.visits == TALLY_FULL {
            return false;
        }
        self.visits += 1;
        self.total += time;
        true
    }
}

/// An entry of a cgraph node's memo of where its SM went next: to `to`,
/// which led to cnode `cnode` over the intra-SM edge `tally.edge` (NONE32
/// from the origin).
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub(super) to: u32,
    pub(super) cnode: u32,
    pub(super) tally: Tally,
}

/// A memo entry that holds nothing.
pub(super) const NO_STEP: Step = Step {
    to: NONE32,
    cnode: 0,
    tally: Tally {
        edge: NONE32,
        visits: 0,
        total: 0,
    },
};

/// The last inter-SM edge from a cgraph node: to cnode `to`, `held` or
/// not.
#[derive(Clone, Copy)]
pub(super) struct InterMemo {
    to: u32,
    held: bool,
    pub(super) tally: Tally,
}

/// An inter-SM memo that holds nothing.
pub(super) const NO_INTER: InterMemo = InterMemo {
    to: NONE32,
    held: false,
    tally: NO_STEP.tally,
};

/// A pass over an inter-SM edge past its memo, counted later with others
/// (see [`CGraphBuilder::inter_pass`]).
#[derive(Clone, Copy)]
pub(super) struct Deferred {
    at: u32,
    from: u32,
    to: u32,
    key: u32,
    held: bool,
    time: u64,
}

/// Set in the node-log tag [`CGraphBuilder::inter_pass`] gives for a
/// deferred pass: the bits below are its index, and
/// [`CGraphBuilder::edge_of`] gives its edge once resolved.
pub(in crate::engine) const DEFERRED: u32 = 1 << 31;

/// Edges past which passes are deferred: a smaller index stays in the
/// cache, and an analysis of a few requests would pay for the queue.
pub(super) const DEFER_PAST: usize = spare::SMALL;

/// Deferred passes (or node-log entries queued behind them) past which
/// the engine resolves them: few enough to stay in the cache (32 KB of
/// queued entries), enough for their index lookups to overlap and for the
/// queue to be emptied seldom (1,024 ran the dependence-heavy trace 5%
/// faster than 256, and as fast as 4,096).
pub(crate) const DEFER: usize = 1024;

/// Passes a [`Tally`] counts before it adds them to `counts` (a few in
/// the unit tests, so that they add up past it).
const TALLY_FULL: u32 = if cfg!(test) { 3 } else { u32::MAX };

/// The key of the inter-SM edge from cnode `from` to cnode `to`, `held`
/// or not (cnodes are numbered below 2^31, as edges are).
fn inter_key(from: u32, to: u32, held: bool) -> u64 {
    debug_assert!(to < 1 << 31);
    (u64::from(from) << 32) | (u64::from(held) << 31) | u64::from(to)
}

/// Adds what a memo or an index counted to its edge's counts.
pub(super) fn add_tally(counts: &mut [Counts], t: Tally) {
    if t.visits == 0 {
        return;
    }
    let to = &mut counts[t.edge as usize];
    to.visits += u64::from(t.visits);
    to.total += t.total;
}

impl CGraphBuilder {
    /// Counts one pass of `time` ns over edge `edge`.
    #[inline]
    pub fn pass(&mut self, edge: u32, time: u64) {
        let c = &mut self.counts[edge as usize];
        c.visits += 1;
        c.total += time;
    }

    /// Counts one pass of `time` ns over intra-SM edge `edge`, the one
    /// `Engine::step` from cnode `from` just gave: in its memo entry,
    /// which is in the cache.
    #[inline]
    pub fn step_pass(&mut self, from: u32, edge: u32, time: u64) {
        let t = &mut self.cnodes[from as usize].memo[0].tally;
        if t.edge != edge || !t.add(time) {
            self.pass(edge, time);
        }
    }

    /// Counts one pass of `time` ns over the inter-SM edge from cnode
    /// `from` to cnode `to`, charged to `key` (`held` when a waited `recv`
    /// makes it), met from cnode `at` (`from` itself, or a node of its SM
    /// when the edges are kept per SM: the memo is `at`'s, whose links go
    /// to few places); the edge. Past the memo, in a cgraph of more than
    /// [`DEFER_PAST`] edges, the pass is deferred: the tag given has
    /// [`DEFERRED`] set, and [`Self::resolve`] counts it and finds (or
    /// makes) its edge, [`Self::edge_of`] gives it.
    #[inline(always)]
    pub fn inter_pass(
        &mut self,
        (at, from): (u32, u32),
        to: u32,
        (key, held): (u32, bool),
        time: u64,
    ) -> u32 {
        let memo = &mut self.inter_memos[at as usize];
        if memo.to == to && memo.held == held {
            let e = memo.tally.edge;
            if !memo.tally.add(time) {
                self.pass(e, time);
            }
            return e;
        }
        if self.cedges.len() < self.defer_past {
            let e = self.inter_pass_slow(from, to, (key, held), time);
            self.remember_inter(at, (to, held), e);
            return e;
        }
        let i = self.deferred.len() as u32;
        self.deferred.push(Deferred {
            at,
            from,
            to,
            key,
            held,
            time,
        });
        DEFERRED | i
    }

    /// Passes not yet counted (or resolved, waiting to be cleared).
    #[inline]
    pub fn deferred(&self) -> usize {
        self.deferred.len()
    }

    /// Counts the deferred passes not yet counted, in order, each in the
    /// index (its edge made when new) and its `from` node's memo; their
    /// edges go to `found`. Their lookups, one after another with nothing
    /// between them that waits for one, overlap their cache misses: one
    /// at a time, as the engine meets them, each stalled it.
    pub fn resolve(&mut self) {
        while let Some(&d) = self.deferred.get(self.found.len()) {
            let e = self.inter_pass_slow(d.from, d.to, (d.key, d.held), d.time);
            self.found.push(e);
            self.remember_inter(d.at, (d.to, d.held), e);
        }
    }

    /// Makes edge `e` to `to` (`held` or not) the memo of cnode `at`;
    /// what the memo counted before goes to `counts`.
    fn remember_inter(&mut self, at: u32, (to, held): (u32, bool), e: u32) {
        let new = InterMemo {
            to,
            held,
            tally: Tally::new(e),
        };
        let old = std::mem::replace(&mut self.inter_memos[at as usize], new);
        add_tally(&mut self.counts, old.tally);
    }

    /// The edge of node-log tag `tag`: itself, or for a deferred pass its
    /// resolved edge.
    #[inline]
    pub fn edge_of(&self, tag: u32) -> u32 {
        match tag & DEFERRED {
            0 => tag,
            _ => self.found[(tag & !DEFERRED) as usize],
        }
    }

    /// Forgets the resolved passes (their tags are all replaced).
    pub fn clear_deferred(&mut self) {
        debug_assert_eq!(self.found.len(), self.deferred.len());
        self.deferred.clear();
        self.found.clear();
    }

    /// [`CGraphBuilder::inter_pass`] past its memo: counted in the index,
    /// the edge new if it is.
    #[inline(never)]
    fn inter_pass_slow(&mut self, from: u32, to: u32, (key, held): (u32, bool), time: u64) -> u32 {
        let k = inter_key(from, to, held);
        if let Some(t) = self.inter_index.get_mut(&k) {
            if !t.add(time) {
                // What it counted goes to `counts`; this pass starts anew.
                let full = t.take();
                t.add(time);
                add_tally(&mut self.counts, full);
            }
            return t.edge;
        }
        let mut ce = CEdge::new(from, to, key, true);
        ce.held = held;
        let e = self.push_edge_now(ce);
        let mut t = Tally::new(e);
        t.add(time);
        self.inter_index.insert(k, t);
        let (a, b) = (self.cnodes[from as usize].sm, self.cnodes[to as usize].sm);
        if a != b {
            self.sm_links.insert((a, b));
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use critpath_trace::{Interner, Sym};
    use rustc_hash::FxHashMap;

    /// Passes over inter-SM edges, past their memo and past what a tally
    /// holds, add up in `counts` once sealed, each edge its own.
    #[test]
    fn inter_passes_add_up_past_a_full_tally() {
        let mut g = CGraphBuilder::default();
        let (a, b, c) = (g.origin(0), g.origin(1), g.origin(2));
        let mut want: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
        // Alternating targets miss the one-entry memo each time.
        for i in 0..20u64 {
            let (to, held) = [(b, false), (c, false), (b, true)][i as usize % 3];
            let e = g.inter_pass((a, a), to, (NONE32, held), i * 10);
            let w = want.entry(e).or_default();
            w.0 += 1;
            w.1 += i * 10;
        }
        // And the memo's path: the same edge twice in a row.
        let e = g.inter_pass((c, c), a, (NONE32, false), 5);
        assert_eq!(g.inter_pass((c, c), a, (NONE32, false), 7), e);
        want.insert(e, (2, 12));
        g.seal();
        assert_eq!(want.len(), 4);
        for (e, (visits, total)) in want {
            let got = g.counts[e as usize];
            assert_eq!((got.visits, got.total), (visits, total), "edge {e}");
            assert!(g.cedges[e as usize].inter);
        }
    }
    /// Passes over intra-SM edges, counted in the memo entries of their
    /// cgraph nodes, add up once sealed: past a full tally, and past a memo
    /// that lets entries go (an SM goes from one state to seven others, more
    /// than the memo holds). Each edge's visits and total are the records'.
    #[test]
    fn intra_passes_add_up_past_the_memo() {
        use critpath_trace::{Event, Record, VecSource, Who};
        use std::collections::BTreeMap;
        let mut s = Interner::new();
        let sm = s.intern("a");
        let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
        let states: Vec<Sym> = names.iter().map(|n| s.intern(n)).collect();
        // s0, then one of the others, then s0 again, ...
        let mut seq = vec![0];
        let mut x = 7u64;
        for _ in 0..300 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seq.extend([1 + (x >> 33) as usize % 7, 0]);
        }
        let (mut records, mut t) = (Vec::new(), 0);
        for &k in &seq {
            t += 1 + (k as u64 * 7 + t) % 13;
            let ev = Event::State {
                who: Who::Sm(sm),
                state: states[k],
            };
            records.push(Record {
                t,
                sys: Sym::LOCAL,
                ev,
            });
        }
        // The first edge leaves the cgraph node of the SM's start.
        let first = (1, records[1].t - records[0].t);
        let mut want = BTreeMap::from([(["start", "s0", &names[seq[1]]], first)]);
        for w in seq.windows(3).zip(records.windows(3)) {
            let ([a, b, c], [_, rb, rc]) = (w.0, w.1) else {
                unreachable!()
            };
            let v = want
                .entry([&names[*a], &names[*b], &names[*c]])
                .or_default();
            v.0 += 1;
            v.1 += rc.t - rb.t;
        }
        let mut src = VecSource::new(records, s);
        let (a, _) = crate::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
        let nodes: BTreeMap<u32, _> = a.cgraph.nodes.iter().map(|n| (n.id, n)).collect();
        let mut got = BTreeMap::new();
        for e in a.cgraph.edges.iter().filter(|e| !e.inter) {
            let (x, y) = (nodes[&e.from], nodes[&e.to]);
            assert_eq!(x.to, y.from);
            let key = [x.from.as_str(), x.to.as_str(), y.to.as_str()];
            assert!(got.insert(key, (e.visits, e.total_ns)).is_none());
        }
        assert_eq!(got, want);
    }
    /// A state's visits are the transitions into it (counted in the cgraph
    /// nodes that enter it, added to the state at the end): over a
    /// dependence-heavy trace, and an SM that ends and starts again.
    #[test]
    fn visits_are_the_transitions_into_each_state() {
        use critpath_sim::deps::Deps;
        use critpath_trace::{Event, Record, VecSource, Who};
        use std::collections::BTreeMap;
        let mut s = Interner::new();
        let mut gen = Deps::new(30_000, 5, &mut s);
        let mut records = Vec::new();
        while let Some(r) = gen.next_in(&mut s) {
            records.push(r);
        }
        let (a, s0, s1) = (s.intern("a"), s.intern("s0"), s.intern("s1"));
        let t = records.last().map_or(0, |r| r.t);
        let again = [Some(s0), Some(s1), None, Some(s0), Some(s1), Some(s0)];
        for (i, st) in again.into_iter().enumerate() {
            let ev = match st {
                Some(state) => Event::State {
                    who: Who::Sm(a),
                    state,
                },
                None => Event::End { who: Who::Sm(a) },
            };
            let t = t + 1 + i as u64;
            records.push(Record {
                t,
                sys: Sym::LOCAL,
                ev,
            });
        }
        let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
        for r in &records {
            let (who, state) = match r.ev {
                Event::State { who, state }
                | Event::Wait { who, state, .. }
                | Event::Recv { who, state, .. } => (who, state),
                _ => continue,
            };
            let Who::Sm(sm) = who else { unreachable!() };
            let key = (s.resolve(sm).to_string(), s.resolve(state).to_string());
            *want.entry(key).or_default() += 1;
        }
        let mut src = VecSource::new(records, s);
        let (got, _) = crate::analyze(&mut src, Default::default(), |_, _| {}).unwrap();
        let got: BTreeMap<_, _> = (got.states.iter())
            .map(|r| ((r.sm.clone(), r.state.clone()), r.visits))
            .collect();
        assert_eq!(got[&("a".to_string(), "s0".to_string())], 3);
        assert_eq!(got, want);
    }

    /// An analysis whose inter-SM passes are all deferred is the one whose
    /// passes are counted as met: path, tables, and the combined graph
    /// with its edges in the same order and counts (a dependence-heavy
    /// trace: most passes miss the memo, some entries wait behind others,
    /// new intra-SM edges come while passes wait).
    #[test]
    fn deferred_passes_give_the_analysis_of_passes_counted_at_once() {
        use critpath_sim::deps::Deps;
        use critpath_trace::VecSource;
        let run = |defer_past: usize| {
            let mut s = Interner::new();
            let mut gen = Deps::new(60_000, 3, &mut s);
            let mut records = Vec::new();
            while let Some(r) = gen.next_in(&mut s) {
                records.push(r);
            }
            let mut engine = Engine::new(crate::Options::default());
            engine.g.defer_past = defer_past;
            let mut src = VecSource::new(records, s);
            let (a, _) = crate::pump::run(&mut src, engine, |_, _| {}).unwrap();
            assert!(a.cgraph.edges.iter().filter(|e| e.inter).count() > 1000);
            format!("{a:?}")
        };
        assert_eq!(run(0), run(usize::MAX));
    }

    /// Without a combined graph to show, an analysis keeps one inter-SM
    /// edge per (sending SM, receiving node): fewer over a dependence-heavy
    /// trace (a third fewer here, 36,576 of 387,390 at 20M records), and the
    /// path, tables and findings of the analysis that keeps the graph.
    #[test]
    fn without_the_cgraph_links_share_edges_and_give_the_same_analysis() {
        use critpath_sim::deps::Deps;
        use critpath_trace::Pos;
        let run = |no_cgraph: bool| {
            let mut s = Interner::new();
            let mut gen = Deps::new(200_000, 11, &mut s);
            let mut engine = Engine::new(crate::Options {
                no_cgraph,
                ..Default::default()
            });
            while let Some(r) = gen.next_in(&mut s) {
                engine.feed(&r, Pos::NONE, &s);
            }
            let inter = engine.g.cedges.iter().filter(|e| e.inter).count();
            let mut a = engine.finish(&s).unwrap();
            a.stats.node_log_bytes = 0;
            let kept = format!(
                "{:?}",
                (&a.critical_path, &a.states, &a.diagnostics, &a.stats)
            );
            (inter, kept, a.cgraph.edges.len())
        };
        let ((full, want, rows), (lean, got, none)) = (run(false), run(true));
        assert!(rows > 0 && none == 0);
        assert!(lean * 3 < full * 2, "{lean} inter-SM edges of {full}");
        assert_eq!(got, want);
    }
}
