//! The names of the OS execution graph (docs/os-graph.md), as types: the
//! state machines ([`OsSm`]: threads `COMM:TID`, `irq:NAME`,
//! `softirq:NAME`, `timer:FUNCTION`) and their states ([`OsState`]:
//! `running`, `runnable`, `blocked:*`, `running:syscall:NAME[:LAYER]`,
//! `running:FUNCTION`, `interrupted:SM`, and the `raised`/`armed` waits of
//! interrupt SMs). `Display` is the only place these names are written and
//! `parse` the only place they are read back.

use std::borrow::Cow;
use std::fmt;

/// A state machine of the OS graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsSm<'a> {
    /// A thread: its (last) command name and its kernel tid.
    Thread { comm: &'a str, tid: u32 },
    /// A hard-IRQ handler, by the name the kernel gives its action.
    Irq(&'a str),
    /// A softirq vector, by name (`NET_RX`).
    Softirq(&'a str),
    /// A timer's expiry, by its callback.
    Timer(&'a str),
    /// An asyncio task of a thread, by the task's name.
    Task {
        comm: &'a str,
        tid: u32,
        task: &'a str,
    },
}

const IRQ: &str = "irq:";
const SOFTIRQ: &str = "softirq:";
const TIMER: &str = "timer:";

impl fmt::Display for OsSm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OsSm::Thread { comm, tid } => write!(f, "{comm}:{tid}"),
            OsSm::Irq(n) => write!(f, "{IRQ}{n}"),
            OsSm::Softirq(n) => write!(f, "{SOFTIRQ}{n}"),
            OsSm::Timer(n) => write!(f, "{TIMER}{n}"),
            OsSm::Task { comm, tid, task } => write!(f, "{comm}:{tid}/{task}"),
        }
    }
}

impl<'a> OsSm<'a> {
    /// The SM a name stands for; `None` for names the OS graph does not
    /// make. An interrupt SM's prefix wins over a thread's name (a thread
    /// `irq` would be `irq:TID`, which reads as an interrupt).
    pub fn parse(name: &'a str) -> Option<OsSm<'a>> {
        if let Some(n) = name.strip_prefix(IRQ) {
            return Some(OsSm::Irq(n));
        }
        if let Some(n) = name.strip_prefix(SOFTIRQ) {
            return Some(OsSm::Softirq(n));
        }
        if let Some(n) = name.strip_prefix(TIMER) {
            return Some(OsSm::Timer(n));
        }
        if let Some(tid) = thread_id(name) {
            let comm = &name[..name.len() - tid.1];
            return Some(OsSm::Thread {
                comm: &comm[..comm.len() - 1],
                tid: tid.0,
            });
        }
        Self::parse_task(name)
    }

    /// `COMM:TID/TASK`: the first `/` after which a thread's name ends.
    fn parse_task(name: &'a str) -> Option<OsSm<'a>> {
        name.match_indices('/').find_map(|(at, _)| {
            let (thread, task) = (&name[..at], &name[at + 1..]);
            let (tid, digits) = thread_id(thread)?;
            let comm = &thread[..thread.len() - digits - 1];
            Some(OsSm::Task { comm, tid, task })
        })
    }

    /// The tid of a thread SM.
    pub fn tid(&self) -> Option<u32> {
        match self {
            OsSm::Thread { tid, .. } => Some(*tid),
            _ => None,
        }
    }
}

/// The tid of a name `COMM:TID` and how many digits it has.
fn thread_id(name: &str) -> Option<(u32, usize)> {
    let (comm, tid) = name.rsplit_once(':')?;
    if comm.is_empty() || tid.is_empty() || !tid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((tid.parse().ok()?, tid.len()))
}

/// The tid of a thread SM's name `COMM:TID` (even one that reads as an
/// interrupt SM, like `irq:12`, which no interrupt SM is).
pub fn thread_tid(name: &str) -> Option<u32> {
    thread_id(name).map(|t| t.0)
}

/// The command name and tid of a name `COMM:TID` (as [`thread_tid`]).
pub fn parse_thread(name: &str) -> Option<(&str, u32)> {
    let (tid, digits) = thread_id(name)?;
    Some((&name[..name.len() - digits - 1], tid))
}

/// The name of an SM's second, third … concurrent life (`irq:eth0#2`):
/// `lane` counts from 0, which is the SM itself.
pub fn lane_name(base: &str, lane: u32) -> String {
    format!("{base}#{}", lane + 1)
}

/// Why a thread is blocked, from `sched_switch`'s `prev_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// Interruptible sleep (`S`).
    Sleep,
    /// Uninterruptible sleep (`D`), mostly I/O.
    Io,
    /// Anything else (stopped, traced, parked, idle).
    Other,
}

impl Blocked {
    const ALL: [(Blocked, &'static str); 3] = [
        (Blocked::Sleep, "sleep"),
        (Blocked::Io, "io"),
        (Blocked::Other, "other"),
    ];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|b| b.0 == self).expect("listed").1
    }
}

