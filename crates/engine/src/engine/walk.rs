//! The backwards walk: from the destination node, follow each node's chosen
//! predecessor in the node log to the path's start, charging every edge's
//! weight to its cgraph edge and state as critical time, and keeping the
//! path's segments and windows when asked.

use super::blame::Blamer;
use super::split;
use super::windows::Windows;
use super::{Engine, NodeRef, NONE32};
use crate::nodelog::{Entry, NO_PRED};
use crate::observer::PathEdge;
use crate::results::{CriticalPath, Endpoint, PathSegment};
use critpath_trace::{Interner, Sym};
use rustc_hash::{FxHashMap, FxHashSet};
use std::io;

/// One edge of the path as the walk meets it: cgraph edge ends, state key,
/// inter-SM or not, and its time span.
pub(super) struct Segment {
    from: u32,
    to: u32,
    key: u32,
    inter: bool,
    span: (u64, u64),
}

/// What the walk found.
pub(super) struct Walked {
    pub path: CriticalPath,
    /// The path's edges from the end back to the start, when kept.
    pub segments: Vec<Segment>,
    pub windows: Option<Windows>,
    /// Path time blamed on the SMs that held what states waited for.
    pub blame: Blamer,
    /// Per state key, the time of its path edges that their weight leaves
    /// out (waits that weigh nothing), when the walk went edge by edge.
    pub gaps: FxHashMap<u32, u64>,
    /// Per cgraph edge, the annotations' cost on the path (empty: none).
    pub cut: Vec<u64>,
}

/// What the walk needs of a cgraph edge, gathered in one table that a
/// second thread can read: its SMs, state key and blame roles.
#[derive(Clone, Copy)]
pub(super) struct EdgeInfo {
    pub sms: (u32, u32),
    pub key: u32,
    pub held_for: u32,
    /// For a `held` piece, the SM holding its state `key`.
    pub holder: u32,
    pub held: bool,
    /// One annotation event's cost on the SM the edge is charged to (0:
    /// none), which the overhead's correction takes out of each path edge.
    pub cost: u64,
}

/// What a walk adds up over the path edges it meets: critical time per
/// cgraph edge, the number of edges, the blame, and the annotations' cost
/// per cgraph edge (empty while none).
pub(super) struct Sums {
    pub critical: Vec<u64>,
    pub edges: u64,
    pub blame: Blamer,
    pub cut: Vec<u64>,
}

impl Sums {
    /// Nothing yet, for a cgraph of `edges` edges.
    pub fn new(edges: usize) -> Sums {
        Sums {
            critical: vec![0; edges],
            edges: 0,
            blame: Blamer::default(),
            cut: Vec::new(),
        }
    }

    /// The walk meets the path edge into the node whose entry is `e`.
    #[inline]
    pub fn add(&mut self, info: &[EdgeInfo], e: &Entry) {
        let ce = &info[e.tag as usize];
        if ce.held_for != NONE32 {
            // A piece held by the waiter itself blames no one.
            let weight = if ce.holder == ce.sms.1 { 0 } else { e.weight };
            self.blame.held(ce.held_for, ce.holder, weight);
        } else {
            self.blame.edge(ce.sms, ce.key, e.weight, ce.held);
        }
        self.critical[e.tag as usize] += e.weight;
        self.edges += 1;
        if ce.cost > 0 {
            // An edge's weight is its length on the clock: never more.
            if self.cut.is_empty() {
                self.cut = vec![0; info.len()];
            }
            self.cut[e.tag as usize] += ce.cost.min(e.weight);
        }
    }

    /// Adds `other`, the sums of the path beyond where these stop (both
    /// blamers ended).
    pub fn absorb(&mut self, other: Sums) {
        for (c, o) in self.critical.iter_mut().zip(other.critical) {
            *c += o;
        }
        self.edges += other.edges;
        self.blame.absorb(other.blame);
        if self.cut.is_empty() {
            self.cut = other.cut;
        } else {
            for (c, o) in self.cut.iter_mut().zip(other.cut) {
                *c += o;
            }
        }
    }
}

