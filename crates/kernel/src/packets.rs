//! The life of a packet (as the TCP/IP anatomy studies show it): each packet,
//! followed by its `skbaddr` through the network tracepoints, and the
//! system calls and interrupt contexts around them, split into the time it
//! spent in each layer:
//!
//! | layer         | from                                   | to                                   |
//! |---------------|----------------------------------------|--------------------------------------|
//! | `application` | the sender's previous system call exit | its sending system call's entry      |
//! | `syscall`     | that entry (or the sender's previous packet in the same call) | `net_dev_queue` (socket and protocol layers run inside the call; no tracepoint separates them) |
//! | `driver`      | `net_dev_queue`                        | `net_dev_xmit` (queueing discipline and the device's transmit) |
//! | `irq`         | the hard interrupt that preceded the receiving softirq on its CPU (a NIC's) | its exit |
//! | `backlog`     | `net_dev_xmit` / `netif_rx` / the IRQ  | the `NET_RX` softirq that receives it starts |
//! | `softirq`     | that softirq's entry                   | `netif_receive_skb` (the packets before it in the same run) |
//! | `stack`       | `netif_receive_skb`                    | queued to its socket (`sk_data_ready`), else the next packet received in that run or the run's end (receive-side protocol) |
//! | `socket`      | that end                               | the receiving thread takes it: `skb_copy_datagram_iovec` (TCP), or for UDP, whose copy the kernel does not trace, the end of the receive in the socket layer (`sock_recv_length`, datagrams taken in order) |
//! | `copy`        | that point                             | the receiving system call's exit     |
//!
//! A packet whose sender was not in a system call (a TCP segment sent
//! from a softirq on an ACK) starts at `net_dev_queue`; one received from
//! a device with no local sender starts at the hard interrupt. Layers that
//! a packet does not cross (no receiver on this host, no system calls
//! recorded) are absent from it, not zero. Lives in flight are the only
//! state kept; finished ones are added to the tables.

use critpath_os::KernelObserver;
use critpath_readers::perf::{Comm, KEvent, KRecord};
use critpath_trace::{Interner, Sym};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::VecDeque;

const IPPROTO_UDP: u16 = 17;
/// The softirq vector of network receive.
const NET_RX: u8 = 3;
/// Datagrams kept per socket that nobody reads.
const MAX_QUEUED: usize = 1 << 16;

/// The layers, in the order a packet crosses them.
pub const LAYERS: [&str; 9] = [
    "application",
    "syscall",
    "driver",
    "irq",
    "backlog",
    "softirq",
    "stack",
    "socket",
    "copy",
];

/// Milestones of a life (ns), by index; a layer `i` lies between the last
/// milestone set at or before `i` and the next one set after it.
const M_APP: usize = 0;
const M_SYSCALL: usize = 1;
const M_QUEUE: usize = 2;
const M_IRQ: usize = 3;
const M_XMIT: usize = 4;
const M_SOFTIRQ: usize = 5;
const M_RECEIVE: usize = 6;
const M_STACK_END: usize = 7;
const M_COPY: usize = 8;
const M_EXIT: usize = 9;

#[derive(Clone, Debug)]
struct Life {
    skb: u64,
    len: u32,
    /// Milestones (see `M_*`), 0 = not crossed.
    at: [u64; 10],
    sender: u32,
    receiver: u32,
    /// The sender's send call (tid, entry) it belongs to.
    send: Option<(u32, u64)>,
}

impl Life {
    fn new(skb: u64, len: u32) -> Life {
        Life {
            skb,
            len,
            at: [0; 10],
            sender: 0,
            receiver: 0,
            send: None,
        }
    }
}

#[derive(Default)]
struct ThreadNet {
    /// In a system call since this time.
    sys: Option<u64>,
    /// The last system call's exit.
    last_exit: Option<u64>,
    /// Where the next packet of the current call starts its `syscall` time.
    mark: u64,
    /// Lives copied to this thread, ending at its system call's exit.
    copied: Vec<u64>,
}

#[derive(Default)]
struct CpuNet {
    /// Interrupt contexts running: (the softirq's vector, or `None` for a
    /// hard interrupt; entry).
    ctx: Vec<(Option<u8>, u64)>,
    /// The last hard interrupt handled on this CPU: (entry, exit).
    last_irq: Option<(u64, u64)>,
    /// The entry of the NET_RX run in progress and the packet it received
    /// last (whose stack time the next one ends).
    rx_run: Option<u64>,
    rx_last: Option<u64>,
}

