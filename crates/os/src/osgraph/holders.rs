//! Waiting for a CPU (docs/os-graph.md, "Waiting for a CPU"): a thread that
//! becomes runnable on a CPU held by another thread links its readiness
//! into the holder's running time from then on (a split of the holder's
//! state), and its switch-in on that CPU is a waited `recv` of the link the
//! thread switched out sends. The path can thus pass through the holders'
//! running time after the thread became ready, never their history.

use super::{Builder, Derived, St};
use critpath_trace::Sym;

impl Builder {
    /// Thread `w` became runnable at `t`, to run on `cpu` (when known): if
    /// a tracked thread holds that CPU, `w` sends a link the holder
    /// receives at `t` (its state goes on), and `w` remembers the CPU's
    /// holder chain. Otherwise (an idle CPU, an unknown one, a thread not
    /// of the recorded command) `w` waits on its own chain.
    pub(super) fn link_holder(&mut self, t: u64, cpu: Option<u32>, w: u32) {
        let Some(th) = self.threads.get_mut(&w) else {
            return;
        };
        th.ready = None;
        let wsm = th.sm;
        if !self.holders {
            return;
        }
        // With the command known, only its threads' waits are linked: a
        // foreign thread's readiness would put its history on the holder.
        if self.target.is_some() && !self.program.contains(&w) {
            return;
        }
        let Some(c) = cpu else { return };
        let Some(h) = self.cpus.get(c as usize).map(|cs| cs.cur) else {
            return;
        };
        if h == w || self.ignored(h) {
            return;
        }
        let Some(state) = self.split_state(t, h, c) else {
            return;
        };
        let hsm = self.threads[&h].sm;
        let l = self.link();
        self.send(t, wsm, l);
        self.recv(t, hsm, l, state);
        let gen = self.cpus[c as usize].gen;
        self.threads.get_mut(&w).expect("known").ready = Some((c, gen));
    }

    /// The state holder `h` (current on `cpu`) is in, to split it there;
    /// `None` when it is not executing there. A pending system call
    /// segment ends at the split and starts again.
    fn split_state(&mut self, t: u64, h: u32, cpu: u32) -> Option<Sym> {
        let th = self.threads.get(&h)?;
        match th.st {
            St::Interrupted => {
                let base = self.cpus[cpu as usize].ctx.first().map(|c| c.base);
                let run = th.run;
                Some(base.map_or(run, |b| self.derived(Derived::Interrupted, b)))
            }
            St::Running => match th.sys {
                Some(sc) if sc.seg.is_some() => {
                    self.close_segment(h, None);
                    let state = self.syscall_state(sc.nr, None);
                    let sys = self.threads.get_mut(&h).and_then(|th| th.sys.as_mut());
                    sys.expect("in a call").seg = Some(t);
                    Some(state)
                }
                _ => Some(th.run),
            },
            _ => None,
        }
    }

    /// At a switch on `cpu` from `prev` to `next`: the link `prev` sends as
    /// it leaves, when `next` was ready on this CPU's current holder chain
    /// (its switch-in then waits for it); otherwise the chain starts anew.
    pub(super) fn holder_handoff(&mut self, t: u64, cpu: u32, prev: u32, next: u32) -> Option<u64> {
        let gen = self.cpus[cpu as usize].gen;
        let waiting = !self.ignored(next)
            && self
                .threads
                .get(&next)
                .is_some_and(|th| th.st == St::Runnable && th.ready == Some((cpu, gen)));
        let holding = !self.ignored(prev)
            && self
                .threads
                .get(&prev)
                .is_some_and(|th| matches!(th.st, St::Running | St::Interrupted));
        if !(waiting && holding) {
            self.cpus[cpu as usize].gen += 1;
            return None;
        }
        let psm = self.threads[&prev].sm;
        let l = self.link();
        self.send(t, psm, l);
        Some(l)
    }

    /// `next` runs on its CPU from `t`, its switch-in a waited `recv` of
    /// the holder's link `l`.
    pub(super) fn run_after_holder(&mut self, tid: u32, t: u64, l: u64) {
        let th = self.threads.get_mut(&tid).expect("known");
        th.st = St::Running;
        th.since = t;
        th.ready = None;
        let (sm, run) = (th.sm, th.run);
        let state = match th.sys.as_mut() {
            Some(sc) => {
                sc.seg = Some(t);
                let nr = sc.nr;
                self.syscall_state(nr, None)
            }
            None => run,
        };
        self.recv_as(t, sm, l, state, true);
    }
}
