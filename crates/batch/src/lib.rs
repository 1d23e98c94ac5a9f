//! critpath-batch: critpath over many traces. Each file is analyzed on its
//! own; a span file (OTLP/Jaeger) holding several trace ids gives one
//! result per request. Per-request results are small ([`TraceResult`]: the
//! path's length and its critical states), so they can travel from workers
//! (threads, processes, a Dask cluster) to one [`Aggregate`], whose result
//! does not depend on the order results were added or merged in. The
//! slowest requests can be compared with the rest ([`compare`]).
//!
//! The definitions (percentiles, which requests are the slowest) are in
//! docs/json.md, section "Many requests".

mod aggregate;
mod analyze;
mod compare;
mod error;
mod run;
mod split;

pub use aggregate::{Aggregate, StateAgg};
pub use analyze::{
    analyze_file, analyze_file_full, analyze_file_with_problems, analyze_requests,
    analyze_session_requests, FileResults,
};
pub use compare::{compare, compare_and_total, slowest, Comparison};
pub use error::{engine_message, Error};
pub use run::{analyze_files, FileOutcome};
pub use split::{join_split_requests, take_unmatched};

use serde::{Deserialize, Serialize};

/// What to analyze in each file, as `critpath analyze`'s options.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// The SM (or `SM:STATE`) where paths end (`--to`).
    pub to: Option<String>,
    /// The SM where paths start (`--from`).
    pub from: Option<String>,
    /// PyTorch profiler traces: one instance of the annotation whose name
    /// starts with this (`--annotation`).
    pub annotation: Option<String>,
    /// With `annotation`: which instance, 0-based (`--instance`; 0 when
    /// `None`).
    pub instance: Option<usize>,
    /// Span files: only the request with this trace id (`--trace`); a file
    /// without it is an error.
    pub trace: Option<String>,
    /// How the analysis runs (threads, memory), as the program running
    /// critpath resolved them; not sent to other workers, which resolve
    /// their own.
    #[serde(skip)]
    pub settings: critpath_trace::Settings,
}

/// A state on one request's critical path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateCrit {
    pub sys: String,
    pub sm: String,
    pub state: String,
    /// Time of the state on the critical path.
    pub critical_ns: u64,
    /// `critical_ns` over the path's length, as in `analyze`'s table.
    pub criticality: f64,
}

impl StateCrit {
    /// The state's name as the CLI accepts it back: `SM: STATE`, with
    /// `SYS/` before the SM outside the `local` system.
    pub fn name(&self) -> String {
        if self.sys == "local" {
            format!("{}: {}", self.sm, self.state)
        } else {
            format!("{}/{}: {}", self.sys, self.sm, self.state)
        }
    }
}

/// One request's (or one trace's) analysis, reduced to what aggregates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceResult {
    /// The file as given.
    pub file: String,
    /// The request's trace id in a span file; `""` for any other trace
    /// (a file is then one trace).
    pub trace_id: String,
    /// The critical path's length.
    pub length_ns: u64,
    /// The states with critical time, most critical first, in the order of
    /// `analyze`'s table.
    pub states: Vec<StateCrit>,
    /// Why the request could not be analyzed from this file's spans alone:
    /// an end the options name (`--to`, `--from`) that they do not hold,
    /// said as the CLI says it (no length, no states). The other files of a
    /// batch may hold the rest of the request: [`join_split_requests`]
    /// analyzes them together, and [`take_unmatched`] turns the requests
    /// still without the end into errors, before anything aggregates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<String>,
}

impl TraceResult {
    /// The most critical state, if any state is on the path.
    pub fn top(&self) -> Option<&StateCrit> {
        self.states.first()
    }

    /// The request as a row of the `per_trace` table.
    pub fn row(&self) -> PerTrace {
        self.row_with(self.file.clone(), self.trace_id.clone())
    }

    /// [`Self::row`], the request's file and trace id moved into it (left
    /// empty here).
    pub fn take_row(&mut self) -> PerTrace {
        let file = std::mem::take(&mut self.file);
        let trace_id = std::mem::take(&mut self.trace_id);
        self.row_with(file, trace_id)
    }

    fn row_with(&self, file: String, trace_id: String) -> PerTrace {
        let top = self.top();
        let sm = top.map(|t| t.sm.clone()).unwrap_or_default();
        let state = top.map(|t| t.state.clone()).unwrap_or_default();
        let criticality = top.map_or(0.0, |t| t.criticality);
        PerTrace {
            file,
            trace_id,
            length_ns: self.length_ns,
            top: Top {
                sm: sm.clone(),
                state: state.clone(),
                criticality,
            },
            top_sm: sm,
            top_state: state,
            top_criticality: criticality,
        }
    }
}

/// A row of the `per_trace` table (docs/json.md): a request and its most
/// critical state (`""` and 0 when no state is on its path).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerTrace {
    pub file: String,
    pub trace_id: String,
    pub length_ns: u64,
    /// The most critical state as one object (SPEC's `top`); the same as
    /// the flat `top_*` fields, which tables and Parquet use.
    #[serde(default)]
    pub top: Top,
    pub top_sm: String,
    pub top_state: String,
    pub top_criticality: f64,
}

/// A request's most critical state (`""` and 0 when none is on its path).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Top {
    pub sm: String,
    pub state: String,
    pub criticality: f64,
}

/// Sorts results as a batch lists them: by (file, trace id).
pub fn sort_results(results: &mut [TraceResult]) {
    results.sort_by(|a, b| (&a.file, &a.trace_id).cmp(&(&b.file, &b.trace_id)));
}