/// Per layer over all packets.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LayerRow {
    pub layer: String,
    /// Packets that crossed it.
    pub packets: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    /// Share of the time of all lives.
    pub share: f64,
}

/// One packet's life.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PacketRow {
    pub skb: String,
    pub len: u32,
    /// `COMM:TID` of the sending and receiving threads, where known (each
    /// by its latest name in the recording).
    pub sender: Option<String>,
    pub receiver: Option<String>,
    /// First milestone, ns of trace time.
    pub start: u64,
    pub end: u64,
    /// ns per layer, in the order crossed.
    pub layers: Vec<(String, u64)>,
    /// Copied to a receiving thread.
    pub delivered: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Packets {
    pub packets: u64,
    pub delivered: u64,
    /// Lives still open at the end of the trace (merged into another
    /// buffer, dropped, or cut by the recording's end); not in the tables.
    pub unfinished: u64,
    /// Distinct send calls the packets came from, and their mean bytes.
    pub sends: u64,
    pub bytes_per_send: f64,
    pub layers: Vec<LayerRow>,
    /// ns per send call in each layer (the per-buffer cost).
    pub per_send_ns: Vec<(String, f64)>,
    /// The first packets' lives (`limit`).
    pub timeline: Vec<PacketRow>,
    pub notes: Vec<String>,
}

/// Follows packets through kernel events ([`Tracker::event`]).
pub struct Tracker {
    lives: FxHashMap<u64, Life>,
    threads: FxHashMap<u32, ThreadNet>,
    cpus: Vec<CpuNet>,
    totals: [(u64, u64); 9],
    packets: u64,
    delivered: u64,
    sends: FxHashMap<(u32, u64), u64>,
    send_count: u64,
    send_bytes: u64,
    /// The timeline's rows, with their sender's and receiver's tids (0:
    /// unknown), named at the end.
    timeline: Vec<(PacketRow, [u32; 2])>,
    limit: usize,
    points: FxHashMap<Sym, Point>,
    saw_syscalls: bool,
    saw_net: bool,
    /// Thread names for the timeline: each thread's latest `comm` in the
    /// recording (a name seen at a switch before the thread exec'd would
    /// otherwise stay until its next switch).
    names: FxHashMap<u32, Comm>,
    /// UDP datagrams queued to each socket, oldest first: (skb, the time
    /// it was queued), taken by receives in order.
    socks: FxHashMap<u64, VecDeque<(u64, u64)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    Queue,
    StartXmit,
    Xmit,
    NetifRx,
    Receive,
    Copy,
    Free,
}

impl Tracker {
    /// Keeps the lives of the first `limit` packets for the timeline.
    pub fn new(limit: usize) -> Tracker {
        Tracker {
            lives: FxHashMap::default(),
            threads: FxHashMap::default(),
            cpus: Vec::new(),
            totals: [(0, 0); 9],
            packets: 0,
            delivered: 0,
            sends: FxHashMap::default(),
            send_count: 0,
            send_bytes: 0,
            timeline: Vec::new(),
            limit,
            points: FxHashMap::default(),
            saw_syscalls: false,
            saw_net: false,
            names: FxHashMap::default(),
            socks: FxHashMap::default(),
        }
    }

    fn point(&mut self, p: Sym, strings: &Interner) -> Option<Point> {
        if let Some(&x) = self.points.get(&p) {
            return Some(x);
        }
        let x = match strings.resolve(p) {
            "net_dev_queue" => Point::Queue,
            "net_dev_start_xmit" => Point::StartXmit,
            "net_dev_xmit" => Point::Xmit,
            "netif_rx" => Point::NetifRx,
            "netif_receive_skb" => Point::Receive,
            "skb_copy_datagram_iovec" => Point::Copy,
            "consume_skb" | "kfree_skb" => Point::Free,
            _ => return None,
        };
        self.points.insert(p, x);
        Some(x)
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuNet {
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize_with(cpu as usize + 1, CpuNet::default);
        }
        &mut self.cpus[cpu as usize]
    }