/// A state of an OS graph SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsState<'a> {
    /// On a CPU, in user space or in the kernel outside a known call.
    Running,
    /// Ready, waiting for a CPU.
    Runnable,
    Blocked(Blocked),
    /// A running segment inside system call `name`; `layer` names the
    /// tracepoint the segment ended at (`net_dev_queue`).
    Syscall {
        name: &'a str,
        layer: Option<&'a str>,
    },
    /// Running inside a probed function.
    Function(&'a str),
    /// On its CPU, but the interrupt SM `by` runs there instead.
    Interrupted(OsSm<'a>),
    /// An interrupt SM's wait for the softirq raise that caused it.
    Raised,
    /// An interrupt SM's wait for the timer arming that caused it.
    Armed,
}

const RUNNING: &str = "running";
const RUNNABLE: &str = "runnable";

/// How a what-if spreads in the OS graph (docs/os-graph.md, "What-ifs on
/// a shared CPU"): a thread's wait for a CPU scales with its own running
/// time. Under the kernel's fair share a thread that asks for half the
/// CPU time is queued half as often, so its `runnable` time, its own or
/// charged to the CPU's holders, shrinks with its `running`.
pub const SCALES_WITH: &[critpath_trace::ScalesWith] = &[critpath_trace::ScalesWith {
    state: Cow::Borrowed(RUNNABLE),
    with: Cow::Borrowed(RUNNING),
}];
const SYSCALL: &str = "running:syscall:";
/// The state all `blocked:*` states are sub-states of.
pub const BLOCKED: &str = "blocked";
const INTERRUPTED: &str = "interrupted:";

impl fmt::Display for OsState<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OsState::Running => f.write_str(RUNNING),
            OsState::Runnable => f.write_str(RUNNABLE),
            OsState::Blocked(b) => write!(f, "{BLOCKED}:{}", b.name()),
            OsState::Syscall { name, layer: None } => write!(f, "{SYSCALL}{name}"),
            OsState::Syscall {
                name,
                layer: Some(l),
            } => write!(f, "{SYSCALL}{name}:{l}"),
            OsState::Function(n) => write!(f, "{RUNNING}:{n}"),
            OsState::Interrupted(sm) => write!(f, "{INTERRUPTED}{sm}"),
            OsState::Raised => f.write_str("raised"),
            OsState::Armed => f.write_str("armed"),
        }
    }
}