impl Engine<'_> {
    /// Walks the node log back from `dest` (node and SM), if any. Without
    /// segments, windows or an observer to tell, the walk may run on two
    /// threads ([`super::split`]).
    pub(super) fn walk(
        &mut self,
        dest: Option<(NodeRef, u32)>,
        strings: &Interner,
    ) -> io::Result<Walked> {
        let mut w = Walked {
            path: CriticalPath::default(),
            segments: Vec::new(),
            windows: Windows::new(self.opts.window_ns, self.opts.limits.max_windows),
            blame: Blamer::default(),
            gaps: FxHashMap::default(),
            cut: Vec::new(),
        };
        let Some((n, sm)) = dest else {
            return Ok(w);
        };
        let s = &self.m.sms[sm as usize];
        w.path.found = true;
        w.path.length_ns = n.l.max(0) as u64;
        w.path.end = endpoint(strings, (s.sys, s.name), n.t);
        let info = self.edge_infos(&self.event_costs(strings));
        let mut sums = Sums::new(info.len());
        let hand_over = self.observer.as_ref().is_some_and(|o| o.wants_path());
        let root = if hand_over || self.opts.keep_path || w.windows.is_some() {
            self.walk_each(n, &info, &mut sums, &mut w, strings)?
        } else {
            split::follow(&self.logs.nodes, &info, n.id, &self.marks, &mut sums)?
        };
        let s = &self.m.sms[root.tag as usize];
        w.path.start = endpoint(strings, (s.sys, s.name), root.weight);
        w.path.edges = sums.edges;
        w.cut = std::mem::take(&mut sums.cut);
        sums.blame.end();
        self.charge(sums.critical);
        w.blame = sums.blame;
        Ok(w)
    }

    /// The walk on this thread, edge by edge, keeping segments and windows
    /// and telling the observer as asked; returns the root's entry.
    fn walk_each(
        &mut self,
        n: NodeRef,
        info: &[EdgeInfo],
        sums: &mut Sums,
        w: &mut Walked,
        strings: &Interner,
    ) -> io::Result<Entry> {
        let hand_over = self.observer.as_ref().is_some_and(|o| o.wants_path());
        let mut cur = self.logs.nodes.cursor();
        let (mut id, mut t) = (n.id, n.t);
        loop {
            let e = cur.get(&self.logs.nodes, id)?;
            if e.pred == NO_PRED {
                return Ok(e);
            }
            sums.add(info, &e);
            let ce = &self.g.cedges[e.tag as usize];
            if let Some(win) = w.windows.as_mut() {
                win.add(ce.key, (t.saturating_sub(e.weight), t));
            }
            // The edge ends at its node's time and puts its weight on the
            // path just before; a wait that weighs nothing began earlier.
            let seg = Segment {
                from: ce.from,
                to: ce.to,
                key: ce.key,
                inter: ce.inter,
                span: (t - e.weight.min(t), t),
            };
            if hand_over {
                let edge = self.path_edge(&seg, strings);
                let o = self.observer.as_mut().expect("checked");
                o.path_edge(&edge, strings);
            }
            if self.opts.keep_path {
                w.segments.push(seg);
            }
            if !ce.inter && e.span > e.weight {
                *w.gaps.entry(ce.key).or_default() += e.span - e.weight;
            }
            t = t.saturating_sub(e.span);
            id = e.pred;
        }
    }

    /// The walk's view of every cgraph edge, with each SM's cost of an
    /// annotation event (none when `costs` is empty).
    fn edge_infos(&self, costs: &[u64]) -> Vec<EdgeInfo> {
        let sm_of = |c: u32| self.g.cnodes[c as usize].sm;
        self.g
            .cedges
            .iter()
            .map(|ce| EdgeInfo {
                sms: (sm_of(ce.from), sm_of(ce.to)),
                key: ce.key,
                held_for: ce.held_for,
                holder: if ce.held_for == NONE32 {
                    NONE32
                } else {
                    self.m.keys[ce.key as usize].sm
                },
                held: ce.held,
                cost: costs
                    .get(self.charged_sm(ce.to, ce.key) as usize)
                    .map_or(0, |&c| c),
            })
            .collect()
    }

    /// Charges the critical time found per cgraph edge to the edges and
    /// their states.
    fn charge(&mut self, critical: Vec<u64>) {
        for (ce, &c) in self.g.cedges.iter().zip(&critical) {
            if ce.key != NONE32 {
                self.m.keys[ce.key as usize].critical += c;
            }
        }
        if self.g.critical.is_empty() {
            self.g.critical = critical;
        } else {
            for (to, c) in self.g.critical.iter_mut().zip(critical) {
                *to += c;
            }
        }
    }

    /// The path's segments from start to end, as result rows.
    pub(super) fn segment_rows(
        &self,
        mut segments: Vec<Segment>,
        strings: &Interner,
    ) -> Vec<PathSegment> {
        segments.reverse();
        segments
            .iter()
            .map(|seg| self.path_edge(seg, strings).row(strings))
            .collect()
    }

    /// The SM whose state an edge into cgraph node `to` charged to state
    /// key `key` is charged to: the edge's own SM, or the holder for a
    /// `held` piece.
    pub(super) fn charged_sm(&self, to: u32, key: u32) -> u32 {
        match key {
            NONE32 => self.g.cnodes[to as usize].sm,
            key => self.m.keys[key as usize].sm,
        }
    }

    /// One segment as the observer is told of it; `strings` names its SM
    /// for the inferred receives.
    fn path_edge(&self, seg: &Segment, strings: &Interner) -> PathEdge {
        let s = &self.m.sms[self.charged_sm(seg.to, seg.key) as usize];
        let from_sm = &self.m.sms[self.g.cnodes[seg.from as usize].sm as usize];
        let inferred = seg.inter && self.inferred.has(strings.resolve(s.name), seg.span.1);
        PathEdge {
            sys: s.sys,
            sm: s.name,
            state: (seg.key != NONE32).then(|| self.m.keys[seg.key as usize].state),
            from_sm: from_sm.name,
            inter: seg.inter,
            start_ns: seg.span.0,
            end_ns: seg.span.1,
            inferred,
        }
    }
}

/// The receives whose links the source inferred: SM name, then times. The
/// path's inter-SM edges into them are marked as the walk meets them.
#[derive(Default)]
pub(super) struct Inferred(FxHashMap<String, FxHashSet<u64>>);

impl Inferred {
    pub fn new(links: Vec<(String, u64)>) -> Self {
        let mut by_sm: FxHashMap<String, FxHashSet<u64>> = FxHashMap::default();
        for (sm, t) in links {
            by_sm.entry(sm).or_default().insert(t);
        }
        Inferred(by_sm)
    }

    /// Was the link into SM `sm`'s receive at `t` inferred?
    fn has(&self, sm: &str, t: u64) -> bool {
        !self.0.is_empty() && self.0.get(sm).is_some_and(|ts| ts.contains(&t))
    }
}

/// A path end: SM `(sys, name)` at `t`.
fn endpoint(strings: &Interner, (sys, name): (Sym, Sym), t: u64) -> Endpoint {
    Endpoint {
        sys: strings.resolve(sys).to_string(),
        sm: strings.resolve(name).to_string(),
        t,
    }
}
