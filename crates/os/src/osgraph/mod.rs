//! The OS execution graph (docs/os-graph.md): kernel events (context
//! switches, wakeups, interrupts, softirqs, timers, packets, system calls),
//! in time order, become records. Threads are SMs `COMM:TID` in states
//! `running`, `runnable` and `blocked:*`; every hard-IRQ handler run,
//! softirq run and timer expiry is one life of an SM of its own whose first
//! node hangs on the link that caused it; wakeups, timer arming, softirq
//! raising and packets are send/recv links.
//!
//! Real traces miss events, so the builder keeps a short reorder window:
//! a transition it can only infer later (a thread seen running while
//! believed blocked; a syscall segment named after the tracepoint that
//! ends it) is placed at its true time inside that window.

mod annotations;
mod calls;
mod holders;
mod inference;
mod interrupts;
mod threads;
mod window;

use crate::names::{Blocked, OsSm, OsState};
use annotations::annotated_wait;
pub use critpath_readers::perf::kevent::{preempted, Comm, KEvent, KRecord, SOFTIRQS};
use critpath_trace::{Diagnostic, Interner, Record, Sym};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// How long (ns of trace time) records are held back at most so that
/// inferred transitions can be placed at their true time.
const WINDOW_NS: u64 = 200_000_000;
/// How long they are held back at least: the events of different CPUs
/// may come a little out of order.
const SLACK_NS: u64 = 2_000_000;
/// At most this many records are held back, whatever the window says.
const MAX_HELD: usize = 1 << 20;
/// Pieces of waits that a holder's run may still mark `ended` hold the
/// window back only while it holds fewer records than this (a dense
/// recording's window stays a few MB deep).
const PIECES_HELD: usize = 1 << 16;
/// System call numbers whose plain segment's state is kept in an array.
const PLAIN_SYSCALLS: usize = 1024;
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

/// An annotated SM on a thread's stack (docs/os-graph.md).
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
    /// The timers this thread armed while running since it last woke
    /// (for inference).
    armed: Armed,
    sys: Option<Syscall>,
    /// This life has started (or was counted as pre-existing).
    counted: bool,
    /// Runnable, waiting for this CPU (docs/os-graph.md, "Waiting for a
    /// CPU").
    ready: Option<u32>,
    /// A thread of the recorded program: its command's thread, or forked
    /// by one.
    program: bool,
    /// Its runs so far: a run ends when it blocks or exits (a preemption
    /// does not end it).
    runs: u32,
    /// The pieces of waits charged to its current run, oldest first
    /// (docs/os-graph.md, "What-ifs on a shared CPU").
    pieces: Vec<holders::Piece>,
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
            armed: Armed::default(),
            sys: None,
            counted,
            ready: None,
            program: false,
            runs: 0,
            pieces: Vec::new(),
        }
    }
}

/// The last timers a thread armed while running, newest first: a sleep
/// arms the timer that wakes it, then the scheduler may arm its own (the
/// deadline server's `dl_task_timer`) in the thread's context before the
/// thread switches out.
#[derive(Clone, Copy, Debug, Default)]
struct Armed([Option<u64>; 3]);

impl Armed {
    /// `timer` was armed (again): it goes first.
    fn push(&mut self, timer: u64) {
        let last = self.0.len() - 1;
        let at = self.0.iter().position(|&p| p == Some(timer));
        self.0[..=at.unwrap_or(last)].rotate_right(1);
        self.0[0] = Some(timer);
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().flatten().copied()
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
    /// Its chain of causes goes back to a thread: it was raised, armed or
    /// sent by one (or by an interrupt so explained). A hard IRQ's cause
    /// (a device, a remote peer) is never seen.
    explained: bool,
}

#[derive(Default, Debug)]
struct Cpu {
    /// The thread on it as its events say (0: the idle task): the `next`
    /// of its last switch, or a thread seen there since (whose switch-in
    /// was lost); `None` before its first switch.
    cur: Option<u32>,
    ctx: Vec<Ctx>,
    /// A raised, not yet run softirq: its link (and whether anyone sent it).
    raised: [Option<Raise>; 10],
    /// The thread the outermost interrupt SM interrupted.
    interrupted: Option<u32>,
    /// Runnable threads waiting for this CPU (docs/os-graph.md).
    waiters: Vec<u32>,
    /// The thread holding this CPU, as its records say.
    hold: Option<holders::Hold>,
    /// Its waiters' waits are charged up to this time.
    charged_at: u64,
    /// The time of its latest event, and of the one before (while an
    /// event is fed: the latest before it).
    last_event: u64,
    before_event: u64,
}

impl Cpu {
    /// Its events say it runs the idle task.
    fn idle(&self) -> bool {
        self.cur == Some(0)
    }
}

/// A softirq vector raised on a CPU and not yet run: the link its run hangs
/// on, whether it was sent (the raiser was known) and explained (see `Ctx`).
#[derive(Clone, Copy, Debug)]
struct Raise {
    link: u64,
    sent: bool,
    explained: bool,
}

#[derive(Clone, Copy, Debug)]
struct Arm {
    link: u64,
    sent: bool,
    /// Armed by a thread, or by an explained interrupt (see `Ctx`).
    explained: bool,
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
    /// Wakeups done by interrupts whose chain of causes is not seen (see
    /// `Ctx::explained`).
    pub uncaused_wakeups: u64,
    /// Wakeups that the event's flags place in an interrupt, on a CPU
    /// where no interrupt was seen to begin: the recording lacks them.
    pub unrecorded_interrupts: u64,
    /// Interrupt runs seen (hard IRQs, softirqs, timer expiries): whether
    /// the recording has interrupt events at all.
    pub interrupts_seen: u64,
    pub unbalanced: u64,
    pub late: u64,
    pub annot_problems: u64,
    /// Threads woken by their timer whose lost switch-in came from an idle
    /// CPU: they ran from the expiry (see `inference`).
    pub ran_when_woken: u64,
    /// Per thread SM: its switch-ins that were lost (see `inference`).
    pub lost_switch_ins: std::collections::BTreeMap<Sym, LostSwitchIns>,
}

/// A thread's lost switch-ins: how many times it was seen running while
/// believed runnable, how many of these on an idle CPU its wakeup was for
/// (it ran from the CPU's last visible event), and for the others the time
/// since their CPU's last visible event, which may have been its running.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostSwitchIns {
    pub seen: u64,
    pub on_idle_cpu: u64,
    pub at_stake_ns: u64,
}

