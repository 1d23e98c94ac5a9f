//! What bounds a critical path through a GPU trace, in HTA's categories
//! (`bound_by`): time on the path in CPU ops, in GPU kernels, in
//! communication (NCCL) kernels, in launch delays (CPU to GPU) and in gaps
//! between kernels on a stream. Two more say where the path's time is that
//! HTA gives no weight: time on a CPU thread between top-level ops, and the
//! tail of a synchronization after the GPU op it waited for ended.

use crate::emit::{BETWEEN_OPS, IDLE};
use critpath_engine::results::PathSegment;
use critpath_engine::Analysis;
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

/// Breaks the path's segments down (the analysis must keep its path:
/// `Options::keep_path`); segments outside `[from, to)` are cut to it.
pub fn bound_by_window(path: &[PathSegment], facts: &GpuFacts, from: u64, to: u64) -> GpuBreakdown {
    let mut b = GpuBreakdown::default();
    let mut prev: Option<&PathSegment> = None;
    for s in path {
        let after_sync = prev.is_some_and(|p| {
            p.inter && p.sm == s.sm && p.state == s.state && facts.streams.contains(&p.from_sm)
        }) && !s.inter;
        prev = Some(s);
        let mut s = s.clone();
        s.start_ns = s.start_ns.max(from);
        s.end_ns = s.end_ns.min(to);
        if s.end_ns > s.start_ns {
            b.add(facts, &s, after_sync);
        }
    }
    b.name_bound();
    b
}

/// The breakdown of an analysis's whole critical path (empty when the
/// analysis kept no path).
pub fn bound_by(a: &Analysis, facts: &GpuFacts) -> GpuBreakdown {
    bound_by_window(a.path.as_deref().unwrap_or(&[]), facts, 0, u64::MAX)
}
