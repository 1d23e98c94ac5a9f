//! The discrete-event simulation: one CPU running the software path packet
//! after packet, the NIC's three state machines, and the I/O bus they
//! share. Events are processed in time order (ties in the order they were
//! scheduled), and every record is emitted at the current time, so the
//! record stream is in time order by construction.

use crate::params::Params;
use critpath_trace::{Event, Interner, LinkId, Record, Sym, Who};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The I/O bus between memory and the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bus {
    Pci,
    Pcix,
}

impl Bus {
    pub fn name(self) -> &'static str {
        match self {
            Bus::Pci => "pci",
            Bus::Pcix => "pcix",
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            Bus::Pci => "PCI (32-bit, 66 MHz)",
            Bus::Pcix => "PCI-X (64-bit, 133 MHz)",
        }
    }
}

/// One run of the model.
#[derive(Clone, Debug)]
pub struct Config {
    pub bus: Bus,
    /// UDP payload per send, bytes.
    pub payload: u64,
    pub netfilter: bool,
    /// Sends in the stream.
    pub packets: u64,
    pub params: Params,
}

/// What a run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    /// Payload bytes sent / simulated time.
    pub throughput_mbps: f64,
    /// Simulated time until the last frame left the wire.
    pub sim_ns: u64,
    pub payload_bytes: u64,
    pub frames: u64,
    /// Simulation events processed.
    pub events: u64,
    /// Trace records emitted.
    pub records: u64,
}

/// A step of the CPU's per-packet script.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `sm` enters `state` for `dur` ns.
    Enter(Sym, Sym, u64),
    /// `from` hands control to `to`: `from` sends and waits in `wait`;
    /// `to` receives into `state` for `dur` ns.
    Call {
        from: Sym,
        wait: Sym,
        to: Sym,
        state: Sym,
        dur: u64,
    },
    /// `from` returns to `to`, which receives into `state` for `dur` ns;
    /// `from` waits idle.
    Ret {
        from: Sym,
        to: Sym,
        state: Sym,
        dur: u64,
    },
    /// The driver posts a descriptor for a frame of this many bytes.
    Post(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Cpu,
    FetchDone,
    DmaDone,
    WbDone,
    WireDone,
}

/// A bus user: Descriptor Fetch or Transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum User {
    Fetch,
    Tx,
}

struct Names {
    app: Sym,
    udp: Sym,
    ip: Sym,
    drv: Sym,
    fetch: Sym,
    tx: Sym,
    fifo: Sym,
    s: std::collections::HashMap<&'static str, Sym>,
}

impl Names {
    fn st(&self, name: &str) -> Sym {
        self.s[name]
    }
}

const STATES: &[&str] = &[
    "app loop",
    "in sendto",
    "sys_sendto",
    "udp_sendmsg",
    "sock_alloc_send_skb",
    "alloc_skb",
    "__kmalloc",
    "kmem_cache_alloc",
    "ip_append_data",
    "ip_generic_getfrag",
    "__copy_user",
    "Call_Pal_Swpipl",
    "__spin_lock_bh",
    "udp_push_pending_frames",
    "in ip_output",
    "ip_output",
    "nf_hook_slow",
    "nf_iterate",
    "_read_lock_bh",
    "ipt_do_table",
    "_read_unlock_bh",
    "csum_partial",
    "ip_fragment",
    "ip_copy_metadata",
    "memcpy",
    "ip_fast_csum",
    "ip_finish_output",
    "neigh_resolve_output",
    "in dev_queue_xmit",
    "e1000_xmit_frame",
    "post desc",
    "ring full",
    "dev_queue_xmit",
    "release_sock",
    "idle",
    "fetch desc",
    "have desc",
    "wait bus",
    "cache full",
    "wait desc",
    "DMA packet",
    "write back desc",
    "wait packet",
    "transmit",
];