    /// A kernel event, in time order.
    pub fn event(&mut self, k: &KRecord, strings: &Interner) {
        let t = k.t;
        match k.ev {
            KEvent::Switch {
                prev,
                prev_comm,
                next,
                next_comm,
                ..
            } => {
                for (tid, comm) in [(prev, prev_comm), (next, next_comm)] {
                    if tid != 0 {
                        self.names.insert(tid, comm);
                    }
                }
                self.task_context(k.cpu);
            }
            KEvent::Sock {
                sk,
                ready: true,
                proto,
                ..
            } => self.queued(k, sk, proto),
            KEvent::Sock {
                sk,
                ready: false,
                proto: IPPROTO_UDP,
                ret,
            } if ret >= 0 && self.in_thread(k) => self.udp_received(k, sk),
            KEvent::SysEnter { .. } if k.tid != 0 => {
                self.task_context(k.cpu);
                self.saw_syscalls = true;
                let th = self.threads.entry(k.tid).or_default();
                th.sys = Some(t);
                th.mark = t;
            }
            KEvent::SysExit if k.tid != 0 => {
                self.task_context(k.cpu);
                let th = self.threads.entry(k.tid).or_default();
                th.sys = None;
                th.last_exit = Some(t);
                for skb in std::mem::take(&mut th.copied) {
                    if let Some(mut l) = self.lives.remove(&skb) {
                        l.at[M_EXIT] = t;
                        self.close(l);
                    }
                }
            }
            KEvent::IrqEntry { .. } => self.cpu(k.cpu).ctx.push((None, t)),
            KEvent::IrqExit => {
                let c = self.cpu(k.cpu);
                if let Some(pos) = c.ctx.iter().rposition(|x| x.0.is_none()) {
                    let (_, entry) = c.ctx.remove(pos);
                    c.last_irq = Some((entry, t));
                }
            }
            KEvent::SoftirqEntry { vec } => {
                let c = self.cpu(k.cpu);
                c.ctx.push((Some(vec), t));
                if vec == NET_RX {
                    c.rx_run = Some(t);
                    c.rx_last = None;
                }
            }
            KEvent::SoftirqExit { vec } => {
                let c = self.cpu(k.cpu);
                if let Some(pos) = c.ctx.iter().rposition(|x| x.0 == Some(vec)) {
                    c.ctx.remove(pos);
                }
                if vec == NET_RX {
                    c.rx_run = None;
                    let last = c.rx_last.take();
                    self.end_stack(last, t);
                }
                // Work done in the softirq on a thread's time is not the
                // thread's next packet's send time.
                if let Some(th) = self.threads.get_mut(&k.tid) {
                    if th.sys.is_some() {
                        th.mark = th.mark.max(t);
                    }
                }
            }
            KEvent::Net { skb, point, len } | KEvent::Skb { skb, point, len } => {
                if let Some(p) = self.point(point, strings) {
                    self.saw_net = true;
                    self.packet(k, skb, p, len);
                }
            }
            _ => {}
        }
    }

    /// Data queued to socket `sk` (`sk_data_ready`): the receive-side
    /// stack of the packet the CPU received last is done.
    fn queued(&mut self, k: &KRecord, sk: u64, proto: u16) {
        let t = k.t;
        let c = self.cpu(k.cpu);
        let Some(skb) = c.rx_last.take() else { return };
        let Some(l) = self.lives.get_mut(&skb) else {
            return;
        };
        if l.at[M_STACK_END] == 0 {
            l.at[M_STACK_END] = t;
        }
        if proto == IPPROTO_UDP {
            let q = self.socks.entry(sk).or_default();
            if q.len() >= MAX_QUEUED {
                q.pop_front();
            }
            q.push_back((skb, t));
        }
    }

    /// A UDP receive on `sk` takes the oldest datagram of its socket.
    fn udp_received(&mut self, k: &KRecord, sk: u64) {
        let Some((skb, queued)) = self.socks.get_mut(&sk).and_then(|q| q.pop_front()) else {
            return;
        };
        if self
            .lives
            .get(&skb)
            .is_some_and(|l| l.at[M_STACK_END] == queued)
        {
            self.copied(k, skb);
        }
    }

    /// A context switch or a system call on `cpu`: no interrupt context
    /// runs there, so any still open lost its exit.
    fn task_context(&mut self, cpu: u32) {
        let c = self.cpu(cpu);
        if !c.ctx.is_empty() {
            c.ctx.clear();
            c.rx_run = None;
            c.rx_last = None;
        }
    }

