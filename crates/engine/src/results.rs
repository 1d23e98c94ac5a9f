//! What an analysis produces, as plain tables (the critical path, the
//! per-state table, diagnostics, the combined graph) that every view —
//! table, JSON, DOT, HTML — renders without recomputing anything.

use critpath_trace::Diagnostic;
use serde::Serialize;

/// One end of the critical path.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Endpoint {
    pub sys: String,
    pub sm: String,
    pub t: u64,
}

/// The critical path's summary (`critical_path` in docs/json.md).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CriticalPath {
    pub length_ns: u64,
    pub start: Endpoint,
    pub end: Endpoint,
    /// Number of bgraph edges on the path.
    pub edges: u64,
    /// False when the trace has no node (or none reachable from `--from`).
    pub found: bool,
}

/// One row of the criticality table: a `(sys, sm, state)`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StateRow {
    pub sys: String,
    pub sm: String,
    pub state: String,
    pub visits: u64,
    pub total_ns: u64,
    pub critical_ns: u64,
    pub criticality: f64,
    /// With slack computed: how much the state could grow before it joins
    /// the critical path (the least over its edges; 0 on the path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slack_ns: Option<u64>,
    /// With slack computed: the mean slack over the state's edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slack_mean_ns: Option<f64>,
    /// Who held what this state waited for (a CPU, for a runnable thread):
    /// the path time spent on each holder before it let go, most first.
    /// Always in the JSON, empty when no one held what it waited for (so
    /// every `runnable` row carries it, docs/os-graph.md).
    pub blame: Vec<Blame>,
}

/// Path time blamed on the SM that held what a state waited for.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Blame {
    pub sm: String,
    pub ns: u64,
}

/// Counts of what was processed.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Stats {
    pub records: u64,
    pub nodes: u64,
    pub state_machines: u64,
    /// Bytes of node log that spilled to disk.
    pub node_log_bytes: u64,
    /// With what-if speed-ups: how many intra-SM edges with time (anywhere
    /// in the graph) they scaled. 0 when the states they match carry no
    /// time of their own (all of it on links): then no weight changed.
    #[serde(skip_serializing_if = "is_zero")]
    pub scaled_edges: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A cgraph node: the transition `from → to` of one SM (`start`, `end` and
/// `send` mark a life's first node, its end, and a send point).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CNodeRow {
    pub id: u32,
    pub sys: String,
    pub sm: String,
    pub from: String,
    pub to: String,
}

/// A cgraph edge: time in `state` between two transitions (intra-SM), or an
/// inter-SM dependence (dashed) charged to the waiting SM's `state`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CEdgeRow {
    pub from: u32,
    pub to: u32,
    pub state: String,
    pub inter: bool,
    pub visits: u64,
    pub total_ns: u64,
    pub critical_ns: u64,
}

/// The combined graph (docs/path-rules.md).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CGraph {
    pub nodes: Vec<CNodeRow>,
    pub edges: Vec<CEdgeRow>,
}

/// One edge of the critical path, in time order.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PathSegment {
    pub sys: String,
    /// The SM whose node ends the edge.
    pub sm: String,
    /// The state the edge's time is charged to.
    pub state: String,
    /// The SM whose node starts the edge (differs from `sm` on inter-SM edges).
    pub from_sm: String,
    pub inter: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    /// An inter-SM edge whose link the reader inferred from the times of a
    /// trace without flow events (docs/event-model.md); absent when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inferred: bool,
}

/// What the overhead's correction takes out of the critical path on one
/// state: for each path edge charged to it, one annotation event's cost of
/// its SM, never more than the edge weighs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathOverhead {
    pub sys: String,
    pub sm: String,
    /// Empty for edges charged to no state.
    pub state: String,
    pub ns: u64,
}

/// A state's share of the critical path inside one time window.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WindowState {
    pub sys: String,
    pub sm: String,
    pub state: String,
    pub critical_ns: u64,
    /// Share of the window's path time.
    pub share: f64,
}

/// The part of the critical path inside `[start_ns, end_ns)`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WindowRow {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Critical-path time inside the window.
    pub path_ns: u64,
    pub states: Vec<WindowState>,
}

/// Everything one analysis found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Analysis {
    pub critical_path: CriticalPath,
    pub states: Vec<StateRow>,
    pub diagnostics: Vec<Diagnostic>,
    pub stats: Stats,
    #[serde(skip)]
    pub cgraph: CGraph,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<PathSegment>>,
    /// With `--window`: the path broken down by time window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<Vec<WindowRow>>,
    /// The cost of the annotations the source knows of (see
    /// [`critpath_trace::AnnotationCost`]).
    #[serde(skip)]
    pub annotation_costs: Vec<critpath_trace::AnnotationCost>,
    /// The annotations' cost on the critical path per state, for the
    /// overhead's correction (empty when the source measured none).
    #[serde(skip)]
    pub path_overhead: Vec<PathOverhead>,
    /// The SMs of the recorded program, as the source knows them (see
    /// [`critpath_trace::Summary::program`]).
    #[serde(skip)]
    pub program: Vec<String>,
    /// The times are nanoseconds since the Unix epoch (see
    /// [`critpath_trace::Summary::wall_clock`]).
    #[serde(skip)]
    pub wall_clock: bool,
    /// With `--correct-overhead`: what was removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead_correction: Option<crate::analyses::Correction>,
    /// The pass's graph, kept for what-ifs ([`crate::Options::rewalk`]).
    #[serde(skip)]
    pub rewalk: Option<crate::engine::Rewalk>,
}

impl Analysis {
    /// The analysis as a run that kept no path gives it: no path, and a
    /// `path-gap` diagnostic without the states only the path's walk names.
    pub fn without_path(&self) -> Analysis {
        use crate::engine::diagnose::{GAP_NAMED, GAP_UNNAMED};
        let mut a = Analysis {
            path: None,
            ..self.clone()
        };
        let gaps = a.diagnostics.iter_mut();
        for d in gaps.filter(|d| d.kind == critpath_trace::DiagnosticKind::PathGap) {
            if let Some(i) = d.message.rfind(&format!("; {GAP_NAMED}")) {
                d.message.truncate(i + 2);
                d.message.push_str(GAP_UNNAMED);
            }
        }
        a
    }

    /// The path under `speedups`, answered from the pass's kept graph
    /// without another pass, when the pass kept one
    /// ([`crate::Options::rewalk`]) and the speed-ups name its states.
    pub fn predict(&self, speedups: &[crate::Speedup]) -> Option<crate::Prediction> {
        self.rewalk.as_ref()?.predict(speedups)
    }

    /// Orders the states least slack first (`critpath slack`): states
    /// without slack last, then by total time, then by name.
    pub fn sort_by_slack(&mut self) {
        self.states.sort_by(|x, y| {
            x.slack_ns
                .unwrap_or(u64::MAX)
                .cmp(&y.slack_ns.unwrap_or(u64::MAX))
                .then(y.total_ns.cmp(&x.total_ns))
                .then_with(|| (&x.sys, &x.sm, &x.state).cmp(&(&y.sys, &y.sm, &y.state)))
        });
    }

    /// Keeps the `n` most critical states.
    pub fn truncate_states(&mut self, n: usize) {
        self.states.truncate(n);
    }
}
