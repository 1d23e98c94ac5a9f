//! The combined graph (cgraph) built while the engine streams: one node per
//! distinct transition `(SM, from state, to state)`, one intra-SM edge per
//! pair of consecutive transitions (charged to the state between them) and
//! one inter-SM edge per distinct dependence, each with its visits, total
//! time and, after the walk, critical time.
//!
//! The counts every pass adds to (visits, total) live apart from the rest
//! of an edge, in an array of 16 bytes an edge: a trace with many links
//! holds hundreds of thousands of inter-SM edges, each pass touches one at
//! random, and the smaller array stays in the cache longer. Most passes
//! are counted first where their lookup found the edge, and reach the
//! array later ([`passes`]).

mod passes;

use super::{Engine, M_END, M_HELD, M_ORIGIN, M_SEND, M_START, NONE32};
use crate::results::{CEdgeRow, CGraph, CNodeRow};
use crate::spare;
use critpath_trace::{Interner, Sym};
pub(crate) use passes::DEFER;
pub(super) use passes::DEFERRED;
use passes::{add_tally, Deferred, InterMemo, Step, Tally, DEFER_PAST, NO_INTER, NO_STEP};
use rustc_hash::{FxHashMap, FxHashSet};

/// A cgraph node: one distinct transition `(SM, from state, to state)`.
///
/// Two cache lines: the first holds the state key entered, the visits
/// counted into it and the front of the memo, so that a record's
/// transition into this node (which reads `to_key`) brings in the line
/// the SM's next step reads (`memo[0]`).
#[repr(C, align(64))]
pub(super) struct CNode {
    /// State key entered by this transition (NONE32 for end/send/origin).
    pub to_key: u32,
    pub sm: u32,
    /// Transitions into `to_key` made here: added to the key's visits at
    /// the end ([`Engine::add_cnode_visits`]), so that a transition only
    /// writes the key's line, never waits to read it.
    pub visits: u64,
    /// Memo of `Engine::step`: the last [`MEMO`] `to`s taken from here
    /// (the latest first) and where they led. An SM that goes on from a
    /// transition one of a few ways (work or a wait, a send, the next state
    /// or the one after) finds them all.
    memo: [Step; MEMO],
    pub from: u32,
    pub to: u32,
}

const _: () = assert!(std::mem::size_of::<CNode>() == 128);
const _: () = assert!(std::mem::offset_of!(CNode, memo) + 2 * std::mem::size_of::<Step>() <= 64);

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
    /// Each cnode's one-entry memo of `CGraphBuilder::inter_pass` (the
    /// last inter-SM edge from it), by cnode: apart from the cnode's lines,
    /// which its SM's steps read.
    inter_memos: Vec<InterMemo>,
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
    /// (from cnode, to cnode, `held`: an edge of a waited `recv`) ->
    /// inter-SM cedge, and the passes over it that the index counted
    /// (added to `counts` by [`CGraphBuilder::seal`]): a trace with many
    /// links passes over most inter-SM edges past their memo, and counting
    /// where the lookup already is saves a miss in `counts`. 24 bytes an
    /// entry; one map for both kinds of edge, whose room grows by doubling
    /// (two maps left 6 MB empty on a trace of 406,000 edges).
    inter_index: FxHashMap<u64, Tally>,
    /// Pairs of SMs joined by an inter-SM edge.
    pub sm_links: FxHashSet<(u32, u32)>,
    /// Passes over inter-SM edges past their memo, not yet counted; those
    /// counted have their edges in `found`, in order.
    deferred: Vec<Deferred>,
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
    inter_memos: Vec<InterMemo>,
    cnode_index: FxHashMap<(u32, u32, u32), u32>,
    trans: FxHashMap<(u32, u32), (u32, u32)>,
    cedges: Vec<CEdge>,
    counts: Vec<Counts>,
    inter_index: FxHashMap<u64, Tally>,
}

