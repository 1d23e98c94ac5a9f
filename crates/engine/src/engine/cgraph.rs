//! The combined graph (cgraph) built while the engine streams: one node per
//! distinct transition `(SM, from state, to state)`, one intra-SM edge per
//! pair of consecutive transitions (charged to the state between them) and
//! one inter-SM edge per distinct dependence, each with its visits, total
//! time and, after the walk, critical time.
//!
//! The counts every pass adds to (visits, total) live apart from the rest
//! of an edge, in an array of 16 bytes an edge: a trace with many links
//! holds hundreds of thousands of inter-SM edges, each pass touches one at
//! random, and the smaller array stays in the cache.

use super::{Engine, M_END, M_HELD, M_ORIGIN, M_SEND, M_START, NONE32};
use crate::results::{CEdgeRow, CGraph, CNodeRow};
use crate::spare;
use critpath_trace::{Interner, Sym};
use rustc_hash::{FxHashMap, FxHashSet};

pub(super) struct CNode {
    /// Memo of `Engine::step`: the last [`MEMO`] `to`s taken from here
    /// (the latest first) and where they led. An SM that goes on from a
    /// transition one of a few ways (work or a wait, a send, the next state
    /// or the one after) finds them all.
    pub memo: [Step; MEMO],
    /// One-entry memo of `CGraphBuilder::inter_pass`: the last inter-SM
    /// edge from here.
    inter_memo: InterMemo,
    pub sm: u32,
    pub from: u32,
    pub to: u32,
    /// State key entered by this transition (NONE32 for end/send/origin).
    pub to_key: u32,
}

pub(super) struct CEdge {
    pub from: u32,
    pub to: u32,
    pub key: u32,
    pub inter: bool,
    /// An inter-SM edge of a waited `recv`: the sender held what the
    /// receiver waited for.
    pub held: bool,
    /// A `held` piece: the waiting state's key (its time is charged to
    /// `key`, the holder's state, and blamed on the holder); else NONE32.
    pub held_for: u32,
}

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
    fn new(edge: u32) -> Tally {
        Tally {
            edge,
            visits: 0,
            total: 0,
        }
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
    to: u32,
    cnode: u32,
    tally: Tally,
}

