//! What bounds a critical path through a GPU trace, in HTA's categories
//! (`bound_by`): time on the path in CPU ops, in GPU kernels, in
//! communication (NCCL) kernels, in launch delays (CPU to GPU) and in gaps
//! between kernels on a stream. Two more say where the path's time is that
//! HTA gives no weight: time on a CPU thread between top-level ops, and the
//! tail of a synchronization after the GPU op it waited for ended.

use crate::emit::{BETWEEN_OPS, IDLE};
use critpath_engine::results::PathSegment;
use critpath_engine::{Analysis, Observer, Visit};
use critpath_trace::Interner;
use serde::Serialize;
use std::collections::HashSet;

/// What the importer knows about the SMs and states it made.
#[derive(Clone, Debug, Default)]
pub struct GpuFacts {
    /// The SMs that are CUDA streams.
    pub streams: HashSet<String>,
    /// The states that are communication: NCCL kernels and the waits of
    /// collectives for the last rank.
    pub comm_states: HashSet<String>,
}

/// The critical path broken down by what bounds it, ns.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct GpuBreakdown {
    pub cpu_bound_ns: u64,
    pub gpu_compute_bound_ns: u64,
    pub gpu_kernel_launch_overhead_ns: u64,
    pub gpu_kernel_kernel_overhead_ns: u64,
    pub communication_bound_ns: u64,
    /// A CPU thread between top-level ops (Python, the framework): HTA
    /// links consecutive top-level ops with weightless edges.
    pub cpu_between_ops_ns: u64,
    /// A blocking synchronization returning after the GPU op it waited
    /// for ended (HTA: a weightless edge).
    pub sync_return_ns: u64,
    /// The largest of the five HTA categories: `cpu_bound`,
    /// `gpu_compute_bound`, `gpu_kernel_launch_overhead`,
    /// `gpu_kernel_kernel_overhead` or `communication_bound`.
    pub bound: String,
}

impl GpuBreakdown {
    /// The path's length as HTA would count it: without the time it gives
    /// no weight.
    pub fn hta_comparable_ns(&self) -> u64 {
        self.cpu_bound_ns
            + self.gpu_compute_bound_ns
            + self.gpu_kernel_launch_overhead_ns
            + self.gpu_kernel_kernel_overhead_ns
            + self.communication_bound_ns
    }

    /// Adds one segment; `after_sync` says the segment before it was a
    /// stream releasing this thread's synchronization in the same state.
    fn add(&mut self, facts: &GpuFacts, s: &PathSegment, after_sync: bool) {
        let ns = s.end_ns.saturating_sub(s.start_ns);
        let to_stream = facts.streams.contains(&s.sm);
        let from_stream = facts.streams.contains(&s.from_sm) || after_sync;
        let slot = match (to_stream, s.inter || after_sync) {
            (true, _) if facts.comm_states.contains(&s.state) => &mut self.communication_bound_ns,
            (true, true) if !from_stream => &mut self.gpu_kernel_launch_overhead_ns,
            (true, _) if s.state == IDLE => &mut self.gpu_kernel_kernel_overhead_ns,
            (true, true) => &mut self.gpu_kernel_kernel_overhead_ns,
            (true, false) => &mut self.gpu_compute_bound_ns,
            (false, true) if from_stream => &mut self.sync_return_ns,
            // A CPU collective, and a thread waiting for one.
            (false, _) if facts.comm_states.contains(&s.state) => &mut self.communication_bound_ns,
            (false, _) if s.state == BETWEEN_OPS => &mut self.cpu_between_ops_ns,
            (false, _) => &mut self.cpu_bound_ns,
        };
        *slot += ns;
    }

    fn name_bound(&mut self) {
        let cats = [
            ("cpu_bound", self.cpu_bound_ns),
            ("gpu_compute_bound", self.gpu_compute_bound_ns),
            (
                "gpu_kernel_launch_overhead",
                self.gpu_kernel_launch_overhead_ns,
            ),
            (
                "gpu_kernel_kernel_overhead",
                self.gpu_kernel_kernel_overhead_ns,
            ),
            ("communication_bound", self.communication_bound_ns),
        ];
        let best = cats.iter().max_by_key(|c| c.1).expect("five");
        self.bound = if best.1 == 0 {
            String::new()
        } else {
            best.0.to_string()
        };
    }
}

/// The breakdown built from the path's segments handed over from the last
/// to the first, as the engine's walk finds them: a segment's category
/// depends on the one before it, so each waits for its predecessor.
pub struct Tally<'a> {
    facts: &'a GpuFacts,
    window: (u64, u64),
    b: GpuBreakdown,
    /// The latest segment given, not yet added.
    later: Option<PathSegment>,
}

impl<'a> Tally<'a> {
    /// Segments outside `[from, to)` are cut to it.
    pub fn new(facts: &'a GpuFacts, from: u64, to: u64) -> Self {
        Tally {
            facts,
            window: (from, to),
            b: GpuBreakdown::default(),
            later: None,
        }
    }

    /// The segment before the one given last.
    pub fn earlier(&mut self, s: PathSegment) {
        let facts = self.facts;
        if let Some(later) = self.later.take() {
            let after_sync = s.inter
                && s.sm == later.sm
                && s.state == later.state
                && facts.streams.contains(&s.from_sm)
                && !later.inter;
            self.add(later, after_sync);
        }
        self.later = Some(s);
    }

    fn add(&mut self, mut s: PathSegment, after_sync: bool) {
        s.start_ns = s.start_ns.max(self.window.0);
        s.end_ns = s.end_ns.min(self.window.1);
        if s.end_ns > s.start_ns {
            self.b.add(self.facts, &s, after_sync);
        }
    }

    /// The breakdown, once the path's first segment was given.
    pub fn finish(mut self) -> GpuBreakdown {
        if let Some(first) = self.later.take() {
            self.add(first, false);
        }
        self.b.name_bound();
        self.b
    }
}

/// Breaks the path's segments down (the analysis must keep its path:
/// `Options::keep_path`); segments outside `[from, to)` are cut to it.
pub fn bound_by_window(path: &[PathSegment], facts: &GpuFacts, from: u64, to: u64) -> GpuBreakdown {
    let mut t = Tally::new(facts, from, to);
    for s in path.iter().rev() {
        t.earlier(s.clone());
    }
    t.finish()
}

/// The breakdown of an analysis's whole critical path (empty when the
/// analysis kept no path).
pub fn bound_by(a: &Analysis, facts: &GpuFacts) -> GpuBreakdown {
    bound_by_window(a.path.as_deref().unwrap_or(&[]), facts, 0, u64::MAX)
}

/// An observer that tallies the breakdown while the engine walks the path
/// back, and hands everything else to `inner`: the path is never kept.
pub struct BreakdownObserver<'a, 'o> {
    pub tally: Tally<'a>,
    pub inner: &'o mut dyn Observer,
}

impl Observer for BreakdownObserver<'_, '_> {
    fn visit(&mut self, v: &Visit, strings: &Interner) {
        self.inner.visit(v, strings);
    }
    fn after_batch(&mut self, strings: &Interner) {
        self.inner.after_batch(strings);
    }
    fn wants_path(&self) -> bool {
        true
    }
    fn path_edge(&mut self, edge: &PathSegment) {
        self.tally.earlier(edge.clone());
        self.inner.path_edge(edge);
    }
}