    fn in_thread(&mut self, k: &KRecord) -> bool {
        k.tid != 0 && self.cpu(k.cpu).ctx.is_empty()
    }

    fn end_stack(&mut self, skb: Option<u64>, t: u64) {
        if let Some(l) = skb.and_then(|s| self.lives.get_mut(&s)) {
            if l.at[M_STACK_END] == 0 && l.at[M_COPY] == 0 {
                l.at[M_STACK_END] = t;
            }
        }
    }

    fn packet(&mut self, k: &KRecord, skb: u64, p: Point, len: u32) {
        let t = k.t;
        let in_thread = self.in_thread(k);
        match p {
            Point::Queue => {
                if let Some(old) = self.lives.get(&skb) {
                    if old.at[M_RECEIVE] == 0 && old.at[M_COPY] == 0 {
                        // Another hop of a packet in flight (a tunnel, a
                        // bridge): the same life.
                        return;
                    }
                    let old = self.lives.remove(&skb).expect("there");
                    self.close(old);
                }
                let mut l = Life::new(skb, len);
                l.at[M_QUEUE] = t;
                if in_thread {
                    l.sender = k.tid;
                    if let Some(th) = self.threads.get_mut(&k.tid) {
                        if let Some(entry) = th.sys {
                            if th.mark == entry {
                                l.at[M_APP] = th.last_exit.unwrap_or(0);
                            }
                            l.at[M_SYSCALL] = th.mark;
                            l.send = Some((k.tid, entry));
                        }
                    }
                }
                self.lives.insert(skb, l);
            }
            Point::StartXmit => {}
            Point::Xmit => {
                if let Some(l) = self.lives.get_mut(&skb) {
                    if l.at[M_XMIT] == 0 {
                        l.at[M_XMIT] = t;
                    }
                }
                if in_thread {
                    if let Some(th) = self.threads.get_mut(&k.tid) {
                        th.mark = th.mark.max(t);
                    }
                }
            }
            Point::NetifRx => {
                let l = self.lives.entry(skb).or_insert_with(|| Life::new(skb, len));
                if l.at[M_XMIT] == 0 {
                    l.at[M_XMIT] = t;
                }
            }
            Point::Receive => {
                let c = self.cpu(k.cpu);
                let (run, irq, prev) = (c.rx_run, c.last_irq, c.rx_last.replace(skb));
                self.end_stack(prev.filter(|&s| s != skb), t);
                let l = self.lives.entry(skb).or_insert_with(|| Life::new(skb, len));
                if l.at[M_RECEIVE] != 0 {
                    return;
                }
                if l.len == 0 {
                    l.len = len;
                }
                l.at[M_RECEIVE] = t;
                if let Some(run) = run {
                    l.at[M_SOFTIRQ] = run.max(l.at[M_XMIT]);
                    // A hard interrupt before the run, after the packet was
                    // sent (if it was sent here): the device's.
                    if let Some((entry, exit)) = irq {
                        let since = l.at[M_XMIT].max(l.at[M_QUEUE]);
                        if exit <= run && entry >= since && l.at[M_QUEUE] == 0 {
                            l.at[M_IRQ] = entry;
                            l.at[M_XMIT] = exit;
                        }
                    }
                }
            }
            Point::Copy => {
                if in_thread {
                    self.copied(k, skb);
                }
            }
            Point::Free => {
                let copied = self.lives.get(&skb).is_some_and(|l| l.at[M_COPY] != 0);
                if !copied {
                    if let Some(mut l) = self.lives.remove(&skb) {
                        if l.at[M_RECEIVE] != 0 && l.at[M_STACK_END] == 0 {
                            l.at[M_STACK_END] = t;
                        }
                        self.close(l);
                    }
                }
            }
        }
    }

