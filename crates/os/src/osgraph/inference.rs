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

use super::{Builder, Comm, Derived, LostSwitchIns, St};
use critpath_trace::Diagnostic;
use critpath_trace::DiagnosticKind;

impl Builder {
    /// `tid` acts on `cpu` at `t` (not its switch-in): it is running. When
    /// it was believed runnable, its switch-in was lost. On a CPU that
    /// idled since its last visible switch, the switch-in came from the
    /// idle task after the CPU's event before this one: a thread whose
    /// wakeup was for this CPU ran from then (or from its wakeup, if
    /// later). Elsewhere it may have run since that event, time that
    /// stays charged to the CPU's holder.
    pub(super) fn seen_on(&mut self, cpu: u32, tid: u32, t: u64, comm: Option<&Comm>) {
        if self.ignored(tid) {
            return;
        }
        let c = &mut self.cpus[cpu as usize];
        let (before, idle_since) = (c.before_event, c.idle().then_some(c.before_event));
        c.cur = Some(tid);
        let mut ran_from = idle_since;
        // One lookup (the thread is made here when first seen, in no state).
        let th = self.thread(tid, comm);
        let st = th.st;
        if st == St::Runnable {
            let (from, sm, ready) = (th.since.max(before), th.sm, th.ready);
            let lost = self.counts.lost_switch_ins.entry(sm).or_default();
            lost.seen += 1;
            if idle_since.is_some() && ready == Some(cpu) {
                lost.on_idle_cpu += 1;
                ran_from = Some(from);
            } else {
                lost.at_stake_ns += t.saturating_sub(from);
                ran_from = None;
            }
        }
        self.alive_in(tid, st, t, ran_from);
    }

    /// `tid` is seen on a CPU at `t`: it is running. A thread believed
    /// blocked gets an inferred wakeup (at the expiry of the timer it armed
    /// before sleeping when that is known, else now).
    pub(super) fn alive(&mut self, tid: u32, t: u64, comm: Option<&Comm>) {
        if self.ignored(tid) {
            return;
        }
        let st = self.thread(tid, comm).st;
        self.alive_in(tid, st, t, None);
    }

    /// [`Builder::alive`] of a thread in `st`, where a lost switch-in is
    /// known to have come after `ran_from` on a CPU that idled until then:
    /// a runnable thread ran from then, and one woken by its timer from the
    /// later of then and the expiry.
    #[inline]
    fn alive_in(&mut self, tid: u32, st: St, t: u64, ran_from: Option<u64>) {
        // Nearly always running already: nothing to infer.
        if !matches!(st, St::Running | St::Interrupted) {
            self.runs_again(tid, st, t, ran_from);
        }
    }

    /// [`Builder::alive_in`] of a thread not believed running: it runs
    /// from now, or from when its lost switch-in or timer says.
    #[inline(never)]
    fn runs_again(&mut self, tid: u32, st: St, t: u64, ran_from: Option<u64>) {
        match st {
            St::Running | St::Interrupted => {}
            St::Runnable => self.enter_running(tid, ran_from.unwrap_or(t).min(t)),
            St::Unknown => {
                self.note_first(tid);
                self.enter_running(tid, t);
            }
            St::Blocked => {
                let woke = self.timer_wakeup(tid, t);
                let from = match (woke, ran_from) {
                    (Some(exp), Some(idle)) => {
                        self.counts.ran_when_woken += 1;
                        exp.max(idle).min(t)
                    }
                    _ => t,
                };
                self.enter_running(tid, from);
            }
        }
    }

