//! Tracepoint samples decoded into kernel events ([`KEvent`]): each
//! tracepoint critpath uses has a decoder built from the layout the
//! perf.data file stores ([`super::tracefmt`]), which reads its fields out
//! of a sample's raw data. Also the lists of tracepoints `critpath record`
//! asks for.

use super::kevent::{Comm, KEvent};
use super::symbols::FunctionNames;
use super::tracefmt::{EventFormat, Field};
use critpath_trace::{Interner, Sym};
use rustc_hash::FxHashMap;

/// How one attribute's samples are decoded.
enum Decoder {
    Switch {
        prev_comm: Field,
        prev_pid: Field,
        prev_state: Field,
        next_comm: Field,
        next_pid: Field,
    },
    Wake {
        comm: Field,
        pid: Field,
        target: Option<Field>,
        /// `common_flags` (of `sched_waking` only).
        flags: Option<Field>,
    },
    Fork {
        comm: Field,
        pid: Field,
    },
    Exec,
    Exit,
    /// A tracepoint with no decoder of its own: a sign of its task's life.
    Other,
    IrqEntry {
        name: Field,
    },
    IrqExit,
    Softirq {
        vec: Field,
        what: u8,
    },
    TimerStart {
        timer: Field,
        func: Field,
        expires: Option<Field>,
        /// The earliest expiry the timer's slack allows.
        soft: Option<Field>,
    },
    TimerEntry {
        timer: Field,
        func: Field,
    },
    TimerExit,
    Net {
        skb: Field,
        point: Sym,
        len: Option<Field>,
        /// A point of the OS graph's packet links (else for views only).
        graph: bool,
    },
    Sock {
        sk: Field,
        proto: Field,
        /// `sock_recv_length`'s result (`sk_data_ready` has none).
        ret: Option<Field>,
    },
    SysEnter {
        id: Field,
    },
    SysExit,
    /// A uprobe or kprobe on a function's entry, or its return probe.
    Func {
        func: Sym,
        ret: bool,
    },
}

/// The scheduler, interrupt and timer tracepoints of the OS execution
/// graph, by `system:name` (`sched_wakeup` is read when a file has it but
/// not recorded: `sched_waking` is the truer point).
pub const CORE_TRACEPOINTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup_new",
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "sched:sched_process_exec",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "timer:hrtimer_start",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:timer_start",
    "timer:timer_expire_entry",
    "timer:timer_expire_exit",
];

/// The packet tracepoints.
pub const NET_TRACEPOINTS: &[&str] = &[
    "net:net_dev_queue",
    "net:net_dev_start_xmit",
    "net:net_dev_xmit",
    "net:netif_rx",
    "net:netif_receive_skb",
    "skb:skb_copy_datagram_iovec",
    "skb:consume_skb",
    "skb:kfree_skb",
    "sock:sk_data_ready",
    "sock:sock_recv_length",
];

/// The system-call tracepoints.
pub const SYSCALL_TRACEPOINTS: &[&str] = &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"];

/// Decoders by tracepoint id: an index by id (a sample's first field),
/// not a hash, as every sample looks its decoder up.
#[derive(Default)]
struct ById {
    /// Per id, the place of its decoder in `list` (`NONE`: none).
    slot: Vec<u16>,
    list: Vec<Decoder>,
}

const NONE: u16 = u16::MAX;

impl ById {
    fn insert(&mut self, id: u16, d: Decoder) {
        let i = id as usize;
        if self.slot.len() <= i {
            self.slot.resize(i + 1, NONE);
        }
        match self.slot[i] {
            NONE => {
                self.slot[i] = self.list.len() as u16;
                self.list.push(d);
            }
            at => self.list[at as usize] = d,
        }
    }

    /// Forgets the decoder of `id` (its place in `list` stays, unused).
    fn remove(&mut self, id: u16) {
        if let Some(s) = self.slot.get_mut(id as usize) {
            *s = NONE;
        }
    }

    /// The decoders in use.
    fn iter(&self) -> impl Iterator<Item = &Decoder> {
        let used = self.slot.iter().filter(|&&at| at != NONE);
        used.map(|&at| &self.list[at as usize])
    }

