//! Waiting for a CPU (docs/os-graph.md, "Waiting for a CPU"): a runnable
//! thread waits for the CPU it is to run on, and whoever runs there holds
//! it. Each runnable thread is a waiter of one CPU. Whenever that CPU's
//! holder changes state or leaves, the piece of each waiter's wait since
//! its previous node is charged to the holder's state then (a `held`
//! record: docs/path-rules.md, rule 6), so the wait stays on the waiter's
//! own chain while its time is the holder's, state by state, and a what-if
//! that speeds up or removes the holder shortens it. No link joins the
//! waiter and the holder: the path never follows the holder's history.
//! Time when no thread held the CPU stays the waiter's own `runnable`.
//!
//! When a holder's run ends (it blocks or exits) while a waiter it held up
//! still needs a CPU (runnable or running, not blocked since), the waiter
//! waited for that run whole: its pieces charged to that run are marked
//! `ended`, so that a what-if does not shrink them with the waiter's own
//! work. The marks are set in the reorder window, which keeps such pieces
//! for up to its length (`WINDOW_NS`) while it holds fewer than
//! `PIECES_HELD` records; the older pieces of a longer run stay unmarked.

use super::{Builder, St, Thread, WINDOW_NS};
use critpath_trace::{Event, Sym, Who};
use rustc_hash::FxHashMap;

/// The CPU each SM holds, by the SM's symbol (an array, not a map: every
/// record the builder emits asks it).
#[derive(Default)]
pub(super) struct HoldSms {
    cpu: Vec<u32>,
    held: usize,
}

/// No CPU.
const NONE: u32 = u32::MAX;

impl HoldSms {
    pub(super) fn is_empty(&self) -> bool {
        self.held == 0
    }

    fn get(&self, sm: Sym) -> Option<u32> {
        self.cpu.get(sm.index()).copied().filter(|&c| c != NONE)
    }

    fn insert(&mut self, sm: Sym, cpu: u32) {
        if sm.is_transient() {
            return;
        }
        if self.cpu.len() <= sm.index() {
            self.cpu.resize(sm.index() + 1, NONE);
        }
        let had = std::mem::replace(&mut self.cpu[sm.index()], cpu);
        self.held += usize::from(had == NONE);
    }

    fn remove(&mut self, sm: Sym) {
        if let Some(c) = self.cpu.get_mut(sm.index()) {
            self.held -= usize::from(*c != NONE);
            *c = NONE;
        }
    }
}

/// Who holds a CPU, as its records say: the holder's thread, its SM and
/// its state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hold {
    tid: u32,
    sm: Sym,
    state: Sym,
}

/// A piece of a wait charged to a holder's run: when, the waiter (its
/// thread, which run of it, and the SM its `held` record is on), and
/// where its `held` record went (see [`Builder::emit`]; `None`: dropped).
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    t: u64,
    waiter: u32,
    run: u32,
    sm: Sym,
    at: Option<u64>,
}

/// Whether piece `p` may still be marked: not before `floor` (released,
/// or past the window) and its waiter has not blocked or left since.
fn live(threads: &FxHashMap<u32, Thread>, p: &Piece, floor: u64) -> bool {
    p.t >= floor && waiter_in_run(threads, p).is_some()
}

/// The waiter of piece `p`, while it is still in the run the piece was
/// charged in.
fn waiter_in_run<'a>(threads: &'a FxHashMap<u32, Thread>, p: &Piece) -> Option<&'a Thread> {
    threads.get(&p.waiter).filter(|w| w.runs == p.run)
}

/// The time of the oldest piece of `pieces` (a holder's, in time order)
/// that its run may still mark.
pub(super) fn oldest_live(
    threads: &FxHashMap<u32, Thread>,
    pieces: &[Piece],
    floor: u64,
) -> Option<u64> {
    pieces.iter().find(|p| live(threads, p, floor)).map(|p| p.t)
}

impl Builder {
    /// Thread `w` is runnable (or its CPU became known), to run on `cpu`
    /// when known: it becomes that CPU's waiter.
    pub(super) fn wait_for_cpu(&mut self, cpu: Option<u32>, w: u32) {
        self.leave_waiters(w);
        let (Some(c), true) = (cpu, self.holders) else {
            return;
        };
        if self.ignored(w) || self.cpus.len() <= c as usize {
            return;
        }
        if let Some(th) = self.threads.get_mut(&w) {
            th.ready = Some(c);
            self.cpus[c as usize].waiters.push(w);
        }
    }

