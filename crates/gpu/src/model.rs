//! One rank's trace as critpath sees it: the analysis window (an annotation
//! instance, as HTA chooses it), the CPU ops of each thread, the GPU ops of
//! each CUDA stream with the runtime call that launched them, and what each
//! synchronization waited for (see `sync`).

use crate::kineto::{Ev, Kind, Trace};
use crate::sync;
use std::collections::{BTreeMap, HashMap};

/// Which part of a trace to analyse.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Limit the analysis to one instance of the user annotation whose
    /// name starts with this (`ProfilerStep` for one training step), as
    /// HTA's `annotation` argument does; `None` or empty: the whole trace.
    pub annotation: Option<String>,
    /// Which instance (0-based, in time order).
    pub instance: usize,
}

/// A CUDA stream: (device, stream id).
pub type StreamKey = (i64, i64);

/// Ops per CPU thread (pid, tid) and per stream.
type Threads = BTreeMap<(i64, i64), Vec<usize>>;
type Streams = BTreeMap<StreamKey, Vec<usize>>;

/// One rank's events, sorted out.
pub struct RankModel {
    pub trace: Trace,
    /// `[start, end]` of the analysed window (ns, the rank's own clock).
    pub window: Option<(u64, u64)>,
    /// CPU ops (operators and CUDA calls) per (pid, tid), in start order
    /// (longer first at equal starts).
    pub threads: Threads,
    /// GPU ops per stream, in start order.
    pub streams: Streams,
    /// The runtime call that launched a GPU op (by event index).
    pub launch_of: HashMap<usize, usize>,
    /// (runtime call, GPU op it launched), sorted: see [`RankModel::launched_by`].
    launches: Vec<(usize, usize)>,
    /// CPU calls that block until GPU ops finish: call -> awaited ops.
    pub cpu_waits: HashMap<usize, Vec<usize>>,
    /// GPU ops that may start only after other streams' ops finish
    /// (`cudaStreamWaitEvent`): op -> awaited ops.
    pub gpu_waits: HashMap<usize, Vec<usize>>,
}

fn in_window(w: Option<(u64, u64)>, t: u64) -> bool {
    w.is_none_or(|(a, b)| a <= t && t <= b)
}

/// The window of the `instance`-th annotation whose name starts with
/// `prefix`; an error names the annotations there are.
fn window_of(trace: &Trace, opts: &GpuOptions) -> Result<Option<(u64, u64)>, String> {
    let Some(prefix) = opts.annotation.as_deref().filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let mut found: Vec<&Ev> = trace
        .events
        .iter()
        .filter(|e| e.kind == Kind::Annotation && trace.name(e).starts_with(prefix))
        .collect();
    found.sort_by_key(|e| e.ts);
    match found.get(opts.instance) {
        Some(e) => Ok(Some((e.ts, e.end()))),
        None => Err(format!(
            "the trace has {} user annotation(s) starting with \"{prefix}\"; instance {} asked for",
            found.len(),
            opts.instance
        )),
    }
}

/// CPU ops per thread that start in the window (with a duration), and the
/// runtime calls by correlation.
fn cpu_ops(trace: &Trace, window: Option<(u64, u64)>) -> (Threads, HashMap<i64, usize>) {
    let mut runtime_by_corr = HashMap::new();
    let mut threads = Threads::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind == Kind::Runtime && e.corr >= 0 {
            runtime_by_corr.insert(e.corr, i);
        }
        let cpu = matches!(e.kind, Kind::CpuOp | Kind::Runtime);
        if cpu && e.dur > 0 && in_window(window, e.ts) {
            threads.entry((e.pid, e.tid)).or_default().push(i);
        }
    }
    let ev = &trace.events;
    for ops in threads.values_mut() {
        ops.sort_by_key(|&i| (ev[i].ts, std::cmp::Reverse(ev[i].dur)));
    }
    (threads, runtime_by_corr)
}

/// GPU ops per stream that were launched in the window (all, without a
/// window), with the runtime call that launched each.
fn gpu_ops(
    trace: &Trace,
    window: Option<(u64, u64)>,
    runtime_by_corr: &HashMap<i64, usize>,
) -> (Streams, HashMap<usize, usize>) {
    let mut streams = Streams::new();
    let mut launch_of = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        if e.kind != Kind::GpuOp || e.stream < 0 {
            continue;
        }
        let launch = runtime_by_corr.get(&e.corr).copied();
        let launch = launch.filter(|&l| trace.events[l].dur > 0);
        let keep = match (window, launch) {
            (None, _) => true,
            (Some(_), Some(l)) => in_window(window, trace.events[l].ts),
            (Some(_), None) => false,
        };
        if keep {
            streams.entry((e.device, e.stream)).or_default().push(i);
            if let Some(l) = launch {
                launch_of.insert(i, l);
            }
        }
    }
    let ev = &trace.events;
    for ops in streams.values_mut() {
        ops.sort_by_key(|&i| (ev[i].ts, i));
    }
    (streams, launch_of)
}

impl RankModel {
    /// Sorts a decoded trace out, keeping what falls in the window: CPU ops
    /// starting inside it and GPU ops launched inside it (what HTA keeps).
    pub fn build(trace: Trace, opts: &GpuOptions) -> Result<RankModel, String> {
        let window = window_of(&trace, opts)?;
        let (threads, runtime_by_corr) = cpu_ops(&trace, window);
        let (streams, launch_of) = gpu_ops(&trace, window, &runtime_by_corr);
        let mut launches: Vec<(usize, usize)> = launch_of.iter().map(|(&o, &l)| (l, o)).collect();
        launches.sort_unstable();
        let mut m = RankModel {
            trace,
            window,
            threads,
            streams,
            launch_of,
            launches,
            cpu_waits: HashMap::new(),
            gpu_waits: HashMap::new(),
        };
        let (cpu, gpu) = sync::resolve(&m);
        m.cpu_waits = cpu;
        m.gpu_waits = gpu;
        Ok(m)
    }

    /// The GPU ops a runtime call launched.
    pub fn launched_by(&self, call: usize) -> impl Iterator<Item = usize> + '_ {
        let from = self.launches.partition_point(|x| x.0 < call);
        self.launches[from..]
            .iter()
            .take_while(move |x| x.0 == call)
            .map(|x| x.1)
    }

    pub fn ev(&self, i: usize) -> &Ev {
        &self.trace.events[i]
    }

    pub fn name(&self, i: usize) -> &str {
        self.trace.name(&self.trace.events[i])
    }

    /// The ops of every stream in one list (for lookups by time).
    pub fn all_gpu_ops(&self) -> impl Iterator<Item = usize> + '_ {
        self.streams.values().flatten().copied()
    }
}