/// Turns kernel events into records.
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
    /// How many records have left `out` (from its front).
    drained: u64,
    released: u64,
    now: u64,
    /// What `drain_ready` may release up to, until the next event fed.
    horizon: Option<u64>,
    /// The main thread of the recorded command and when it exec'd it: its
    /// events before belong to the recorder and are dropped.
    target: Option<(u32, u64)>,
    target_started: bool,
    /// The own SMs of the recorded program's threads, in the order they
    /// joined it.
    program: Vec<Sym>,
    /// Charge waits for a CPU to its holders ([`Builder::charge_cpu_holders`]).
    holders: bool,
    /// The SMs of the threads holding a CPU, and the CPU.
    hold_sms: holders::HoldSms,
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
    /// The timer callbacks that wake the task that armed them (a sleep's
    /// `hrtimer_wakeup`, `schedule_timeout`'s `process_timeout`).
    sleeper_wakeups: [Sym; 2],
    /// Names derived from another name (see `Builder::derived`).
    derived: FxHashMap<(Derived, Sym), Sym>,
    softirq: [Sym; 10],
    /// The state of a segment of each system call that no tracepoint ended,
    /// by its number (the common case, looked up on every `sys_exit`).
    syscall_plain: Vec<Option<Sym>>,
    syscall_states: FxHashMap<(u64, Option<Sym>), Sym>,
}

/// The kinds of names derived from another name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Derived {
    /// `irq:NAME` from the handler's name.
    Irq,
    /// `timer:FUNCTION` from the callback's name.
    Timer,
    /// `running:FUNCTION` from a probed function's name.
    Function,
    /// `interrupted:SM` from an interrupt SM's name.
    Interrupted,
    /// `sm:NAME` from an annotated SM's name.
    SmWait,
}

impl Names {
    fn new(strings: &mut Interner) -> Names {
        let softirq = SOFTIRQS.map(|n| strings.intern(&OsSm::Softirq(n).to_string()));
        let mut state = |s: OsState| strings.intern(&s.to_string());
        let running = state(OsState::Running);
        let runnable = state(OsState::Runnable);
        let sleep = state(OsState::Blocked(Blocked::Sleep));
        let io = state(OsState::Blocked(Blocked::Io));
        let other = state(OsState::Blocked(Blocked::Other));
        let raised = state(OsState::Raised);
        let armed = state(OsState::Armed);
        let sleeper_wakeups = ["hrtimer_wakeup", "process_timeout"].map(|f| strings.intern(f));
        Names {
            sleeper_wakeups,
            softirq,
            running,
            runnable,
            sleep,
            io,
            other,
            raised,
            armed,
            derived: FxHashMap::default(),
            syscall_plain: vec![None; PLAIN_SYSCALLS],
            syscall_states: FxHashMap::default(),
        }
    }
}

impl Builder {
    /// Whether the graph charges a thread's wait for a CPU to the CPU's
    /// holders (docs/os-graph.md, "Waiting for a CPU"): on unless the
    /// settings say otherwise (a runnable thread's wait is then its own
    /// `runnable` time). Before the first event.
    pub fn charge_cpu_holders(&mut self, on: bool) {
        self.holders = on;
    }

    /// See [`Builder::charge_cpu_holders`].
    pub fn holders(&self) -> bool {
        self.holders
    }