    #[inline]
    fn get(&self, id: u16) -> Option<&Decoder> {
        match *self.slot.get(id as usize)? {
            NONE => None,
            at => self.list.get(at as usize),
        }
    }
}

/// The decoders of a file's tracepoints, by tracepoint id, and the name
/// caches they share.
pub struct Decoders {
    decoders: ById,
    names: FunctionNames,
    irq_names: FxHashMap<Vec<u8>, Sym>,
}

impl Decoders {
    /// Decoders for the tracepoints of `formats` critpath uses, by id.
    pub fn new<'a>(
        formats: impl IntoIterator<Item = &'a EventFormat>,
        strings: &mut Interner,
    ) -> Decoders {
        let mut decoders = ById::default();
        // Every other tracepoint's sample still says its task was on its
        // CPU (a thread believed blocked is alive).
        for f in formats {
            let d = decoder(f, strings).unwrap_or(Decoder::Other);
            decoders.insert(f.id as u16, d);
        }
        Decoders {
            decoders,
            names: FunctionNames::new(Default::default(), false),
            irq_names: FxHashMap::default(),
        }
    }

    /// Names timer callbacks with `names`.
    pub fn with_names(mut self, names: FunctionNames) -> Decoders {
        self.names = names;
        self
    }

    /// Does any decoder read timer events (whose callbacks need names)?
    pub fn has_timers(&self) -> bool {
        self.decoders
            .iter()
            .any(|d| matches!(d, Decoder::TimerStart { .. } | Decoder::TimerEntry { .. }))
    }

    /// Stops decoding tracepoint `id` (`sched_wakeup` when the file also
    /// has the truer `sched_waking`).
    pub fn drop_id(&mut self, id: u64) {
        self.decoders.remove(id as u16);
    }

    /// The kernel function names decoded so far.
    pub fn function_names(&self) -> &FunctionNames {
        &self.names
    }

    /// Decodes one sample into a kernel event.
    pub fn decode(&mut self, strings: &mut Interner, raw: &[u8]) -> Option<KEvent> {
        let id = u16::from_le_bytes([*raw.first()?, *raw.get(1)?]);
        let d = self.decoders.get(id)?;
        let comm = |f: &Field| -> Comm {
            let mut c = [0u8; 16];
            let s = f.str(raw);
            let n = s.len().min(16);
            c[..n].copy_from_slice(&s[..n]);
            c
        };
        Some(match d {
            Decoder::Switch {
                prev_comm,
                prev_pid,
                prev_state,
                next_comm,
                next_pid,
            } => KEvent::Switch {
                prev: prev_pid.u64(raw) as u32,
                prev_comm: comm(prev_comm),
                prev_state: prev_state.u64(raw),
                next: next_pid.u64(raw) as u32,
                next_comm: comm(next_comm),
            },
            Decoder::Wake {
                comm: c,
                pid,
                target,
                flags,
            } => KEvent::Wake {
                tid: pid.u64(raw) as u32,
                comm: comm(c),
                target: target.as_ref().map(|f| f.u64(raw) as u32),
                in_irq: flags.as_ref().is_some_and(|f| f.u64(raw) & IRQ_FLAGS != 0),
            },
            Decoder::Fork { comm: c, pid } => KEvent::Fork {
                child: pid.u64(raw) as u32,
                comm: comm(c),
            },
            Decoder::Exec => KEvent::Exec,
            Decoder::Exit => KEvent::Exit,
            Decoder::Other => KEvent::Other,
            Decoder::IrqEntry { name } => {
                let n = name.str(raw);
                let sym = match self.irq_names.get(n) {
                    Some(&s) => s,
                    None => {
                        let s = strings.intern(&String::from_utf8_lossy(n));
                        self.irq_names.insert(n.to_vec(), s);
                        s
                    }
                };
                KEvent::IrqEntry { name: sym }
            }
            Decoder::IrqExit => KEvent::IrqExit,
            Decoder::Softirq { vec, what } => {
                let vec = vec.u64(raw) as u8;
                match what {
                    0 => KEvent::SoftirqRaise { vec },
                    1 => KEvent::SoftirqEntry { vec },
                    _ => KEvent::SoftirqExit { vec },
                }
            }
            Decoder::TimerStart {
                timer,
                func,
                expires,
                soft,
            } => {
                let (timer, addr) = (timer.u64(raw), func.u64(raw));
                let expires = expires.as_ref().map(|f| {
                    let hard = f.u64(raw);
                    (soft.as_ref().map_or(hard, |s| s.u64(raw).min(hard)), hard)
                });
                let func = self.names.get(strings, addr);
                KEvent::TimerStart {
                    timer,
                    func,
                    expires,
                }
            }
            Decoder::TimerEntry { timer, func } => {
                let (timer, addr) = (timer.u64(raw), func.u64(raw));
                let func = self.names.get(strings, addr);
                KEvent::TimerEntry { timer, func }
            }
            Decoder::TimerExit => KEvent::TimerExit,
            Decoder::Net {
                skb,
                point,
                len,
                graph,
            } => {
                let (skb, point) = (skb.u64(raw), *point);
                let len = len.as_ref().map_or(0, |f| f.u64(raw) as u32);
                if *graph {
                    KEvent::Net { skb, point, len }
                } else {
                    KEvent::Skb { skb, point, len }
                }
            }
            Decoder::Sock { sk, proto, ret } => KEvent::Sock {
                sk: sk.u64(raw),
                ready: ret.is_none(),
                proto: proto.u64(raw) as u16,
                ret: ret.as_ref().map_or(0, |f| f.u64(raw) as u32 as i32),
            },
            Decoder::SysEnter { id } => KEvent::SysEnter { nr: id.u64(raw) },
            Decoder::SysExit => KEvent::SysExit,
            Decoder::Func { func, ret } => KEvent::Func {
                func: *func,
                ret: *ret,
            },
        })
    }
}

