//! `check` of a span file of several requests: each request is analyzed
//! and checked on its own, as `check --trace ID` checks it; the views name
//! the failures by trace id.

use super::verdict;
use crate::error::{CliError, Result};
use crate::output::stdout;
use critpath_batch::Error as BatchError;
use critpath_engine::check::{trace_errors, violations};
use critpath_engine::Options;
use critpath_readers::spans::Requests;
use critpath_trace::{Diagnostic, ReadError, RecordSource};
use critpath_views::batch::problem;
use critpath_views::json::{self, CheckSize, ManyCheckDoc, RequestCheck};

/// Checks every request of `requests` (`file` in messages); exit 1 when
/// one fails, 2 when the file could not be read in full.
pub fn check(requests: &Requests, file: &str, as_json: bool) -> Result<()> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let checked = requests
        .map(workers, |id, src| one(file, id, src))
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let problems: Vec<Diagnostic> = (requests.problems().iter())
        .map(|e| problem(&BatchError::Read(e.clone())))
        .collect();
    let ok = problems.is_empty() && checked.iter().all(RequestCheck::passed);
    let text = if as_json {
        json::document(&ManyCheckDoc::new(&checked, &problems, ok))
    } else {
        critpath_views::check::check_many(file, &checked, &problems, ok)
    };
    stdout(text.as_bytes())?;
    if let Some(e) = requests.problems().first() {
        return Err(CliError::Read(e.clone()));
    }
    verdict(ok)
}

/// The check of one request's records.
fn one(
    file: &str,
    id: String,
    src: std::result::Result<impl RecordSource, ReadError>,
) -> Result<RequestCheck> {
    let (a, _) = critpath_engine::analyze(&mut src?, Options::default(), |_, _| {})
        .map_err(|e| CliError::analysis_of(&format!("{file}, trace {id}"), e))?;
    Ok(RequestCheck {
        invariant_violations: violations(&a),
        trace_errors: trace_errors(&a).into_iter().cloned().collect(),
        size: CheckSize {
            records: a.stats.records,
            nodes: a.stats.nodes,
            state_machines: a.stats.state_machines,
            cgraph_nodes: a.cgraph.nodes.len(),
            cgraph_edges: a.cgraph.edges.len(),
        },
        trace_id: id,
    })
}