    /// Blocked thread `tid` is seen running at `t`: its wakeup was lost.
    /// When the timer it armed before sleeping expired between then and
    /// now, on a CPU whose events were lost, the expiry and the wakeup it
    /// did are placed at its latest expiry (before the thread ran), which
    /// is returned. Else the thread is woken without a dependence.
    fn timer_wakeup(&mut self, tid: u32, t: u64) -> Option<u64> {
        let th = self.threads.get_mut(&tid).expect("known");
        let (since, armed, sm) = (th.since, std::mem::take(&mut th.armed), th.sm);
        self.counts.inferred += 1;
        // Of the timers that expired while it slept, a sleeper's wakeup,
        // else the one armed last.
        let mut pick = None;
        for p in armed.iter() {
            let Some(a) = self.arms.get(&p).copied() else {
                continue;
            };
            let fits = a.expires.filter(|&(soft, hard)| hard >= since && soft <= t);
            let Some((_, hard)) = fits else { continue };
            let wakes = self.s.sleeper_wakeups.contains(&a.func);
            if pick.is_none() || wakes {
                pick = Some((p, a, hard.min(t)));
            }
            if wakes {
                break;
            }
        }
        let (ptr, a, exp) = pick?;
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
        Some(exp)
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
                "{} time(s) a thread was seen running while believed blocked: the events of its wakeup were lost (some kernels deliver nothing from an idle CPU's context); {} of these wakeups were placed at the expiry of the timer the thread had armed ({} on a CPU that was idle, where the thread ran from then), the rest at the thread's first sign of life",
                c.inferred, c.inferred_by_timer, c.ran_when_woken
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
            c.unrecorded_interrupts,
            DiagnosticKind::UnknownWaker,
            unrecorded_interrupts(c.unrecorded_interrupts, c.interrupts_seen),
        );
        counted(
            c.uncaused_wakeups,
            DiagnosticKind::UncausedWakeup,
            format!(
                "{} wakeup(s) came from an interrupt whose cause the recording does not show (a device's or a network card's interrupt, a softirq it raised, a timer armed before recording): those waits are charged to the waiting states (blocked:io, blocked:sleep ...), not to the interrupt",
                c.uncaused_wakeups
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
        for (&sm, lost) in &c.lost_switch_ins {
            let name = self.strings.resolve(sm);
            let mut d = Diagnostic::new(DiagnosticKind::LostSwitchIn, lost_switch_ins(name, lost))
                .count(lost.seen);
            d.sm = Some(name.to_string());
            d.ns = Some(lost.at_stake_ns);
            out.push(d);
        }
        out
    }
}

/// The message of thread `name`'s lost switch-ins.
fn lost_switch_ins(name: &str, lost: &LostSwitchIns) -> String {
    let LostSwitchIns {
        seen,
        on_idle_cpu,
        at_stake_ns,
    } = *lost;
    let mut m = format!(
        "{name}: seen running {seen} time(s) while believed runnable: its switch-in was lost (from an idle CPU's context, or from a task the recording cannot see)"
    );
    if on_idle_cpu > 0 {
        m += &format!("; {on_idle_cpu} of these on the idle CPU its wakeup was for, where it ran from the CPU's last visible event");
    }
    if seen > on_idle_cpu {
        m += &format!("; it runs from each other sign of life, and up to {at_stake_ns} ns before them in all (since its CPU's last visible event) may have been its own running time, charged to the CPU's holder");
    }
    m
}

/// The `unknown-waker` message for wakeups that the events' flags place in
/// an interrupt no event shows: a recording without interrupt events
/// needs them; one with them missed this kind of interrupt.
fn unrecorded_interrupts(n: u64, interrupts_seen: u64) -> String {
    let head = format!("{n} wakeup(s) happened inside an interrupt (so say the events' flags)");
    let tail = "the threads that merely hosted them are not taken for wakers, and those waits are charged to the waiting states";
    if interrupts_seen == 0 {
        format!("{head}, but the recording has no interrupt events: {tail}; record with `critpath record`, or add -e 'irq:*' -e 'timer:*' to perf record")
    } else {
        format!("{head} that the recording does not show (an inter-processor interrupt, irq_work or another interrupt without a tracepoint, or a lost entry): {tail}")
    }
}