    /// The receiving thread of `k` took the packet `skb` from its socket:
    /// its life ends when that thread's system call returns.
    fn copied(&mut self, k: &KRecord, skb: u64) {
        let Some(l) = self.lives.get_mut(&skb) else {
            return;
        };
        if l.at[M_COPY] != 0 || (l.at[M_RECEIVE] == 0 && l.at[M_XMIT] == 0) {
            return;
        }
        l.at[M_COPY] = k.t;
        l.receiver = k.tid;
        if l.at[M_STACK_END] == 0 {
            l.at[M_STACK_END] = k.t;
        }
        let th = self.threads.entry(k.tid).or_default();
        if th.sys.is_some() {
            th.copied.push(skb);
        } else {
            let l = self.lives.remove(&skb).expect("there");
            self.close(l);
        }
    }

    /// A finished life: its layers go to the tables.
    fn close(&mut self, l: Life) {
        let layers = layers(&l.at);
        if layers.is_empty() {
            return;
        }
        self.packets += 1;
        let delivered = l.at[M_COPY] != 0;
        if delivered {
            self.delivered += 1;
        }
        for &(i, ns) in &layers {
            self.totals[i].0 += 1;
            self.totals[i].1 += ns;
        }
        if let Some(send) = l.send {
            let n = self.sends.entry(send).or_insert(0);
            if *n == 0 {
                self.send_count += 1;
            }
            *n += 1;
            self.send_bytes += l.len as u64;
            if self.sends.len() > 4096 {
                // Only calls still sending are needed to count distinct ones.
                self.sends.retain(|&(tid, entry), _| {
                    self.threads
                        .get(&tid)
                        .is_some_and(|th| th.sys == Some(entry))
                });
            }
        }
        if self.timeline.len() < self.limit {
            let first = l.at.iter().copied().filter(|&x| x != 0).min().unwrap_or(0);
            let last = l.at.iter().copied().max().unwrap_or(0);
            self.timeline.push((
                PacketRow {
                    skb: format!("{:#x}", l.skb),
                    len: l.len,
                    sender: None,
                    receiver: None,
                    start: first,
                    end: last,
                    layers: layers
                        .iter()
                        .map(|&(i, ns)| (LAYERS[i].to_string(), ns))
                        .collect(),
                    delivered,
                },
                [l.sender, l.receiver],
            ));
        }
    }

    /// `COMM:TID` of a thread by its latest name, where known.
    fn name(&self, tid: u32) -> Option<String> {
        (tid != 0).then(|| match self.names.get(&tid) {
            Some(c) => {
                let n = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                format!("{}:{tid}", String::from_utf8_lossy(&c[..n]))
            }
            None => format!("?:{tid}"),
        })
    }

    pub fn finish(mut self) -> Packets {
        let unfinished = self.lives.len() as u64;
        // Lives waiting for their receiver's system call to exit are
        // complete but for it.
        let waiting: Vec<u64> = self
            .threads
            .values_mut()
            .flat_map(|th| std::mem::take(&mut th.copied))
            .collect();
        let mut unfinished = unfinished;
        for skb in waiting {
            if let Some(l) = self.lives.remove(&skb) {
                unfinished -= 1;
                self.close(l);
            }
        }
        let all: u64 = self.totals.iter().map(|x| x.1).sum();
        let layers = LAYERS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.totals[*i].0 > 0)
            .map(|(i, name)| LayerRow {
                layer: name.to_string(),
                packets: self.totals[i].0,
                total_ns: self.totals[i].1,
                mean_ns: self.totals[i].1 as f64 / self.totals[i].0 as f64,
                share: if all == 0 {
                    0.0
                } else {
                    self.totals[i].1 as f64 / all as f64
                },
            })
            .collect();
        let per_send_ns = if self.send_count == 0 {
            Vec::new()
        } else {
            LAYERS
                .iter()
                .enumerate()
                .filter(|(i, _)| self.totals[*i].0 > 0)
                .map(|(i, name)| {
                    (
                        name.to_string(),
                        self.totals[i].1 as f64 / self.send_count as f64,
                    )
                })
                .collect()
        };
        let mut timeline: Vec<PacketRow> = std::mem::take(&mut self.timeline)
            .into_iter()
            .map(|(mut row, [sender, receiver])| {
                row.sender = self.name(sender);
                row.receiver = self.name(receiver);
                row
            })
            .collect();
        timeline.sort_by_key(|r| r.start);
        let mut notes = Vec::new();
        if !self.saw_net {
            notes.push(
                "no packet events in this recording: record with `critpath record --net` (add --syscalls for the application and system-call layers)"
                    .to_string(),
            );
        } else if !self.saw_syscalls {
            notes.push(
                "no system calls recorded: the application, syscall and copy layers need `critpath record --net --syscalls`"
                    .to_string(),
            );
        }
        Packets {
            packets: self.packets,
            delivered: self.delivered,
            unfinished,
            sends: self.send_count,
            bytes_per_send: if self.send_count == 0 {
                0.0
            } else {
                self.send_bytes as f64 / self.send_count as f64
            },
            layers,
            per_send_ns,
            timeline,
            notes,
        }
    }
}

