//! What bounds a critical path through a GPU trace, in HTA's categories
//! (`bound_by`): time on the path in CPU ops, in GPU kernels, in
//! communication (NCCL) kernels, in launch delays (CPU to GPU) and in gaps
//! between kernels on a stream. Two more say where the path's time is that
//! HTA gives no weight: time on a CPU thread between top-level ops, and the
//! tail of a synchronization after the GPU op it waited for ended.

use crate::emit::{BETWEEN_OPS, IDLE};
use critpath_engine::results::PathSegment;
use critpath_engine::{Analysis, Observer, PathEdge, Visit};
use critpath_trace::{Interner, Sym};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

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
    /// A blocking synchronization returning after the last GPU op it waited
    /// for ended (HTA: a weightless edge). Its time between the ends of the
    /// ops it waits for (a device sync's streams) is waiting, never its own:
    /// the path comes from the op that ended last.
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

    /// Adds one piece; `after_sync` says the piece before it was a stream
    /// releasing this thread's synchronization in the same state.
    fn add(&mut self, p: &Piece, after_sync: bool) {
        let ns = p.span.1.saturating_sub(p.span.0);
        let (to, from, state) = (p.to, p.from, p.state);
        let from_stream = from & STREAM != 0 || after_sync;
        let slot = match (to & STREAM != 0, p.inter || after_sync) {
            (true, _) if state & COMM != 0 => &mut self.communication_bound_ns,
            (true, true) if !from_stream => &mut self.gpu_kernel_launch_overhead_ns,
            (true, _) if state & IDLE_STATE != 0 => &mut self.gpu_kernel_kernel_overhead_ns,
            (true, true) => &mut self.gpu_kernel_kernel_overhead_ns,
            (true, false) => &mut self.gpu_compute_bound_ns,
            (false, true) if from_stream => &mut self.sync_return_ns,
            // A CPU collective, and a thread waiting for one.
            (false, _) if state & COMM != 0 => &mut self.communication_bound_ns,
            (false, _) if state & BETWEEN != 0 => &mut self.cpu_between_ops_ns,
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

/// Bits of what the breakdown asks of a name ([`name_flags`]): an SM that
/// is a stream, a state that is communication, `idle`, `between ops`, or
/// empty. `KNOWN` marks a name looked at.
const KNOWN: u8 = 1;
const STREAM: u8 = 2;
const COMM: u8 = 4;
const IDLE_STATE: u8 = 8;
const BETWEEN: u8 = 16;
const EMPTY: u8 = 32;

/// The flags of `name`.
fn name_flags(facts: &GpuFacts, name: &str) -> u8 {
    let mut f = KNOWN;
    if facts.streams.contains(name) {
        f |= STREAM;
    }
    if facts.comm_states.contains(name) {
        f |= COMM;
    }
    match name {
        IDLE => f |= IDLE_STATE,
        BETWEEN_OPS => f |= BETWEEN,
        "" => f |= EMPTY,
        _ => {}
    }
    f
}

/// A path segment as the breakdown sees it: the flags of its SM, of the
/// SM it comes from and of its state, whether it crosses SMs, where it is
/// (its SM and state, as ids that compare within one path; no state and
/// an empty one are the same place) and its time.
#[derive(Clone, Copy, Debug)]
struct Piece {
    to: u8,
    from: u8,
    state: u8,
    inter: bool,
    place: (u32, u32),
    span: (u64, u64),
}

/// The place id of an empty or absent state.
const NO_STATE: u32 = u32::MAX;

/// The breakdown built from the path's segments handed over from the last
/// to the first, as the engine's walk finds them: a segment's category
/// depends on the one before it, so each waits for its predecessor.
pub struct Tally<'a> {
    facts: &'a GpuFacts,
    window: (u64, u64),
    b: GpuBreakdown,
    /// The latest pieces given, not yet added: a run of one place's
    /// intra-SM pieces (a synchronization's return, after the zero-length
    /// ends of the other ops it waited for that ended at the same instant),
    /// whose category waits for the piece before the run.
    later: Vec<Piece>,
    /// [`name_flags`] of the source's symbols met so far, by symbol.
    flags: Vec<u8>,
}

impl<'a> Tally<'a> {
    /// Segments outside `[from, to)` are cut to it.
    pub fn new(facts: &'a GpuFacts, from: u64, to: u64) -> Self {
        Tally {
            facts,
            window: (from, to),
            b: GpuBreakdown::default(),
            later: Vec::new(),
            flags: Vec::new(),
        }
    }

    /// The edge before the one given last, its names symbols of `strings`.
    pub fn earlier_edge(&mut self, e: &PathEdge, strings: &Interner) {
        let state = e.state.map_or(EMPTY, |s| self.flags_of(s, strings));
        let p = Piece {
            to: self.flags_of(e.sm, strings),
            from: self.flags_of(e.from_sm, strings),
            state,
            inter: e.inter,
            place: (e.sm.0, place_of_state(e.state.map(|s| s.0), state)),
            span: (e.start_ns, e.end_ns),
        };
        self.earlier(p);
    }

    fn flags_of(&mut self, s: Sym, strings: &Interner) -> u8 {
        let i = s.index();
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
        }
        if self.flags[i] == 0 {
            self.flags[i] = name_flags(self.facts, strings.resolve(s));
        }
        self.flags[i]
    }

    /// A piece before those given: it continues their run, or decides
    /// it. A run that follows a stream's release of its place (the
    /// synchronization it ended) is that synchronization returning: every
    /// piece of it, not only the first, is the GPU's time, not the CPU's.
    fn earlier(&mut self, p: Piece) {
        let run = self.later.last().map(|l| (l.place, l.inter));
        if !p.inter && run.is_some_and(|(place, inter)| !inter && place == p.place) {
            self.later.push(p);
            return;
        }
        let after_sync = p.inter
            && p.from & STREAM != 0
            && run.is_some_and(|(place, inter)| !inter && place == p.place);
        for later in std::mem::take(&mut self.later) {
            self.add(later, after_sync);
        }
        self.later.push(p);
    }

    fn add(&mut self, mut p: Piece, after_sync: bool) {
        p.span.0 = p.span.0.max(self.window.0);
        p.span.1 = p.span.1.min(self.window.1);
        if p.span.1 > p.span.0 {
            self.b.add(&p, after_sync);
        }
    }

    /// The breakdown, once the path's first segment was given.
    pub fn finish(mut self) -> GpuBreakdown {
        for first in std::mem::take(&mut self.later) {
            self.add(first, false);
        }
        self.b.name_bound();
        self.b
    }
}

