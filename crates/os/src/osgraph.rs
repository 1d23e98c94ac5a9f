//! The OS execution graph of SPEC §6: kernel events (context switches,
//! wakeups, interrupts, softirqs, timers, packets, system calls), in time
//! order, become §1 records. Threads are SMs `COMM:TID` in states
//! `running`, `runnable` and `blocked:*`; every hard-IRQ handler run,
//! softirq run and timer expiry is one life of an SM of its own whose first
//! node hangs on the link that caused it; wakeups, timer arming, softirq
//! raising and packets are send/recv links.
//!
//! Real traces miss events, so the builder keeps a short reorder window:
//! a transition it can only infer later (a thread seen running while
//! believed blocked; a syscall segment named after the tracepoint that
//! ends it) is placed at its true time inside that window.

use critpath_readers::annot::{Annot, AnnotRecord};
use critpath_trace::{Diagnostic, DiagnosticKind, Event, Interner, LinkId, Record, Sym, Who};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// A thread's name as the kernel keeps it (`TASK_COMM_LEN` bytes).
pub type Comm = [u8; 16];

/// A kernel event the builder understands. Thread ids are kernel tids
/// (0 = the idle task, which is not an SM).
#[derive(Clone, Copy, Debug)]
pub enum KEvent {
    /// `sched_switch`: `prev` leaves the CPU in `prev_state`, `next` runs.
    Switch {
        prev: u32,
        prev_comm: Comm,
        prev_state: u64,
        next: u32,
        next_comm: Comm,
    },
    /// `sched_waking` (or `sched_wakeup` when waking was not recorded).
    Wake {
        tid: u32,
        comm: Comm,
    },
    /// `sched_process_fork`.
    Fork {
        child: u32,
        comm: Comm,
    },
    /// `sched_process_exec` by the sample's thread.
    Exec,
    /// `irq_handler_entry` / `_exit`.
    IrqEntry {
        name: Sym,
    },
    IrqExit,
    /// `softirq_raise` / `_entry` / `_exit`.
    SoftirqRaise {
        vec: u8,
    },
    SoftirqEntry {
        vec: u8,
    },
    SoftirqExit {
        vec: u8,
    },
    /// `hrtimer_start` / `timer_start`: when it expires, in CLOCK_MONOTONIC
    /// ns, when known (hrtimers on the monotonic base): the window its
    /// slack allows, earliest and latest.
    TimerStart {
        timer: u64,
        func: Sym,
        expires: Option<(u64, u64)>,
    },
    /// `hrtimer_expire_entry` / `timer_expire_entry`.
    TimerEntry {
        timer: u64,
        func: Sym,
    },
    TimerExit,
    /// `net_dev_queue`, `net_dev_xmit`, `netif_receive_skb` (and
    /// `netif_rx`): a packet crossing a layer, by `skbaddr`.
    Net {
        skb: u64,
        point: Sym,
        /// The packet's length in bytes (0 where the tracepoint has none).
        len: u32,
    },
    /// `net_dev_start_xmit`, `skb_copy_datagram_iovec` (the packet's data
    /// copied to a receiving thread), `consume_skb` and `kfree_skb` (its
    /// end): for the packet views; the graph does not use them.
    Skb {
        skb: u64,
        point: Sym,
        len: u32,
    },
    /// `sk_data_ready` (data queued to socket `sk`, `ret` 0) and
    /// `sock_recv_length` (a receive on `sk` returned `ret`), with the
    /// socket's protocol (6 TCP, 17 UDP): for the packet views.
    Sock {
        sk: u64,
        ready: bool,
        proto: u16,
        ret: i32,
    },
    /// `raw_syscalls:sys_enter` / `sys_exit`.
    SysEnter {
        nr: u64,
    },
    SysExit,
    /// A function probe (uprobe, kprobe) on the sample's task: `func` is
    /// the state `running:FUNCTION`; `ret` for the return probe.
    Func {
        func: Sym,
        ret: bool,
    },
}

/// One kernel event: when, on which CPU, in which task's context.
#[derive(Clone, Copy, Debug)]
pub struct KRecord {
    pub t: u64,
    pub cpu: u32,
    /// The process (thread group) and task current on the CPU when the
    /// event fired (0 = idle).
    pub pid: u32,
    pub tid: u32,
    pub ev: KEvent,
}

/// Did `sched_switch` take the CPU from a task still runnable (an
/// involuntary switch), rather than one that blocked or exited?
/// `prev_state` holds TASK_REPORT bits (R=0, S=1, D=2, T=4, t=8, X=16,
/// Z=32, P=64, I=128) and 256 for a preempted task.
pub fn preempted(prev_state: u64) -> bool {
    prev_state & 0xff == 0
}

