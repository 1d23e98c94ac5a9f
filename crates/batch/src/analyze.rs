//! One file's analysis, reduced to per-request results: a span file with
//! several trace ids gives one [`TraceResult`] per request (by trace id);
//! any other trace gives one, of trace id `""` (a span file of one trace
//! id: that id). Each request is analyzed exactly as `critpath analyze
//! --trace ID` analyzes it.

use crate::{Error, Options, StateCrit, TraceResult};
use critpath_engine::Analysis;
use critpath_import::Format;
use critpath_readers::spans::Requests;
use critpath_session::Session;
use critpath_trace::{Diagnostic, ReadError};
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
    let mut session = Session::open(&[path.to_path_buf()], &opts.settings)?;
    analyze_opened(&mut session, opts, diagnostics)
}

/// [`analyze_file_inner`] of inputs opened as one session (named by its
/// files joined with ` + `).
pub(crate) fn analyze_opened(
    session: &mut Session,
    opts: &Options,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let file = session.name();
    let engine_opts = engine_options(opts);
    // One pass over each input: nothing is kept for a replay.
    session.keep_records(0);
    if session.all(Format::Kineto) {
        return gpu(session, opts, engine_opts);
    }
    session.set_request(opts.trace.clone());
    if opts.trace.is_none() {
        if let Some(f) = analyze_session_requests(session, opts)? {
            diagnostics.extend(f.diagnostics);
            return Ok((f.results, f.problem));
        }
    }
    let id = session.request_id();
    let (a, err) = nonempty(&file, session.analyze(engine_opts, &mut |_, _| {}))?;
    Ok((vec![result(&a, &file, &id)], err.map(Error::Read)))
}

/// The requests of span files opened as one session (the spans of one
/// trace id are one request whichever file holds them), each analyzed on
/// its own; `None` unless the session's inputs are span files of several
/// requests. As `critpath analyze` and Python's `analyze` take them.
pub fn analyze_session_requests(
    session: &mut Session,
    opts: &Options,
) -> Result<Option<FileResults>, Error> {
    // (None for anything but span files.)
    let Some(requests) = session.requests()? else {
        return Ok(None);
    };
    let (results, problem) = analyze_requests(&requests, &session.name(), opts)?;
    Ok(Some(FileResults {
        results,
        problem,
        // Known once the requests were read through.
        diagnostics: requests.sanity().diagnostics(),
    }))
}

/// The engine's options for `opts`.
fn engine_options(opts: &Options) -> critpath_engine::Options {
    critpath_engine::Options {
        from: opts.from.clone(),
        to: opts.to.clone(),
        ..Default::default()
    }
}

/// The requests of a span file (`file` in messages), each analyzed on its
/// own (on every core unless the settings say one thread); the file's
/// first problem comes back beside the results.
pub fn analyze_requests(
    requests: &Requests,
    file: &str,
    opts: &Options,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let engine_opts = critpath_engine::Options {
        no_cgraph: true,
        critical_states_only: true,
        ..engine_options(opts).with_settings(&opts.settings)
    };
    let workers = match opts.settings.threads {
        true => std::thread::available_parallelism().map_or(1, |n| n.get()),
        false => 1,
    };
    let one = |id: String, src: Result<_, _>| -> Result<TraceResult, Error> {
        let run = critpath_engine::analyze(&mut src?, engine_opts.clone(), |_, _| {});
        let run = run.map_err(|source| critpath_session::Error::Engine {
            name: file.to_string(),
            source,
        });
        let (a, _) = nonempty(file, run)?;
        Ok(result(&a, file, &id))
    };
    let out = requests
        .map(workers, one)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let err = requests.problems().first().cloned().map(Error::Read);
    Ok((out, err))
}

/// An analysis of an input without records is an error.
fn nonempty(
    file: &str,
    run: critpath_session::Result<(Analysis, Option<ReadError>)>,
) -> Result<(Analysis, Option<ReadError>), Error> {
    Ok(critpath_session::nonempty(file, run?)?)
}

/// PyTorch profiler traces: one result per file, limited to one instance
/// of an annotation when asked.
fn gpu(
    session: &mut Session,
    opts: &Options,
    engine_opts: critpath_engine::Options,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    let window = critpath_gpu::GpuOptions {
        annotation: opts.annotation.clone(),
        instance: opts.instance.unwrap_or(0),
    };
    let noop = &mut |_: &critpath_engine::Visit, _: &critpath_trace::Interner| {};
    let run = session.gpu(&window, engine_opts, false, noop, &mut |_, _| {})?;
    let file = session.name();
    Ok((
        vec![result(&run.analysis, &file, "")],
        run.err.map(Error::Read),
    ))
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
