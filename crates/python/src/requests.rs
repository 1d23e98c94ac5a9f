//! `critpath.analyze` on a span file (OTLP/Jaeger) holding several trace
//! ids: each request analyzed on its own and the requests aggregated, as
//! `critpath analyze FILE` does (docs/json.md "Many requests"),
//! never the file as one timeline.

use crate::guarded;
use critpath_batch::{analyze_session_requests, sort_results, FileResults, Options};
use critpath_session::Session;
use critpath_views::batch::{summary, Summary};
use pyo3::prelude::*;
use std::path::PathBuf;

/// What `analyze` found in a span file of several requests: the CLI's
/// `analyze --json` document, the per-request results (a JSON list of
/// critpath-batch's `TraceResult`, sorted by trace id), the line the CLI's
/// text opens with, and a problem reading the file that let the analysis
/// finish (the CLI prints the results, then it, and exits with 2).
type Found = (String, String, String, Option<String>);

/// `_native.requests(paths, from_, to, fraction)`: `None` unless `paths`
/// are span files holding several trace ids between them (the spans of one
/// id are one request whichever file holds them; then `analyze` goes on
/// as for any trace); `fraction` is the CLI's `--slowest`.
#[pyfunction]
#[pyo3(signature = (paths, from_=None, to=None, fraction=0.1))]
pub fn requests(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    from_: Option<String>,
    to: Option<String>,
    fraction: f64,
) -> PyResult<Option<Found>> {
    guarded(py, move || {
        // As the CLI: only regular files are read twice (here, then by
        // the analysis of one trace when they hold one request).
        let regular = |p: &PathBuf| std::fs::metadata(p).is_ok_and(|m| m.is_file());
        if !paths.iter().all(regular) {
            return Ok(None);
        }
        // Anything but span files of several requests: `None`.
        let settings = crate::settings();
        let mut session = Session::open(&paths, &settings).map_err(|e| e.to_string())?;
        session.keep_records(0);
        let opts = Options {
            from: from_,
            to,
            settings,
            ..Default::default()
        };
        let found = analyze_session_requests(&mut session, &opts).map_err(|e| e.to_string())?;
        let Some(FileResults {
            mut results,
            problem: err,
            diagnostics,
        }) = found.filter(|f| f.results.len() >= 2)
        else {
            return Ok(None);
        };
        sort_results(&mut results);
        let results_json = serde_json::to_string(&results).map_err(|e| e.to_string())?;
        let mut sum = Summary::new(results, fraction);
        sum.file_diagnostics = diagnostics;
        let name = session.name();
        let text = summary(&name, &sum.per_trace, &sum.states, sum.length_ns_sum);
        let verdict = text.lines().next().unwrap_or_default().to_string();
        Ok(Some((
            sum.document(err.as_ref()),
            results_json,
            verdict,
            err.map(|e| e.to_string()),
        )))
    })
}
