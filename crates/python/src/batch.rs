//! `critpath.analyze_many`'s native half: one file's per-request results
//! and their aggregate, from critpath-batch (the code behind `critpath
//! batch`). A file's results cross as one JSON text (a batch's *part*), so
//! that what a worker sends back is one string, cheap to pickle, and the
//! tables are made here from the parts, never from a Python object per
//! request; the aggregate is the same whichever worker analyzed which
//! file.

use crate::{guarded, Result};
use critpath_batch::{sort_results, Aggregate, Options, TraceResult};
use critpath_import::lacks_request;
use pyo3::prelude::*;
use serde::Serialize;
use std::path::PathBuf;

fn to_json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| e.to_string())
}

/// `_native.analyze_file(path, options_json, threads=True, pending=False)`:
/// the file's per-request results (a JSON list of `TraceResult`, one
/// *part* of a batch); `options_json` holds `to`, `from`, `annotation`,
/// `instance`, `trace` (each optional). `threads=False` analyzes the file's
/// requests on the caller's thread only: a worker that is already one of
/// several in parallel (a Dask task) does not also spread its file over
/// every core. `pending=True`: a request that lacks an end the options name
/// comes back unmatched, for [`join_split`] to settle with the batch's other
/// files, and a span file that holds no span of the request `trace` names
/// gives no result (the others may hold it); else it raises. Errors name
/// the file, as `critpath batch` does.
#[pyfunction]
#[pyo3(signature = (path, options, threads = true, pending = false))]
pub fn analyze_file(
    py: Python<'_>,
    path: PathBuf,
    options: &str,
    threads: bool,
    pending: bool,
) -> PyResult<String> {
    guarded(py, || {
        let mut opts: Options =
            serde_json::from_str(options).map_err(|e| format!("analyze_many options: {e}"))?;
        // This worker's settings, from its own environment.
        opts.settings = crate::settings();
        opts.settings.threads &= threads;
        let r = match pending {
            true => match critpath_batch::analyze_file_with_problems(&path, &opts) {
                Ok((_, Some(e))) | Err(e) => Err(e),
                Ok((r, None)) => Ok(r),
            },
            false => critpath_batch::analyze_file(&path, &opts),
        };
        let r = match (r, &opts.trace) {
            (Err(critpath_batch::Error::Read(e)), Some(id)) if pending && lacks_request(&e, id) => {
                Ok(Vec::new())
            }
            (r, _) => r,
        };
        to_json(&r.map_err(|e| e.naming(&path))?)
    })
}

/// `_native.given_once(paths)`: raises `critpath.Error` naming the first
/// file given again, under its name or another (a symbolic or hard link),
/// with `critpath analyze`'s message: its requests would count twice.
#[pyfunction]
pub fn given_once(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<()> {
    guarded(py, || {
        let before = critpath_import::input::given_before(&paths);
        match paths.iter().zip(before).find_map(|(p, b)| Some((p, b?))) {
            None => Ok(()),
            Some((path, first)) => Err(format!(
                "{}: {}",
                path.display(),
                critpath_import::input::given_twice_message(&paths[first], "give each input once")
            )),
        }
    })
}

/// `_native.join_split(parts, options)`: the parts with the requests that
/// several files hold analyzed again as one (their files read as one set
/// of span files) and those still unmatched taken out, as one part (`None`
/// when nothing changed); the errors of the groups of files that could not
/// be joined (left per file); and the errors of the requests that lack an
/// end the options name in all their files.
#[pyfunction]
pub fn join_split(
    py: Python<'_>,
    parts: Vec<String>,
    options: &str,
) -> PyResult<(Option<String>, Vec<String>, Vec<String>)> {
    guarded(py, || {
        let mut opts: Options =
            serde_json::from_str(options).map_err(|e| format!("analyze_many options: {e}"))?;
        opts.settings = crate::settings();
        let mut all = results(&parts)?;
        let (joined, unjoined) = critpath_batch::join_split_requests(&mut all, &opts);
        let unmatched = critpath_batch::take_unmatched(&mut all);
        let messages =
            |errors: &[critpath_batch::Error]| errors.iter().map(|e| e.to_string()).collect();
        let changed = joined > 0 || !unmatched.is_empty();
        let part = changed.then(|| to_json(&all)).transpose()?;
        Ok((part, messages(&unjoined), messages(&unmatched)))
    })
}

/// The results of a batch's parts (each a JSON list of `TraceResult`), in
/// order.
fn results(parts: &[String]) -> Result<Vec<TraceResult>> {
    let mut out = Vec::new();
    for part in parts {
        let mut one: Vec<TraceResult> = serde_json::from_str(part)
            .map_err(|e| format!("per-trace results: not critpath's: {e}"))?;
        out.append(&mut one);
    }
    Ok(out)
}

/// `_native.Results(parts, sort=True)`: a batch's per-request results,
/// parsed once from its parts and listed as `critpath batch` lists them,
/// by (file, trace id), or with `sort=False` in the parts' order (the
/// slowest requests: longest path first); the tables and the slowest
/// requests are made from it.
#[pyclass(module = "critpath._native", frozen)]
pub struct Results {
    results: Vec<TraceResult>,
}

/// The `per_trace` table by columns; `top_*` null for a request with no
/// state on its path.
#[derive(Serialize, Default)]
struct Columns<'a> {
    file: Vec<&'a str>,
    trace_id: Vec<&'a str>,
    length_ns: Vec<u64>,
    top_sm: Vec<Option<&'a str>>,
    top_state: Vec<Option<&'a str>>,
    top_criticality: Vec<f64>,
}

#[pymethods]
impl Results {
    #[new]
    #[pyo3(signature = (parts, sort = true))]
    fn new(py: Python<'_>, parts: Vec<String>, sort: bool) -> PyResult<Self> {
        let mut results = guarded(py, || results(&parts))?;
        if sort {
            sort_results(&mut results);
        }
        Ok(Results { results })
    }

    fn __len__(&self) -> usize {
        self.results.len()
    }

    /// One row per request, as a JSON object of columns (file, trace_id,
    /// length_ns, top_sm, top_state, top_criticality).
    fn per_trace(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || {
            let mut c = Columns::default();
            for r in &self.results {
                let top = r.top();
                c.file.push(&r.file);
                c.trace_id.push(&r.trace_id);
                c.length_ns.push(r.length_ns);
                c.top_sm.push(top.map(|t| t.sm.as_str()));
                c.top_state.push(top.map(|t| t.state.as_str()));
                c.top_criticality.push(top.map_or(0.0, |t| t.criticality));
            }
            to_json(&c)
        })
    }

    /// The aggregate per state (a JSON list of `StateAgg`, most summed
    /// critical time first).
    fn aggregate(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || {
            let mut agg = Aggregate::new();
            self.results.iter().for_each(|r| agg.add(r));
            to_json(&agg.finish())
        })
    }

    /// The slowest `fraction` of the requests, longest path first, as one
    /// part.
    fn slowest(&self, py: Python<'_>, fraction: f64) -> PyResult<String> {
        guarded(py, || {
            to_json(&critpath_batch::slowest(&self.results, fraction).0)
        })
    }

    /// The slowest `fraction` against the rest (a JSON `Comparison`).
    fn compare(&self, py: Python<'_>, fraction: f64) -> PyResult<String> {
        guarded(py, || {
            to_json(&critpath_batch::compare(&self.results, fraction))
        })
    }
}
