//! Time charged to the holder of what a state waited for
//! (docs/path-rules.md, rule 6): a `held` record is a point node inside the
//! SM's current state, like a `send` without a link. The piece of the state
//! since the SM's previous node is an intra-SM edge of the waiting SM, so
//! the path never leaves it for the holder's history, but its time is
//! charged to the holder's state (scaled by that state's what-ifs) and
//! blamed on the holder.

use super::rewalk::Scale;
use super::rules::Before;
use super::{Engine, NodeRef, NONE32, UNREACHED};
use crate::nodelog::Entry;
use crate::slack::InEdge;
use critpath_trace::{Interner, Sym};

impl Engine<'_> {
    /// SM `sm` reaches a `held` point at `t`: its piece since its previous
    /// node was held by SM `(sys, on)` in `on_state` (`ended`: that was
    /// the end of the holder's run). In no state, there is nothing to
    /// charge and no node.
    pub(super) fn held(
        &mut self,
        sm: u32,
        t: u64,
        (sys, on, on_state): (Sym, Sym, Sym),
        ended: bool,
        strings: &Interner,
    ) {
        let b = self.before(sm);
        let Some(prev) = b.last.filter(|_| b.cur != NONE32) else {
            return;
        };
        let holder = self.sm_of(sys, on, strings);
        let hkey = self.key_of(holder, on_state, strings);
        // A state another SM held is a wait for it (no `long-state`).
        if holder != sm && b.cur_key != NONE32 {
            self.m.keys[b.cur_key as usize].waited = true;
        }
        self.held_beyond_holder(holder, hkey, (b.tp, t));
        let node = self.new_node();
        let step = self.held_step(sm, b.cnode, (b.cur, b.cur_key), hkey, strings);
        // The piece shrinks with the holder's state and, while the holder
        // shares the CPU with the waiter, with the waiting state's factor:
        // its own when a speed-up names it, else that of the state it
        // scales with (its own work, which made it wait); a holder's run
        // that ended while the waiter still needed the CPU was waited for
        // whole.
        let scale = if ended {
            Scale::Key(hkey)
        } else {
            Scale::Held {
                holder: hkey,
                own: b.cur_key,
            }
        };
        let n = self.point_node((node, t), (prev, &b), step, scale);
        let s = &mut self.m.sms[sm as usize];
        s.count_node(t);
        s.tp = t;
        s.last = Some(n);
        s.cnode = n.cnode;
        self.note_node(sm, n);
    }

    /// The part of a held piece `(tp, t)` the holder did not spend in the
    /// state it is charged to (it entered it later, or is elsewhere) counts
    /// in that state's total: no state is more critical than it is long.
    /// The rest is the holder's own time in the state, counted by its own
    /// pieces, or at the end if its visit is still open then
    /// ([`Engine::count_open_held`]).
    fn held_beyond_holder(&mut self, holder: u32, hkey: u32, (tp, t): (u64, u64)) {
        let h = &mut self.m.sms[holder as usize];
        let occ = t.saturating_sub(tp);
        let beyond = if h.cur_key == hkey {
            h.held_until = h.held_until.max(t);
            h.entered.saturating_sub(tp).min(occ)
        } else {
            occ
        };
        self.m.keys[hkey as usize].total += beyond;
    }

    /// At the end: a visit still open whose time was charged by `held`
    /// pieces past its SM's last node counts that time in its total, so
    /// that no state is more critical than it is long (a holder that
    /// never left its state before the trace ended).
    pub(super) fn count_open_held(&mut self) {
        for s in &self.m.sms {
            if s.cur_key != NONE32 && s.held_until > s.tp {
                self.m.keys[s.cur_key as usize].total += s.held_until - s.tp;
            }
        }
    }

    /// Point node `node` at `t` (a `send` or a `held`) after `prev`, the
    /// piece since `b.tp` from cgraph node `b.cnode` on `(cnode, edge)`,
    /// charged to a state and made faster as `scale` says: counts the
    /// piece, logs the node and gives its handle.
    #[inline(always)]
    pub(super) fn point_node(
        &mut self,
        (node, t): (u64, u64),
        (prev, b): (NodeRef, &Before),
        (cn, edge): (u32, u32),
        scale: Scale,
    ) -> NodeRef {
        let (key, own) = match scale {
            Scale::Key(k) => (k, None),
            Scale::Held { holder, own } => (holder, Some(own)),
            Scale::Not => unreachable!("a point node's piece is the SM's own time"),
        };
        let occ = t.saturating_sub(b.tp);
        self.g.step_pass(b.cnode, edge, occ);
        // The factors are read only for a what-if: their line of the state
        // key is seldom in the cache.
        let w = match self.opts.speedups.is_empty() {
            true => occ,
            false => {
                let keys = &self.m.keys;
                let waiter = own.map_or(1.0, |o| keys[o as usize].factor);
                self.scaled_by(keys[key as usize].factor * waiter, occ)
            }
        };
        let l = if prev.l == UNREACHED {
            UNREACHED
        } else {
            self.longer(prev.l, w)
        };
        let pred = prev.id;
        self.log_entry(Entry {
            pred,
            weight: w,
            tag: edge,
            span: occ,
        });
        self.logs
            .rewalk(node, false, [Some((pred, occ, scale)), None]);
        if self.logs.keeps_graph() {
            self.logs.graph_node(
                l,
                &[InEdge {
                    pred,
                    weight: w,
                    key,
                }],
            );
        }
        NodeRef {
            id: node,
            l,
            t,
            cnode: cn,
            origin: b.origin,
        }
    }
}
