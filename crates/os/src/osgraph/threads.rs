//! Threads and scheduling: a thread's SM `COMM:TID` created when first
//! seen, its context switches (`running`, `runnable`, `blocked:*`, its
//! end), wakeups and forks as links from whoever runs.

use super::{Armed, Builder, Comm, St, Thread};
use crate::names::OsSm;
use critpath_readers::perf::kevent::preempted;
use critpath_trace::Sym;
use rustc_hash::FxHashMap;

impl Builder {
    pub(super) fn thread(&mut self, tid: u32, comm: Option<&Comm>) -> &mut Thread {
        // One lookup for a known thread (the common case).
        let (names, strings, running) = (&mut self.names, &mut self.strings, self.s.running);
        self.threads.entry(tid).or_insert_with(|| {
            let name = names.entry(tid).or_insert_with(|| {
                comm.map(|c| {
                    let e = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                    String::from_utf8_lossy(&c[..e]).into_owned()
                })
                .unwrap_or_else(|| "?".into())
            });
            let sm = strings.intern(&OsSm::Thread { comm: name, tid }.to_string());
            Thread::new(sm, running, St::Unknown, 0, false)
        })
    }

    /// Thread `tid` (known) is one of the recorded program's.
    fn join_program(&mut self, tid: u32) {
        let th = self.threads.get_mut(&tid).expect("known");
        if !th.program {
            th.program = true;
            self.program.push(th.base);
        }
    }

    /// The SMs of the recorded program's threads (its command's thread and
    /// every thread or process forked from one), by their final names:
    /// what the program itself competes with for CPUs is not another
    /// run's load (docs/os-graph.md, "What-ifs on a shared CPU").
    pub fn program_threads(&self) -> Vec<String> {
        (self.program.iter())
            .map(|&sm| self.strings.resolve(sm).to_string())
            .collect()
    }

    /// Names threads by `names` (each one's latest name), and sets the
    /// recorded command's thread and its exec: before the first event.
    pub fn name_threads(&mut self, names: FxHashMap<u32, String>, target: Option<(u32, u64)>) {
        (self.names, self.target) = (names, target);
    }

    /// The recorded command's thread and its exec, as set.
    pub fn target(&self) -> Option<(u32, u64)> {
        self.target
    }

    /// At the end, gives every thread its latest name in `names` (a thread
    /// first seen before it was renamed was named by what was known then):
    /// each renamed SM's name before and after. `Err` when a new name is
    /// another SM's already (nothing is renamed then).
    pub fn rename_threads(
        &mut self,
        names: &FxHashMap<u32, String>,
    ) -> Result<Vec<(String, String)>, String> {
        let mut renames = Vec::new();
        for (tid, th) in &self.threads {
            let Some(comm) = names.get(tid) else { continue };
            if self.names.get(tid) == Some(comm) {
                continue;
            }
            let new = OsSm::Thread { comm, tid: *tid }.to_string();
            match self.strings.get(&new) {
                Some(_) => return Err(new),
                None => renames.push((th.sm, new)),
            }
        }
        let mut said = Vec::with_capacity(renames.len());
        for (sm, new) in renames {
            let old = self.strings.resolve(sm).to_string();
            if !self.strings.rename(sm, &new) {
                return Err(new);
            }
            said.push((old, new));
        }
        Ok(said)
    }

    /// Is this thread's event to be ignored (the recorder's child before
    /// it became the target command)?
    pub(super) fn ignored(&self, tid: u32) -> bool {
        tid == 0 || (self.target.is_some_and(|(t, _)| t == tid) && !self.target_started)
    }

    pub(super) fn note_first(&mut self, tid: u32) {
        let th = self.threads.get_mut(&tid).expect("known");
        if !th.counted {
            th.counted = true;
            self.counts.preexisting += 1;
        }
    }

    /// The state a running thread is in right now: `running`, or inside a
    /// system call (whose state is emitted when its segment ends).
    pub(super) fn enter_running(&mut self, tid: u32, t: u64) {
        let th = self.threads.get_mut(&tid).expect("known");
        th.st = St::Running;
        th.since = t;
        if let Some(sc) = th.sys.as_mut() {
            sc.seg = Some(t);
        } else {
            let (sm, run) = (th.sm, th.run);
            self.state(t, sm, run);
        }
    }

    /// Who is executing on `cpu` right now: the innermost interrupt SM, or
    /// the current thread.
    pub(super) fn context(&mut self, cpu: u32, tid: u32, t: u64) -> Option<Sym> {
        if let Some(c) = self.cpus[cpu as usize].ctx.last() {
            return Some(c.sm);
        }
        if self.ignored(tid) {
            return None;
        }
        self.seen_on(cpu, tid, t, None);
        // A syscall segment ends at a point where the thread acts.
        Some(self.threads[&tid].sm)
    }