    /// Thread `w` no longer waits for a CPU.
    fn leave_waiters(&mut self, w: u32) {
        let Some(c) = self.threads.get_mut(&w).and_then(|th| th.ready.take()) else {
            return;
        };
        if let Some(cpu) = self.cpus.get_mut(c as usize) {
            cpu.waiters.retain(|&x| x != w);
        }
    }

    /// A switch on `cpu` at `t` to `next`, before either thread is
    /// handled: the waits of `cpu`'s waiters (and of `next`, wherever it
    /// waited) are charged to the leaving holder; `next` waits no more and
    /// the CPU has no holder until [`Builder::hold_cpu`].
    pub(super) fn charge_at_switch(&mut self, t: u64, cpu: u32, next: u32) {
        let elsewhere = self
            .threads
            .get(&next)
            .is_some_and(|th| th.st == St::Runnable && th.ready.is_some_and(|c| c != cpu));
        self.charge_waiters(t, cpu, elsewhere.then_some(next));
        if let Some(h) = self.cpus[cpu as usize].hold.take() {
            self.hold_sms.remove(h.sm);
        }
        self.leave_waiters(next);
    }

    /// Thread `tid` now runs on `cpu`: it holds it, in its current state.
    pub(super) fn hold_cpu(&mut self, cpu: u32, tid: u32) {
        if !self.holders || self.ignored(tid) {
            return;
        }
        let Some(th) = self.threads.get(&tid) else {
            return;
        };
        if !matches!(th.st, St::Running | St::Interrupted) {
            return;
        }
        let (sm, run) = (th.sm, th.run);
        let state = match th.sys {
            Some(sc) if sc.seg.is_some() => self.syscall_state(sc.nr, None),
            _ => run,
        };
        self.cpus[cpu as usize].hold = Some(Hold { tid, sm, state });
        self.hold_sms.insert(sm, cpu);
    }

    /// SM `sm` has a record `ev` at `t`: when it holds a CPU and the record
    /// changes its state, the waiters' time so far was held in the state it
    /// leaves.
    #[inline]
    pub(super) fn holder_moves(&mut self, t: u64, sm: Sym, ev: &Event) {
        if let Some(cpu) = self.hold_sms.get(sm) {
            self.holder_moves_on(t, cpu, sm, ev);
        }
    }

    /// [`Builder::holder_moves`] of the holder of `cpu`.
    #[inline(never)]
    fn holder_moves_on(&mut self, t: u64, cpu: u32, sm: Sym, ev: &Event) {
        let next = match *ev {
            Event::State { state, .. } | Event::Wait { state, .. } | Event::Recv { state, .. } => {
                Some(state)
            }
            Event::End { .. } => None,
            _ => return,
        };
        self.charge_waiters(t, cpu, None);
        let c = &mut self.cpus[cpu as usize];
        match (next, c.hold.as_mut()) {
            (Some(state), Some(h)) => h.state = state,
            _ => {
                c.hold = None;
                self.hold_sms.remove(sm);
            }
        }
    }

    /// Charges the wait since their previous node of `cpu`'s waiters (and
    /// of `extra`) to the CPU's holder, or, with no holder, to their own
    /// state (a `held` point on themselves, which blames no one).
    #[inline]
    fn charge_waiters(&mut self, t: u64, cpu: u32, extra: Option<u32>) {
        // Waits already charged up to `t` have nothing more to charge.
        let c = &mut self.cpus[cpu as usize];
        if t <= c.charged_at {
            return;
        }
        c.charged_at = t;
        if extra.is_some() || !c.waiters.is_empty() {
            self.charge_listed(t, cpu, extra);
        }
    }