/// Names of the softirq vectors, by number.
pub const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// How long (ns of trace time) records are held back so that inferred
/// transitions can be placed at their true time.
const WINDOW_NS: u64 = 200_000_000;
/// At most this many records are held back, whatever the window says.
const MAX_HELD: usize = 1 << 20;
/// The top bit of link ids the builder makes up (ids annotations use are
/// below it).
pub const INTERNAL_LINK: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// Not seen yet (or its earlier life ended).
    Unknown,
    Running,
    Runnable,
    Blocked,
    /// On its CPU, but an interrupt, softirq or timer runs there instead.
    Interrupted,
}

#[derive(Clone, Copy, Debug)]
struct Syscall {
    nr: u64,
    /// The running segment since this time whose state is not emitted yet
    /// (its name depends on the tracepoint that ends it).
    seg: Option<u64>,
}

/// An annotated SM on a thread's stack (SPEC §7).
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The SM (its name, or `NAME#2`… when the name is busy elsewhere).
    sm: Sym,
    /// The name given to `begin_sm`, and which lane of it this is.
    base: Sym,
    lane: u32,
    /// The `run` state of the SM below, restored when this one ends.
    below_run: Sym,
}

#[derive(Debug)]
struct Thread {
    /// The SM the thread's kernel states go to: the top of its annotation
    /// stack, else the thread's own SM `COMM:TID`.
    sm: Sym,
    /// The state of `sm` while the thread runs: `running`, or the state the
    /// last annotation named.
    run: Sym,
    /// The thread's own SM, `COMM:TID`.
    base: Sym,
    /// Annotated SMs begun on this thread and not ended, innermost last;
    /// each keeps the `run` state of the SM below it.
    stack: Vec<Frame>,
    /// Probed functions the thread is in, innermost last, each with the
    /// `run` state to go back to when it returns.
    funcs: Vec<(Sym, Sym)>,
    st: St,
    since: u64,
    /// The timer this thread armed last while running (for inference).
    armed: Option<u64>,
    sys: Option<Syscall>,
    /// This life has started (or was counted as pre-existing).
    counted: bool,
}