/// A memo entry that holds nothing.
const NO_STEP: Step = Step {
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
struct InterMemo {
    to: u32,
    held: bool,
    tally: Tally,
}

/// An inter-SM memo that holds nothing.
const NO_INTER: InterMemo = InterMemo {
    to: NONE32,
    held: false,
    tally: NO_STEP.tally,
};

/// A pass over an inter-SM edge past its memo, counted later with others
/// (see [`CGraphBuilder::inter_pass`]).
#[derive(Clone, Copy)]
struct Deferred {
    from: u32,
    to: u32,
    key: u32,
    held: bool,
    time: u64,
}

/// Set in the node-log tag [`CGraphBuilder::inter_pass`] gives for a
/// deferred pass: the bits below are its index, and
/// [`CGraphBuilder::edge_of`] gives its edge once resolved.
pub(super) const DEFERRED: u32 = 1 << 31;

/// Edges past which passes are deferred: a smaller index stays in the
/// cache, and an analysis of a few requests would pay for the queue.
const DEFER_PAST: usize = spare::SMALL;

/// Deferred passes (or node-log entries queued behind them) past which
/// the engine resolves them: few enough to stay in the cache, enough for
/// their index lookups to overlap.
pub(super) const DEFER: usize = 256;

/// Passes a [`Tally`] counts before it adds them to `counts` (a few in
/// the unit tests, so that they add up past it).
const TALLY_FULL: u32 = if cfg!(test) { 3 } else { u32::MAX };

/// The key of the inter-SM edge from cnode `from` to cnode `to`.
fn inter_key(from: u32, to: u32) -> u64 {
    (u64::from(from) << 32) | u64::from(to)
}

/// Adds what a memo or an index counted to its edge's counts.
fn add_tally(counts: &mut [Counts], t: Tally) {
    if t.visits == 0 {
        return;
    }
    let to = &mut counts[t.edge as usize];
    to.visits += u64::from(t.visits);
    to.total += t.total;
}

/// What each pass over an edge adds to.
#[derive(Clone, Copy, Default)]
pub(super) struct Counts {
    pub visits: u64,
    pub total: u64,
}

impl CEdge {
    fn new(from: u32, to: u32, key: u32, inter: bool) -> CEdge {
        CEdge {
            from,
            to,
            key,
            inter,
            held: false,
            held_for: NONE32,
        }
    }
}

/// The cgraph's nodes and edges with their indexes.
pub(super) struct CGraphBuilder {
    pub cnodes: Vec<CNode>,
    cnode_index: FxHashMap<(u32, u32, u32), u32>,
    /// (from cnode, to state or marker) -> (cnode, intra cedge or NONE32).
    trans: FxHashMap<(u32, u32), (u32, u32)>,
    pub cedges: Vec<CEdge>,
    /// Each cedge's counts, by its index.
    pub counts: Vec<Counts>,
    /// Each cedge's critical time, by its index, once the walk has found
    /// it (empty before).
    pub critical: Vec<u64>,
    /// (from cnode, holder's state key) -> (`held` cnode, its cedge).
    held_index: FxHashMap<(u32, u32), (u32, u32)>,
    /// (from cnode, to cnode) -> inter-SM cedge, and the passes over it
    /// that the index counted (added to `counts` by
    /// [`CGraphBuilder::seal`]), one index for edges of waited `recv`s
    /// (`held`), one for the others: a trace with many links passes over
    /// most inter-SM edges past their memo, and counting where the lookup
    /// already is saves a miss in `counts`. 24 bytes an entry.
    inter_index: [FxHashMap<u64, Tally>; 2],
    /// Pairs of SMs joined by an inter-SM edge.
    pub sm_links: FxHashSet<(u32, u32)>,
    /// Passes over inter-SM edges past their memo, not yet counted; the
    /// first `resolved` are, and `found` holds their edges.
    deferred: Vec<Deferred>,
    resolved: usize,
    found: Vec<u32>,
    /// [`DEFER_PAST`] (another in tests).
    defer_past: usize,
}

/// Entries of a cgraph node's memo of where its SM went next.
const MEMO: usize = 4;

/// Room the indexes start with: a request of a span file makes a few
/// dozen transitions, and growing each map from nothing took a tenth of
/// its analysis.
const START_ROOM: usize = 64;

/// An index with [`START_ROOM`].
fn with_room<K, V>() -> FxHashMap<K, V> {
    FxHashMap::with_capacity_and_hasher(START_ROOM, Default::default())
}

/// The tables a builder starts with: new, or those the analysis before on
/// this thread emptied ([`crate::spare`]).
struct Room {
    cnodes: Vec<CNode>,
    cnode_index: FxHashMap<(u32, u32, u32), u32>,
    trans: FxHashMap<(u32, u32), (u32, u32)>,
    cedges: Vec<CEdge>,
    counts: Vec<Counts>,
    inter_index: [FxHashMap<u64, Tally>; 2],
}

impl Room {
    fn new() -> Room {
        Room {
            cnodes: Vec::with_capacity(START_ROOM),
            cnode_index: with_room(),
            trans: with_room(),
            cedges: Vec::with_capacity(START_ROOM),
            counts: Vec::with_capacity(START_ROOM),
            inter_index: [with_room(), with_room()],
        }
    }

    /// Are the tables small enough to keep for the next analysis?
    fn small(&self) -> bool {
        let rooms = [
            self.cnodes.capacity(),
            self.cnode_index.capacity(),
            self.trans.capacity(),
            self.cedges.capacity(),
            self.counts.capacity(),
            self.inter_index[0].capacity(),
            self.inter_index[1].capacity(),
        ];
        rooms.iter().all(|&n| n <= spare::SMALL)
    }

    fn clear(&mut self) {
        self.cnodes.clear();
        self.cnode_index.clear();
        self.trans.clear();
        self.cedges.clear();
        self.counts.clear();
        self.inter_index.iter_mut().for_each(FxHashMap::clear);
    }
}

impl Default for CGraphBuilder {
    fn default() -> Self {
        let room = spare::take::<Room>().unwrap_or_else(Room::new);
        CGraphBuilder {
            cnodes: room.cnodes,
            cnode_index: room.cnode_index,
            trans: room.trans,
            cedges: room.cedges,
            counts: room.counts,
            critical: Vec::new(),
            held_index: FxHashMap::default(),
            inter_index: room.inter_index,
            sm_links: FxHashSet::default(),
            deferred: Vec::new(),
            resolved: 0,
            found: Vec::new(),
            defer_past: DEFER_PAST,
        }
    }
}

impl Drop for CGraphBuilder {
    /// Small tables, emptied, are kept for the next analysis on the thread.
    fn drop(&mut self) {
        let mut room = Room {
            cnodes: std::mem::take(&mut self.cnodes),
            cnode_index: std::mem::take(&mut self.cnode_index),
            trans: std::mem::take(&mut self.trans),
            cedges: std::mem::take(&mut self.cedges),
            counts: std::mem::take(&mut self.counts),
            inter_index: std::mem::take(&mut self.inter_index),
        };
        if room.small() {
            room.clear();
            spare::keep(room);
        }
    }
}

impl CGraphBuilder {
    /// Adds SM `sm`'s origin node (the SM before its life begins).
    pub fn origin(&mut self, sm: u32) -> u32 {
        let origin = self.cnodes.len() as u32;
        self.cnodes.push(CNode {
            memo: [NO_STEP; MEMO],
            inter_memo: NO_INTER,
            sm,
            from: M_ORIGIN,
            to: M_ORIGIN,
            to_key: NONE32,
        });
        origin
    }

    /// The records are all in: adds the passes the index counted to
    /// `counts`, and frees the indexes, which only new records need (the
    /// walk that follows makes tables of its own, and a trace with many
    /// links has hundreds of thousands of edges in them).
    pub fn seal(&mut self) {
        self.resolve();
        for c in &mut self.cnodes {
            for m in &mut c.memo {
                add_tally(&mut self.counts, m.tally);
                m.tally = Tally::new(m.tally.edge);
            }
            add_tally(&mut self.counts, c.inter_memo.tally);
            c.inter_memo.tally = Tally::new(c.inter_memo.tally.edge);
        }
        for index in &mut self.inter_index {
            index
                .drain()
                .for_each(|(_, t)| add_tally(&mut self.counts, t));
        }
        // Small indexes stay, empty, for the next analysis on the thread.
        let big = |n: usize| n > spare::SMALL;
        if big(self.cnode_index.capacity()) || big(self.trans.capacity()) {
            self.cnode_index = FxHashMap::default();
            self.trans = FxHashMap::default();
        }
        if self.inter_index.iter().any(|x| big(x.capacity())) {
            self.inter_index = Default::default();
        }
        self.cnode_index.clear();
        self.trans.clear();
        self.held_index = FxHashMap::default();
    }

    /// Counts one pass of `time` ns over edge `edge`.
    #[inline]
    pub fn pass(&mut self, edge: u32, time: u64) {
        let c = &mut self.counts[edge as usize];
        c.visits += 1;
        c.total += time;
    }

    /// Counts one pass of `time` ns over intra-SM edge `edge`, the one
    /// [`Engine::step`] from cnode `from` just gave: in its memo entry,
    /// which is in the cache.
    #[inline]
    pub fn step_pass(&mut self, from: u32, edge: u32, time: u64) {
        let t = &mut self.cnodes[from as usize].memo[0].tally;
        if t.edge != edge || !t.add(time) {
            self.pass(edge, time);
        }
    }

    /// Adds edge `ce`, uncounted; its index. The deferred passes come
    /// first: edges are numbered in the order the passes met them.
    fn push_edge(&mut self, ce: CEdge) -> u32 {
        self.resolve();
        self.push_edge_now(ce)
    }

    /// [`Self::push_edge`] while resolving.
    fn push_edge_now(&mut self, ce: CEdge) -> u32 {
        let e = self.cedges.len() as u32;
        self.cedges.push(ce);
        self.counts.push(Counts::default());
        e
    }

    /// Counts one pass of `time` ns over the inter-SM edge from cnode
    /// `from` to cnode `to`, charged to `key` (`held` when a waited `recv`
    /// makes it); the edge. Past the memo, in a cgraph of more than
    /// [`DEFER_PAST`] edges, the pass is deferred: the tag given has
    /// [`DEFERRED`] set, and [`Self::resolve`] counts it and finds (or
    /// makes) its edge, [`Self::edge_of`] gives it.
    #[inline(always)]
    pub fn inter_pass(&mut self, from: u32, to: u32, (key, held): (u32, bool), time: u64) -> u32 {
        let memo = &mut self.cnodes[from as usize].inter_memo;
        if memo.to == to && memo.held == held {
            let e = memo.tally.edge;
            if !memo.tally.add(time) {
                self.pass(e, time);
            }
            return e;
        }
        if self.cedges.len() < self.defer_past {
            let e = self.inter_pass_slow(from, to, (key, held), time);
            self.remember_inter(from, (to, held), e);
            return e;
        }
        let i = self.deferred.len() as u32;
        self.deferred.push(Deferred {
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
        while let Some(&d) = self.deferred.get(self.resolved) {
            self.resolved += 1;
            let e = self.inter_pass_slow(d.from, d.to, (d.key, d.held), d.time);
            self.found.push(e);
            self.remember_inter(d.from, (d.to, d.held), e);
        }
    }

    /// Makes edge `e` to `to` (`held` or not) the memo of cnode `from`;
    /// what the memo counted before goes to `counts`.
    fn remember_inter(&mut self, from: u32, (to, held): (u32, bool), e: u32) {
        let new = InterMemo {
            to,
            held,
            tally: Tally::new(e),
        };
        let old = std::mem::replace(&mut self.cnodes[from as usize].inter_memo, new);
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
        debug_assert_eq!(self.resolved, self.deferred.len());
        self.deferred.clear();
        self.found.clear();
        self.resolved = 0;
    }

    /// [`CGraphBuilder::inter_pass`] past its memo: counted in the index,
    /// the edge new if it is.
    #[inline(never)]
    fn inter_pass_slow(&mut self, from: u32, to: u32, (key, held): (u32, bool), time: u64) -> u32 {
        let k = inter_key(from, to);
        if let Some(t) = self.inter_index[usize::from(held)].get_mut(&k) {
            if !t.add(time) {
                // What it counted goes to `counts`; this pass starts anew.
                let full = std::mem::replace(t, Tally::new(t.edge));
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
        self.inter_index[usize::from(held)].insert(k, t);
        let (a, b) = (self.cnodes[from as usize].sm, self.cnodes[to as usize].sm);
        if a != b {
            self.sm_links.insert((a, b));
        }
        e
    }
}

impl Engine<'_> {
    /// The cgraph node of SM `sm`'s transition `from -> to`.
    pub(super) fn cnode_of(&mut self, sm: u32, from: u32, to: u32, strings: &Interner) -> u32 {
        if let Some(&c) = self.g.cnode_index.get(&(sm, from, to)) {
            return c;
        }
        let to_key = if to < M_HELD {
            self.key_of(sm, Sym(to), strings)
        } else {
            NONE32
        };
        let c = self.g.cnodes.len() as u32;
        self.g.cnodes.push(CNode {
            memo: [NO_STEP; MEMO],
            inter_memo: NO_INTER,
            sm,
            from,
            to,
            to_key,
        });
        self.g.cnode_index.insert((sm, from, to), c);
        c
    }

    /// The cgraph node reached from `from_cnode` by going to `to` (a state
    /// or marker), and the intra-SM cgraph edge between them (NONE32 from the
    /// origin). `cur_key` is the state the edge spends time in.
    #[inline(always)]
    pub(super) fn step(
        &mut self,
        sm: u32,
        from_cnode: u32,
        (cur, cur_key): (u32, u32),
        to: u32,
        strings: &Interner,
    ) -> (u32, u32) {
        let memo = &mut self.g.cnodes[from_cnode as usize].memo;
        if memo[0].to == to {
            return (memo[0].cnode, memo[0].tally.edge);
        }
        // The latest first: the one found trades places with the front
        // (no rotation: a call to `memmove` each time).
        if let Some(i) = memo.iter().position(|m| m.to == to) {
            memo.swap(0, i);
            return (memo[0].cnode, memo[0].tally.edge);
        }
        let r = self.step_slow(sm, from_cnode, (cur, cur_key), to, strings);
        let memo = &mut self.g.cnodes[from_cnode as usize].memo;
        let new = Step {
            to,
            cnode: r.0,
            tally: Tally::new(r.1),
        };
        // The last goes (rare: a rotation is fine here).
        let old = std::mem::replace(&mut memo[MEMO - 1], new);
        memo.rotate_right(1);
        add_tally(&mut self.g.counts, old.tally);
        r
    }

    /// The cgraph node a `held` piece leads to from `from_cnode` (SM `sm`
    /// in `cur`, keyed `cur_key`) and its edge, charged to the holder's
    /// state `hkey`.
    pub(super) fn held_step(
        &mut self,
        sm: u32,
        from_cnode: u32,
        (cur, cur_key): (u32, u32),
        hkey: u32,
        strings: &Interner,
    ) -> (u32, u32) {
        if let Some(&r) = self.g.held_index.get(&(from_cnode, hkey)) {
            return r;
        }
        let cn = self.cnode_of(sm, cur, M_HELD, strings);
        let mut ce = CEdge::new(from_cnode, cn, hkey, false);
        ce.held_for = cur_key;
        let e = self.g.push_edge(ce);
        self.g.held_index.insert((from_cnode, hkey), (cn, e));
        (cn, e)
    }

    #[cold]
    #[inline(never)]
    fn step_slow(
        &mut self,
        sm: u32,
        from_cnode: u32,
        (cur, cur_key): (u32, u32),
        to: u32,
        strings: &Interner,
    ) -> (u32, u32) {
        if let Some(&r) = self.g.trans.get(&(from_cnode, to)) {
            return r;
        }
        let (cnode, edge) = if self.g.cnodes[from_cnode as usize].from == M_ORIGIN {
            (self.cnode_of(sm, M_START, to, strings), NONE32)
        } else {
            let cn = self.cnode_of(sm, cur, to, strings);
            let e = self.g.push_edge(CEdge::new(from_cnode, cn, cur_key, false));
            (cn, e)
        };
        self.g.trans.insert((from_cnode, to), (cnode, edge));
        (cnode, edge)
    }

    /// The cgraph as result rows.
    pub(super) fn cgraph_rows(&self, strings: &Interner) -> CGraph {
        let name = |m: u32| -> String {
            match m {
                M_START => "start".into(),
                M_END => "end".into(),
                M_SEND => "send".into(),
                M_HELD => "held".into(),
                M_ORIGIN => "origin".into(),
                s => strings.resolve(Sym(s)).to_string(),
            }
        };
        let nodes = self
            .g
            .cnodes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.from != M_ORIGIN)
            .map(|(i, c)| {
                let s = &self.m.sms[c.sm as usize];
                CNodeRow {
                    id: i as u32,
                    sys: strings.resolve(s.sys).to_string(),
                    sm: strings.resolve(s.name).to_string(),
                    from: name(c.from),
                    to: name(c.to),
                }
            })
            .collect();
        let critical = |i: usize| self.g.critical.get(i).copied().unwrap_or(0);
        let edges = self
            .g
            .cedges
            .iter()
            .zip(&self.g.counts)
            .enumerate()
            .map(|(i, (e, c))| CEdgeRow {
                from: e.from,
                to: e.to,
                state: self.edge_state(e, strings),
                inter: e.inter,
                visits: c.visits,
                total_ns: c.total,
                critical_ns: critical(i),
            })
            .collect();
        CGraph { nodes, edges }
    }

    /// What an edge's time is: its state, or for a `held` piece the waiting
    /// state and the holder's state it is charged to.
    fn edge_state(&self, e: &CEdge, strings: &Interner) -> String {
        if e.held_for == NONE32 {
            return self.state_name(e.key, strings);
        }
        let holder = self.m.sms[self.m.keys[e.key as usize].sm as usize].name;
        format!(
            "{}, held by {} in {}",
            self.state_name(e.held_for, strings),
            strings.resolve(holder),
            self.state_name(e.key, strings)
        )
    }

    /// The name of state key `key` ("" for NONE32).
    pub(super) fn state_name(&self, key: u32, strings: &Interner) -> String {
        if key == NONE32 {
            String::new()
        } else {
            strings.resolve(self.m.keys[key as usize].state).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let e = g.inter_pass(a, to, (NONE32, held), i * 10);
            let w = want.entry(e).or_default();
            w.0 += 1;
            w.1 += i * 10;
        }
        // And the memo's path: the same edge twice in a row.
        let e = g.inter_pass(c, a, (NONE32, false), 5);
        assert_eq!(g.inter_pass(c, a, (NONE32, false), 7), e);
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
    /// than [`MEMO`] holds). Each edge's visits and total are the records'.
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
}