    /// `sys` is the host name; `names` the last comm of each thread;
    /// `target` the recorded command's main thread, if known.
    pub fn new(
        mut strings: Interner,
        sys: &str,
        names: FxHashMap<u32, String>,
        target: Option<(u32, u64)>,
    ) -> Self {
        let s = Names::new(&mut strings);
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
            drained: 0,
            released: 0,
            now: 0,
            horizon: None,
            target,
            target_started: false,
            program: Vec::new(),
            holders: true,
            hold_sms: holders::HoldSms::default(),
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

    /// One kernel event, in time order (per CPU; across CPUs within the
    /// reorder window).
    pub fn feed(&mut self, k: &KRecord) {
        self.horizon = None;
        if k.t > self.now {
            self.now = k.t;
        }
        let (t, cpu) = (k.t, k.cpu);
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize_with(cpu as usize + 1, Cpu::default);
        }
        let c = &mut self.cpus[cpu as usize];
        c.before_event = std::mem::replace(&mut c.last_event, t);
        self.start_target(t);
        // A system call of a running thread, nearly every event of a
        // recording with `--syscalls`: with one lookup of the thread.
        let call = match k.ev {
            KEvent::SysEnter { nr } => Some(Some(nr)),
            KEvent::SysExit => Some(None),
            _ => None,
        };
        if call.is_some_and(|enter| self.running_call(t, cpu, k.tid, enter)) {
            return;
        }
        // The sample's task is on the CPU: a sign of life. In a switch it is
        // `prev`, handled there.
        if !matches!(k.ev, KEvent::Switch { .. }) && self.in_thread(cpu) {
            self.seen_on(cpu, k.tid, t, None);
        }
        match k.ev {
            KEvent::Switch {
                prev,
                prev_comm,
                prev_state,
                next,
                next_comm,
            } => self.switch(t, cpu, (prev, &prev_comm, prev_state), (next, &next_comm)),
            KEvent::Wake {
                tid,
                comm,
                target,
                in_irq,
            } => self.wake(t, (cpu, target, in_irq), k.tid, tid, &comm),
            KEvent::Fork { child, comm } => self.fork(t, cpu, k.tid, child, &comm),
            // Signs of life only (above): a thread believed blocked that
            // exits, or fires any tracepoint, is alive (docs/os-graph.md).
            KEvent::Exec
            | KEvent::Exit
            | KEvent::Other
            | KEvent::Skb { .. }
            | KEvent::Sock { .. } => {}
            KEvent::IrqEntry { name } => {
                let base = self.derived(Derived::Irq, name);
                self.enter_ctx(t, cpu, k.tid, (base, CtxKind::Irq), None, false);
            }
            KEvent::IrqExit => self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Irq)),
            KEvent::SoftirqRaise { vec } => self.softirq_raise(t, cpu, k.tid, vec),
            KEvent::SoftirqEntry { vec } => self.softirq_entry(t, cpu, k.tid, vec),
            KEvent::SoftirqExit { vec } => {
                self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Softirq(v) if *v == vec))
            }
            KEvent::TimerStart {
                timer,
                func,
                expires,
            } => self.timer_start(t, cpu, k.tid, timer, func, expires),
            KEvent::TimerEntry { timer, func } => self.timer_entry(t, cpu, k.tid, timer, func),
            KEvent::TimerExit => self.exit_ctx(t, cpu, |k| matches!(k, CtxKind::Timer)),
            KEvent::Net { skb, point, .. } => self.net(t, cpu, k.tid, skb, point),
            KEvent::SysEnter { nr } => self.sys_call(t, cpu, k.tid, Some(nr)),
            KEvent::SysExit => self.sys_call(t, cpu, k.tid, None),
            KEvent::Func { func, ret } => {
                if self.ignored(k.tid) || !self.in_thread(cpu) {
                    return;
                }
                let func = self.derived(Derived::Function, func);
                self.function(t, k.tid, func, ret);
            }
        }
    }

    /// No interrupt SM runs on `cpu`: its current thread is executing.
    fn in_thread(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize].ctx.is_empty()
    }

    /// The name derived from `s` (`irq:eth0`, `timer:hrtimer_wakeup`,
    /// `interrupted:softirq:NET_RX`, `running:compute`, `sm:stage2`),
    /// interned once.
    fn derived(&mut self, kind: Derived, s: Sym) -> Sym {
        if let Some(&p) = self.s.derived.get(&(kind, s)) {
            return p;
        }
        let n = self.strings.resolve(s);
        let name = match kind {
            Derived::Irq => OsSm::Irq(n).to_string(),
            Derived::Timer => OsSm::Timer(n).to_string(),
            Derived::Function => OsState::Function(n).to_string(),
            Derived::Interrupted => match OsSm::parse(n) {
                Some(sm) => OsState::Interrupted(sm).to_string(),
                None => format!("interrupted:{n}"),
            },
            Derived::SmWait => annotated_wait(n),
        };
        let p = self.strings.intern(&name);
        self.s.derived.insert((kind, s), p);
        p
    }
}

#[cfg(test)]
mod tests;
