//! Process-centric and kernel-wide profiles (as KTAU gives them). Per thread
//! and per process: inclusive and exclusive time of each state (a state's
//! inclusive time holds its sub-states: `running` holds
//! `running:syscall:read`), voluntary and involuntary context switches,
//! the interrupts, softirqs and timers that ran while it was current,
//! inclusive and exclusive on-CPU time of probed functions, and value
//! events (packet sizes). Kernel-wide: the same interrupts per CPU, the
//! switches per CPU, idle time, and distributions across processes
//! (CDFs) that expose outliers.
//!
//! States come from the engine's state visits, so any trace yields the
//! state part; the rest needs the kernel events of a perf.data recording.

use crate::Values;
use critpath_engine::Visit;
use critpath_os::names::{parse_thread, thread_tid, OsSm, OsState, BLOCKED};
use critpath_os::KernelObserver;
use critpath_readers::perf::kevent::{preempted, KEvent, KRecord, SOFTIRQS};
use critpath_trace::{Interner, Sym};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// An interrupt context: a hard-IRQ handler, a softirq vector, a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ctx {
    Irq(Sym),
    Softirq(u8),
    Timer(Sym),
}

#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    count: u64,
    ns: u64,
}

impl Acc {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.ns += ns;
    }
}

#[derive(Default)]
struct FuncAcc {
    calls: u64,
    inclusive: u64,
    exclusive: u64,
}

/// What the kernel events say of one thread.
#[derive(Default)]
struct ThreadK {
    pid: u32,
    voluntary: u64,
    involuntary: u64,
    on_cpu: u64,
    since: Option<u64>,
    ctx: FxHashMap<Ctx, Acc>,
    /// Probed functions it is in: (function, on-CPU time at entry, time of
    /// the calls inside it).
    stack: Vec<(Sym, u64, u64)>,
    funcs: FxHashMap<Sym, FuncAcc>,
    values: FxHashMap<Sym, Values>,
}

impl ThreadK {
    fn cpu_time(&self, t: u64) -> u64 {
        self.on_cpu + self.since.map_or(0, |s| t.saturating_sub(s))
    }
}

#[derive(Default)]
struct CpuK {
    /// Contexts running, innermost last: (context, start, time of nested
    /// contexts, the task it interrupted).
    stack: Vec<(Ctx, u64, u64, u32)>,
    ctx: FxHashMap<Ctx, Acc>,
    voluntary: u64,
    involuntary: u64,
    idle: u64,
    idle_since: Option<u64>,
}

/// The time of each state of each SM, from the engine's state visits:
/// every trace has them.
#[derive(Default)]
pub struct StateVisits {
    /// Exclusive time per (SM, state).
    states: FxHashMap<Sym, FxHashMap<Sym, Acc>>,
}

impl StateVisits {
    /// A state visit from the engine.
    pub fn visit(&mut self, v: &Visit) {
        if let Visit::State {
            sm,
            state,
            start,
            end,
            ..
        } = *v
        {
            self.states
                .entry(sm)
                .or_default()
                .entry(state)
                .or_default()
                .add(end.saturating_sub(start));
        }
    }
}

/// Collects a profile from kernel events ([`Profiler::event`], or as a
/// [`KernelObserver`]); [`Profiler::finish`] makes the tables with the
/// [`StateVisits`].
#[derive(Default)]
pub struct Profiler {
    threads: FxHashMap<u32, ThreadK>,
    cpus: Vec<CpuK>,
    values: FxHashMap<Sym, Values>,
    first: Option<u64>,
    last: u64,
    kernel_events: u64,
    switches: u64,
    funcs_seen: bool,
}

