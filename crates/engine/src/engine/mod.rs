//! The streaming critical-path engine (docs/path-rules.md).
//!
//! Records arrive in time order. Each transition or `send` is a node of the
//! dependence graph (bgraph); the engine computes its longest-path length `L`
//! from the candidates the rules allow (the SM's previous node, the
//! transition a wait was waiting for, the matching `send`), writes the chosen
//! predecessor to the [`NodeLog`](crate::nodelog::NodeLog), and keeps only
//! what later nodes can still need: per SM its latest node, per `(SM, state)`
//! its latest transition, and the pending sends. At the end it walks the node
//! log back from the destination node and attributes each path edge to the
//! state it spent time in. The combined graph (cgraph) is accumulated on the
//! way.
//!
//! One concern per file: `rules` (the path rules), `machines` (SMs, state
//! keys, stacks, CPUs), `cgraph`, `logs` (node log and slack graph),
//! `whatif` (speed-ups), `endpoints` (start and destination), `walk`,
//! `windows`, `tables`, `diagnose` (diagnostics prose), `names` (name
//! matching), `held` (time charged to the holder of what a state waited
//! for), `overhead` (the path's part of the overhead's correction),
//! `finish`.

mod blame;
mod cgraph;
pub(crate) mod diagnose;
mod endpoints;
mod finish;
mod held;
mod logs;
mod machines;
mod names;
mod overhead;
mod pending;
mod rewalk;
mod rules;
mod split;
mod tables;
mod walk;
mod whatif;
mod windows;

pub use names::nearest;
pub(crate) use names::without_id;
pub use pending::DEFAULT_PENDING_SENDS;
pub use rewalk::{Prediction, Rewalk};
pub(crate) use whatif::state_target;
pub use whatif::Speedup;

use crate::observer::Observer;
use cgraph::CGraphBuilder;
pub(crate) use cgraph::DEFER;
use critpath_trace::{Diagnostic, Interner, Scope, Sym};
use diagnose::DiagSink;
use logs::Logs;
use machines::Machines;
use split::Marks;

/// `L` of a node that no path from the start SM reaches.
const UNREACHED: i64 = i64::MIN;
/// Sentinels for the `from`/`to` of cgraph nodes.
const M_START: u32 = u32::MAX;
const M_END: u32 = u32::MAX - 1;
const M_SEND: u32 = u32::MAX - 2;
const M_ORIGIN: u32 = u32::MAX - 3;
const M_HELD: u32 = u32::MAX - 4;
const NONE32: u32 = u32::MAX;

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Keep only paths starting at this SM's (`SM` or `SYS/SM`) first node.
    pub from: Option<String>,
    /// End at this SM's last node (`SM[:STATE]`: or last transition into STATE).
    pub to: Option<String>,
    /// `from` and `to` are the source's own (a recording's command thread,
    /// see [`crate::pump::scoped`]), not the user's.
    pub ends_from_source: bool,
    /// Keep the critical path's segments (for timelines and exports).
    pub keep_path: bool,
    /// A state visit longer than this share of its SM's observed life, with no
    /// wait, is reported as `long-state`.
    pub long_state_share: Option<f64>,
    /// Compute every state's slack (needs a graph log on disk).
    pub slack: bool,
    /// Break the critical path down by time windows of this many ns.
    pub window_ns: Option<u64>,
    /// What-if: make these states FACTOR times faster (their intra-SM edges
    /// weigh `time / FACTOR`), and compute the path that results.
    pub speedups: Vec<Speedup>,
    /// How the speed-ups spread to states that wait on the SM's own work
    /// (the input's formats say: see [`critpath_trace::ScalesWith`]).
    pub scales_with: Vec<critpath_trace::ScalesWith>,
    /// What the analysis may hold (the most time windows).
    pub limits: critpath_trace::Limits,
    /// How many sends may wait for their receive at once (`None`:
    /// [`DEFAULT_PENDING_SENDS`]); see docs/path-rules.md, "Pending sends".
    pub pending_sends: Option<usize>,
    /// Everything on the caller's thread: no thread of the engine's own
    /// writes the node log or walks half the path (the results are the
    /// same).
    pub one_thread: bool,
    /// Leave the combined graph's rows out of the result
    /// ([`crate::Analysis::cgraph`] empty): a caller that reads only the
    /// tables (the per-request results of a file of many requests) skips
    /// building a row, with its names, for every cgraph node and edge. The
    /// pass then keeps one inter-SM edge for all the links from an SM to a
    /// cgraph node, not one per sending node (the path, tables and findings
    /// are the same; the node log's size may differ).
    pub no_cgraph: bool,
    /// Leave the states the critical path does not cross (critical time
    /// 0) out of [`crate::Analysis::states`]: a caller that reads only
    /// what bounds the path (the per-request results of a file of many
    /// requests) skips naming every other state.
    pub critical_states_only: bool,
    /// Keep the pass's graph for what-ifs afterwards
    /// ([`crate::Analysis::rewalk`]): a few bytes a node, spilled to a
    /// temporary file. Only a pass without speed-ups keeps it.
    pub rewalk: bool,
}

impl Options {
    /// Does a pass with these options keep its graph for what-ifs?
    fn keeps_rewalk(&self) -> bool {
        self.rewalk && self.speedups.is_empty()
    }

    /// These options under the program's `settings` (those the options do
    /// not set themselves).
    pub fn with_settings(mut self, settings: &critpath_trace::Settings) -> Options {
        self.pending_sends = self.pending_sends.or(settings.pending_sends);
        self.one_thread |= !settings.threads;
        self
    }
}

