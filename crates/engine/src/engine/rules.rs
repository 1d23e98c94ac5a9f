//! The path rules (docs/path-rules.md): each transition or `send` is a node
//! whose longest-path length `L` is the best of its candidates — the SM's
//! previous node over the intra-SM edge (scaled by what-if speed-ups), and
//! the matching `send` or the awaited transition over an inter-SM edge
//! (ties go to the inter-SM edge). The chosen predecessor goes to the node
//! log; visits and dependences go to the observer.

use super::diagnose::RetMismatch;
use super::pending::Taken;
use super::rewalk::Scale;
use super::{Engine, NodeRef, WaitOn, M_END, M_SEND, M_START, NONE32, UNREACHED};
use crate::nodelog::{Entry, NO_PRED};
use crate::observer::Visit;
use crate::slack::InEdge;
use critpath_trace::{Event, Interner, LinkId, Pos, Record, Sym};

/// An SM's situation just before its next node: what it is in and since when.
#[derive(Clone, Copy)]
pub(super) struct Before {
    /// The SM's cgraph origin.
    pub origin: u32,
    pub cur: u32,
    pub cur_key: u32,
    pub cnode: u32,
    pub tp: u64,
    pub entered: u64,
    pub wait: WaitOn,
    pub last: Option<NodeRef>,
}

/// The best candidate so far: its `L` and its node log entry.
struct Best {
    l: i64,
    entry: Entry,
}