    /// [`Builder::charge_waiters`] past its first checks: each waiter
    /// still waiting, and `extra`, charged.
    #[inline(never)]
    fn charge_listed(&mut self, t: u64, cpu: u32, extra: Option<u32>) {
        let mut waiters = std::mem::take(&mut self.cpus[cpu as usize].waiters);
        let hold = self.cpus[cpu as usize].hold;
        // Those no longer waiting leave the list as it is walked: one
        // lookup a waiter (charging one changes no thread's `st`: a `held`
        // record moves no holder, see `holder_moves`).
        let mut kept = 0;
        for i in 0..waiters.len() {
            let w = waiters[i];
            let th = self.threads.get(&w).filter(|th| th.st == St::Runnable);
            let Some(&Thread {
                sm, runs, since, ..
            }) = th
            else {
                continue;
            };
            waiters[kept] = w;
            kept += 1;
            self.charge_one(t, (w, sm, runs, since), hold);
        }
        waiters.truncate(kept);
        if let Some((w, th)) = extra.and_then(|w| Some((w, self.threads.get(&w)?))) {
            let (sm, runs, since) = (th.sm, th.runs, th.since);
            self.charge_one(t, (w, sm, runs, since), hold);
        }
        self.cpus[cpu as usize].waiters = waiters;
    }

    /// Charges waiter `w` (SM `sm`, in its run `run`, runnable since
    /// `since`) at `t` to `hold`, or to its own `runnable` state with no
    /// holder of another SM. A holder's state named late (a system call's
    /// segment, named when a tracepoint ends it) may begin before the
    /// waiter became runnable: it waited for none of that time, and is not
    /// charged.
    #[inline]
    fn charge_one(
        &mut self,
        t: u64,
        (w, sm, run, since): (u32, Sym, u32, u64),
        hold: Option<Hold>,
    ) {
        if since > t {
            return;
        }
        let holder = hold.filter(|h| h.sm != sm);
        let (on, on_state) = match holder {
            Some(h) => (h.sm, h.state),
            None => (sm, self.s.runnable),
        };
        let at = self.emit(t, sm, |who| Event::Held {
            who,
            on,
            on_state,
            ended: false,
        });
        if let Some(h) = holder {
            let p = Piece {
                t,
                waiter: w,
                run,
                sm,
                at,
            };
            self.add_piece(h.tid, p);
        }
    }
}

impl Builder {
    /// The earliest time a piece may still be marked: within the reorder
    /// window and not yet released.
    pub(super) fn pieces_floor(&self) -> u64 {
        self.now.saturating_sub(WINDOW_NS).max(self.released)
    }

    /// Piece `p` was held by thread `holder`'s run. Now and then the
    /// pieces that can no longer be marked are forgotten from the front of
    /// its list (so a run that never ends keeps few).
    fn add_piece(&mut self, holder: u32, p: Piece) {
        // One lookup, but when the list doubles.
        let Some(th) = self.threads.get_mut(&holder) else {
            return;
        };
        let n = th.pieces.len();
        if n < 8 || !n.is_power_of_two() {
            th.pieces.push(p);
            return;
        }
        let floor = self.pieces_floor();
        let th = &self.threads[&holder];
        let k = th
            .pieces
            .iter()
            .position(|q| live(&self.threads, q, floor))
            .unwrap_or(n);
        let th = self.threads.get_mut(&holder).expect("looked up");
        th.pieces.drain(..k);
        th.pieces.push(p);
    }

    /// Thread `tid`'s run ends at a block or an exit: the pieces it held
    /// up of waiters still needing a CPU in the run they were charged in
    /// are marked `ended` (the module's doc).
    pub(super) fn run_ended(&mut self, tid: u32) {
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        th.runs = th.runs.wrapping_add(1);
        if th.pieces.is_empty() {
            return;
        }
        let mut pieces = std::mem::take(&mut th.pieces);
        for &p in &pieces {
            let still = waiter_in_run(&self.threads, &p)
                .is_some_and(|w| matches!(w.st, St::Runnable | St::Running | St::Interrupted));
            if still {
                self.mark_ended(p);
            }
        }
        // The list keeps its room for the thread's next run.
        pieces.clear();
        if let Some(th) = self.threads.get_mut(&tid) {
            th.pieces = pieces;
        }
    }

    /// Marks the `held` record of piece `p` in the reorder window, if it
    /// is still there: at the place it went, or after it by as many
    /// records (of earlier times) as were placed before it since.
    fn mark_ended(&mut self, p: Piece) {
        let Some(from) = p.at.and_then(|at| at.checked_sub(self.drained)) else {
            return;
        };
        for r in self.out.range_mut(from as usize..) {
            if r.t < p.t {
                continue;
            }
            if r.t > p.t {
                return;
            }
            if let Event::Held { who, ended, .. } = &mut r.ev {
                if *who == Who::Sm(p.sm) {
                    *ended = true;
                    return;
                }
            }
        }
    }
}
