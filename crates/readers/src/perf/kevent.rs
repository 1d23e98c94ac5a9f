//! Kernel events as decoded from perf.data tracepoint samples: what
//! happened (a context switch, a wakeup, an interrupt, a timer, a packet,
//! a system call, a probed function), when, on which CPU and in which
//! task's context. The OS graph (critpath-os) and the kernel views
//! (critpath-kernel) interpret them.

use critpath_trace::Sym;

/// A thread's name as the kernel keeps it (`TASK_COMM_LEN` bytes).
pub type Comm = [u8; 16];

/// A kernel event the builder understands. Thread ids are kernel tids
/// (0 = the idle task, which is not an SM).
#[derive(Clone, Copy, Debug, PartialEq)]
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
        /// The CPU the woken thread is to run on (`target_cpu`), when the
        /// layout has it.
        target: Option<u32>,
        /// The event's flags say it fired in a hard or soft interrupt (or
        /// an NMI), not in the thread on the CPU.
        in_irq: bool,
    },
    /// `sched_process_fork`.
    Fork {
        child: u32,
        comm: Comm,
    },
    /// `sched_process_exec` by the sample's thread.
    Exec,
    /// `sched_process_exit` by the sample's thread (its last event but
    /// its final switch, which a recording of the command's threads alone
    /// lacks).
    Exit,
    /// A tracepoint critpath does not interpret (`sched_stat_runtime`,
    /// `sched_migrate_task` ...): all it says is that the sample's task is
    /// on its CPU.
    Other,
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
    /// the function's name; `ret` for the return probe.
    Func {
        func: Sym,
        ret: bool,
    },
}

impl KEvent {
    /// Passes each of the event's symbols through `f`, in place (to move
    /// it from the decoder's string table to another one).
    #[inline]
    pub fn map_syms(&mut self, f: impl Fn(Sym) -> Sym) {
        use KEvent::*;
        match self {
            IrqEntry { name: s }
            | TimerStart { func: s, .. }
            | TimerEntry { func: s, .. }
            | Net { point: s, .. }
            | Skb { point: s, .. }
            | Func { func: s, .. } => *s = f(*s),
            // Listed, so that a new event with a symbol is not forgotten.
            Switch { .. }
            | Wake { .. }
            | Fork { .. }
            | Exec
            | Exit
            | Other
            | IrqExit
            | SoftirqRaise { .. }
            | SoftirqEntry { .. }
            | SoftirqExit { .. }
            | TimerExit
            | Sock { .. }
            | SysEnter { .. }
            | SysExit => {}
        }
    }
}

/// One kernel event: when, on which CPU, in which task's context.
#[derive(Clone, Copy, Debug, PartialEq)]
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
