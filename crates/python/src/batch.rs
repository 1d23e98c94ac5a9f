//! `critpath.analyze_many`'s native half: one file's per-request results
//! and their aggregate, from critpath-batch (the code behind `critpath
//! batch`). Results cross as JSON text, so that what a Dask worker sends
//! back is plain picklable data and the aggregate on the client is the
//! same whichever worker analyzed which file.

use crate::{guarded, Result};
use critpath_batch::{Aggregate, Options, TraceResult};
use pyo3::prelude::*;
use std::path::PathBuf;

fn results(json: &str) -> Result<Vec<TraceResult>> {
    serde_json::from_str(json).map_err(|e| format!("per-trace results: not critpath's: {e}"))
}

fn to_json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| e.to_string())
}

/// `_native.analyze_file(path, options_json)`: the file's per-request
/// results (a JSON list of `TraceResult`); `options_json` holds `to`,
/// `from`, `annotation`, `instance`, `trace` (each optional).
#[pyfunction]
pub fn analyze_file(py: Python<'_>, path: PathBuf, options: &str) -> PyResult<String> {
    guarded(py, || {
        let mut opts: Options =
            serde_json::from_str(options).map_err(|e| format!("analyze_many options: {e}"))?;
        // This worker's settings, from its own environment.
        opts.settings = crate::settings();
        let r = critpath_batch::analyze_file(&path, &opts).map_err(|e| e.to_string())?;
        to_json(&r)
    })
}

/// `_native.aggregate(results_json)`: the aggregate per state (a JSON list
/// of `StateAgg`, most summed critical time first).
#[pyfunction]
pub fn aggregate(py: Python<'_>, results_json: &str) -> PyResult<String> {
    guarded(py, || {
        let mut agg = Aggregate::new();
        results(results_json)?.iter().for_each(|r| agg.add(r));
        to_json(&agg.finish())
    })
}

/// `_native.slowest(results_json, fraction)`: `[slowest, rest]`.
#[pyfunction]
pub fn slowest(py: Python<'_>, results_json: &str, fraction: f64) -> PyResult<String> {
    guarded(py, || {
        to_json(&critpath_batch::slowest(&results(results_json)?, fraction))
    })
}

/// `_native.compare(results_json, fraction)`: the slowest `fraction`
/// against the rest (a JSON `Comparison`).
#[pyfunction]
pub fn compare(py: Python<'_>, results_json: &str, fraction: f64) -> PyResult<String> {
    guarded(py, || {
        to_json(&critpath_batch::compare(&results(results_json)?, fraction))
    })
}
