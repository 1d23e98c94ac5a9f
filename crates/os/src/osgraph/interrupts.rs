//! Interrupts, softirqs and timers: each handler run, softirq run and
//! timer expiry is one life of an SM (`irq:NAME`, `softirq:NAME`,
//! `timer:FUNCTION`, with a lane `#2`… when two run at once) whose first
//! node hangs on what caused it (a softirq raise, a timer arming); the
//! thread it interrupts is `interrupted:SM` meanwhile.

use super::{Arm, Builder, Ctx, CtxKind, Derived, Raise, St};
use crate::names::lane_name;
use critpath_trace::Sym;

impl Builder {
    pub(super) fn take_lane(&mut self, base: Sym) -> (Sym, u32) {
        let lanes = self.lanes.entry(base).or_default();
        let lane = match lanes.iter().position(|busy| !busy) {
            Some(i) => i,
            None => {
                lanes.push(false);
                lanes.len() - 1
            }
        };
        lanes[lane] = true;
        let lane = lane as u32;
        if lane == 0 {
            return (base, 0);
        }
        let sm = match self.lane_names.get(&(base, lane)) {
            Some(&s) => s,
            None => {
                let n = lane_name(self.strings.resolve(base), lane);
                let s = self.strings.intern(&n);
                self.lane_names.insert((base, lane), s);
                s
            }
        };
        (sm, lane)
    }

    pub(super) fn free_lane(&mut self, base: Sym, lane: u32) {
        if let Some(l) = self.lanes.get_mut(&base) {
            if let Some(b) = l.get_mut(lane as usize) {
                *b = false;
            }
        }
    }

    /// Starts an interrupt SM's life on `cpu`: its first node hangs on
    /// `cause` (a link, and the state its wait is charged to) when known;
    /// `explained` as in `Ctx`.
    pub(super) fn enter_ctx(
        &mut self,
        t: u64,
        cpu: u32,
        tid: u32,
        (base, kind): (Sym, CtxKind),
        cause: Option<(u64, Sym)>,
        explained: bool,
    ) {
        // The thread it interrupts is `interrupted` meanwhile: that time is
        // not its own work. (No link: the thread resumes on its own chain,
        // so neither the interrupt's cause nor a periodic tick becomes
        // something the thread waits for.)
        if self.cpus[cpu as usize].ctx.is_empty() && !self.ignored(tid) {
            let running = self.threads.get(&tid).filter(|th| th.st == St::Running);
            if let Some(sm) = running.map(|th| th.sm) {
                self.close_segment(tid, None);
                let interrupted = self.derived(Derived::Interrupted, base);
                self.state(t, sm, interrupted);
                self.threads.get_mut(&tid).expect("known").st = St::Interrupted;
                self.cpus[cpu as usize].interrupted = Some(tid);
            }
        }
        let (sm, lane) = self.take_lane(base);
        if let Some((link, state)) = cause {
            self.recv(t, sm, link, state);
        }
        let running = self.s.running;
        self.state(t, sm, running);
        self.counts.interrupts_seen += 1;
        self.cpus[cpu as usize].ctx.push(Ctx {
            sm,
            base,
            lane,
            kind,
            explained,
        });
    }

    /// Does what executes on `cpu` now have a seen chain of causes: a
    /// thread, or an explained interrupt (see `Ctx`)?
    pub(super) fn explained(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize]
            .ctx
            .last()
            .is_none_or(|c| c.explained)
    }

    /// Ends the innermost interrupt SM of `cpu` that `is` accepts, and any
    /// inside it whose exit was lost.
    pub(super) fn exit_ctx(&mut self, t: u64, cpu: u32, is: impl Fn(&CtxKind) -> bool) {
        let Some(pos) = self.cpus[cpu as usize]
            .ctx
            .iter()
            .rposition(|c| is(&c.kind))
        else {
            return;
        };
        while self.cpus[cpu as usize].ctx.len() > pos {
            let c = self.cpus[cpu as usize].ctx.pop().expect("len > pos");
            if self.cpus[cpu as usize].ctx.len() > pos {
                self.counts.unbalanced += 1;
            }
            let back = if self.cpus[cpu as usize].ctx.is_empty() {
                self.cpus[cpu as usize].interrupted.take()
            } else {
                None
            };
            self.end(t, c.sm);
            if let Some(tid) = back {
                if self
                    .threads
                    .get(&tid)
                    .is_some_and(|th| th.st == St::Interrupted)
                {
                    self.enter_running(tid, t);
                }
            }
            self.free_lane(c.base, c.lane);
        }
    }

    /// `softirq_raise`: the softirq's coming run depends on who raised it
    /// (once per run: a vector raised again before it runs is one run).
    pub(super) fn softirq_raise(&mut self, t: u64, cpu: u32, tid: u32, vec: u8) {
        let v = vec as usize % 10;
        if self.cpus[cpu as usize].raised[v].is_none() {
            let by = self.context(cpu, tid, t);
            let l = self.link();
            if let Some(by) = by {
                self.send(t, by, l);
            }
            self.cpus[cpu as usize].raised[v] = Some(Raise {
                link: l,
                sent: by.is_some(),
                explained: by.is_some() && self.explained(cpu),
            });
        }
    }

    /// `softirq_entry`: a life of `softirq:NAME`, hanging on its raise.
    pub(super) fn softirq_entry(&mut self, t: u64, cpu: u32, tid: u32, vec: u8) {
        let v = vec as usize % 10;
        let raise = self.cpus[cpu as usize].raised[v].take();
        let cause = raise.filter(|r| r.sent).map(|r| (r.link, self.s.raised));
        let explained = raise.is_some_and(|r| r.explained);
        let base = self.s.softirq[v];
        let kind = CtxKind::Softirq(vec);
        self.enter_ctx(t, cpu, tid, (base, kind), cause, explained);
    }

    /// `hrtimer_start` / `timer_start`: the expiry depends on who armed it.
    pub(super) fn timer_start(
        &mut self,
        t: u64,
        cpu: u32,
        tid: u32,
        timer: u64,
        func: Sym,
        expires: Option<(u64, u64)>,
    ) {
        let by = self.context(cpu, tid, t);
        let l = self.link();
        if let Some(by) = by {
            self.send(t, by, l);
        }
        let arm = Arm {
            link: l,
            sent: by.is_some(),
            explained: by.is_some() && self.explained(cpu),
            expires,
            func,
        };
        self.arms.insert(timer, arm);
        if self.in_thread(cpu) && !self.ignored(tid) {
            if let Some(th) = self.threads.get_mut(&tid) {
                th.armed.push(timer);
            }
        }
    }

    /// `hrtimer_expire_entry` / `timer_expire_entry`: a life of
    /// `timer:FUNCTION`, hanging on its arming.
    pub(super) fn timer_entry(&mut self, t: u64, cpu: u32, tid: u32, timer: u64, func: Sym) {
        let arm = self.arms.remove(&timer);
        let cause = arm.filter(|a| a.sent).map(|a| (a.link, self.s.armed));
        let explained = arm.is_some_and(|a| a.explained);
        let base = self.derived(Derived::Timer, func);
        self.enter_ctx(t, cpu, tid, (base, CtxKind::Timer), cause, explained);
    }
}