/// Time (ns) and visits of one state.
pub type StateTimes = BTreeMap<String, u64>;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CtxRow {
    /// `irq:NAME`, `softirq:VEC` or `timer:FUNCTION`.
    pub name: String,
    pub count: u64,
    /// Time in the handler, nested handlers left out.
    pub ns: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FuncRow {
    pub function: String,
    pub calls: u64,
    /// On-CPU time inside the function, its callees included / left out.
    pub inclusive_ns: u64,
    pub exclusive_ns: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ValueRow {
    /// `TRACEPOINT.len`: the tracepoint's length field.
    pub event: String,
    pub count: u64,
    pub mean: f64,
    pub min: u64,
    pub max: u64,
    pub histogram: Vec<(u64, u64)>,
}

/// One thread (an SM `COMM:TID`) or a process (its threads together), or
/// an SM that is neither (an interrupt SM, an annotated SM).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Unit {
    pub name: String,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    /// Threads of a process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<u32>,
    /// ns per state, sub-states included (`running` holds
    /// `running:syscall:read`).
    pub inclusive: StateTimes,
    /// ns per state, exactly that state.
    pub exclusive: StateTimes,
    /// Visits per state (exclusive).
    pub visits: StateTimes,
    /// Switches out while waiting for something (blocked, exited).
    pub voluntary: u64,
    /// Switches out while still runnable (preempted).
    pub involuntary: u64,
    pub on_cpu_ns: u64,
    /// Interrupts, softirqs and timers that ran while it was current.
    pub interrupts: Vec<CtxRow>,
    pub functions: Vec<FuncRow>,
    pub values: Vec<ValueRow>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuRow {
    pub cpu: u32,
    pub voluntary: u64,
    pub involuntary: u64,
    pub idle_ns: u64,
    pub interrupts: Vec<CtxRow>,
}

/// A point of a CDF across processes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CdfPoint {
    pub value: u64,
    /// Share of processes at or below `value`.
    pub fraction: f64,
    pub pid: u32,
    pub name: String,
}

/// The distribution of one metric across processes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Distribution {
    pub metric: String,
    pub processes: usize,
    pub median: u64,
    pub p90: u64,
    pub max: u64,
    pub cdf: Vec<CdfPoint>,
    /// Processes above the third quartile by more than three
    /// inter-quartile ranges.
    pub outliers: Vec<CdfPoint>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Profile {
    /// First to last event, ns.
    pub span_ns: u64,
    pub kernel_events: u64,
    pub threads: Vec<Unit>,
    pub processes: Vec<Unit>,
    /// SMs that are not threads: interrupt contexts, annotated SMs, the
    /// SMs of non-kernel traces.
    pub sms: Vec<Unit>,
    pub cpus: Vec<CpuRow>,
    /// Value events over the whole trace.
    pub values: Vec<ValueRow>,
    pub distributions: Vec<Distribution>,
    /// What the trace could not say (no kernel events, no probes, …).
    pub notes: Vec<String>,
}

impl Profiler {
    pub fn new() -> Self {
        Self::default()
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuK {
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize_with(cpu as usize + 1, CpuK::default);
        }
        &mut self.cpus[cpu as usize]
    }

    fn enter(&mut self, k: &KRecord, ctx: Ctx) {
        self.cpu(k.cpu).stack.push((ctx, k.t, 0, k.tid));
    }

    /// Ends the innermost context of `cpu` that `is` accepts (and any
    /// inside it whose exit was lost).
    fn exit(&mut self, k: &KRecord, is: impl Fn(&Ctx) -> bool) {
        self.cpu(k.cpu);
        let c = &mut self.cpus[k.cpu as usize];
        let Some(pos) = c.stack.iter().rposition(|(x, ..)| is(x)) else {
            return;
        };
        while c.stack.len() > pos {
            let (ctx, start, nested, tid) = c.stack.pop().expect("len > pos");
            let dur = k.t.saturating_sub(start);
            let own = dur.saturating_sub(nested);
            if let Some(outer) = c.stack.last_mut() {
                outer.2 += dur;
            }
            c.ctx.entry(ctx).or_default().add(own);
            self.threads
                .entry(tid)
                .or_default()
                .ctx
                .entry(ctx)
                .or_default()
                .add(own);
        }
    }

    /// A kernel event, in time order.
    pub fn event(&mut self, k: &KRecord) {
        self.first.get_or_insert(k.t);
        self.last = self.last.max(k.t);
        self.kernel_events += 1;
        if k.tid != 0 {
            // A task's event is a sign of life on its CPU: the switch that
            // put it there may be lost (this happens to switches from an
            // idle CPU, and to tasks running when the recording began).
            let th = self.threads.entry(k.tid).or_default();
            th.pid = k.pid;
            th.since.get_or_insert(k.t);
            let c = self.cpu(k.cpu);
            if let Some(s) = c.idle_since.take() {
                c.idle += k.t.saturating_sub(s);
            }
        }
        match k.ev {
            KEvent::Switch {
                prev,
                prev_state,
                next,
                ..
            } => {
                self.switches += 1;
                let invol = preempted(prev_state);
                let c = self.cpu(k.cpu);
                if prev == 0 {
                    if let Some(s) = c.idle_since.take() {
                        c.idle += k.t.saturating_sub(s);
                    }
                } else if invol {
                    c.involuntary += 1;
                } else {
                    c.voluntary += 1;
                }
                if next == 0 {
                    c.idle_since = Some(k.t);
                }
                if prev != 0 {
                    let th = self.threads.entry(prev).or_default();
                    if invol {
                        th.involuntary += 1;
                    } else {
                        th.voluntary += 1;
                    }
                    if let Some(s) = th.since.take() {
                        th.on_cpu += k.t.saturating_sub(s);
                    }
                }
                if next != 0 {
                    self.threads.entry(next).or_default().since = Some(k.t);
                }
            }
            KEvent::IrqEntry { name } => self.enter(k, Ctx::Irq(name)),
            KEvent::IrqExit => self.exit(k, |c| matches!(c, Ctx::Irq(_))),
            KEvent::SoftirqEntry { vec } => self.enter(k, Ctx::Softirq(vec)),
            KEvent::SoftirqExit { vec } => {
                self.exit(k, |c| matches!(c, Ctx::Softirq(v) if *v == vec))
            }
            KEvent::TimerEntry { func, .. } => self.enter(k, Ctx::Timer(func)),
            KEvent::TimerExit => self.exit(k, |c| matches!(c, Ctx::Timer(_))),
            KEvent::Net { point, len, .. } | KEvent::Skb { point, len, .. } if len > 0 => {
                self.values.entry(point).or_default().add(len as u64);
                let in_ctx = self
                    .cpus
                    .get(k.cpu as usize)
                    .is_some_and(|c| !c.stack.is_empty());
                if k.tid != 0 && !in_ctx {
                    let th = self.threads.entry(k.tid).or_default();
                    th.values.entry(point).or_default().add(len as u64);
                }
            }
            KEvent::Func { func, ret } if k.tid != 0 => {
                self.funcs_seen = true;
                let th = self.threads.entry(k.tid).or_default();
                let now = th.cpu_time(k.t);
                if !ret {
                    th.stack.push((func, now, 0));
                } else if let Some(pos) = th.stack.iter().rposition(|f| f.0 == func) {
                    // Calls inside it whose return was lost end with it.
                    while th.stack.len() > pos {
                        let (f, entry, inner) = th.stack.pop().expect("len > pos");
                        let incl = now.saturating_sub(entry);
                        if let Some(outer) = th.stack.last_mut() {
                            outer.2 += incl;
                        }
                        let a = th.funcs.entry(f).or_default();
                        a.calls += 1;
                        a.inclusive += incl;
                        a.exclusive += incl.saturating_sub(inner);
                    }
                }
            }
            _ => {}
        }
    }

    /// The tables, with the state times of `states`. `strings` resolves
    /// the symbols of both the events and the visits.
    pub fn finish(mut self, states: StateVisits, strings: &Interner) -> Profile {
        self.close_open_times();
        let units = self.units(&states, strings);
        let (threads, sms): (Vec<Unit>, Vec<Unit>) =
            units.into_iter().partition(|u| u.tid.is_some());
        let processes = processes(&threads);
        let cpus = self
            .cpus
            .iter()
            .enumerate()
            .map(|(i, c)| CpuRow {
                cpu: i as u32,
                voluntary: c.voluntary,
                involuntary: c.involuntary,
                idle_ns: c.idle,
                interrupts: ctx_rows(&c.ctx, strings),
            })
            .collect();
        Profile {
            span_ns: self.first.map_or(0, |f| self.last.saturating_sub(f)),
            kernel_events: self.kernel_events,
            values: value_rows(&self.values, strings),
            distributions: distributions(&processes),
            notes: self.notes(),
            threads,
            processes,
            sms,
            cpus,
        }
    }

    /// Threads still running (or idle CPUs) at the end count until then.
    fn close_open_times(&mut self) {
        let end = self.last;
        for th in self.threads.values_mut() {
            if let Some(s) = th.since.take() {
                th.on_cpu += end.saturating_sub(s);
            }
        }
        for c in &mut self.cpus {
            if let Some(s) = c.idle_since.take() {
                c.idle += end.saturating_sub(s);
            }
        }
    }

    /// One unit per SM (threads are the SMs named `COMM:TID`), and one per
    /// thread the kernel events name without states, busiest first.
    fn units(&self, states: &StateVisits, strings: &Interner) -> Vec<Unit> {
        let mut units: Vec<Unit> = Vec::new();
        let mut seen_tids = rustc_hash::FxHashSet::default();
        for (sm, states) in &states.states {
            let name = strings.resolve(*sm).to_string();
            let tid = thread_tid(&name);
            let mut u = Unit::named(name, tid);
            for (st, a) in states {
                u.add_state(strings.resolve(*st), a.count, a.ns);
            }
            if let Some(tid) = tid {
                seen_tids.insert(tid);
                if let Some(k) = self.threads.get(&tid) {
                    u.add_kernel(k, strings);
                }
            }
            units.push(u);
        }
        // Threads the kernel events name but that have no states (the
        // idle task's interrupts, threads outside the graph).
        for (tid, k) in &self.threads {
            if seen_tids.contains(tid) {
                continue;
            }
            let name = if *tid == 0 {
                "(idle)".to_string()
            } else {
                OsSm::Thread {
                    comm: "?",
                    tid: *tid,
                }
                .to_string()
            };
            let mut u = Unit::named(name, Some(*tid));
            u.add_kernel(k, strings);
            if u.on_cpu_ns > 0 || !u.interrupts.is_empty() || u.voluntary + u.involuntary > 0 {
                units.push(u);
            }
        }
        sort_busiest_first(&mut units);
        units
    }

    /// What the trace could not say.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.kernel_events == 0 {
            notes.push(
                "no kernel events in this trace: switches, interrupts, functions and values need a perf.data recording (critpath record)"
                    .to_string(),
            );
            return notes;
        }
        if self.switches == 0 {
            notes.push("no sched_switch events: no context switches or on-CPU times".into());
        }
        if !self.funcs_seen {
            notes.push(
                "no function probes recorded: record with --functions BIN:GLOB for function times"
                    .into(),
            );
        }
        if self.values.is_empty() {
            notes.push("no value events (packet sizes): record with --net for them".into());
        }
        notes
    }
}