/// A state's place id: none for an empty or absent state.
fn place_of_state(id: Option<u32>, flags: u8) -> u32 {
    match id {
        Some(id) if flags & EMPTY == 0 => id,
        _ => NO_STATE,
    }
}

/// Breaks the path's segments down (the analysis must keep its path:
/// `Options::keep_path`); segments outside `[from, to)` are cut to it.
pub fn bound_by_window(path: &[PathSegment], facts: &GpuFacts, from: u64, to: u64) -> GpuBreakdown {
    let mut t = Tally::new(facts, from, to);
    // Names as ids, for places to compare as the engine's symbols do.
    let mut ids: HashMap<&str, u32> = HashMap::new();
    fn id<'p>(ids: &mut HashMap<&'p str, u32>, name: &'p str) -> u32 {
        let n = ids.len() as u32;
        *ids.entry(name).or_insert(n)
    }
    for s in path.iter().rev() {
        let state = name_flags(facts, &s.state);
        let p = Piece {
            to: name_flags(facts, &s.sm),
            from: name_flags(facts, &s.from_sm),
            state,
            inter: s.inter,
            place: (
                id(&mut ids, &s.sm),
                place_of_state(Some(id(&mut ids, &s.state)), state),
            ),
            span: (s.start_ns, s.end_ns),
        };
        t.earlier(p);
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
    fn path_edge(&mut self, edge: &PathEdge, strings: &Interner) {
        self.tally.earlier_edge(edge, strings);
        self.inner.path_edge(edge, strings);
    }
}
