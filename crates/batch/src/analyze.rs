//! One file's analysis, reduced to per-request results: a span file with
//! several trace ids gives one [`TraceResult`] per request (by trace id);
//! any other trace gives one, of trace id `""` (a span file of one trace
//! id: that id). Each request is analyzed exactly as `critpath analyze
//! --trace ID` analyzes it.

use crate::{Error, Options, StateCrit, TraceResult};
use critpath_engine::Analysis;
use critpath_import::Opened;
use critpath_readers::spans::Requests;
use critpath_trace::{Diagnostic, ReadError, RecordSource};
use std::path::Path;

/// Analyzes a file; any problem reading it (even one that let the analysis
/// finish) is an error.
pub fn analyze_file(path: &Path, opts: &Options) -> Result<Vec<TraceResult>, Error> {
    match analyze_file_with_problems(path, opts)? {
        (_, Some(e)) => Err(e),
        (results, None) => Ok(results),
    }
}

/// Analyzes a file; a problem that let the analysis finish (a span or a
/// record skipped, a file cut short) comes back beside the results, as the
/// CLI prints what it found before it exits with 2.
pub fn analyze_file_with_problems(
    path: &Path,
    opts: &Options,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    analyze_file_full(path, opts).map(|f| (f.results, f.problem))
}

/// A file's analysis: its per-request results, a problem that let it
/// finish, and what the reader found about the file as a whole (a span
/// file's signs of lost trace context).
pub struct FileResults {
    pub results: Vec<TraceResult>,
    pub problem: Option<Error>,
    pub diagnostics: Vec<Diagnostic>,
}

/// [`analyze_file_with_problems`], with the file's diagnostics.
pub fn analyze_file_full(path: &Path, opts: &Options) -> Result<FileResults, Error> {
    let mut diagnostics = Vec::new();
    let (results, problem) = analyze_file_inner(path, opts, &mut diagnostics)?;
    Ok(FileResults {
        results,
        problem,
        diagnostics,
    })
}

fn analyze_file_inner(
    path: &Path,
    opts: &Options,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let file = path.display().to_string();
    let engine_opts = critpath_engine::Options {
        from: opts.from.clone(),
        to: opts.to.clone(),
        ..Default::default()
    };
    if critpath_import::is_kineto(path) {
        return gpu(path, opts, engine_opts);
    }
    if let Some(id) = &opts.trace {
        let mut src = critpath_import::open_request(path, id)?;
        let (r, err) = one(&mut src, &file, id, engine_opts)?;
        return Ok((vec![r], err.map(Error::Read)));
    }
    match critpath_import::open_requests(path)? {
        Opened::Trace(mut src, id) => {
            let (r, err) = one(&mut *src, &file, &id, engine_opts)?;
            Ok((vec![r], err.map(Error::Read)))
        }
        Opened::Requests(requests) => {
            diagnostics.extend(requests.sanity().diagnostics());
            analyze_requests(&requests, &file, opts)
        }
    }
}

/// The requests of a span file (`file` in messages), each analyzed on its
/// own; the file's first problem comes back beside the results.
pub fn analyze_requests(
    requests: &Requests,
    file: &str,
    opts: &Options,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let engine_opts = critpath_engine::Options {
        from: opts.from.clone(),
        to: opts.to.clone(),
        ..Default::default()
    };
    let mut out = Vec::with_capacity(requests.len());
    for (id, src) in requests.each() {
        let (r, _) = one(&mut src?, file, &id, engine_opts.clone())?;
        out.push(r);
    }
    let err = requests.problems().first().cloned().map(Error::Read);
    Ok((out, err))
}

/// Runs one request (or trace) through the engine.
fn one<S: RecordSource + ?Sized>(
    src: &mut S,
    file: &str,
    id: &str,
    opts: critpath_engine::Options,
) -> Result<(TraceResult, Option<ReadError>), Error> {
    let (a, err) =
        critpath_engine::analyze(src, opts, |_, _| {}).map_err(|e| Error::engine(file, e))?;
    if a.stats.records == 0 {
        if let Some(e) = err {
            return Err(e.into());
        }
        return Err(Error::Usage(format!("{file}: the trace holds no records")));
    }
    Ok((result(&a, file, id), err))
}

/// PyTorch profiler traces: one result per file, limited to one instance
/// of an annotation when asked.
fn gpu(
    path: &Path,
    opts: &Options,
    engine_opts: critpath_engine::Options,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let file = path.display().to_string();
    let window = critpath_gpu::GpuOptions {
        annotation: opts.annotation.clone(),
        instance: opts.instance.unwrap_or(0),
    };
    let mut src = critpath_import::open_gpu(&[path.to_path_buf()], &window)?;
    let (a, err) = critpath_engine::analyze(&mut src, engine_opts, |_, _| {})
        .map_err(|e| Error::engine(&file, e))?;
    if a.stats.records == 0 {
        let inside = match &window.annotation {
            Some(n) => format!(" inside annotation {n:?} instance {}", window.instance),
            None => String::new(),
        };
        return Err(Error::Usage(format!(
            "{file}: the trace holds no GPU or CPU op{inside}"
        )));
    }
    Ok((vec![result(&a, &file, "")], err.map(Error::Read)))
}

/// An analysis reduced to its critical states.
pub(crate) fn result(a: &Analysis, file: &str, id: &str) -> TraceResult {
    TraceResult {
        file: file.to_string(),
        trace_id: id.to_string(),
        length_ns: a.critical_path.length_ns,
        states: a
            .states
            .iter()
            .filter(|s| s.critical_ns > 0)
            .map(|s| StateCrit {
                sys: s.sys.clone(),
                sm: s.sm.clone(),
                state: s.state.clone(),
                critical_ns: s.critical_ns,
                criticality: s.criticality,
            })
            .collect(),
    }
}
