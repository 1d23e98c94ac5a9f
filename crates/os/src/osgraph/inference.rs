//! Inference of lost transitions: a thread seen running while believed
//! blocked was woken by events that were lost; the wakeup is placed at the
//! expiry of the timer it armed before sleeping when that fits, else at
//! its first sign of life. A thread seen running while believed runnable
//! was switched in by an event that was lost (from an idle CPU's context,
//! or from a task the recording cannot see): it runs from that sign of
//! life, and the time since its CPU's last visible event, which may have
//! been its own running, stays charged to the CPU's holder; each thread's
//! count and time at stake are reported. Also the builder's counts as
//! diagnostics.

use super::{Builder, Comm, Derived, St};
use critpath_trace::Diagnostic;
use critpath_trace::DiagnosticKind;

impl Builder {
    /// `tid` acts on `cpu` at `t` (not its switch-in): it is running. When
    /// it was believed runnable, its switch-in was lost: it may have run
    /// since the CPU's event before this one.
    pub(super) fn seen_on(&mut self, cpu: u32, tid: u32, t: u64, comm: Option<&Comm>) {
        let runnable = self.threads.get(&tid).filter(|th| th.st == St::Runnable);
        if let Some(th) = runnable.filter(|_| !self.ignored(tid)) {
            let c = &self.cpus[cpu as usize];
            let at_stake = t.saturating_sub(th.since.max(c.before_event));
            let lost = self.counts.lost_switch_ins.entry(th.sm).or_default();
            lost.0 += 1;
            lost.1 += at_stake;
        }
        self.alive(tid, t, comm);
    }

    /// `tid` is seen on a CPU at `t`: it is running. A thread believed
    /// blocked gets an inferred wakeup (at the expiry of the timer it armed
    /// before sleeping when that is known, else now).
    pub(super) fn alive(&mut self, tid: u32, t: u64, comm: Option<&Comm>) {
        if self.ignored(tid) {
            return;
        }
        let th = self.thread(tid, comm);
        match th.st {
            St::Running | St::Interrupted => {}
            St::Runnable => self.enter_running(tid, t),
            St::Unknown => {
                self.note_first(tid);
                self.enter_running(tid, t);
            }
            St::Blocked => {
                let (since, armed, sm) = (th.since, th.armed.take(), th.sm);
                self.counts.inferred += 1;
                let arm = armed.and_then(|p| self.arms.get(&p).copied().map(|a| (p, a)));
                if let Some((ptr, a)) = arm {
                    let window = a.expires.filter(|&(soft, hard)| hard >= since && soft <= t);
                    if let Some(exp) = window.map(|(_, hard)| hard.min(t)) {
                        // The timer expired on a CPU whose events were lost:
                        // its expiry and the wakeup it did happened at `exp`
                        // (by its latest expiry, and before the thread ran).
                        self.arms.remove(&ptr);
                        self.counts.inferred_by_timer += 1;
                        let base = self.derived(Derived::Timer, a.func);
                        let (tsm, lane) = self.take_lane(base);
                        if a.sent {
                            let armed = self.s.armed;
                            self.recv(exp, tsm, a.link, armed);
                        }
                        let running = self.s.running;
                        self.state(exp, tsm, running);
                        let wake = self.link();
                        self.send(exp, tsm, wake);
                        self.end(exp, tsm);
                        self.free_lane(base, lane);
                        let runnable = self.s.runnable;
                        self.recv(exp, sm, wake, runnable);
                    }
                }
                self.enter_running(tid, t);
            }
        }
    }

    /// The builder's findings as diagnostics.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let c = &self.counts;
        let mut out = self.annot_problems.clone();
        // A count's diagnostic, when the count is not 0.
        let mut counted = |n: u64, kind: DiagnosticKind, message: String| {
            if n > 0 {
                out.push(Diagnostic::new(kind, message).count(n));
            }
        };
        let listed = self.annot_problems.len() as u64;
        // (Only when some are not listed one by one above.)
        counted(
            if c.annot_problems > listed {
                c.annot_problems
            } else {
                0
            },
            DiagnosticKind::StackMismatch,
            format!(
                "{} unbalanced end_sm annotation(s) in all (the first {listed} are listed)",
                c.annot_problems
            ),
        );
        counted(
            c.inferred,
            DiagnosticKind::InferredTransition,
            format!(
                "{} time(s) a thread was seen running while believed blocked: the events of its wakeup were lost (some kernels deliver nothing from an idle CPU's context); {} of these wakeups were placed at the expiry of the timer the thread had armed, the rest at the thread's first sign of life",
                c.inferred, c.inferred_by_timer
            ),
        );
        counted(
            if self.annotations_only {
                0
            } else {
                c.preexisting
            },
            DiagnosticKind::PreexistingThread,
            format!(
                "{} thread(s) existed before recording started; each starts at its first event",
                c.preexisting
            ),
        );
        counted(
            c.unknown_waker,
            DiagnosticKind::UnknownWaker,
            format!(
                "{} wakeup(s) came from no known context (an idle CPU, or an interrupt whose entry was not recorded); those threads become runnable without a dependence",
                c.unknown_waker
            ),
        );
        counted(
            c.unbalanced,
            DiagnosticKind::UnbalancedInterrupt,
            format!(
                "{} interrupt, softirq or timer run(s) had no recorded exit; each was ended at the next sign that it was over",
                c.unbalanced
            ),
        );
        counted(
            c.late,
            DiagnosticKind::LateTransition,
            format!(
                "{} inferred transition(s) fell before the reorder window and were placed at its start",
                c.late
            ),
        );
        for (&sm, &(n, ns)) in &c.lost_switch_ins {
            let name = self.strings.resolve(sm);
            let mut d = Diagnostic::new(
                DiagnosticKind::LostSwitchIn,
                format!(
                    "{name}: seen running {n} time(s) while believed runnable: its switch-in was lost (from an idle CPU's context, or from a task the recording cannot see); it runs from each sign of life, and up to {ns} ns before them in all (since its CPU's last visible event) may have been its own running time, charged to the CPU's holder"
                ),
            )
            .count(n);
            d.sm = Some(name.to_string());
            out.push(d);
        }
        out
    }
}