struct Sim<'a> {
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    strings: &'a Interner,
    n: Names,
    sink: &'a mut dyn FnMut(&Record, &Interner),
    records: u64,
    events: u64,
    next_id: u64,
    // CPU
    script: Vec<Step>,
    pc: usize,
    packet: u64,
    packets: u64,
    cpu_blocked: bool,
    // ring and NIC
    ring_used: u64,
    ring_size: u64,
    posted: VecDeque<u64>,
    cache: VecDeque<u64>,
    cache_cap: u64,
    fetch_busy: bool,
    fetch_waiting: Option<&'static str>,
    tx_waiting_desc: bool,
    tx_frame: u64,
    fifo: VecDeque<(LinkId, u64)>,
    fifo_busy: bool,
    // bus
    holder: Option<User>,
    bus_queue: VecDeque<User>,
    cycle_ns: f64,
    width: f64,
    p: Params,
    frames_left: u64,
    frames: u64,
    last_wire: u64,
}

/// Runs the model, handing every record to `sink` in time order.
/// The model's names are interned into `strings`.
pub fn simulate(
    cfg: &Config,
    strings: &mut Interner,
    sink: &mut dyn FnMut(&Record, &Interner),
) -> Outcome {
    let p = cfg.params.clone();
    let mut s = std::collections::HashMap::new();
    for st in STATES {
        s.insert(*st, strings.intern(st));
    }
    let n = Names {
        app: strings.intern("app"),
        udp: strings.intern("kernel.udp"),
        ip: strings.intern("kernel.ip"),
        drv: strings.intern("kernel.e1000"),
        fetch: strings.intern("nic.descfetch"),
        tx: strings.intern("nic.tx"),
        fifo: strings.intern("nic.txfifo"),
        s,
    };
    let (width, mhz) = match cfg.bus {
        Bus::Pci => (p.pci_width, p.pci_mhz),
        Bus::Pcix => (p.pcix_width, p.pcix_mhz),
    };
    let script = script(cfg, &n);
    let frames_per_packet = script.iter().filter(|s| matches!(s, Step::Post(_))).count() as u64;
    let mut sim = Sim {
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        strings: &*strings,
        n,
        sink,
        records: 0,
        events: 0,
        next_id: 1,
        script,
        pc: 0,
        packet: 0,
        packets: cfg.packets,
        cpu_blocked: false,
        ring_used: 0,
        ring_size: p.ring_size.max(1.0) as u64,
        posted: VecDeque::new(),
        cache: VecDeque::new(),
        cache_cap: p.desc_cache.max(1.0) as u64,
        fetch_busy: false,
        fetch_waiting: None,
        tx_waiting_desc: false,
        tx_frame: 0,
        fifo: VecDeque::new(),
        fifo_busy: false,
        holder: None,
        bus_queue: VecDeque::new(),
        cycle_ns: 1000.0 / mhz,
        width,
        p,
        frames_left: frames_per_packet * cfg.packets,
        frames: 0,
        last_wire: 0,
    };
    sim.run();
    let payload_bytes = cfg.payload * cfg.packets;
    Outcome {
        throughput_mbps: if sim.last_wire > 0 {
            payload_bytes as f64 * 8.0 * 1000.0 / sim.last_wire as f64
        } else {
            0.0
        },
        sim_ns: sim.last_wire,
        payload_bytes,
        frames: sim.frames,
        events: sim.events,
        records: sim.records,
    }
}

fn ns(x: f64) -> u64 {
    x.round().max(0.0) as u64
}