impl KernelObserver for Profiler {
    fn event(&mut self, k: &KRecord, _strings: &Interner) {
        Profiler::event(self, k);
    }
}

/// Units by on-CPU time, then running time, then name.
fn sort_busiest_first(units: &mut [Unit]) {
    units.sort_by(|a, b| {
        b.on_cpu_ns
            .cmp(&a.on_cpu_ns)
            .then_with(|| b.running_ns().cmp(&a.running_ns()))
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// Is `u` a thread whose name is unknown (`?:TID`)?
fn unnamed(u: &Unit) -> bool {
    parse_thread(&u.name).is_some_and(|(comm, _)| comm == "?")
}

/// The threads of one pid together, named after the main thread
/// (`COMM:PID`), busiest first.
fn processes(threads: &[Unit]) -> Vec<Unit> {
    let mut procs: BTreeMap<(u32, String), Unit> = BTreeMap::new();
    for u in threads {
        let key = (u.pid.unwrap_or(u32::MAX), String::new());
        let p = procs.entry(key).or_insert_with(|| {
            let mut p = Unit::named(u.name.clone(), u.tid);
            p.pid = u.pid;
            p.tid = None;
            p
        });
        if (u.tid.is_some() && u.tid == u.pid && !unnamed(u)) || unnamed(p) {
            // The main thread names the process (else any thread whose
            // name is known).
            p.name = u.name.clone();
        }
        p.merge(u);
    }
    let mut processes: Vec<Unit> = procs.into_values().collect();
    for p in &mut processes {
        let (Some(pid), Some((comm, _))) = (p.pid, parse_thread(&p.name)) else {
            continue;
        };
        // `COMM:TID` of a thread → `COMM:PID` of its process.
        p.name = OsSm::Thread { comm, tid: pid }.to_string();
    }
    sort_busiest_first(&mut processes);
    processes
}

/// A figure of a process, for the distributions.
type Metric = fn(&Unit) -> u64;

/// The distributions of the processes' figures, when there are at least
/// two real processes.
fn distributions(processes: &[Unit]) -> Vec<Distribution> {
    let real: Vec<&Unit> = processes
        .iter()
        .filter(|p| p.pid.is_some_and(|p| p != 0))
        .collect();
    if real.len() < 2 {
        return Vec::new();
    }
    let metrics: [(&str, Metric); 5] = [
        ("on_cpu_ns", |u| u.on_cpu_ns),
        ("runnable_ns", Unit::runnable_ns),
        ("blocked_ns", Unit::blocked_ns),
        ("interrupt_ns", |u| u.interrupts.iter().map(|c| c.ns).sum()),
        ("involuntary", |u| u.involuntary),
    ];
    metrics
        .into_iter()
        .map(|(metric, f)| distribution(metric, &real, f))
        .collect()
}

/// The name of an interrupt context: `irq:NAME`, `softirq:VEC`,
/// `timer:FUNCTION`.
fn ctx_name(c: &Ctx, strings: &Interner) -> String {
    match *c {
        Ctx::Irq(s) => OsSm::Irq(strings.resolve(s)).to_string(),
        Ctx::Softirq(v) => {
            OsSm::Softirq(SOFTIRQS.get(v as usize).copied().unwrap_or("?")).to_string()
        }
        Ctx::Timer(s) => OsSm::Timer(strings.resolve(s)).to_string(),
    }
}

/// Interrupt contexts, longest first.
fn ctx_rows(m: &FxHashMap<Ctx, Acc>, strings: &Interner) -> Vec<CtxRow> {
    let mut v: Vec<CtxRow> = m
        .iter()
        .map(|(c, a)| CtxRow {
            name: ctx_name(c, strings),
            count: a.count,
            ns: a.ns,
        })
        .collect();
    v.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    v
}

/// Value events by name (`TRACEPOINT.len`).
fn value_rows(m: &FxHashMap<Sym, Values>, strings: &Interner) -> Vec<ValueRow> {
    let mut v: Vec<ValueRow> = m
        .iter()
        .map(|(p, x)| value_row(&format!("{}.len", strings.resolve(*p)), x))
        .collect();
    v.sort_by(|a, b| a.event.cmp(&b.event));
    v
}

fn value_row(event: &str, x: &Values) -> ValueRow {
    ValueRow {
        event: event.to_string(),
        count: x.count,
        mean: x.mean(),
        min: x.min,
        max: x.max,
        histogram: x.histogram.clone(),
    }
}

impl Unit {
    fn named(name: String, tid: Option<u32>) -> Unit {
        Unit {
            name,
            pid: tid,
            tid,
            threads: Vec::new(),
            inclusive: BTreeMap::new(),
            exclusive: BTreeMap::new(),
            visits: BTreeMap::new(),
            voluntary: 0,
            involuntary: 0,
            on_cpu_ns: 0,
            interrupts: Vec::new(),
            functions: Vec::new(),
            values: Vec::new(),
        }
    }

    pub fn inclusive_of(&self, state: &str) -> u64 {
        self.inclusive.get(state).copied().unwrap_or(0)
    }

    /// Time `running`, sub-states included.
    pub fn running_ns(&self) -> u64 {
        self.inclusive_of(&OsState::Running.to_string())
    }

    /// Time `runnable`.
    pub fn runnable_ns(&self) -> u64 {
        self.inclusive_of(&OsState::Runnable.to_string())
    }

    /// Time in any `blocked:*` state.
    pub fn blocked_ns(&self) -> u64 {
        self.inclusive_of(BLOCKED)
    }

    /// `count` visits of `state` lasting `ns` in all: its exclusive time,
    /// and the inclusive time of it and each state it is a sub-state of.
    fn add_state(&mut self, state: &str, count: u64, ns: u64) {
        *self.exclusive.entry(state.to_string()).or_default() += ns;
        *self.visits.entry(state.to_string()).or_default() += count;
        for (i, _) in state.match_indices(':') {
            *self.inclusive.entry(state[..i].to_string()).or_default() += ns;
        }
        *self.inclusive.entry(state.to_string()).or_default() += ns;
    }

    fn add_kernel(&mut self, k: &ThreadK, strings: &Interner) {
        if k.pid != 0 {
            self.pid = Some(k.pid);
        }
        self.voluntary = k.voluntary;
        self.involuntary = k.involuntary;
        self.on_cpu_ns = k.on_cpu;
        self.interrupts = ctx_rows(&k.ctx, strings);
        let mut f: Vec<FuncRow> = k
            .funcs
            .iter()
            .map(|(s, a)| FuncRow {
                function: strings.resolve(*s).to_string(),
                calls: a.calls,
                inclusive_ns: a.inclusive,
                exclusive_ns: a.exclusive,
            })
            .collect();
        f.sort_by_key(|r| std::cmp::Reverse(r.inclusive_ns));
        self.functions = f;
        self.values = value_rows(&k.values, strings);
    }

    /// Adds a thread's figures to its process.
    fn merge(&mut self, u: &Unit) {
        if let Some(t) = u.tid {
            self.threads.push(t);
        }
        for (m, from) in [
            (&mut self.inclusive, &u.inclusive),
            (&mut self.exclusive, &u.exclusive),
            (&mut self.visits, &u.visits),
        ] {
            for (k, v) in from {
                *m.entry(k.clone()).or_default() += v;
            }
        }
        self.voluntary += u.voluntary;
        self.involuntary += u.involuntary;
        self.on_cpu_ns += u.on_cpu_ns;
        merge_rows(
            &mut self.interrupts,
            &u.interrupts,
            |r| r.name.clone(),
            |a, b| {
                a.count += b.count;
                a.ns += b.ns;
            },
        );
        self.interrupts.sort_by_key(|r| std::cmp::Reverse(r.ns));
        merge_rows(
            &mut self.functions,
            &u.functions,
            |r| r.function.clone(),
            |a, b| {
                a.calls += b.calls;
                a.inclusive_ns += b.inclusive_ns;
                a.exclusive_ns += b.exclusive_ns;
            },
        );
        self.functions
            .sort_by_key(|r| std::cmp::Reverse(r.inclusive_ns));
        merge_rows(
            &mut self.values,
            &u.values,
            |r| r.event.clone(),
            |a, b| {
                let n = a.count + b.count;
                a.mean = (a.mean * a.count as f64 + b.mean * b.count as f64) / n as f64;
                a.min = a.min.min(b.min);
                a.max = a.max.max(b.max);
                a.count = n;
                for &(low, c) in &b.histogram {
                    crate::add_to_bucket(&mut a.histogram, low, c);
                }
            },
        );
    }
}

/// Adds each row of `from` to the row of `into` with the same key, or
/// appends it.
fn merge_rows<R: Clone>(
    into: &mut Vec<R>,
    from: &[R],
    key: impl Fn(&R) -> String,
    add: impl Fn(&mut R, &R),
) {
    for r in from {
        match into.iter_mut().find(|x| key(x) == key(r)) {
            Some(x) => add(x, r),
            None => into.push(r.clone()),
        }
    }
}

fn distribution(metric: &str, procs: &[&Unit], f: Metric) -> Distribution {
    let mut v: Vec<(u64, &Unit)> = procs.iter().map(|u| (f(u), *u)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    let n = v.len();
    let at = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1].0;
    let point = |i: usize| CdfPoint {
        value: v[i].0,
        fraction: (i + 1) as f64 / n as f64,
        pid: v[i].1.pid.unwrap_or(0),
        name: v[i].1.name.clone(),
    };
    let (q1, q3) = (at(0.25), at(0.75));
    let fence = q3 + 3 * (q3 - q1);
    Distribution {
        metric: metric.to_string(),
        processes: n,
        median: at(0.5),
        p90: at(0.9),
        max: v[n - 1].0,
        cdf: (0..n).map(point).collect(),
        outliers: (0..n)
            .filter(|&i| v[i].0 > fence && v[i].0 > 0)
            .map(point)
            .rev()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critpath_readers::perf::Comm;

    fn comm(s: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    fn k(t: u64, cpu: u32, pid: u32, tid: u32, ev: KEvent) -> KRecord {
        KRecord {
            t,
            cpu,
            pid,
            tid,
            ev,
        }
    }

    fn switch(t: u64, cpu: u32, prev: (u32, u32), state: u64, next: u32) -> KRecord {
        k(
            t,
            cpu,
            prev.0,
            prev.1,
            KEvent::Switch {
                prev: prev.1,
                prev_comm: comm("a"),
                prev_state: state,
                next,
                next_comm: comm("b"),
            },
        )
    }

    #[test]
    fn switches_interrupts_functions_and_states_add_up() {
        let mut s = Interner::new();
        let eth = s.intern("eth0");
        let f = s.intern("outer");
        let g = s.intern("inner");
        let xmit = s.intern("net_dev_xmit");
        let sm = s.intern("app:11");
        let (running, syscall, runnable) = (
            s.intern("running"),
            s.intern("running:syscall:read"),
            s.intern("runnable"),
        );
        let mut p = Profiler::new();
        let mut visits = StateVisits::default();
        // Process 10 with threads 10 and 11 on CPU 0; idle until 100.
        p.event(&switch(100, 0, (0, 0), 0, 11));
        p.event(&k(
            110,
            0,
            10,
            11,
            KEvent::Func {
                func: f,
                ret: false,
            },
        ));
        p.event(&k(120, 0, 10, 11, KEvent::IrqEntry { name: eth }));
        p.event(&k(125, 0, 10, 11, KEvent::SoftirqEntry { vec: 3 }));
        p.event(&k(130, 0, 10, 11, KEvent::SoftirqExit { vec: 3 }));
        p.event(&k(140, 0, 10, 11, KEvent::IrqExit));
        p.event(&k(
            150,
            0,
            10,
            11,
            KEvent::Func {
                func: g,
                ret: false,
            },
        ));
        p.event(&k(
            155,
            0,
            10,
            11,
            KEvent::Net {
                skb: 1,
                point: xmit,
                len: 1500,
            },
        ));
        // Preempted at 160 by thread 10, back at 200.
        p.event(&switch(160, 0, (10, 11), 0, 10));
        p.event(&switch(200, 0, (10, 10), 1, 11));
        p.event(&k(210, 0, 10, 11, KEvent::Func { func: g, ret: true }));
        p.event(&k(250, 0, 10, 11, KEvent::Func { func: f, ret: true }));
        p.event(&switch(300, 0, (10, 11), 1, 0));
        for (state, a, b) in [
            (running, 100, 160),
            (runnable, 160, 200),
            (syscall, 200, 300),
        ] {
            visits.visit(&Visit::State {
                sys: sm,
                sm,
                state,
                start: a,
                end: b,
            });
        }
        let prof = p.finish(visits, &s);
        let th = prof.threads.iter().find(|u| u.tid == Some(11)).unwrap();
        assert_eq!((th.voluntary, th.involuntary), (1, 1));
        assert_eq!(th.on_cpu_ns, 60 + 100);
        assert_eq!(th.pid, Some(10));
        assert_eq!(th.inclusive["running"], 160);
        assert_eq!(th.exclusive["running"], 60);
        assert_eq!(th.inclusive["running:syscall"], 100);
        assert_eq!(th.visits["runnable"], 1);
        // irq 120..140 with a softirq 125..130 inside: 15 + 5.
        let irq = th.interrupts.iter().find(|c| c.name == "irq:eth0").unwrap();
        assert_eq!((irq.count, irq.ns), (1, 15));
        let sirq = th.interrupts.iter().find(|c| c.name == "softirq:NET_RX");
        assert_eq!(sirq.map(|c| c.ns), Some(5));
        // outer 110..250 on CPU except 160..200: 100; inner 150..210 on
        // CPU 10+10 = 20.
        let fr = |n: &str| th.functions.iter().find(|r| r.function == n).unwrap();
        assert_eq!(
            (fr("outer").inclusive_ns, fr("outer").exclusive_ns),
            (100, 80)
        );
        assert_eq!(
            (fr("inner").inclusive_ns, fr("inner").exclusive_ns),
            (20, 20)
        );
        assert_eq!(th.values[0].event, "net_dev_xmit.len");
        assert_eq!(prof.cpus[0].idle_ns, 0);
        assert_eq!((prof.cpus[0].voluntary, prof.cpus[0].involuntary), (2, 1));
        let proc10 = prof.processes.iter().find(|u| u.pid == Some(10)).unwrap();
        assert_eq!(proc10.name, "app:10");
        assert_eq!(proc10.on_cpu_ns, 160 + 40);
        assert_eq!(proc10.voluntary, 2);
        let mut t: Vec<u32> = proc10.threads.clone();
        t.sort();
        assert_eq!(t, vec![10, 11]);
    }

    #[test]
    fn the_cdf_names_the_outlier() {
        let units: Vec<Unit> = (1..=9)
            .map(|i| {
                let mut u = Unit::named(format!("p:{i}"), Some(i));
                u.on_cpu_ns = if i == 9 { 10_000 } else { 100 + i as u64 };
                u
            })
            .collect();
        let refs: Vec<&Unit> = units.iter().collect();
        let d = distribution("on_cpu_ns", &refs, |u| u.on_cpu_ns);
        assert_eq!(d.max, 10_000);
        assert_eq!(d.median, 105);
        assert_eq!(d.outliers.len(), 1);
        assert_eq!(d.outliers[0].name, "p:9");
        assert_eq!(d.cdf.last().unwrap().fraction, 1.0);
    }
}