impl Thread {
    /// A thread seen for the first time: its own SM `sm`, no annotated SM,
    /// function or system call yet, in state `st` since `since`.
    fn new(sm: Sym, running: Sym, st: St, since: u64, counted: bool) -> Thread {
        Thread {
            sm,
            run: running,
            base: sm,
            stack: Vec::new(),
            funcs: Vec::new(),
            st,
            since,
            armed: None,
            sys: None,
            counted,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum CtxKind {
    Irq,
    Softirq(u8),
    Timer,
}

#[derive(Clone, Copy, Debug)]
struct Ctx {
    sm: Sym,
    base: Sym,
    lane: u32,
    kind: CtxKind,
}

#[derive(Default, Debug)]
struct Cpu {
    cur: u32,
    ctx: Vec<Ctx>,
    /// A raised, not yet run softirq: its link (and whether anyone sent it).
    raised: [Option<(u64, bool)>; 10],
    /// The thread the outermost interrupt SM interrupted.
    interrupted: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Arm {
    link: u64,
    sent: bool,
    expires: Option<(u64, u64)>,
    func: Sym,
}

/// What the builder counted, for diagnostics.
#[derive(Default, Debug, Clone)]
pub struct Counts {
    pub inferred: u64,
    pub inferred_by_timer: u64,
    pub preexisting: u64,
    pub unknown_waker: u64,
    pub unbalanced: u64,
    pub late: u64,
    pub annot_problems: u64,
}

/// Turns kernel events into §1 records.
pub struct Builder {
    pub strings: Interner,
    sys: Sym,
    /// Final thread names (the last comm seen anywhere in the trace).
    names: FxHashMap<u32, String>,
    threads: FxHashMap<u32, Thread>,
    cpus: Vec<Cpu>,
    lanes: FxHashMap<Sym, Vec<bool>>,
    lane_names: FxHashMap<(Sym, u32), Sym>,
    arms: FxHashMap<u64, Arm>,
    skbs: FxHashMap<u64, (u64, Sym)>,
    next_link: u64,
    out: VecDeque<Record>,
    released: u64,
    now: u64,
    /// The main thread of the recorded command and when it exec'd it: its
    /// events before belong to the recorder and are dropped.
    target: Option<(u32, u64)>,
    target_started: bool,
    /// A system call was seen: segments may be pending.
    syscalls: bool,
    /// SMs in an annotated wait: the kernel's states do not apply to them.
    quiet: FxHashSet<Sym>,
    /// Asyncio tasks (pid, tid, task id) and the key of their stack.
    tasks: FxHashMap<(u32, u64), u32>,
    /// Only annotations, no kernel events: threads do not "predate" anything.
    annotations_only: bool,
    /// Problems with the annotations (unbalanced `end_sm`), the first few
    /// one by one.
    annot_problems: Vec<Diagnostic>,
    /// SMs whose transitions are annotation events, and the process that
    /// wrote them (for the overhead correction).
    annotated: FxHashMap<Sym, u32>,
    pub counts: Counts,
    s: Names,
}

/// Symbols used all the time.
struct Names {
    running: Sym,
    runnable: Sym,
    sleep: Sym,
    io: Sym,
    other: Sym,
    raised: Sym,
    armed: Sym,
    /// Names made of a prefix and another name (see `Builder::prefixed`).
    prefixed: FxHashMap<(&'static str, Sym), Sym>,
    softirq: [Sym; 10],
    syscall_states: FxHashMap<(u64, Option<Sym>), Sym>,
}

impl Builder {
    /// `sys` is the host name; `names` the last comm of each thread;
    /// `target` the recorded command's main thread, if known.
    pub fn new(
        mut strings: Interner,
        sys: &str,
        names: FxHashMap<u32, String>,
        target: Option<(u32, u64)>,
    ) -> Self {
        let softirq = SOFTIRQS.map(|n| strings.intern(&format!("softirq:{n}")));
        let s = Names {
            running: strings.intern("running"),
            runnable: strings.intern("runnable"),
            sleep: strings.intern("blocked:sleep"),
            io: strings.intern("blocked:io"),
            other: strings.intern("blocked:other"),
            raised: strings.intern("raised"),
            armed: strings.intern("armed"),
            prefixed: FxHashMap::default(),
            softirq,
            syscall_states: FxHashMap::default(),
        };
        let sys = strings.intern(sys);
        Builder {
            strings,
            sys,
            names,
            threads: FxHashMap::default(),
            cpus: Vec::new(),
            lanes: FxHashMap::default(),
            lane_names: FxHashMap::default(),
            arms: FxHashMap::default(),
            skbs: FxHashMap::default(),
            next_link: 0,
            out: VecDeque::new(),
            released: 0,
            now: 0,
            target,
            target_started: false,
            syscalls: false,
            quiet: FxHashSet::default(),
            tasks: FxHashMap::default(),
            annotations_only: false,
            annot_problems: Vec::new(),
            annotated: FxHashMap::default(),
            counts: Counts::default(),
            s,
        }
    }

    // ---- output -------------------------------------------------------

    fn emit(&mut self, t: u64, sm: Sym, ev: impl FnOnce(Who) -> Event) {
        let mut t = t;
        if t < self.released {
            t = self.released;
            self.counts.late += 1;
        }
        let ev = ev(Who::Sm(sm));
        // A thread in an annotated wait stays in it whatever the scheduler
        // does: the annotation says what it waits for.
        if !self.quiet.is_empty()
            && self.quiet.contains(&sm)
            && matches!(
                ev,
                Event::State { .. } | Event::Wait { .. } | Event::Recv { .. }
            )
        {
            return;
        }
        let rec = Record {
            t,
            sys: self.sys,
            ev,
        };
        // Nearly always in order: insert from the back.
        let mut i = self.out.len();
        while i > 0 && self.out[i - 1].t > t {
            i -= 1;
        }
        self.out.insert(i, rec);
    }

    fn state(&mut self, t: u64, sm: Sym, state: Sym) {
        self.emit(t, sm, |who| Event::State { who, state });
    }
    fn wait(&mut self, t: u64, sm: Sym, state: Sym) {
        self.emit(t, sm, |who| Event::Wait {
            who,
            state,
            on: None,
            on_sys: None,
            on_state: None,
        });
    }
    fn send(&mut self, t: u64, sm: Sym, link: u64) {
        self.emit(t, sm, |who| Event::Send {
            who,
            id: LinkId::Num(link),
        });
    }
    fn recv(&mut self, t: u64, sm: Sym, link: u64, state: Sym) {
        self.emit(t, sm, |who| Event::Recv {
            who,
            id: LinkId::Num(link),
            state,
        });
    }
    fn end(&mut self, t: u64, sm: Sym) {
        self.emit(t, sm, |who| Event::End { who });
    }
    /// A new link id. The builder's own links have the top bit set, so
    /// they never meet the ids annotations send and receive.
    fn link(&mut self) -> u64 {
        self.next_link += 1;
        INTERNAL_LINK | self.next_link
    }

    /// Records whose place can no longer change, oldest first.
    pub fn pop_ready(&mut self) -> Option<Record> {
        let front = self.out.front()?;
        let full = self.out.len() > MAX_HELD;
        let mut horizon = self.now.saturating_sub(WINDOW_NS);
        if !full && front.t >= horizon {
            return None;
        }
        // Pending syscall segments (only when syscalls were recorded) hold
        // back everything after their start.
        if self.syscalls && !full {
            for th in self.threads.values() {
                if let Some(Syscall { seg: Some(s), .. }) = th.sys {
                    horizon = horizon.min(s);
                }
            }
        }
        if front.t < horizon || full {
            let r = self.out.pop_front()?;
            self.released = self.released.max(r.t);
            return Some(r);
        }
        None
    }

    /// Ends the stream: every pending segment is closed and everything
    /// held back is released by `pop_all`.
    pub fn finish(&mut self) {
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        for tid in tids {
            self.close_segment(tid, None);
        }
    }

    pub fn pop_all(&mut self) -> Option<Record> {
        let r = self.out.pop_front()?;
        self.released = self.released.max(r.t);
        Some(r)
    }

    // ---- threads --------------------------------------------------------

    fn thread(&mut self, tid: u32, comm: Option<&Comm>) -> &mut Thread {
        if !self.threads.contains_key(&tid) {
            let name = match self.names.get(&tid) {
                Some(n) => n.clone(),
                None => {
                    let n = comm
                        .map(|c| {
                            let e = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                            String::from_utf8_lossy(&c[..e]).into_owned()
                        })
                        .unwrap_or_else(|| "?".into());
                    self.names.insert(tid, n.clone());
                    n
                }
            };
            let sm = self.strings.intern(&format!("{name}:{tid}"));
            self.threads
                .insert(tid, Thread::new(sm, self.s.running, St::Unknown, 0, false));
        }
        self.threads.get_mut(&tid).expect("inserted")
    }

    /// Is this thread's event to be ignored (the recorder's child before
    /// it became the target command)?
    fn ignored(&self, tid: u32) -> bool {
        tid == 0 || (self.target.is_some_and(|(t, _)| t == tid) && !self.target_started)
    }

    fn note_first(&mut self, tid: u32) {
        let th = self.threads.get_mut(&tid).expect("known");
        if !th.counted {
            th.counted = true;
            self.counts.preexisting += 1;
        }
    }

    /// The state a running thread is in right now: `running`, or inside a
    /// system call (whose state is emitted when its segment ends).
    fn enter_running(&mut self, tid: u32, t: u64) {
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

    /// Ends the pending syscall segment of `tid` at `t`, naming it after
    /// `point` (the tracepoint that ends it) when there is one.
    fn close_segment(&mut self, tid: u32, point: Option<Sym>) {
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        let Some(sc) = th.sys.as_mut() else { return };
        let Some(start) = sc.seg.take() else { return };
        let (nr, sm) = (sc.nr, th.sm);
        let state = self.syscall_state(nr, point);
        self.state(start, sm, state);
    }

    fn syscall_state(&mut self, nr: u64, point: Option<Sym>) -> Sym {
        if let Some(&s) = self.s.syscall_states.get(&(nr, point)) {
            return s;
        }
        let name = match point {
            Some(p) => format!(
                "running:syscall:{}:{}",
                crate::syscalls::name(nr),
                self.strings.resolve(p)
            ),
            None => format!("running:syscall:{}", crate::syscalls::name(nr)),
        };
        let s = self.strings.intern(&name);
        self.s.syscall_states.insert((nr, point), s);
        s
    }

    /// `tid` is seen on a CPU at `t`: it is running. A thread believed
    /// blocked gets an inferred wakeup (at the expiry of the timer it armed
    /// before sleeping when that is known, else now).
    fn alive(&mut self, tid: u32, t: u64, comm: Option<&Comm>) {
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
                        let base = self.prefixed("timer:", a.func);
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

    /// Who is executing on `cpu` right now: the innermost interrupt SM, or
    /// the current thread.
    fn context(&mut self, cpu: u32, tid: u32, t: u64) -> Option<Sym> {
        if let Some(c) = self.cpus[cpu as usize].ctx.last() {
            return Some(c.sm);
        }
        if self.ignored(tid) {
            return None;
        }
        self.alive(tid, t, None);
        // A syscall segment ends at a point where the thread acts.
        Some(self.threads[&tid].sm)
    }

    fn wake(&mut self, t: u64, cpu: u32, tid: u32, wakee: u32, comm: &Comm) {
        if self.ignored(wakee) {
            return;
        }
        let st = self.thread(wakee, Some(comm)).st;
        if matches!(st, St::Running | St::Runnable | St::Interrupted) {
            return;
        }
        let waker = self.context(cpu, tid, t);
        if st == St::Unknown {
            self.note_first(wakee);
        }
        let th = self.threads.get_mut(&wakee).expect("known");
        th.st = St::Runnable;
        th.since = t;
        th.armed = None;
        let sm = th.sm;
        let runnable = self.s.runnable;
        match waker {
            Some(w) => {
                let l = self.link();
                self.send(t, w, l);
                self.recv(t, sm, l, runnable);
            }
            None => {
                self.counts.unknown_waker += 1;
                self.state(t, sm, runnable);
            }
        }
    }

    fn switch_out(&mut self, t: u64, prev: u32, comm: &Comm, prev_state: u64) {
        if self.ignored(prev) {
            return;
        }
        self.alive(prev, t, Some(comm));
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
            th.st = St::Unknown;
            th.sys = None;
            th.armed = None;
            // A later life of this tid (reuse) is a new thread, not one
            // that predates the recording.
            th.counted = true;
            th.funcs.clear();
            // Annotated SMs still begun end with the thread.
            let frames = std::mem::take(&mut th.stack);
            let base = th.base;
            th.sm = base;
            th.run = self.s.running;
            self.quiet.remove(&base);
            for f in frames.iter().rev() {
                self.quiet.remove(&f.sm);
                self.end(t, f.sm);
                self.free_lane(f.base, f.lane);
            }
            self.end(t, base);
        } else {
            th.st = St::Blocked;
            let state = match s {
                1 => self.s.sleep,
                2 => self.s.io,
                _ => self.s.other,
            };
            self.wait(t, sm, state);
        }
    }

    // ---- interrupt SMs ----------------------------------------------------

    fn take_lane(&mut self, base: Sym) -> (Sym, u32) {
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
                let n = format!("{}#{}", self.strings.resolve(base), lane + 1);
                let s = self.strings.intern(&n);
                self.lane_names.insert((base, lane), s);
                s
            }
        };
        (sm, lane)
    }

    fn free_lane(&mut self, base: Sym, lane: u32) {
        if let Some(l) = self.lanes.get_mut(&base) {
            if let Some(b) = l.get_mut(lane as usize) {
                *b = false;
            }
        }
    }

    /// `PREFIX` + the name `s` stands for (`timer:hrtimer_wakeup`,
    /// `irq:eth0`, `interrupted:softirq:NET_RX`, `sm:stage2`), interned
    /// once.
    fn prefixed(&mut self, prefix: &'static str, s: Sym) -> Sym {
        if let Some(&p) = self.s.prefixed.get(&(prefix, s)) {
            return p;
        }
        let p = self
            .strings
            .intern(&format!("{prefix}{}", self.strings.resolve(s)));
        self.s.prefixed.insert((prefix, s), p);
        p
    }

    /// Starts an interrupt SM's life on `cpu`: its first node hangs on
    /// `cause` (a link, and the state its wait is charged to) when known.
    fn enter_ctx(
        &mut self,
        t: u64,
        cpu: u32,
        tid: u32,
        base: Sym,
        kind: CtxKind,
        cause: Option<(u64, Sym)>,
    ) {
        // The thread it interrupts is `interrupted` meanwhile: that time is
        // not its own work. (No link: the thread resumes on its own chain,
        // so neither the interrupt's cause nor a periodic tick becomes
        // something the thread waits for.)
        if self.cpus[cpu as usize].ctx.is_empty() && !self.ignored(tid) {
            let running = self.threads.get(&tid).filter(|th| th.st == St::Running);
            if let Some(sm) = running.map(|th| th.sm) {
                self.close_segment(tid, None);
                let interrupted = self.prefixed("interrupted:", base);
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
        self.cpus[cpu as usize].ctx.push(Ctx {
            sm,
            base,
            lane,
            kind,
        });
    }

    /// Ends the innermost interrupt SM of `cpu` that `is` accepts, and any
    /// inside it whose exit was lost.
    fn exit_ctx(&mut self, t: u64, cpu: u32, is: impl Fn(&CtxKind) -> bool) {
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

    // ---- the event loop ---------------------------------------------------

    pub fn feed(&mut self, k: &KRecord) {
        if k.t > self.now {
            self.now = k.t;
        }
        let (t, cpu) = (k.t, k.cpu);
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize_with(cpu as usize + 1, Cpu::default);
        }
        if let Some((tid, exec)) = self.target {
            if !self.target_started && t >= exec {
                // The recorded command starts running at its exec.
                self.target_started = true;
                let th = self.thread(tid, None);
                th.counted = true;
                th.st = St::Unknown;
                self.enter_running(tid, exec);
            }
        }
        // The sample's task is on the CPU: a sign of life. In a switch it is
        // `prev`, handled there.
        if !matches!(k.ev, KEvent::Switch { .. }) && self.cpus[cpu as usize].ctx.is_empty() {
            self.alive(k.tid, t, None);
        }
        match k.ev {
            KEvent::Switch {
                prev,
                prev_comm,
                prev_state,
                next,
                next_comm,
            } => {
                // No interrupt is active across a context switch.
                if !self.cpus[cpu as usize].ctx.is_empty() {
                    self.exit_ctx(t, cpu, |_| true);
                    self.counts.unbalanced += 1;
                }
                self.switch_out(t, prev, &prev_comm, prev_state);
                self.cpus[cpu as usize].cur = next;
                self.alive(next, t, Some(&next_comm));
            }
            KEvent::Wake { tid, comm } => self.wake(t, cpu, k.tid, tid, &comm),
            KEvent::Fork { child, comm } => {
                if let Some(parent) = self.context(cpu, k.tid, t) {
                    let l = self.link();
                    self.send(t, parent, l);
                    let th = self.thread(child, Some(&comm));
                    th.st = St::Runnable;
                    th.since = t;
                    th.counted = true;
                    let sm = th.sm;
                    let runnable = self.s.runnable;
                    self.recv(t, sm, l, runnable);
                }
            }
            KEvent::Exec => {}
            KEvent::IrqEntry { name } => {
                let base = self.prefixed("irq:", name);
                self.enter_ctx(t, cpu, k.tid, base, CtxKind::Irq, None);
            }
            KEvent::IrqExit => self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Irq)),
            KEvent::SoftirqRaise { vec } => {
                let v = vec as usize % 10;
                if self.cpus[cpu as usize].raised[v].is_none() {
                    let by = self.context(cpu, k.tid, t);
                    let l = self.link();
                    if let Some(by) = by {
                        self.send(t, by, l);
                    }
                    self.cpus[cpu as usize].raised[v] = Some((l, by.is_some()));
                }
            }
            KEvent::SoftirqEntry { vec } => {
                let v = vec as usize % 10;
                let cause = self.cpus[cpu as usize].raised[v]
                    .take()
                    .filter(|r| r.1)
                    .map(|r| (r.0, self.s.raised));
                let base = self.s.softirq[v];
                self.enter_ctx(t, cpu, k.tid, base, CtxKind::Softirq(vec), cause);
            }
            KEvent::SoftirqExit { vec } => {
                self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Softirq(v) if *v == vec))
            }
            KEvent::TimerStart {
                timer,
                func,
                expires,
            } => {
                let by = self.context(cpu, k.tid, t);
                let l = self.link();
                if let Some(by) = by {
                    self.send(t, by, l);
                }
                self.arms.insert(
                    timer,
                    Arm {
                        link: l,
                        sent: by.is_some(),
                        expires,
                        func,
                    },
                );
                if self.cpus[cpu as usize].ctx.is_empty() && !self.ignored(k.tid) {
                    if let Some(th) = self.threads.get_mut(&k.tid) {
                        th.armed = Some(timer);
                    }
                }
            }
            KEvent::TimerEntry { timer, func } => {
                let cause = self
                    .arms
                    .remove(&timer)
                    .filter(|a| a.sent)
                    .map(|a| (a.link, self.s.armed));
                let base = self.prefixed("timer:", func);
                self.enter_ctx(t, cpu, k.tid, base, CtxKind::Timer, cause);
            }
            KEvent::TimerExit => self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Timer)),
            KEvent::Skb { .. } | KEvent::Sock { .. } => {}
            KEvent::Net { skb, point, .. } => {
                let in_ctx = !self.cpus[cpu as usize].ctx.is_empty();
                let Some(me) = self.context(cpu, k.tid, t) else {
                    return;
                };
                if !in_ctx {
                    // A thread's syscall segment ends at the tracepoint.
                    self.close_segment(k.tid, Some(point));
                    if let Some(sc) = self.threads.get_mut(&k.tid).and_then(|th| th.sys.as_mut()) {
                        sc.seg = Some(t);
                    }
                }
                if let Some(&(l, from)) = self.skbs.get(&skb) {
                    // The packet crosses into an interrupt SM: it depends on it.
                    if from != me && in_ctx {
                        let running = self.s.running;
                        self.recv(t, me, l, running);
                    }
                }
                let l = self.link();
                self.send(t, me, l);
                self.skbs.insert(skb, (l, me));
            }
            KEvent::SysEnter { nr } => {
                if self.ignored(k.tid) || !self.cpus[cpu as usize].ctx.is_empty() {
                    return;
                }
                self.syscalls = true;
                self.close_segment(k.tid, None);
                let th = self.threads.get_mut(&k.tid).expect("alive");
                th.sys = Some(Syscall { nr, seg: Some(t) });
            }
            KEvent::Func { func, ret } => {
                if self.ignored(k.tid) || !self.cpus[cpu as usize].ctx.is_empty() {
                    return;
                }
                self.function(t, k.tid, func, ret);
            }
            KEvent::SysExit => {
                if self.ignored(k.tid) || !self.cpus[cpu as usize].ctx.is_empty() {
                    return;
                }
                let in_sys = self.threads.get(&k.tid).is_some_and(|th| th.sys.is_some());
                if in_sys {
                    self.close_segment(k.tid, None);
                    let th = self.threads.get_mut(&k.tid).expect("alive");
                    th.sys = None;
                    let (sm, run) = (th.sm, th.run);
                    self.state(t, sm, run);
                }
            }
        }
    }

