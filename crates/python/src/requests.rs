//! `critpath.analyze` on a span file (OTLP/Jaeger) holding several trace
//! ids: each request analyzed on its own and the requests aggregated, as
//! `critpath analyze FILE` does (docs/json.md "Many requests"),
//! never the file as one timeline.

use crate::guarded;
use critpath_batch::{sort_results, Options};
use critpath_import::Format;
use critpath_views::batch::{summary, Summary};
use pyo3::prelude::*;
use std::path::PathBuf;

/// What `analyze` found in a span file of several requests: the CLI's
/// `analyze --json` document, the per-request results (a JSON list of
/// critpath-batch's `TraceResult`, sorted by trace id), the line the CLI's
/// text opens with, and a problem reading the file that let the analysis
/// finish (the CLI prints the results, then it, and exits with 2).
type Found = (String, String, String, Option<String>);

/// `_native.requests(path, from_, to, fraction)`: `None` unless `path` is
/// a span file holding several trace ids (then `analyze` goes on as for
/// any trace); `fraction` is the CLI's `--slowest`.
#[pyfunction]
#[pyo3(signature = (path, from_=None, to=None, fraction=0.1))]
pub fn requests(
    py: Python<'_>,
    path: PathBuf,
    from_: Option<String>,
    to: Option<String>,
    fraction: f64,
) -> PyResult<Option<Found>> {
    guarded(py, move || {
        // As the CLI: only a regular file is read twice (here, then by
        // the analysis of one trace when it holds one request).
        let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
        if !regular
            || critpath_import::format_of(&path).map_err(|e| e.to_string())? != Format::Spans
        {
            return Ok(None);
        }
        let opts = Options {
            from: from_,
            to,
            settings: crate::settings(),
            ..Default::default()
        };
        let (mut results, err) =
            critpath_batch::analyze_file_with_problems(&path, &opts).map_err(|e| e.to_string())?;
        if results.len() < 2 {
            return Ok(None);
        }
        sort_results(&mut results);
        let results_json = serde_json::to_string(&results).map_err(|e| e.to_string())?;
        let sum = Summary::new(results, fraction);
        let name = path.display().to_string();
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