/// The CPU's work for one send, as the kernel does it.
fn script(cfg: &Config, n: &Names) -> Vec<Step> {
    let p = &cfg.params;
    let st = |s: &str| n.st(s);
    let mut v = Vec::new();
    let udp = |v: &mut Vec<Step>, s: &str, d: f64| v.push(Step::Enter(n.udp, st(s), ns(d)));
    v.push(Step::Call {
        from: n.app,
        wait: st("in sendto"),
        to: n.udp,
        state: st("sys_sendto"),
        dur: ns(p.syscall_ns),
    });
    udp(&mut v, "udp_sendmsg", p.udp_sendmsg_ns);
    udp(&mut v, "sock_alloc_send_skb", p.sock_alloc_send_skb_ns);
    udp(&mut v, "alloc_skb", p.alloc_skb_ns);
    udp(&mut v, "__kmalloc", p.kmalloc_ns);
    udp(&mut v, "kmem_cache_alloc", p.kmem_cache_alloc_ns);
    udp(&mut v, "ip_append_data", p.ip_append_data_ns);
    udp(&mut v, "ip_generic_getfrag", p.ip_generic_getfrag_ns);
    udp(
        &mut v,
        "__copy_user",
        cfg.payload as f64 * 1000.0 / p.copy_bytes_per_us,
    );
    udp(&mut v, "Call_Pal_Swpipl", p.swpipl_ns);
    udp(&mut v, "__spin_lock_bh", p.spin_lock_bh_ns);
    udp(
        &mut v,
        "udp_push_pending_frames",
        p.udp_push_pending_frames_ns,
    );
    v.push(Step::Call {
        from: n.udp,
        wait: st("in ip_output"),
        to: n.ip,
        state: st("ip_output"),
        dur: ns(p.ip_output_ns),
    });
    let ip = |v: &mut Vec<Step>, s: &str, d: f64| v.push(Step::Enter(n.ip, st(s), ns(d)));
    let csum = |bytes: u64| bytes as f64 * 1000.0 / p.csum_bytes_per_us;
    if cfg.netfilter {
        ip(&mut v, "nf_hook_slow", p.nf_hook_slow_ns);
        ip(&mut v, "nf_iterate", p.nf_iterate_ns);
        ip(&mut v, "_read_lock_bh", p.read_lock_bh_ns);
        ip(&mut v, "ipt_do_table", p.ipt_do_table_ns);
        ip(&mut v, "_read_unlock_bh", p.read_unlock_bh_ns);
        // Linux 2.6.13's netfilter checksums the packet in software.
        ip(&mut v, "csum_partial", csum(cfg.payload));
    }
    let ip_hdr = 20.0;
    let max_frag = ((p.mtu - ip_hdr) / 8.0).floor() as u64 * 8;
    let fragments: Vec<u64> = if cfg.payload as f64 + ip_hdr <= p.mtu {
        vec![cfg.payload]
    } else {
        // The NIC cannot checksum a datagram larger than the MTU.
        ip(&mut v, "csum_partial", csum(cfg.payload));
        let mut left = cfg.payload;
        let mut f = Vec::new();
        while left > 0 {
            let k = left.min(max_frag.max(8));
            f.push(k);
            left -= k;
        }
        f
    };
    let many = fragments.len() > 1;
    for &frag in &fragments {
        if many {
            ip(&mut v, "ip_fragment", p.ip_fragment_ns);
            ip(&mut v, "ip_copy_metadata", p.ip_copy_metadata_ns);
            ip(
                &mut v,
                "memcpy",
                frag as f64 * 1000.0 / p.memcpy_bytes_per_us,
            );
            ip(&mut v, "ip_fast_csum", p.ip_fast_csum_ns);
        }
        ip(&mut v, "ip_finish_output", p.ip_finish_output_ns);
        ip(&mut v, "neigh_resolve_output", p.neigh_resolve_output_ns);
        v.push(Step::Call {
            from: n.ip,
            wait: st("in dev_queue_xmit"),
            to: n.drv,
            state: st("e1000_xmit_frame"),
            dur: ns(p.xmit_frame_ns),
        });
        v.push(Step::Post(ns(p.eth_header + ip_hdr) + frag));
        v.push(Step::Ret {
            from: n.drv,
            to: n.ip,
            state: st("dev_queue_xmit"),
            dur: ns(p.dev_queue_xmit_ns),
        });
    }
    v.push(Step::Ret {
        from: n.ip,
        to: n.udp,
        state: st("release_sock"),
        dur: ns(p.release_sock_ns),
    });
    v.push(Step::Ret {
        from: n.udp,
        to: n.app,
        state: st("app loop"),
        dur: ns(p.app_ns),
    });
    v
}