impl Engine<'_> {
    /// Processes one record.
    #[inline]
    pub fn feed(&mut self, rec: &Record, pos: Pos, strings: &Interner) {
        self.records += 1;
        let (t, sys) = (rec.t, rec.sys);
        // Transitions, most records, share one path to `transition`.
        let (who, to, wait, recv) = match rec.ev {
            Event::State { who, state } => (who, state.0, WaitOn::No, None),
            Event::Wait {
                who,
                state,
                on,
                on_sys,
                on_state,
            } => {
                let wait = match on {
                    None => WaitOn::Open,
                    Some(on) => WaitOn::On {
                        sys: on_sys.unwrap_or(sys),
                        sm: on,
                        state: on_state.map(|s| s.0).unwrap_or(NONE32),
                    },
                };
                (who, state.0, wait, None)
            }
            // The id by reference, read where the record lies.
            Event::Recv {
                who,
                ref id,
                state,
                waited,
            } => (who, state.0, WaitOn::No, Some((id, waited))),
            Event::End { who } => (who, M_END, WaitOn::No, None),
            Event::Send { who, id } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.send(sm, (t, pos), id, strings);
                }
                return;
            }
            _ => return self.feed_other(rec, pos, strings),
        };
        if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
            self.transition(sm, to, wait, recv, (t, pos), strings);
        }
    }

    /// [`Engine::feed`] of a record that is no plain transition.
    #[inline(never)]
    fn feed_other(&mut self, rec: &Record, pos: Pos, strings: &Interner) {
        let (t, sys) = (rec.t, rec.sys);
        let at = (t, pos);
        match rec.ev {
            Event::Held {
                who,
                on,
                on_state,
                ended,
            } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.held(sm, t, (sys, on, on_state), ended, strings);
                }
            }
            Event::Call { who, func } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    let caller = self.m.sms[sm as usize].cur;
                    self.m.sms[sm as usize].calls.push((func, caller));
                    self.transition_out(sm, func.0, WaitOn::No, None, at, strings);
                }
            }
            Event::Ret { who, func } => {
                if let Some(sm) = self.resolve(sys, who, t, pos, strings) {
                    self.ret(sm, func, at, strings);
                }
            }
            Event::Push { thread, sm } => self.push(sys, thread, sm, strings),
            Event::Pop { thread, sm } => self.pop(sys, thread, sm, t, pos),
            Event::Switch { cpu, thread } => {
                self.m.cpus.insert((sys, cpu), thread);
            }
            Event::State { .. }
            | Event::Wait { .. }
            | Event::Recv { .. }
            | Event::End { .. }
            | Event::Send { .. } => unreachable!("feed takes transitions and sends"),
        }
    }

    /// A return from `func`: back to the state the call was made from.
    fn ret(&mut self, sm: u32, func: Sym, at: (u64, Pos), strings: &Interner) {
        let s = &mut self.m.sms[sm as usize];
        let Some(i) = s.calls.iter().rposition(|&(f, _)| f == func) else {
            let inner = s.calls.last().map(|&(f, _)| f);
            self.ret_mismatch(sm, func, RetMismatch::NoSuchCall { inner }, at);
            return;
        };
        let depth = s.calls.len() - 1 - i;
        let (_, caller) = s.calls[i];
        s.calls.truncate(i);
        if depth > 0 {
            self.ret_mismatch(sm, func, RetMismatch::SkipsInner { depth }, at);
        }
        if caller == NONE32 {
            self.ret_mismatch(sm, func, RetMismatch::BeforeAnyState, at);
            return;
        }
        self.transition_out(sm, caller, WaitOn::No, None, at, strings);
    }

    /// `L` of SM `sm`'s first node: 0, or unreached when paths must start
    /// at another SM.
    fn root_l(&self, sm: u32) -> i64 {
        let s = &self.m.sms[sm as usize];
        match &self.opts.from {
            None => 0,
            Some(_) if s.is_from && s.last_trans.is_none() && s.last.is_none() => 0,
            Some(_) => UNREACHED,
        }
    }

    /// Keeps the node with the greatest `L` (the latest of equals).
    #[inline]
    pub(super) fn note_node(&mut self, sm: u32, n: NodeRef) {
        if n.l == UNREACHED {
            return;
        }
        match self.best {
            Some((b, _)) if b.l > n.l => {}
            _ => self.best = Some((n, sm)),
        }
    }

    /// A fresh node id.
    #[inline]
    pub(super) fn new_node(&mut self) -> u64 {
        let node = self.next_node;
        self.next_node += 1;
        if self.marks.due(node) {
            if let Some((b, _)) = self.best {
                self.marks.add(b.id);
            }
        }
        node
    }

    /// SM `sm`'s situation before its next node.
    #[inline]
    pub(super) fn before(&self, sm: u32) -> Before {
        let s = &self.m.sms[sm as usize];
        Before {
            origin: s.origin,
            cur: s.cur,
            cur_key: s.cur_key,
            cnode: s.cnode,
            tp: s.tp,
            entered: s.entered,
            wait: s.wait,
            last: s.last,
        }
    }

    /// A `send` of `id`: a node on the sender's SM, pending until received.
    #[inline(never)]
    fn send(&mut self, sm: u32, (t, pos): (u64, Pos), id: LinkId, strings: &Interner) {
        let node = self.new_node();
        let b = self.before(sm);
        let n = match (b.cur, b.last) {
            (c, Some(prev)) if c != NONE32 => {
                let step = self.step(sm, b.cnode, (b.cur, b.cur_key), M_SEND, strings);
                self.point_node((node, t), (prev, &b), step, Scale::Key(b.cur_key))
            }
            _ => self.root_send(sm, node, t, strings),
        };
        let s = &mut self.m.sms[sm as usize];
        s.count_node(t);
        s.tp = t;
        s.last = Some(n);
        if b.cur != NONE32 {
            s.cnode = n.cnode;
        }
        if let Some(earlier) = self.pending.insert(id, n) {
            self.send_reused(sm, id, earlier.t, (t, pos), strings);
        }
        self.note_node(sm, n);
    }

    /// A send from an SM that is in no state: a root node.
    fn root_send(&mut self, sm: u32, node: u64, t: u64, strings: &Interner) -> NodeRef {
        let cn = self.cnode_of(sm, M_START, M_SEND, strings);
        let l = self.root_l(sm);
        self.log_entry(Entry {
            pred: NO_PRED,
            weight: t,
            tag: sm,
            span: 0,
        });
        self.logs.rewalk(node, l != UNREACHED, [None, None]);
        if self.logs.keeps_graph() {
            self.logs.graph_node(l, &[]);
        }
        NodeRef {
            id: node,
            l,
            t,
            cnode: cn,
            origin: self.m.sms[sm as usize].origin,
        }
    }

    /// [`Engine::transition`] for the records `feed` does not inline it
    /// for (calls and returns).
    #[inline(never)]
    fn transition_out(
        &mut self,
        sm: u32,
        to: u32,
        wait: WaitOn,
        recv: Option<(&LinkId, bool)>,
        at: (u64, Pos),
        strings: &Interner,
    ) {
        self.transition(sm, to, wait, recv, at, strings);
    }

    /// The SM leaves its current state (if any) at `t` and enters `to` (a
    /// state symbol, or `M_END`). Inlined into `feed`, the path of most
    /// records.
    #[inline(always)]
    fn transition(
        &mut self,
        sm: u32,
        to: u32,
        wait: WaitOn,
        recv: Option<(&LinkId, bool)>,
        (t, pos): (u64, Pos),
        strings: &Interner,
    ) {
        let node = self.new_node();
        let b = self.before(sm);
        let alive = b.cur != NONE32 && b.last.is_some();

        // Inter-SM candidate: the matching send, or the awaited transition.
        let (inter, intra_zero) = match recv {
            Some((id, waited)) => self.matching_send(sm, (id, waited), &b, (t, pos), strings),
            None if alive => self.awaited(sm, &b, (t, pos)),
            None => (None, false),
        };
        // A state that a waited link ended is a wait (no `long-state`).
        if intra_zero && alive && b.cur_key != NONE32 {
            self.m.keys[b.cur_key as usize].waited = true;
        }

        // cgraph step and the intra-SM edge.
        let (cn, edge) = self.step(sm, b.cnode, (b.cur, b.cur_key), to, strings);
        // A first node starts at 0 (or is unreached under --from); otherwise
        // the intra-SM edge is the first candidate.
        let start = if alive { UNREACHED } else { self.root_l(sm) };
        let mut best = Best {
            l: start,
            entry: Entry {
                pred: NO_PRED,
                weight: t,
                tag: sm,
                span: 0,
            },
        };
        let intra_in = if alive {
            Some(self.intra_candidate(sm, t, edge, &b, intra_zero, &mut best, strings))
        } else {
            None
        };
        let inter_in = inter.map(|m| {
            let key = if alive { b.cur_key } else { NONE32 };
            if alive {
                self.sent_before_entry(b.cur_key, m.t, b.entered);
            }
            let how = (recv.is_none(), matches!(recv, Some((_, true))));
            self.inter_candidate(sm, (m, t), cn, key, how, &mut best, strings)
        });
        self.log_entry(best.entry);
        self.logs.rewalk(
            node,
            start != UNREACHED,
            [
                intra_in.map(|e| (e.pred, e.weight, Scale::Key(b.cur_key))),
                inter_in.map(|e| (e.pred, e.weight, Scale::Not)),
            ],
        );
        if self.logs.keeps_graph() {
            let edges: Vec<InEdge> = intra_in.into_iter().chain(inter_in).collect();
            self.logs.graph_node(best.l, &edges);
        }
        let n = NodeRef {
            id: node,
            l: best.l,
            t,
            cnode: cn,
            origin: b.origin,
        };
        self.enter(sm, to, wait, n);
        self.note_node(sm, n);
    }

    /// The send a `recv` of `id` matches, and whether the intra-SM edge
    /// weighs nothing (the SM was waiting for it: a waiting state, or a
    /// `recv` that says its state `waited` for the link).
    #[inline]
    fn matching_send(
        &mut self,
        sm: u32,
        (id, waited): (&LinkId, bool),
        b: &Before,
        at: (u64, Pos),
        strings: &Interner,
    ) -> (Option<NodeRef>, bool) {
        match self.pending.take(id) {
            Taken::Send(snd) => (Some(snd), waited || b.wait != WaitOn::No),
            Taken::Dropped => {
                self.recv_of_dropped(sm, *id, at, strings);
                (None, false)
            }
            Taken::Missing => {
                self.recv_without_send(sm, *id, at, strings);
                (None, false)
            }
        }
    }

    /// The transition a waiting state waited for, if it happened while the
    /// SM waited (then the intra-SM edge weighs nothing); else reports the
    /// wait as advanced early.
    #[inline]
    fn awaited(&mut self, sm: u32, b: &Before, (t, pos): (u64, Pos)) -> (Option<NodeRef>, bool) {
        let (on_sys, on, state) = match b.wait {
            WaitOn::No => return (None, false),
            WaitOn::Open => (Sym(0), Sym(0), NONE32),
            WaitOn::On { sys, sm, state } => (sys, sm, state),
        };
        let m = if b.wait == WaitOn::Open {
            None
        } else {
            self.latest_transition(on_sys, on, state)
        };
        match m {
            Some(m) if m.t >= b.entered && m.t <= t => (Some(m), true),
            _ => {
                let seen = m.map(|m| m.t);
                self.early(sm, b.cur_key, (b.wait, seen, b.entered), (t, pos));
                (None, false)
            }
        }
    }

    /// SM `(sys, on)`'s latest transition into `state` (any state when
    /// NONE32).
    #[inline]
    fn latest_transition(&mut self, sys: Sym, on: Sym, state: u32) -> Option<NodeRef> {
        let target = self.find_sm(sys, on)?;
        if state == NONE32 {
            self.m.sms[target as usize].last_trans
        } else {
            let k = self.find_key(target, Sym(state))?;
            self.m.keys[k as usize].last_trans
        }
    }

    /// The intra-SM candidate: the SM's previous node over the edge of the
    /// state it leaves; counts the visit and tells the observer.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn intra_candidate(
        &mut self,
        sm: u32,
        t: u64,
        edge: u32,
        b: &Before,
        intra_zero: bool,
        best: &mut Best,
        strings: &Interner,
    ) -> InEdge {
        let prev = b.last.expect("alive SM has a node");
        let occ = t.saturating_sub(b.tp);
        let w = if intra_zero {
            0
        } else {
            self.scaled(b.cur_key, occ)
        };
        self.g.step_pass(b.cnode, edge, occ);
        if let Some(o) = self.observer.as_mut() {
            let s = &self.m.sms[sm as usize];
            let v = Visit::State {
                sys: s.sys,
                sm: s.name,
                state: Sym(b.cur),
                start: b.entered,
                end: t,
            };
            o.visit(&v, strings);
        }
        let visit = t.saturating_sub(b.entered);
        let k = &mut self.m.keys[b.cur_key as usize];
        // A state a waited `recv` ends was a wait (no `long-state`); the
        // flag's line is written only then.
        if intra_zero {
            k.waited = true;
        }
        k.timed_visits += u64::from(visit > 0);
        if visit > k.max_visit {
            k.max_visit = visit;
            k.max_visit_at = b.entered;
        }
        best.entry = Entry {
            pred: prev.id,
            weight: w,
            tag: edge,
            span: occ,
        };
        if prev.l != UNREACHED {
            best.l = self.longer(prev.l, w);
        }
        InEdge {
            pred: prev.id,
            weight: w,
            key: b.cur_key,
        }
    }

    /// The inter-SM candidate `m` (a send or an awaited transition) into
    /// cnode `cn` at `t`, charged to `key` (NONE32 for a first node: then to
    /// the state it enters); tells the observer of the dependence. `wait`
    /// when a waiting state awaited it, `held` when a waited `recv` made it.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn inter_candidate(
        &mut self,
        sm: u32,
        (m, t): (NodeRef, u64),
        cn: u32,
        key: u32,
        (wait, held): (bool, bool),
        best: &mut Best,
        strings: &Interner,
    ) -> InEdge {
        let w = t.saturating_sub(m.t);
        // A first node has no previous state: its wait is charged to the
        // state it enters, and that state's total holds the wait, so that
        // no state is more critical than it is long.
        let key = if key == NONE32 {
            let key = self.g.cnodes[cn as usize].to_key;
            self.m.keys[key as usize].total += w;
            key
        } else {
            key
        };
        let from = self.inter_from(m);
        let ie = self.g.inter_pass((m.cnode, from), cn, (key, held), w);
        if let Some(o) = self.observer.as_mut() {
            let a = &self.m.sms[self.g.cnodes[m.cnode as usize].sm as usize];
            let b = &self.m.sms[sm as usize];
            let v = Visit::Link {
                from_sys: a.sys,
                from_sm: a.name,
                to_sys: b.sys,
                to_sm: b.name,
                sent: m.t,
                received: t,
                wait,
            };
            o.visit(&v, strings);
        }
        // Ties go to the inter-SM edge (docs/path-rules.md).
        let l = if m.l == UNREACHED {
            UNREACHED
        } else {
            self.longer(m.l, w)
        };
        if m.l != UNREACHED && l >= best.l {
            best.l = l;
            best.entry = Entry {
                pred: m.id,
                weight: w,
                tag: ie,
                span: w,
            };
        }
        InEdge {
            pred: m.id,
            weight: w,
            key,
        }
    }

    /// The cgraph node an inter-SM edge from node `m` leaves: its cgraph
    /// node, or, when no view shows the combined graph
    /// ([`crate::Options::no_cgraph`]), its SM's origin. What the results
    /// read of an inter-SM edge is its SMs, state and roles, so one edge a
    /// sending SM serves them all; a trace of many links then keeps an edge
    /// per (sender, receiver's node), not per (sender's node, receiver's
    /// node): on the dependence-heavy trace of 20M records, 36,576 instead
    /// of 387,390.
    #[inline]
    fn inter_from(&self, m: NodeRef) -> u32 {
        match self.opts.no_cgraph {
            true => m.origin,
            false => m.cnode,
        }
    }

    /// A link sent at `sent`, before the state of `key` it ends began
    /// (`entered`): the message waited for the SM to reach that state, and
    /// a recv charges the whole time since the send to it, so that time
    /// counts in the state's total too (as for a first node's link): no
    /// state is more critical than it is long.
    #[inline]
    fn sent_before_entry(&mut self, key: u32, sent: u64, entered: u64) {
        if sent < entered {
            self.m.keys[key as usize].total += entered - sent;
        }
    }

    /// SM `sm` is now in `to` (or has ended) at node `n`.
    #[inline]
    fn enter(&mut self, sm: u32, to: u32, wait: WaitOn, n: NodeRef) {
        let c = &mut self.g.cnodes[n.cnode as usize];
        let key = c.to_key;
        // The state's visit is counted in the cnode's line, just read; the
        // state key's line is only written (see `CNode::visits`).
        c.visits += u64::from(to != M_END);
        let s = &mut self.m.sms[sm as usize];
        s.count_node(n.t);
        s.last_trans = Some(n);
        s.held_until = 0;
        if to == M_END {
            s.cur = NONE32;
            s.cur_key = NONE32;
            s.wait = WaitOn::No;
            s.last = None;
            s.cnode = s.origin;
            s.calls.clear();
            return;
        }
        s.cur = to;
        s.cur_key = key;
        s.wait = wait;
        s.tp = n.t;
        s.entered = n.t;
        s.last = Some(n);
        s.cnode = n.cnode;
        let k = &mut self.m.keys[key as usize];
        k.last_trans = Some(n);
        if wait != WaitOn::No {
            k.waited = true;
        }
    }
}