impl Room {
    fn new() -> Room {
        Room {
            cnodes: Vec::with_capacity(START_ROOM),
            inter_memos: Vec::with_capacity(START_ROOM),
            cnode_index: with_room(),
            trans: with_room(),
            cedges: Vec::with_capacity(START_ROOM),
            counts: Vec::with_capacity(START_ROOM),
            inter_index: with_room(),
        }
    }

    /// Are the tables small enough to keep for the next analysis?
    fn small(&self) -> bool {
        let rooms = [
            self.cnodes.capacity(),
            self.inter_memos.capacity(),
            self.cnode_index.capacity(),
            self.trans.capacity(),
            self.cedges.capacity(),
            self.counts.capacity(),
            self.inter_index.capacity(),
        ];
        rooms.iter().all(|&n| n <= spare::SMALL)
    }

    fn clear(&mut self) {
        self.cnodes.clear();
        self.inter_memos.clear();
        self.cnode_index.clear();
        self.trans.clear();
        self.cedges.clear();
        self.counts.clear();
        self.inter_index.clear();
    }
}

impl Default for CGraphBuilder {
    fn default() -> Self {
        let room = spare::take::<Room>().unwrap_or_else(Room::new);
        CGraphBuilder {
            cnodes: room.cnodes,
            inter_memos: room.inter_memos,
            cnode_index: room.cnode_index,
            trans: room.trans,
            cedges: room.cedges,
            counts: room.counts,
            critical: Vec::new(),
            held_index: FxHashMap::default(),
            inter_index: room.inter_index,
            sm_links: FxHashSet::default(),
            deferred: Vec::new(),
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
            inter_memos: std::mem::take(&mut self.inter_memos),
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
        self.push_cnode(sm, (M_ORIGIN, M_ORIGIN), NONE32)
    }

    /// Adds the cnode of SM `sm`'s transition `from -> to` into state key
    /// `to_key`, with nothing in its memos; its index.
    fn push_cnode(&mut self, sm: u32, (from, to): (u32, u32), to_key: u32) -> u32 {
        let c = self.cnodes.len() as u32;
        self.inter_memos.push(NO_INTER);
        self.cnodes.push(CNode {
            memo: [NO_STEP; MEMO],
            visits: 0,
            sm,
            from,
            to,
            to_key,
        });
        c
    }

    /// The records are all in: adds the passes the index counted to
    /// `counts`, and frees the indexes, which only new records need (the
    /// walk that follows makes tables of its own, and a trace with many
    /// links has hundreds of thousands of edges in them).
    pub fn seal(&mut self) {
        self.resolve();
        for c in &mut self.cnodes {
            for m in &mut c.memo {
                add_tally(&mut self.counts, m.tally.take());
            }
        }
        for m in &mut self.inter_memos {
            add_tally(&mut self.counts, m.tally.take());
        }
        for (_, t) in self.inter_index.drain() {
            add_tally(&mut self.counts, t);
        }
        // Small indexes stay, empty, for the next analysis on the thread.
        let big = |n: usize| n > spare::SMALL;
        if big(self.cnode_index.capacity()) || big(self.trans.capacity()) {
            self.cnode_index = FxHashMap::default();
            self.trans = FxHashMap::default();
        }
        if big(self.inter_index.capacity()) {
            self.inter_index = Default::default();
        }
        self.cnode_index.clear();
        self.trans.clear();
        self.held_index = FxHashMap::default();
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
        let c = self.g.push_cnode(sm, (from, to), to_key);
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

    /// Adds the visits each cgraph node counted to the state key it
    /// enters: every visit of a state is a transition into it.
    pub(super) fn add_cnode_visits(&mut self) {
        for c in &mut self.g.cnodes {
            if c.to_key != NONE32 {
                self.m.keys[c.to_key as usize].visits += std::mem::take(&mut c.visits);
            }
        }
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