/// `common_flags` bits of an event fired in a hard IRQ, a softirq or an
/// NMI (the kernel's TRACE_FLAG_HARDIRQ, _SOFTIRQ and _NMI).
const IRQ_FLAGS: u64 = 0x08 | 0x10 | 0x40;

/// The decoder for a tracepoint's layout, if critpath interprets it.
fn decoder(f: &EventFormat, strings: &mut Interner) -> Option<Decoder> {
    let g = |n: &str| f.field(n).cloned();
    Some(match (f.system.as_str(), f.name.as_str()) {
        ("sched", "sched_switch") => Decoder::Switch {
            prev_comm: g("prev_comm")?,
            prev_pid: g("prev_pid")?,
            prev_state: g("prev_state")?,
            next_comm: g("next_comm")?,
            next_pid: g("next_pid")?,
        },
        ("sched", "sched_waking" | "sched_wakeup" | "sched_wakeup_new") => Decoder::Wake {
            comm: g("comm")?,
            pid: g("pid")?,
            target: g("target_cpu"),
            // `sched_wakeup` may fire in the IPI that queues a remote
            // wakeup: only `sched_waking` runs in the waker's context.
            flags: (f.name == "sched_waking")
                .then(|| g("common_flags"))
                .flatten(),
        },
        ("sched", "sched_process_fork") => Decoder::Fork {
            comm: g("child_comm")?,
            pid: g("child_pid")?,
        },
        ("sched", "sched_process_exec") => Decoder::Exec,
        ("sched", "sched_process_exit") => Decoder::Exit,
        ("irq", "irq_handler_entry") => Decoder::IrqEntry { name: g("name")? },
        ("irq", "irq_handler_exit") => Decoder::IrqExit,
        ("irq", "softirq_raise") => Decoder::Softirq {
            vec: g("vec")?,
            what: 0,
        },
        ("irq", "softirq_entry") => Decoder::Softirq {
            vec: g("vec")?,
            what: 1,
        },
        ("irq", "softirq_exit") => Decoder::Softirq {
            vec: g("vec")?,
            what: 2,
        },
        ("timer", "hrtimer_start") => Decoder::TimerStart {
            timer: g("hrtimer")?,
            func: g("function")?,
            expires: g("expires"),
            soft: g("softexpires"),
        },
        ("timer", "timer_start") => Decoder::TimerStart {
            timer: g("timer")?,
            func: g("function")?,
            // jiffies, not ns: not usable for inference.
            expires: None,
            soft: None,
        },
        ("timer", "hrtimer_expire_entry") => Decoder::TimerEntry {
            timer: g("hrtimer")?,
            func: g("function")?,
        },
        ("timer", "timer_expire_entry") => Decoder::TimerEntry {
            timer: g("timer")?,
            func: g("function")?,
        },
        ("timer", "hrtimer_expire_exit" | "timer_expire_exit") => Decoder::TimerExit,
        ("net", "net_dev_queue" | "net_dev_xmit" | "netif_rx" | "netif_receive_skb") => {
            Decoder::Net {
                skb: g("skbaddr")?,
                point: strings.intern(&f.name),
                len: g("len"),
                graph: true,
            }
        }
        ("net", "net_dev_start_xmit")
        | ("skb", "skb_copy_datagram_iovec" | "consume_skb" | "kfree_skb") => Decoder::Net {
            skb: g("skbaddr")?,
            point: strings.intern(&f.name),
            len: g("len"),
            graph: false,
        },
        ("sock", "sk_data_ready") => Decoder::Sock {
            sk: g("skaddr")?,
            proto: g("protocol")?,
            ret: None,
        },
        ("sock", "sock_recv_length") => Decoder::Sock {
            sk: g("sk")?,
            proto: g("protocol")?,
            ret: Some(g("ret")?),
        },
        ("raw_syscalls", "sys_enter") => Decoder::SysEnter { id: g("id")? },
        ("raw_syscalls", "sys_exit") => Decoder::SysExit,
        // Function probes: `critpath record --functions/--kernel-functions`
        // (groups critpath_fn, critpath_kfn) or `perf probe` (probe,
        // probe_BIN); `NAME__return` is the return probe.
        (sys, name) if sys.starts_with("probe") || sys.starts_with("critpath_") => {
            let (func, ret) = match name.strip_suffix("__return") {
                Some(f) => (f, true),
                None => (name, false),
            };
            Decoder::Func {
                func: strings.intern(func),
                ret,
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::symbols::parse_symbols;
    use crate::perf::tracefmt::parse_format;

    /// A format file's text: `name`, `id`, and fields (declaration, offset,
    /// size, signed) after `common_type` at offset 0.
    fn format(
        system: &str,
        name: &str,
        id: u64,
        fields: &[(&str, usize, usize, bool)],
    ) -> EventFormat {
        let mut text = format!(
            "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        );
        for (decl, off, size, signed) in fields {
            text.push_str(&format!(
                "\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n",
                u8::from(*signed)
            ));
        }
        parse_format(system, &text).expect("format")
    }

    /// A sample of tracepoint `id`, `len` bytes, with `put` bytes at offsets.
    fn sample(id: u16, len: usize, put: &[(usize, &[u8])]) -> Vec<u8> {
        let mut raw = vec![0u8; len];
        raw[0..2].copy_from_slice(&id.to_le_bytes());
        for (at, b) in put {
            raw[*at..*at + b.len()].copy_from_slice(b);
        }
        raw
    }

    fn switch() -> EventFormat {
        format(
            "sched",
            "sched_switch",
            300,
            &[
                ("char prev_comm[16]", 8, 16, false),
                ("pid_t prev_pid", 24, 4, true),
                ("long prev_state", 32, 8, true),
                ("char next_comm[16]", 40, 16, false),
                ("pid_t next_pid", 56, 4, true),
            ],
        )
    }

    #[test]
    fn a_context_switch_is_decoded_through_the_files_layout() {
        let mut strings = Interner::new();
        let mut d = Decoders::new([&switch()], &mut strings);
        let raw = sample(
            300,
            64,
            &[
                (8, b"pingpong"),
                (24, &42i32.to_le_bytes()),
                (32, &1i64.to_le_bytes()),
                (40, b"swapper/1"),
                (56, &0i32.to_le_bytes()),
            ],
        );
        let Some(KEvent::Switch {
            prev,
            prev_comm,
            prev_state,
            next,
            next_comm,
        }) = d.decode(&mut strings, &raw)
        else {
            panic!("not a switch");
        };
        assert_eq!((prev, prev_state, next), (42, 1, 0));
        assert_eq!(&prev_comm[..9], b"pingpong\0");
        assert_eq!(&next_comm[..10], b"swapper/1\0");
        // Another tracepoint's id, or a sample too short for its id, is no
        // event.
        assert!(d.decode(&mut strings, &sample(301, 64, &[])).is_none());
        assert!(d.decode(&mut strings, &[44]).is_none());
    }

    #[test]
    fn irq_names_probes_and_timer_callbacks_become_symbols() {
        let mut strings = Interner::new();
        let irq = format(
            "irq",
            "irq_handler_entry",
            10,
            &[
                ("int irq", 8, 4, true),
                ("__data_loc char[] name", 12, 4, false),
            ],
        );
        let timer = format(
            "timer",
            "hrtimer_expire_entry",
            11,
            &[
                ("void * hrtimer", 8, 8, false),
                ("s64 now", 16, 8, true),
                ("void * function", 24, 8, false),
            ],
        );
        let probe = format("critpath_fn", "compute__return", 12, &[]);
        let names = FunctionNames::new(parse_symbols("ffff1000 hrtimer_wakeup\n"), true);
        let mut d = Decoders::new([&irq, &timer, &probe], &mut strings).with_names(names);
        assert!(d.has_timers());

        let loc = (4u32 << 16) | 16;
        let raw = sample(10, 24, &[(12, &loc.to_le_bytes()), (16, b"eth0")]);
        let Some(KEvent::IrqEntry { name }) = d.decode(&mut strings, &raw) else {
            panic!("not an irq entry");
        };
        assert_eq!(strings.resolve(name), "eth0");

        let raw = sample(
            11,
            32,
            &[
                (8, &0xabcu64.to_le_bytes()),
                (24, &0xffff1000u64.to_le_bytes()),
            ],
        );
        let Some(KEvent::TimerEntry { timer, func }) = d.decode(&mut strings, &raw) else {
            panic!("not a timer entry");
        };
        assert_eq!((timer, strings.resolve(func)), (0xabc, "hrtimer_wakeup"));

        let Some(KEvent::Func { func, ret }) = d.decode(&mut strings, &sample(12, 8, &[])) else {
            panic!("not a probe");
        };
        assert_eq!((strings.resolve(func), ret), ("compute", true));
    }

    /// A thread's exit, and any tracepoint critpath does not interpret,
    /// are events of the sample's task: signs of its life.
    #[test]
    fn an_exit_and_other_tracepoints_are_events_of_their_task() {
        let mut strings = Interner::new();
        let exit = format("sched", "sched_process_exit", 30, &[]);
        let runtime = format("sched", "sched_stat_runtime", 31, &[]);
        let mut d = Decoders::new([&exit, &runtime], &mut strings);
        let got = d.decode(&mut strings, &sample(30, 8, &[]));
        assert_eq!(got, Some(KEvent::Exit));
        let got = d.decode(&mut strings, &sample(31, 8, &[]));
        assert_eq!(got, Some(KEvent::Other));
    }

    #[test]
    fn a_dropped_tracepoint_is_no_longer_decoded() {
        let mut strings = Interner::new();
        let wakeup = format(
            "sched",
            "sched_wakeup",
            20,
            &[("char comm[16]", 8, 16, false), ("pid_t pid", 24, 4, true)],
        );
        let mut d = Decoders::new([&wakeup], &mut strings);
        let raw = sample(20, 32, &[(8, b"pong"), (24, &7i32.to_le_bytes())]);
        assert!(matches!(
            d.decode(&mut strings, &raw),
            Some(KEvent::Wake { tid: 7, .. })
        ));
        d.drop_id(20);
        assert!(d.decode(&mut strings, &raw).is_none());
        assert!(!d.has_timers());
    }
}