impl<'a> OsState<'a> {
    /// The state a name stands for; `None` for names the OS graph does
    /// not make.
    pub fn parse(name: &'a str) -> Option<OsState<'a>> {
        Some(match name {
            RUNNING => OsState::Running,
            RUNNABLE => OsState::Runnable,
            "raised" => OsState::Raised,
            "armed" => OsState::Armed,
            _ => return Self::parse_compound(name),
        })
    }

    fn parse_compound(name: &'a str) -> Option<OsState<'a>> {
        if let Some(b) = name.strip_prefix(BLOCKED).and_then(|b| b.strip_prefix(':')) {
            let b = Blocked::ALL.iter().find(|x| x.1 == b)?.0;
            return Some(OsState::Blocked(b));
        }
        if let Some(sm) = name.strip_prefix(INTERRUPTED) {
            return Some(OsState::Interrupted(OsSm::parse(sm)?));
        }
        if let Some(call) = name.strip_prefix(SYSCALL) {
            let (name, layer) = match call.split_once(':') {
                Some((n, l)) => (n, Some(l)),
                None => (call, None),
            };
            return Some(OsState::Syscall { name, layer });
        }
        let func = name.strip_prefix(RUNNING)?.strip_prefix(':')?;
        Some(OsState::Function(func))
    }

    /// Off its CPU: waiting for one, or blocked.
    pub fn is_switched_out(&self) -> bool {
        matches!(self, OsState::Runnable | OsState::Blocked(_))
    }

    /// Time bounded by the kernel's events rather than by a program's own
    /// annotations: off the CPU, interrupted, or inside a system call.
    pub fn is_kernel_bound(&self) -> bool {
        self.is_switched_out() || matches!(self, OsState::Interrupted(_) | OsState::Syscall { .. })
    }

    /// The probed function a `running:FUNCTION` state is in (the name
    /// itself when it is not such a state).
    pub fn function_name(name: &str) -> &str {
        match OsState::parse(name) {
            Some(OsState::Function(f)) => f,
            _ => name,
        }
    }
}

/// Is the state named `name` one where a thread is off its CPU?
pub fn switched_out(name: &str) -> bool {
    OsState::parse(name).is_some_and(|s| s.is_switched_out())
}

/// Is the state named `name` a thread interrupted by an interrupt SM?
pub fn interrupted(name: &str) -> bool {
    matches!(OsState::parse(name), Some(OsState::Interrupted(_)))
}

/// Is the state named `name` bounded by the kernel's events (see
/// [`OsState::is_kernel_bound`])?
pub fn kernel_bound(name: &str) -> bool {
    OsState::parse(name).is_some_and(|s| s.is_kernel_bound())
}

/// Does time in state `state` of SM `sm` depend on the rest of the machine
/// rather than on the program (so that another run may not see it)? A
/// thread waiting for a CPU (`runnable`) or interrupted, and the runs of
/// interrupt handlers and softirqs with their `raised` waits. A timer's
/// `armed` time is the sleep the program asked for, its callback's run is
/// the machine's: only the latter counts.
pub fn machine_dependent(sm: &str, state: &str) -> bool {
    let Some(sm) = OsSm::parse(sm) else {
        return false;
    };
    match (sm, OsState::parse(state)) {
        (OsSm::Irq(_) | OsSm::Softirq(_), Some(_)) => true,
        (OsSm::Timer(_), Some(st)) => st != OsState::Armed,
        (_, Some(OsState::Runnable | OsState::Interrupted(_))) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_waits_and_interrupts_depend_on_the_machine() {
        assert!(machine_dependent("chain:12", "runnable"));
        assert!(machine_dependent("chain:12", "interrupted:irq:eth0"));
        assert!(machine_dependent("irq:eth0", "running"));
        assert!(machine_dependent("softirq:NET_RX", "raised"));
        assert!(machine_dependent("timer:hrtimer_wakeup", "running"));
        assert!(!machine_dependent("timer:hrtimer_wakeup", "armed"));
        assert!(!machine_dependent("chain:12", "running"));
        assert!(!machine_dependent("chain:12", "blocked:sleep"));
        assert!(!machine_dependent("db", "runnable"));
    }

    #[test]
    fn sm_names_round_trip() {
        let sms = [
            (
                OsSm::Thread {
                    comm: "sleeper",
                    tid: 42,
                },
                "sleeper:42",
            ),
            (
                OsSm::Thread {
                    comm: "a:b",
                    tid: 7,
                },
                "a:b:7",
            ),
            (OsSm::Irq("eth0"), "irq:eth0"),
            (OsSm::Softirq("NET_RX"), "softirq:NET_RX"),
            (OsSm::Timer("hrtimer_wakeup"), "timer:hrtimer_wakeup"),
            (
                OsSm::Task {
                    comm: "python3",
                    tid: 9,
                    task: "fetch/1",
                },
                "python3:9/fetch/1",
            ),
        ];
        for (sm, name) in sms {
            assert_eq!(sm.to_string(), name);
            assert_eq!(OsSm::parse(name), Some(sm));
        }
        assert_eq!(OsSm::parse("stage2"), None);
        assert_eq!(OsSm::parse("x:12a"), None);
        assert_eq!(OsSm::parse(":12"), None);
        assert_eq!(thread_tid("worker:17"), Some(17));
        assert_eq!(thread_tid("irq:12"), Some(12));
        assert_eq!(parse_thread("a:b:7"), Some(("a:b", 7)));
        assert_eq!(OsSm::parse("worker:17").and_then(|s| s.tid()), Some(17));
        assert_eq!(lane_name("irq:eth0", 1), "irq:eth0#2");
    }

    #[test]
    fn state_names_round_trip() {
        let states = [
            (OsState::Running, "running"),
            (OsState::Runnable, "runnable"),
            (OsState::Blocked(Blocked::Sleep), "blocked:sleep"),
            (OsState::Blocked(Blocked::Io), "blocked:io"),
            (OsState::Blocked(Blocked::Other), "blocked:other"),
            (
                OsState::Syscall {
                    name: "read",
                    layer: None,
                },
                "running:syscall:read",
            ),
            (
                OsState::Syscall {
                    name: "sendto",
                    layer: Some("net_dev_queue"),
                },
                "running:syscall:sendto:net_dev_queue",
            ),
            (OsState::Function("compute"), "running:compute"),
            (
                OsState::Interrupted(OsSm::Softirq("NET_RX")),
                "interrupted:softirq:NET_RX",
            ),
            (
                OsState::Interrupted(OsSm::Irq("eth0")),
                "interrupted:irq:eth0",
            ),
            (OsState::Raised, "raised"),
            (OsState::Armed, "armed"),
        ];
        for (st, name) in states {
            assert_eq!(st.to_string(), name);
            assert_eq!(OsState::parse(name), Some(st), "{name}");
        }
        assert_eq!(OsState::parse("blocked:nothing"), None);
        assert_eq!(OsState::parse("waiting"), None);
        assert_eq!(OsState::function_name("running:compute"), "compute");
        assert_eq!(OsState::function_name("plain"), "plain");
    }
}
