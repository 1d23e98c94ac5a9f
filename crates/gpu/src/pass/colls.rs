//! CPU collectives in a rank's pass (see `cpucoll`).
//!
//! - A gloo execution on a worker thread starts when the thread that issued
//!   it asks (`c10d::NAME`, paired by name in order): the worker's idle time
//!   before it is a wait ended by the issue.
//! - The issuing thread, idle when the execution ends, was waiting for it:
//!   from its previous transition it is in `NAME wait` until the
//!   execution's end. In an op it waited only if the op is one that waits
//!   ([`waits_for_collective`]: a synchronous `c10d::` collective, a
//!   `wait`); in any other op (`aten::mm`) it was computing, and the end
//!   is no dependence of it.
//! - A collective matched across ranks (`ranks`) starts on every rank once
//!   all have arrived. The ranks meet at the one that arrived last in the
//!   trace, when it arrives: it sends its arrival to each rank still
//!   waiting (in `NAME wait`), each answers, and once it has every answer
//!   it releases them. The others' waits weigh nothing, so the start's
//!   length is the longest of all arrivals: a what-if that makes another
//!   rank the last holds every rank back for it, the trace's last rank
//!   too. Three links per waiting rank, all at one instant. Each rank's
//!   pass notes its side ([`RankPass::coll_release`],
//!   [`RankPass::coll_join`]); the records are made once every rank's pass
//!   is in ([`crate::emit::JoinBook`]), for the ranks whose both sides
//!   were met (a rank whose op ended before the last arrived, or was cut
//!   at its parent's end before then, has no side), never one waiting for
//!   a link never sent.

use super::{Call, RankPass};
use crate::cpucoll::{classify, CollKind};
use crate::emit::{class, coll_wait, JoinSide, Role, BETWEEN_OPS};
use crate::kineto::Ev;
use critpath_trace::{Event, LinkId, Sym, Who};
use std::collections::{HashMap, VecDeque};

/// Whether a thread in the CPU op `name` when a collective it issued ends
/// was waiting for it: the issue of a synchronous collective
/// (`c10d::barrier`) or an op that waits (`c10d::wait`, `aten::wait`).
/// Other ops compute, and keep their time.
pub(super) fn waits_for_collective(name: &str) -> bool {
    name.starts_with("c10d::") || name.to_ascii_lowercase().contains("wait")
}

/// A CPU collective op: its part across ranks, and the link from its issue.
pub(super) struct CollCall {
    role: Option<Role>,
    issue: Option<LinkId>,
}

/// A thread (pid, tid).
type Thread = (i64, i64);

/// Collectives issued and not yet run, by name: (thread, time); and per
/// issuing thread, the executions it may wait for: (end, worker, name).
#[derive(Default)]
pub(super) struct Issued {
    pending: HashMap<String, VecDeque<(Thread, u64)>>,
    ends: HashMap<Thread, Vec<(u64, Thread, String)>>,
}

/// Issues kept per name at most: an issue never run is forgotten.
const PENDING: usize = 64;