    /// A wakeup of `wakee` on `cpu` (to run on `target`, when known; done
    /// in an interrupt when `in_irq`): a link from whoever runs there, and
    /// one into the target CPU's holder. A waker whose chain of causes is
    /// not seen (an interrupt from a device, or one the recording lacks)
    /// makes no link to the thread: the thread links to itself, so its
    /// wait is charged to the waiting state.
    pub(super) fn wake(
        &mut self,
        t: u64,
        (cpu, target, in_irq): (u32, Option<u32>, bool),
        tid: u32,
        wakee: u32,
        comm: &Comm,
    ) {
        if self.ignored(wakee) {
            return;
        }
        let th = self.thread(wakee, Some(comm));
        let (st, placed) = (th.st, th.ready.is_some());
        if st == St::Runnable && !placed {
            // `sched_wakeup_new` after the fork made it runnable: now its
            // CPU is known.
            self.wait_for_cpu(target, wakee);
        }
        if matches!(st, St::Running | St::Runnable | St::Interrupted) {
            return;
        }
        let waker = self.context(cpu, tid, t);
        let in_ctx = !self.cpus[cpu as usize].ctx.is_empty();
        let explained = self.explained(cpu) && (in_ctx || !in_irq);
        if st == St::Unknown {
            self.note_first(wakee);
        }
        let th = self.threads.get_mut(&wakee).expect("known");
        th.st = St::Runnable;
        th.since = t;
        th.armed = Armed::default();
        let sm = th.sm;
        let runnable = self.s.runnable;
        match waker {
            Some(w) if explained => {
                let l = self.link();
                self.send(t, w, l);
                self.recv(t, sm, l, runnable);
            }
            Some(_) => {
                if in_ctx {
                    self.counts.uncaused_wakeups += 1;
                } else {
                    self.counts.unrecorded_interrupts += 1;
                }
                // A link from the thread to itself: the wait, up to the
                // send, weighs its time on the thread's own chain, and the
                // open wait ends by a `recv` as it should.
                let l = self.link();
                self.send(t, sm, l);
                self.recv(t, sm, l, runnable);
            }
            None => {
                self.counts.unknown_waker += 1;
                self.state(t, sm, runnable);
            }
        }
        self.wait_for_cpu(target, wakee);
    }

    pub(super) fn switch_out(
        &mut self,
        (t, cpu): (u64, u32),
        prev: u32,
        comm: &Comm,
        prev_state: u64,
    ) {
        if self.ignored(prev) {
            return;
        }
        self.seen_on(cpu, prev, t, Some(comm));
        self.close_segment(prev, None);
        let th = self.threads.get_mut(&prev).expect("alive");
        let sm = th.sm;
        th.since = t;
        let s = prev_state & 0xff;
        if preempted(prev_state) {
            th.st = St::Runnable;
            let runnable = self.s.runnable;
            self.state(t, sm, runnable);
        } else if s & 0x30 != 0 {
            self.exit_thread(t, prev);
        } else {
            th.st = St::Blocked;
            let state = match s {
                1 => self.s.sleep,
                2 => self.s.io,
                _ => self.s.other,
            };
            self.wait(t, sm, state);
            self.run_ended(prev);
        }
    }

    /// Thread `tid` exits at `t` (a switch-out in state X or Z, or an
    /// annotation file's `exit`): its SM ends, and the annotated SMs still
    /// begun on it end first, each linked to the SM below it, which waited
    /// for its end.
    pub(super) fn exit_thread(&mut self, t: u64, tid: u32) {
        let th = self.threads.get_mut(&tid).expect("alive");
        th.st = St::Unknown;
        th.sys = None;
        th.armed = Armed::default();
        // A later life of this tid (reuse) is a new thread, not one that
        // predates the recording.
        th.counted = true;
        th.funcs.clear();
        let frames = std::mem::take(&mut th.stack);
        let base = th.base;
        th.sm = base;
        th.run = self.s.running;
        self.quiet.remove(&base);
        for (i, f) in frames.iter().enumerate().rev() {
            let below = if i == 0 { base } else { frames[i - 1].sm };
            self.end_frame(t, f, below);
        }
        self.end(t, base);
        self.run_ended(tid);
    }

    /// The recorded command starts running at its exec: its thread's
    /// events before belong to the recorder.
    pub(super) fn start_target(&mut self, t: u64) {
        let Some((tid, exec)) = self.target else {
            return;
        };
        if !self.target_started && t >= exec {
            self.target_started = true;
            let th = self.thread(tid, None);
            th.counted = true;
            th.st = St::Unknown;
            self.join_program(tid);
            self.enter_running(tid, exec);
        }
    }

    /// `sched_switch` on `cpu`: `prev` leaves it, `next` runs.
    pub(super) fn switch(&mut self, t: u64, cpu: u32, prev: (u32, &Comm, u64), next: (u32, &Comm)) {
        // No interrupt is active across a context switch.
        if !self.in_thread(cpu) {
            self.exit_ctx(t, cpu, |_| true);
            self.counts.unbalanced += 1;
        }
        // The leaving thread's pending system call segment is named first:
        // its waiters' time up to the switch is charged to that segment.
        self.close_segment(prev.0, None);
        self.charge_at_switch(t, cpu, next.0);
        self.switch_out((t, cpu), prev.0, prev.1, prev.2);
        self.cpus[cpu as usize].cur = Some(next.0);
        self.alive(next.0, t, Some(next.1));
        self.hold_cpu(cpu, next.0);
        // A preempted thread waits for this CPU, now held by `next`.
        let preempted = !self.ignored(prev.0)
            && self
                .threads
                .get(&prev.0)
                .is_some_and(|th| th.st == St::Runnable);
        if preempted {
            self.wait_for_cpu(Some(cpu), prev.0);
        }
    }

    /// `sched_process_fork`: the child depends on its parent's context.
    pub(super) fn fork(&mut self, t: u64, cpu: u32, tid: u32, child: u32, comm: &Comm) {
        let Some(parent) = self.context(cpu, tid, t) else {
            return;
        };
        let l = self.link();
        self.send(t, parent, l);
        let of_program = self.threads.get(&tid).is_some_and(|p| p.program);
        let th = self.thread(child, Some(comm));
        th.st = St::Runnable;
        th.since = t;
        th.counted = true;
        let sm = th.sm;
        if of_program {
            self.join_program(child);
        }
        let runnable = self.s.runnable;
        self.recv(t, sm, l, runnable);
    }
}
