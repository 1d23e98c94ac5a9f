//! System calls, packets and probed functions: a thread's running time
//! inside a system call is cut into segments named
//! `running:syscall:NAME[:LAYER]` after the tracepoint that ends them,
//! packets are links from layer to layer, and a probed function makes its
//! thread `running:FUNCTION`.

use super::{Builder, St, Syscall, Thread, PLAIN_SYSCALLS};
use crate::names::OsState;
use critpath_trace::Sym;

impl Builder {
    /// Ends the pending syscall segment of `tid` at `t`, naming it after
    /// `point` (the tracepoint that ends it) when there is one.
    pub(super) fn close_segment(&mut self, tid: u32, point: Option<Sym>) {
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        let Some(sc) = th.sys.as_mut() else { return };
        let Some(start) = sc.seg.take() else { return };
        let (nr, sm) = (sc.nr, th.sm);
        self.segment(sm, nr, start, point);
    }

    /// SM `sm`'s segment of system call `nr` from `start`, named after
    /// `point` when a tracepoint ended it.
    fn segment(&mut self, sm: Sym, nr: u64, start: u64, point: Option<Sym>) {
        let state = self.syscall_state(nr, point);
        self.state(start, sm, state);
    }

    pub(super) fn syscall_state(&mut self, nr: u64, point: Option<Sym>) -> Sym {
        let plain = usize::try_from(nr)
            .ok()
            .filter(|&n| n < PLAIN_SYSCALLS && point.is_none());
        if let Some(s) = plain.and_then(|n| self.s.syscall_plain[n]) {
            return s;
        }
        if let Some(&s) = self.s.syscall_states.get(&(nr, point)) {
            return s;
        }
        let call = crate::syscalls::name(nr);
        let state = OsState::Syscall {
            name: &call,
            layer: point.map(|p| self.strings.resolve(p)),
        };
        let s = self.strings.intern(&state.to_string());
        match plain {
            Some(n) => self.s.syscall_plain[n] = Some(s),
            None => _ = self.s.syscall_states.insert((nr, point), s),
        }
        s
    }

    /// A running thread enters (or returns from) a probed function (`func`
    /// is its state `running:FUNCTION`) meanwhile. Inside a system call
    /// (kernel functions) the call's segment ends there and starts again at
    /// the return.
    pub(super) fn function(&mut self, t: u64, tid: u32, func: Sym, ret: bool) {
        self.close_segment(tid, None);
        let th = self.threads.get_mut(&tid).expect("alive");
        if ret {
            // A return whose entry was lost (or predates the recording) is
            // ignored; one that skips frames (longjmp) pops them.
            let Some(pos) = th.funcs.iter().rposition(|f| f.0 == func) else {
                return;
            };
            th.run = th.funcs[pos].1;
            th.funcs.truncate(pos);
        } else {
            th.funcs.push((func, th.run));
            th.run = func;
        }
        let (sm, run) = (th.sm, th.run);
        match th.sys.as_mut() {
            Some(sc) if ret && th.funcs.is_empty() => sc.seg = Some(t),
            _ => self.state(t, sm, run),
        }
    }

    /// A packet crosses a layer (`skb`, at tracepoint `point`): it leaves
    /// whoever runs, and an interrupt SM it crosses into depends on it.
    pub(super) fn net(&mut self, t: u64, cpu: u32, tid: u32, skb: u64, point: Sym) {
        let in_ctx = !self.in_thread(cpu);
        let Some(me) = self.context(cpu, tid, t) else {
            return;
        };
        if !in_ctx {
            // A thread's syscall segment ends at the tracepoint.
            self.close_segment(tid, Some(point));
            if let Some(sc) = self.threads.get_mut(&tid).and_then(|th| th.sys.as_mut()) {
                sc.seg = Some(t);
            }
        }
        if let Some(&(l, from)) = self.skbs.get(&skb) {
            if from != me && in_ctx {
                let running = self.s.running;
                self.recv(t, me, l, running);
            }
        }
        let l = self.link();
        self.send(t, me, l);
        self.skbs.insert(skb, (l, me));
    }

    /// `sys_enter` (`Some(nr)`: the thread's running segments are named
    /// after the call) or `sys_exit` (`None`: the last segment ends; the
    /// thread runs on as before), after the event's sign of life.
    pub(super) fn sys_call(&mut self, t: u64, cpu: u32, tid: u32, enter: Option<u64>) {
        if self.ignored(tid) || !self.in_thread(cpu) {
            return;
        }
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        self.syscalls |= enter.is_some();
        let end = call_on(th, t, enter);
        self.close_call(t, end);
    }

    /// [`Self::sys_call`] of `tid` believed running (nearly every one; on
    /// this CPU, or on another when its migration was lost), with its sign
    /// of life and one lookup. False when not so: `feed` then takes the
    /// general way, a sign of life then [`Self::sys_call`].
    #[inline]
    pub(super) fn running_call(&mut self, t: u64, cpu: u32, tid: u32, enter: Option<u64>) -> bool {
        if self.ignored(tid) || !self.in_thread(cpu) {
            return false;
        }
        let Some(th) = self.threads.get_mut(&tid) else {
            return false;
        };
        if !matches!(th.st, St::Running | St::Interrupted) {
            return false;
        }
        // What a sign of life of a running thread does.
        self.cpus[cpu as usize].cur = Some(tid);
        self.syscalls |= enter.is_some();
        let end = call_on(th, t, enter);
        self.close_call(t, end);
        true
    }

    /// Emits what a call's entry or exit at `t` ended: a pending segment,
    /// and at an exit the thread's `run` state.
    fn close_call(&mut self, t: u64, end: CallEnd) {
        if let Some((sm, nr, start)) = end.segment {
            self.segment(sm, nr, start, None);
        }
        if let Some((sm, run)) = end.runs_on {
            self.state(t, sm, run);
        }
    }
}

/// What a system call's entry or exit ends: the pending segment of the call
/// the thread was in (its SM, call and start), and at an exit the state it
/// goes on running in (its SM and `run`).
struct CallEnd {
    segment: Option<(Sym, u64, u64)>,
    runs_on: Option<(Sym, Sym)>,
}

/// Thread `th` enters system call `nr` at `t` (`Some(nr)`) or leaves the
/// one it is in (`None`; nothing when in none). A segment still pending at
/// an entry is the call before, its exit lost: it ends there, as
/// `close_segment` ends it.
fn call_on(th: &mut Thread, t: u64, enter: Option<u64>) -> CallEnd {
    let before = match enter {
        Some(nr) => th.sys.replace(Syscall { nr, seg: Some(t) }),
        None => th.sys.take(),
    };
    let segment = before.and_then(|sc| Some((th.sm, sc.nr, sc.seg?)));
    let runs_on = (enter.is_none() && before.is_some()).then_some((th.sm, th.run));
    CallEnd { segment, runs_on }
}