/// A node's handle kept in memory: id, `L`, time, cgraph node and the
/// cgraph origin of its SM (what an inter-SM edge from it leaves when no
/// view shows the combined graph: see `Engine::inter_from`; kept here, in
/// the handle's padding, so that a receive does not load the sender's
/// cgraph node to find it).
#[derive(Clone, Copy, Debug)]
struct NodeRef {
    id: u64,
    l: i64,
    t: u64,
    cnode: u32,
    origin: u32,
}

const _: () = assert!(std::mem::size_of::<NodeRef>() == 32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitOn {
    /// Not a waiting state.
    No,
    /// Only a `recv` ends it.
    Open,
    /// Waits for SM `(sys, sm)` to enter `state` (any when NONE32).
    On { sys: Sym, sm: Sym, state: u32 },
}

/// The streaming engine. Feed it records with [`Engine::feed`], then call
/// [`Engine::finish`]. `'o` is the borrow of its observer, if any.
pub struct Engine<'o> {
    opts: Options,
    /// Told of every state visit and dependence, when set.
    observer: Option<&'o mut dyn Observer>,
    m: Machines,
    g: CGraphBuilder,
    /// Pending sends by numeric id, and by string id's key (see
    /// [`critpath_trace::strings::link_key`]); a `recv` removes its send.
    /// Bounded: see [`pending`].
    pending: pending::Pending,
    logs: Logs,
    /// The SMs each speed-up matched.
    speedup_used: Vec<names::Matched>,
    /// The SMs the start (`Options::from`) matched.
    from_matched: names::Matched,
    /// The edges the speed-ups scaled, and whether a length overflowed.
    scaling: whatif::Scaling,
    next_node: u64,
    records: u64,
    /// The node with the greatest `L` so far, and its SM.
    best: Option<(NodeRef, u32)>,
    /// Where the walk back may split (see `split::Marks`).
    marks: Marks,
    diags: DiagSink,
    /// The receives whose links the source inferred, marked on the path.
    inferred: walk::Inferred,
    /// The cost of an annotation event per annotated SM, taken out of
    /// the path's edges by the overhead's correction.
    annotation_costs: Vec<critpath_trace::AnnotationCost>,
}

impl<'o> Engine<'o> {
    pub fn new(opts: Options) -> Self {
        Self::with_observer(opts, None)
    }

    /// An engine that tells `observer` of every state visit that ends and
    /// every dependence.
    pub fn observed(opts: Options, observer: &'o mut dyn Observer) -> Self {
        Self::with_observer(opts, Some(observer))
    }

    /// The node log keeps each edge's span when the path's edges are to be
    /// placed on the clock: kept, or handed to the observer.
    fn with_observer(opts: Options, observer: Option<&'o mut dyn Observer>) -> Self {
        let timed = opts.keep_path || observer.as_ref().is_some_and(|o| o.wants_path());
        let pending = pending::Pending::new(opts.pending_sends.unwrap_or(DEFAULT_PENDING_SENDS));
        let marks = Marks::new(opts.one_thread);
        Engine {
            speedup_used: vec![names::Matched::default(); opts.speedups.len()],
            from_matched: names::Matched::default(),
            scaling: whatif::Scaling::default(),
            logs: Logs::new(opts.slack, timed, opts.one_thread, opts.keeps_rewalk()),
            opts,
            observer,
            m: Machines::default(),
            g: CGraphBuilder::default(),
            pending,
            next_node: 0,
            records: 0,
            best: None,
            marks,
            diags: DiagSink::default(),
            inferred: walk::Inferred::default(),
            annotation_costs: Vec::new(),
        }
    }

    /// Tells the observer that a batch of records has been fed.
    pub fn after_batch(&mut self, strings: &Interner) {
        if let Some(o) = self.observer.as_mut() {
            o.after_batch(strings);
        }
    }

    /// The options the engine runs with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Records processed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Nodes created so far.
    pub fn nodes(&self) -> u64 {
        self.next_node
    }

    /// Lets the walk back split over two threads however short it is, and
    /// even with `CRITPATH_THREADS=1`, the helper handing over only two
    /// steps: for tests that the split walk finds what the one-thread walk
    /// does.
    #[doc(hidden)]
    pub fn split_walks_early(&mut self) {
        self.marks = Marks::every(1, 0, 2);
    }

    /// Adds a diagnostic that does not come from the engine (a reader's
    /// error, a truncated file...).
    pub fn add_diagnostic(&mut self, d: Diagnostic) {
        self.diags.extra.push(d);
    }

    /// The receives (SM, time) whose links the source inferred from times:
    /// the path's inter-SM edges into them are marked
    /// ([`crate::results::PathSegment::inferred`], [`crate::PathEdge::inferred`]).
    pub fn inferred_links(&mut self, links: Vec<(String, u64)>) {
        self.inferred = walk::Inferred::new(links);
    }

    /// The source renamed these SMs at its end (old name, new name): a
    /// start or destination given by an old name now goes by the new one
    /// (the start was matched when its SM appeared, under the old name).
    pub fn renamed(&mut self, renames: &[(String, String)]) {
        let (from, to) = (self.opts.from.take(), self.opts.to.take());
        let scope = Scope {
            from,
            to,
            scales_with: Vec::new(),
        }
        .renamed(renames);
        (self.opts.from, self.opts.to) = (scope.from, scope.to);
    }
}