impl Sim<'_> {
    fn emit(&mut self, ev: Event) {
        self.records += 1;
        let r = Record {
            t: self.now,
            sys: Sym::LOCAL,
            ev,
        };
        (self.sink)(&r, self.strings);
    }
    fn state(&mut self, sm: Sym, state: &str) {
        let state = self.n.st(state);
        self.emit(Event::State {
            who: Who::Sm(sm),
            state,
        });
    }
    fn wait(&mut self, sm: Sym, state: &str, on: Option<Sym>, on_state: Option<&str>) {
        let state = self.n.st(state);
        let on_state = on_state.map(|s| self.n.st(s));
        self.emit(Event::Wait {
            who: Who::Sm(sm),
            state,
            on,
            on_sys: None,
            on_state,
        });
    }
    fn at(&mut self, dt: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((self.now + dt, self.seq, ev)));
    }
    fn sm_of(&self, u: User) -> Sym {
        match u {
            User::Fetch => self.n.fetch,
            User::Tx => self.n.tx,
        }
    }
    /// Bus time of a transfer: arbitration per burst plus the data cycles.
    fn bus_ns(&self, bytes: u64) -> u64 {
        let bursts = (bytes as f64 / self.p.max_burst).ceil().max(1.0);
        let cycles = bursts * self.p.arb_cycles + (bytes as f64 / self.width).ceil();
        ns(cycles * self.cycle_ns)
    }

    fn run(&mut self) {
        let app_loop = self.n.st("app loop");
        self.emit(Event::State {
            who: Who::Sm(self.n.app),
            state: app_loop,
        });
        let (udp, ip, drv, fetch, tx, fifo) = (
            self.n.udp,
            self.n.ip,
            self.n.drv,
            self.n.fetch,
            self.n.tx,
            self.n.fifo,
        );
        for sm in [udp, ip, drv] {
            self.wait(sm, "idle", None, None);
        }
        self.wait(fetch, "idle", Some(drv), Some("post desc"));
        self.wait(tx, "wait desc", Some(fetch), Some("have desc"));
        self.tx_waiting_desc = true;
        self.wait(fifo, "wait packet", None, None);
        if self.packets > 0 {
            self.at(ns(self.p.app_ns), Ev::Cpu);
        }
        while let Some(Reverse((t, _, ev))) = self.queue.pop() {
            self.now = t;
            self.events += 1;
            match ev {
                Ev::Cpu => self.cpu(),
                Ev::FetchDone => self.fetch_done(),
                Ev::DmaDone => self.dma_done(),
                Ev::WbDone => self.wb_done(),
                Ev::WireDone => self.wire_done(),
            }
        }
    }

    /// Moves the CPU's script to the next step.
    fn advance(&mut self) {
        self.pc += 1;
        if self.pc == self.script.len() {
            self.pc = 0;
            self.packet += 1;
        }
    }

    /// The CPU runs its script until a step takes time or blocks.
    fn cpu(&mut self) {
        if self.packet == self.packets {
            return;
        }
        let step = self.script[self.pc];
        if let Step::Post(_) = step {
            if self.ring_used == self.ring_size {
                // Ring full: the driver blocks until the NIC frees a slot.
                self.wait(self.n.drv, "ring full", None, None);
                self.cpu_blocked = true;
                return;
            }
        }
        self.advance();
        match step {
            Step::Enter(sm, state, dur) => {
                self.emit(Event::State {
                    who: Who::Sm(sm),
                    state,
                });
                self.at(dur, Ev::Cpu);
            }
            Step::Call {
                from,
                wait,
                to,
                state,
                dur,
            } => {
                let id = self.fresh_id();
                self.emit(Event::Send {
                    who: Who::Sm(from),
                    id,
                });
                self.emit(Event::Wait {
                    who: Who::Sm(from),
                    state: wait,
                    on: None,
                    on_sys: None,
                    on_state: None,
                });
                self.emit(Event::Recv {
                    who: Who::Sm(to),
                    id,
                    state,
                    waited: false,
                });
                self.at(dur, Ev::Cpu);
            }
            Step::Ret {
                from,
                to,
                state,
                dur,
            } => {
                let id = self.fresh_id();
                self.emit(Event::Send {
                    who: Who::Sm(from),
                    id,
                });
                self.wait(from, "idle", None, None);
                self.emit(Event::Recv {
                    who: Who::Sm(to),
                    id,
                    state,
                    waited: false,
                });
                // After the last send returns the application is done.
                if self.packet < self.packets {
                    self.at(dur, Ev::Cpu);
                }
            }
            Step::Post(frame) => {
                self.state(self.n.drv, "post desc");
                self.post(frame);
            }
        }
    }

    fn fresh_id(&mut self) -> LinkId {
        self.next_id += 1;
        LinkId::Num(self.next_id)
    }

    /// The driver has written a descriptor into the ring (its "post desc"
    /// transition is recorded) and rings the doorbell.
    fn post(&mut self, frame: u64) {
        self.ring_used += 1;
        self.posted.push_back(frame);
        if !self.fetch_busy {
            self.fetch_next(false);
        }
        self.at(ns(self.p.post_desc_ns), Ev::Cpu);
    }

    // ---- the bus (two users: Descriptor Fetch and Transmit) ----

    /// Asks for the bus; true when granted at once. Otherwise `user` is
    /// queued and records a wait on the holder.
    fn request(&mut self, user: User) -> bool {
        match self.holder {
            None => {
                self.holder = Some(user);
                true
            }
            Some(h) => {
                let holder = self.sm_of(h);
                self.bus_queue.push_back(user);
                self.wait(self.sm_of(user), "wait bus", Some(holder), None);
                false
            }
        }
    }

    /// Frees the bus (the holder has already recorded its next transition)
    /// and grants it to the user in line, if any.
    fn release(&mut self) {
        self.holder = None;
        if let Some(next) = self.bus_queue.pop_front() {
            self.holder = Some(next);
            match next {
                User::Fetch => self.start_fetch(),
                User::Tx if self.tx_frame == 0 => self.start_wb(),
                User::Tx => self.start_dma(),
            }
        }
    }

    /// The holder `user` wants the bus for another transfer: it keeps it
    /// when nobody waits (true); otherwise it waits for the user in line,
    /// hands the bus over and queues behind.
    fn hand_over(&mut self, user: User) -> bool {
        match self.bus_queue.front().copied() {
            None => true,
            Some(next) => {
                self.wait(self.sm_of(user), "wait bus", Some(self.sm_of(next)), None);
                self.release();
                self.bus_queue.push_back(user);
                false
            }
        }
    }

    // ---- Descriptor Fetch ----

    /// Fetches the next posted descriptor if there is one and room for it;
    /// otherwise waits (and frees the bus if `holding` it).
    fn fetch_next(&mut self, holding: bool) {
        let fetch = self.n.fetch;
        let why = if self.posted.is_empty() {
            Some("idle")
        } else if self.cache.len() as u64 >= self.cache_cap {
            Some("cache full")
        } else {
            None
        };
        if let Some(why) = why {
            if self.fetch_waiting != Some(why) {
                if why == "idle" {
                    self.wait(fetch, "idle", Some(self.n.drv), Some("post desc"));
                } else {
                    self.wait(fetch, "cache full", Some(self.n.tx), None);
                }
                self.fetch_waiting = Some(why);
            }
            self.fetch_busy = false;
            if holding {
                self.release();
            }
            return;
        }
        self.fetch_busy = true;
        self.fetch_waiting = None;
        let granted = if holding {
            self.hand_over(User::Fetch)
        } else {
            self.request(User::Fetch)
        };
        if granted {
            self.start_fetch();
        }
    }

    fn start_fetch(&mut self) {
        self.state(self.n.fetch, "fetch desc");
        let d = self.bus_ns(self.p.desc_bytes as u64);
        self.at(d, Ev::FetchDone);
    }

    fn fetch_done(&mut self) {
        let frame = self.posted.pop_front().expect("a posted descriptor");
        self.cache.push_back(frame);
        self.state(self.n.fetch, "have desc");
        if self.tx_waiting_desc {
            self.tx_waiting_desc = false;
            self.tx_next(false);
        }
        self.fetch_next(true);
    }

    // ---- Transmit ----

    /// Takes the next cached descriptor and DMAs its packet, or waits for
    /// one (freeing the bus if `holding` it).
    fn tx_next(&mut self, holding: bool) {
        let Some(frame) = self.cache.pop_front() else {
            self.wait(
                self.n.tx,
                "wait desc",
                Some(self.n.fetch),
                Some("have desc"),
            );
            self.tx_waiting_desc = true;
            if holding {
                self.release();
            }
            return;
        };
        self.tx_frame = frame;
        let granted = if holding {
            self.hand_over(User::Tx)
        } else {
            self.request(User::Tx)
        };
        if granted {
            self.start_dma();
        }
        if self.fetch_waiting == Some("cache full") && !self.fetch_busy {
            self.fetch_next(false);
        }
    }

    fn start_dma(&mut self) {
        self.state(self.n.tx, "DMA packet");
        let d = self.bus_ns(self.tx_frame);
        self.at(d, Ev::DmaDone);
    }

    fn dma_done(&mut self) {
        // Hand the frame to the TX FIFO, then write the descriptor back.
        let id = self.fresh_id();
        self.emit(Event::Send {
            who: Who::Sm(self.n.tx),
            id,
        });
        self.fifo.push_back((id, self.tx_frame));
        self.tx_frame = 0;
        if !self.fifo_busy {
            self.fifo_next();
        }
        if self.hand_over(User::Tx) {
            self.start_wb();
        }
    }

    fn start_wb(&mut self) {
        self.state(self.n.tx, "write back desc");
        let d = self.bus_ns(self.p.desc_bytes as u64);
        self.at(d, Ev::WbDone);
    }

    fn wb_done(&mut self) {
        self.ring_used -= 1;
        if self.cpu_blocked {
            // The freed slot wakes the driver, which posts its descriptor.
            self.cpu_blocked = false;
            let Step::Post(frame) = self.script[self.pc] else {
                unreachable!("the CPU blocks only on a post")
            };
            self.advance();
            let id = self.fresh_id();
            self.emit(Event::Send {
                who: Who::Sm(self.n.tx),
                id,
            });
            let post = self.n.st("post desc");
            self.emit(Event::Recv {
                who: Who::Sm(self.n.drv),
                id,
                state: post,
                waited: false,
            });
            self.post(frame);
        }
        self.tx_next(true);
        if !self.fetch_busy {
            self.fetch_next(false);
        }
    }

    // ---- TX FIFO and the wire ----

    fn fifo_next(&mut self) {
        match self.fifo.pop_front() {
            Some((id, frame)) => {
                self.fifo_busy = true;
                let transmit = self.n.st("transmit");
                self.emit(Event::Recv {
                    who: Who::Sm(self.n.fifo),
                    id,
                    state: transmit,
                    waited: false,
                });
                let bits = (frame as f64 + self.p.wire_overhead) * 8.0;
                self.at(ns(bits / self.p.link_gbps), Ev::WireDone);
            }
            None => {
                self.fifo_busy = false;
                self.wait(self.n.fifo, "wait packet", None, None);
            }
        }
    }

    fn wire_done(&mut self) {
        self.frames += 1;
        self.frames_left = self.frames_left.saturating_sub(1);
        self.last_wire = self.now;
        if self.frames_left == 0 && self.fifo.is_empty() {
            let fifo = self.n.fifo;
            self.emit(Event::End { who: Who::Sm(fifo) });
            self.fifo_busy = false;
            return;
        }
        self.fifo_next();
    }
}