    /// A running thread enters (or returns from) a probed function: its
    /// running state is `running:FUNCTION` meanwhile. Inside a system call
    /// (kernel functions) the call's segment ends there and starts again at
    /// the return.
    fn function(&mut self, t: u64, tid: u32, func: Sym, ret: bool) {
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

    // ---- annotations (SPEC §7) ---------------------------------------------

    /// Builds from annotations alone (no kernel events): every thread runs
    /// from its first annotation on.
    pub fn annotations_only(mut self) -> Self {
        self.annotations_only = true;
        self
    }

    /// The stack key of an annotation's thread or asyncio task, with the
    /// thread created and running.
    fn annot_key(&mut self, a: &AnnotRecord) -> Option<u32> {
        if a.task == 0 {
            if self.ignored(a.tid) {
                return None;
            }
            // The thread makes the call: it is running.
            self.alive(a.tid, a.t, None);
            return Some(a.tid);
        }
        let next = 0x8000_0000 | self.tasks.len() as u32;
        let key = *self.tasks.entry((a.tid, a.task)).or_insert(next);
        if !self.threads.contains_key(&key) {
            let thread = self.names.get(&a.tid).map(String::as_str).unwrap_or("?");
            let name = format!(
                "{thread}:{}/{}",
                a.tid,
                a.task_name.unwrap_or(&format!("task-{}", a.task))
            );
            let sm = self.strings.intern(&name);
            self.threads
                .insert(key, Thread::new(sm, self.s.running, St::Running, a.t, true));
            let running = self.s.running;
            self.state(a.t, sm, running);
        }
        Some(key)
    }

    fn annot_problem(&mut self, d: Diagnostic) {
        self.counts.annot_problems += 1;
        if self.annot_problems.len() < 20 {
            self.annot_problems.push(d);
        }
    }

    /// Applies one annotation, in time order with the kernel events. It
    /// acts on the SM on top of its thread's stack; `begin_sm` and `end_sm`
    /// link the SM below to the one above (a `send` and a wait `sm:NAME`
    /// below, the first node above; the reverse at the end), so the path
    /// runs through the annotated SM while it is begun.
    pub fn feed_annot(&mut self, a: &AnnotRecord) {
        if a.t > self.now {
            self.now = a.t;
        }
        let Some(key) = self.annot_key(a) else {
            return;
        };
        let t = a.t;
        let top = self.threads[&key].sm;
        if self.annotations_only || top != self.threads[&key].base {
            self.annotated.insert(top, a.pid);
        }
        if !matches!(a.what, Annot::Send(_)) {
            self.quiet.remove(&top);
        }
        match a.what {
            Annot::BeginSm(name) => {
                let base = self.strings.intern(name);
                let wait = self.prefixed("sm:", base);
                let (sm, lane) = self.take_lane(base);
                self.annotated.insert(sm, a.pid);
                let l = self.link();
                self.send(t, top, l);
                self.wait(t, top, wait);
                let running = self.s.running;
                self.recv(t, sm, l, running);
                let th = self.threads.get_mut(&key).expect("known");
                th.stack.push(Frame {
                    sm,
                    base,
                    lane,
                    below_run: th.run,
                });
                th.sm = sm;
                th.run = running;
            }
            Annot::EndSm(name) => {
                let th = &self.threads[&key];
                let Some(pos) = th
                    .stack
                    .iter()
                    .rposition(|f| self.strings.resolve(f.base) == name)
                else {
                    let msg = format!(
                        "end_sm(\"{name}\") at t={t} on {} but no SM of that name was begun on that thread; ignored",
                        self.strings.resolve(th.base)
                    );
                    self.annot_problem(Diagnostic::new(DiagnosticKind::StackMismatch, msg).time(t));
                    return;
                };
                if pos + 1 != th.stack.len() {
                    let msg = format!(
                        "end_sm(\"{name}\") at t={t} on {} while {} is on top of its stack; the SMs above it end here too",
                        self.strings.resolve(th.base),
                        self.strings.resolve(th.sm)
                    );
                    self.annot_problem(Diagnostic::new(DiagnosticKind::StackMismatch, msg).time(t));
                }
                while self.threads[&key].stack.len() > pos {
                    let th = self.threads.get_mut(&key).expect("known");
                    let f = th.stack.pop().expect("len > pos");
                    th.sm = th.stack.last().map(|f| f.sm).unwrap_or(th.base);
                    th.run = f.below_run;
                    let (below, run) = (th.sm, th.run);
                    self.quiet.remove(&f.sm);
                    let l = self.link();
                    self.send(t, f.sm, l);
                    self.end(t, f.sm);
                    self.free_lane(f.base, f.lane);
                    self.recv(t, below, l, run);
                }
            }
            Annot::State(name) => {
                let s = self.strings.intern(name);
                self.state(t, top, s);
                self.threads.get_mut(&key).expect("known").run = s;
            }
            Annot::Wait {
                state,
                on,
                on_state,
            } => {
                let state = self.strings.intern(state);
                let on = on.map(|s| self.strings.intern(s));
                let on_state = on_state.map(|s| self.strings.intern(s));
                self.emit(t, top, |who| Event::Wait {
                    who,
                    state,
                    on,
                    on_sys: None,
                    on_state,
                });
                self.threads.get_mut(&key).expect("known").run = state;
                self.quiet.insert(top);
            }
            Annot::Send(id) => self.emit(t, top, |who| Event::Send {
                who,
                id: LinkId::Num(id & !INTERNAL_LINK),
            }),
            Annot::Recv { id, state } => {
                let s = self.strings.intern(state);
                self.emit(t, top, |who| Event::Recv {
                    who,
                    id: LinkId::Num(id & !INTERNAL_LINK),
                    state: s,
                });
                self.threads.get_mut(&key).expect("known").run = s;
            }
        }
    }

    /// The annotated SMs whose process measured its cost per event.
    pub fn annotation_costs(
        &self,
        calibration: &FxHashMap<u32, (f64, String)>,
    ) -> Vec<critpath_trace::AnnotationCost> {
        let sys = self.strings.resolve(self.sys);
        let mut v: Vec<_> = self
            .annotated
            .iter()
            .filter_map(|(&sm, pid)| {
                calibration
                    .get(pid)
                    .map(|c| critpath_trace::AnnotationCost {
                        sys: sys.to_string(),
                        sm: self.strings.resolve(sm).to_string(),
                        ns_per_event: c.0,
                    })
            })
            .collect();
        v.sort_by(|a, b| a.sm.cmp(&b.sm));
        v
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
                "{} thread(s) were seen running while believed blocked: the events of their wakeup were lost (some kernels deliver nothing from an idle CPU's context); {} were placed at the expiry of the timer the thread had armed, the rest at the thread's first sign of life",
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
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(s: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    fn switch(t: u64, cpu: u32, prev: u32, prev_state: u64, next: u32) -> KRecord {
        KRecord {
            t,
            cpu,
            pid: prev,
            tid: prev,
            ev: KEvent::Switch {
                prev,
                prev_comm: comm(if prev == 0 { "swapper" } else { "app" }),
                prev_state,
                next,
                next_comm: comm(if next == 0 { "swapper" } else { "app" }),
            },
        }
    }

    /// A thread sleeps on a timer whose expiry was lost (an idle CPU): it
    /// is woken at the expiry, which its slack may put before the latest
    /// expiry the timer was armed with.
    #[test]
    fn a_lost_timer_expiry_is_inferred_within_the_timers_slack() {
        let mut strings = Interner::new();
        let func = strings.intern("hrtimer_wakeup");
        let mut b = Builder::new(strings, "host", FxHashMap::default(), None);
        b.feed(&switch(10, 0, 0, 0, 5));
        b.feed(&KRecord {
            t: 20,
            cpu: 0,
            pid: 5,
            tid: 5,
            ev: KEvent::TimerStart {
                timer: 0xabc,
                func,
                expires: Some((100, 150)),
            },
        });
        b.feed(&switch(30, 0, 5, 1, 0));
        // Seen running at 120: inside the slack window, before the latest
        // expiry.
        b.feed(&switch(120, 1, 0, 0, 5));
        b.finish();
        let mut recs = Vec::new();
        while let Some(r) = b.pop_all() {
            recs.push(r);
        }
        assert_eq!(b.counts.inferred_by_timer, 1, "{:?}", b.counts);
        let app = b.strings.get("app:5").expect("thread SM");
        let woke = recs.iter().find(|r| {
            matches!(r.ev, Event::Recv { who: Who::Sm(s), state, .. }
                if s == app && b.strings.resolve(state) == "runnable")
        });
        assert_eq!(woke.map(|r| r.t), Some(120), "{recs:?}");
    }
}