impl KernelObserver for Tracker {
    fn event(&mut self, k: &KRecord, strings: &Interner) {
        Tracker::event(self, k, strings);
    }
}

/// A life's layers from its milestones: (layer, ns) in the order crossed.
fn layers(at: &[u64; 10]) -> Vec<(usize, u64)> {
    let set: Vec<usize> = (0..10).filter(|&i| at[i] != 0).collect();
    set.windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0], w[1]);
            // The interval from milestone a to b is layer a, except that
            // the interval ending at the softirq is the backlog wait.
            let layer = match (a, b) {
                (M_IRQ, _) => 3,
                (_, M_SOFTIRQ) => 4,
                (M_APP, _) => 0,
                (M_SYSCALL, _) => 1,
                (M_QUEUE, _) => 2,
                (M_XMIT, _) => 4,
                (M_SOFTIRQ, _) => 5,
                (M_RECEIVE, _) => 6,
                (M_STACK_END, _) => 7,
                (M_COPY, _) => 8,
                _ => return None,
            };
            Some((layer, at[b].saturating_sub(at[a])))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(t: u64, cpu: u32, tid: u32, ev: KEvent) -> KRecord {
        KRecord {
            t,
            cpu,
            pid: tid,
            tid,
            ev,
        }
    }

    /// A UDP datagram over loopback: the sender's syscall queues and
    /// transmits it, the NET_RX softirq runs on the sender's CPU, the
    /// receiver copies it in its recvfrom.
    /// A datagram over loopback (see the next test), its events interned
    /// in `s`.
    fn loopback(s: &mut Interner) -> Vec<KRecord> {
        let p = |s: &mut Interner, n: &str| s.intern(n);
        let (queue, xmit, rx, recv, copy) = (
            p(s, "net_dev_queue"),
            p(s, "net_dev_xmit"),
            p(s, "netif_rx"),
            p(s, "netif_receive_skb"),
            p(s, "skb_copy_datagram_iovec"),
        );
        let net = |skb, point| KEvent::Net {
            skb,
            point,
            len: 92,
        };
        vec![
            k(100, 1, 20, KEvent::SysEnter { nr: 45 }), // receiver blocks in recvfrom
            k(1000, 0, 10, KEvent::SysExit),            // sender's previous call
            k(1500, 0, 10, KEvent::SysEnter { nr: 44 }),
            k(2000, 0, 10, net(7, queue)),
            k(2100, 0, 10, net(7, rx)),
            k(2200, 0, 10, net(7, xmit)),
            k(2300, 0, 10, KEvent::SoftirqEntry { vec: 3 }),
            k(2400, 0, 10, net(7, recv)),
            k(2900, 0, 10, KEvent::SoftirqExit { vec: 3 }),
            k(3000, 0, 10, KEvent::SysExit),
            k(4000, 1, 20, net(7, copy)),
            k(4300, 1, 20, KEvent::SysExit),
        ]
    }

    fn track(evs: &[KRecord], s: &Interner) -> Packets {
        let mut tr = Tracker::new(10);
        for e in evs {
            tr.event(e, s);
        }
        tr.finish()
    }

    #[test]
    fn a_loopback_datagram_crosses_every_layer_in_order() {
        let mut s = Interner::new();
        let r = track(&loopback(&mut s), &s);
        assert_eq!(
            (r.packets, r.delivered, r.unfinished, r.sends),
            (1, 1, 0, 1)
        );
        let got: Vec<(String, u64)> = r.timeline[0].layers.clone();
        let want = [
            ("application", 500),
            ("syscall", 500),
            ("driver", 100),
            ("backlog", 200),
            ("softirq", 100),
            ("stack", 500),
            ("socket", 1100),
            ("copy", 300),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        assert_eq!(got, want);
        let total: f64 = r.layers.iter().map(|l| l.share).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(r.timeline[0].len, 92);
    }

    /// A thread switched in under one name that exec'd (or was renamed)
    /// while it ran is named by its latest name, not the one it had when
    /// its packet closed (the sender was `perf-exec` until its next switch).
    #[test]
    fn a_packets_threads_are_named_by_their_latest_name() {
        let mut s = Interner::new();
        let comm = |n: &str| {
            let mut c = [0u8; 16];
            c[..n.len()].copy_from_slice(n.as_bytes());
            c
        };
        let switch = |t, prev, prev_comm, next, next_comm| {
            let ev = KEvent::Switch {
                prev,
                prev_comm: comm(prev_comm),
                prev_state: 1,
                next,
                next_comm: comm(next_comm),
            };
            k(t, 0, prev, ev)
        };
        let mut evs = vec![switch(50, 0, "swapper/0", 10, "perf-exec")];
        evs.extend(loopback(&mut s));
        evs.push(switch(5000, 10, "sweep", 0, "swapper/0"));
        let r = track(&evs, &s);
        assert_eq!(r.timeline[0].sender.as_deref(), Some("sweep:10"));
        assert_eq!(r.timeline[0].receiver.as_deref(), Some("?:20"));
    }

    /// A softirq whose exit was lost (or whose entry came twice) does not
    /// hide the CPU's later packets: a system call or a context switch
    /// says no interrupt context runs there any more.
    #[test]
    fn an_interrupt_context_without_its_exit_ends_at_the_next_system_call() {
        let mut s = Interner::new();
        let clean = track(&loopback(&mut s), &s);
        for lost in [
            KEvent::SoftirqEntry { vec: 9 },
            KEvent::IrqEntry { name: Sym(0) },
        ] {
            let mut evs = loopback(&mut s);
            evs.insert(0, k(50, 0, 10, lost));
            let r = track(&evs, &s);
            assert_eq!((r.packets, r.delivered, r.sends), (1, 1, 1));
            assert_eq!(r.timeline[0].layers, clean.timeline[0].layers);
        }
        // A switch ends it too: the sender's call began on another CPU.
        let mut evs = loopback(&mut s);
        evs.insert(0, k(50, 0, 10, KEvent::SoftirqEntry { vec: 9 }));
        evs.retain(|e| !(e.t == 1000 && e.cpu == 0));
        let comm = [0u8; 16];
        let switch = KEvent::Switch {
            prev: 0,
            prev_comm: comm,
            prev_state: 0,
            next: 10,
            next_comm: comm,
        };
        evs.insert(1, k(900, 0, 0, switch));
        let r = track(&evs, &s);
        assert_eq!((r.packets, r.delivered, r.sends), (1, 1, 1), "{r:?}");
    }

    /// A packet from a NIC: the hard IRQ, the softirq, the stack, freed
    /// without a local receiver.
    #[test]
    fn a_received_packet_starts_at_its_devices_interrupt() {
        let mut s = Interner::new();
        let (recv, free, eth) = (
            s.intern("netif_receive_skb"),
            s.intern("consume_skb"),
            s.intern("eth0"),
        );
        let mut tr = Tracker::new(10);
        for e in [
            k(100, 0, 0, KEvent::IrqEntry { name: eth }),
            k(150, 0, 0, KEvent::IrqExit),
            k(180, 0, 0, KEvent::SoftirqEntry { vec: 3 }),
            k(
                200,
                0,
                0,
                KEvent::Net {
                    skb: 9,
                    point: recv,
                    len: 60,
                },
            ),
            k(
                260,
                0,
                0,
                KEvent::Skb {
                    skb: 9,
                    point: free,
                    len: 0,
                },
            ),
            k(300, 0, 0, KEvent::SoftirqExit { vec: 3 }),
        ] {
            tr.event(&e, &s);
        }
        let r = tr.finish();
        let got: Vec<(String, u64)> = r.timeline[0].layers.clone();
        let want: Vec<(String, u64)> =
            [("irq", 50), ("backlog", 30), ("softirq", 20), ("stack", 60)]
                .iter()
                .map(|(a, b)| (a.to_string(), *b))
                .collect();
        assert_eq!(got, want);
        assert!(!r.timeline[0].delivered);
        assert!(r.notes.iter().any(|n| n.contains("--syscalls")));
    }
}
