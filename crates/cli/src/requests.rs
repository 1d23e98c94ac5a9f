//! Many requests on the command line: a span file of several trace ids
//! (`analyze`) or a batch of files (`batch`) reduced to per-request results
//! (critpath-batch), aggregated, and the slowest requests compared with
//! the rest, as text or JSON.

use critpath_batch::TraceResult;
use critpath_batch::{compare, sort_results, Aggregate, Comparison, PerTrace, StateAgg};
use critpath_views::batch as view;

/// Per-request results and what is derived from them.
pub struct Summary {
    pub per_trace: Vec<PerTrace>,
    pub states: Vec<StateAgg>,
    pub slowest: Comparison,
    pub length_ns_sum: u64,
}

impl Summary {
    /// Sorts the results by (file, trace id), aggregates them and compares
    /// the slowest `fraction` with the rest.
    pub fn new(mut results: Vec<TraceResult>, fraction: f64) -> Self {
        sort_results(&mut results);
        let mut agg = Aggregate::new();
        results.iter().for_each(|r| agg.add(r));
        Summary {
            per_trace: results.iter().map(TraceResult::row).collect(),
            states: agg.finish(),
            slowest: compare(&results, fraction),
            length_ns_sum: agg.length_ns_sum(),
        }
    }

    /// The text: the verdict over the requests and their count, the
    /// aggregate table (the first `top` rows; a footer for the rest), the
    /// slowest against the rest.
    pub fn text(&self, what: &str, top: Option<usize>, width: Option<usize>) -> String {
        let mut t = view::summary(what, &self.per_trace, &self.states, self.length_ns_sum);
        let n = top.unwrap_or(usize::MAX).min(self.states.len());
        if n > 0 {
            t.push('\n');
            t.push_str(&view::states_table(&self.states[..n], width));
            if n < self.states.len() {
                t.push_str(&format!(
                    "… {} more states folded (--top N shows more, --json all of them)\n",
                    self.states.len() - n
                ));
            }
        }
        let c = view::comparison(&self.slowest, width);
        if !c.is_empty() {
            t.push('\n');
            t.push_str(&c);
        }
        t
    }
}

impl From<critpath_batch::Error> for crate::error::CliError {
    fn from(e: critpath_batch::Error) -> Self {
        use crate::error::CliError;
        match e {
            critpath_batch::Error::Read(r) => CliError::Read(r),
            critpath_batch::Error::Usage(m) => CliError::Input(m),
            critpath_batch::Error::Analysis { file, source } => CliError::Analysis {
                context: format!("{file}: "),
                source,
            },
        }
    }
}