impl RankPass<'_> {
    /// What a CPU op is to collectives (`None`: nothing); notes issues and
    /// pairs executions with them.
    pub(super) fn coll_call(&mut self, ev: &Ev) -> Option<CollCall> {
        let (kind, name) = classify(self.prep_names.get(ev.name), false)?;
        let thread = (ev.pid, ev.tid);
        let role = self.ctx.roles.get(&ev.index).cloned();
        let issue = match kind {
            CollKind::Execution => self.pair_issue(&name, thread, ev),
            CollKind::Issue => {
                let q = self.colls.pending.entry(name).or_default();
                if q.len() == PENDING {
                    q.pop_front();
                }
                q.push_back((thread, ev.ts));
                None
            }
            CollKind::Params => None,
        };
        (role.is_some() || issue.is_some()).then_some(CollCall { role, issue })
    }

    /// The issue an execution answers: a link from the issuing thread at
    /// the issue; the issuing thread may wait for the execution's end.
    fn pair_issue(&mut self, name: &str, worker: Thread, ev: &Ev) -> Option<LinkId> {
        let q = self.colls.pending.get_mut(name)?;
        let &(by, at) = q.front().filter(|x| x.1 <= ev.ts)?;
        q.pop_front();
        let th = self.threads.get(&by)?;
        let (sm, group) = (th.sm, th.group);
        let id = self.fresh_link();
        let send = Event::Send {
            who: Who::Sm(sm),
            id,
        };
        self.out.push(self.at(at), class::CPU, group + 1, send);
        let ends = self.colls.ends.entry(by).or_default();
        ends.push((ev.end(), worker, name.to_string()));
        Some(id)
    }

    /// The execution a thread's transition at `t` (until `next`) waits for:
    /// the last one it issued that ends in between. Executions that ended
    /// before `t` are forgotten (the thread was busy then).
    pub(super) fn take_issued(
        &mut self,
        thread: Thread,
        t: u64,
        next: u64,
    ) -> Option<(u64, Thread, String)> {
        let ends = self.colls.ends.get_mut(&thread)?;
        let mut found: Option<(u64, Thread, String)> = None;
        ends.retain(|e| {
            if e.0 > next {
                return true;
            }
            if e.0 > t && found.as_ref().is_none_or(|f| e.0 > f.0) {
                found = Some(e.clone());
            }
            false
        });
        found
    }

    /// A thread waiting from `t` for the end of an execution it issued: in
    /// its op (`op`) or in `NAME wait`, left by a link from the execution's
    /// end.
    pub(super) fn wait_issued(
        &mut self,
        (who, group): (Who, u32),
        t: u64,
        op: Option<Sym>,
        (end, worker, name): (u64, Thread, String),
    ) {
        let wait_state = op.unwrap_or_else(|| self.out.sym(&format!("{name} wait")));
        let after = op.unwrap_or_else(|| self.out.sym(BETWEEN_OPS));
        let wait = Event::Wait {
            who,
            state: wait_state,
            on: None,
            on_sys: None,
            on_state: None,
        };
        self.out.push(self.at(t), class::CPU, group, wait);
        let Some(w) = self.threads.get(&worker) else {
            return;
        };
        let (wsm, wgroup) = (w.sm, w.group);
        let id = self.fresh_link();
        let e = self.at(end);
        let send = Event::Send {
            who: Who::Sm(wsm),
            id,
        };
        self.out.push(e, class::END_SEND, wgroup, send);
        let recv = Event::Recv {
            who,
            id,
            state: after,
            waited: true,
        };
        self.out.push(e, class::CPU, group, recv);
    }

    /// A CPU collective op from `t` until `next`: received from its issue;
    /// on a rank before the last, a wait for the last rank's arrival; on
    /// the last rank, a send to each rank waiting.
    pub(super) fn coll_transition(
        &mut self,
        (who, group): (Who, u32),
        (t, next): (u64, u64),
        c: &Call,
    ) {
        let coll = c.coll.as_ref().expect("a collective");
        let (t, next) = (self.at(t), self.at(next));
        // A rank before the last waits until the last arrives.
        let waits = coll.role.as_ref().filter(|r| !r.straggler && t < r.release);
        let first = match waits {
            Some(r) => self.coll_wait_state(r),
            None => c.name,
        };
        let ev = match coll.issue {
            Some(id) => Event::Recv {
                who,
                id,
                state: first,
                waited: true,
            },
            None => Event::State { who, state: first },
        };
        self.out.push(t, class::CPU, group, ev);
        // Each rank's side, noted at the first part of the op that lasts
        // past the last rank's arrival: the part the arrival falls in, or
        // the one after a child of the op that runs then (its time until
        // the arrival is then the rank's wait, after it the collective's).
        match coll.role.as_ref().filter(|r| r.release < next) {
            Some(r) if r.straggler => self.coll_release((who, group), r, c.name),
            Some(r) if r.joins => self.coll_join((who, group), r, c.name),
            _ => {}
        }
    }

    /// The state a rank waits in for collective `r`'s last rank.
    pub(super) fn coll_wait_state(&mut self, r: &Role) -> Sym {
        let name = coll_wait(self.out.strings.resolve(r.name));
        self.out.sym(&name)
    }

    /// The last rank's side of collective `r` as it arrives: it goes on
    /// in `state` (the first side noted counts).
    pub(super) fn coll_release(&mut self, (who, group): (Who, u32), r: &Role, state: Sym) {
        let side = JoinSide {
            who,
            group,
            wait: state,
            state,
        };
        self.out.joins.last(r, side);
    }

    /// A waiting rank's side of collective `r`: in its wait when the last
    /// rank arrives, then in `state`.
    pub(super) fn coll_join(&mut self, (who, group): (Who, u32), r: &Role, state: Sym) {
        let side = JoinSide {
            who,
            group,
            wait: self.coll_wait_state(r),
            state,
        };
        self.out.joins.waiting(r, self.ctx.index, side);
    }
}
