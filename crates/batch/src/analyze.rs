//! One file's analysis, reduced to per-request results: a span file with
//! several trace ids gives one [`TraceResult`] per request (by trace id);
//! any other trace gives one, of trace id `""` (a span file of one trace
//! id: that id). Each request is analyzed exactly as `critpath analyze
//! --trace ID` analyzes it; one that lacks an end the options name comes
//! back unmatched ([`TraceResult::unmatched`]), since the other files of a
//! batch may hold the rest of its spans.

use crate::error::unmatched_end;
use crate::{engine_message, take_unmatched, Error, Options, StateCrit, TraceResult};
use critpath_engine::Analysis;
use critpath_import::Format;
use critpath_readers::spans::Requests;
use critpath_session::Session;
use critpath_trace::lanes::lane_of;
use critpath_trace::{Diagnostic, ReadError};
use std::collections::HashMap;
use std::path::Path;

/// Analyzes a file on its own; any problem reading it (even one that let
/// the analysis finish) is an error, and so is a request that lacks an end
/// the options name (nothing else can hold the rest of its spans).
pub fn analyze_file(path: &Path, opts: &Options) -> Result<Vec<TraceResult>, Error> {
    let (mut results, problem) = analyze_file_with_problems(path, opts)?;
    match problem.or_else(|| take_unmatched(&mut results).into_iter().next()) {
        Some(e) => Err(e),
        None => Ok(results),
    }
}

/// Analyzes a file as one of a batch; a problem that let the analysis
/// finish (a span or a record skipped, a file cut short) comes back beside
/// the results, as the CLI prints what it found before it exits with 2. A
/// request (of a trace id) that lacks an end the options name comes back
/// unmatched: another file of the batch may hold it
/// ([`crate::join_split_requests`], then [`take_unmatched`]).
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
/// files joined with ` + `), a request that lacks an end coming back
/// unmatched.
pub(crate) fn analyze_opened(
    session: &mut Session,
    opts: &Options,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(Vec<TraceResult>, Option<Error>), Error> {
    session.check_annotation(opts.annotation.as_deref())?;
    let file = session.name();
    let engine_opts = engine_options(opts);
    // One pass over each input: nothing is kept for a replay.
    session.keep_records(0);
    if session.all(Format::Kineto) {
        return gpu(session, opts, engine_opts);
    }
    session.set_request(opts.trace.clone());
    if opts.trace.is_none() {
        if let Some(f) = session_requests(session, opts, true)? {
            diagnostics.extend(f.diagnostics);
            return Ok((f.results, f.problem));
        }
    }
    let id = session.request_id();
    let run = session.analyze(engine_opts, &mut |_, _| {});
    if let Err(critpath_session::Error::Engine { source, .. }) = &run {
        if let Some(r) = unmatched(source, &file, &id, true) {
            return Ok((vec![r], None));
        }
    }
    let (a, err) = nonempty(&file, run)?;
    Ok((vec![result(&a, &file, &id)], err.map(Error::Read)))
}

/// The request `id` of `file` as unmatched, if `e` is an end the options
/// name that its spans lack, the request has a trace id (other files may
/// hold the rest of it) and `defer` says to wait for them.
fn unmatched(e: &critpath_engine::Error, file: &str, id: &str, defer: bool) -> Option<TraceResult> {
    (defer && !id.is_empty() && unmatched_end(e)).then(|| TraceResult {
        file: file.to_string(),
        trace_id: id.to_string(),
        length_ns: 0,
        states: Vec::new(),
        unmatched: Some(engine_message(e)),
    })
}

/// The requests of span files opened as one session (the spans of one
/// trace id are one request whichever file holds them), each analyzed on
/// its own; `None` unless the session's inputs are span files of several
/// requests. As `critpath analyze` and Python's `analyze` take them.
pub fn analyze_session_requests(
    session: &mut Session,
    opts: &Options,
) -> Result<Option<FileResults>, Error> {
    session_requests(session, opts, false)
}

/// [`analyze_session_requests`]; with `defer`, a request that lacks an end
/// comes back unmatched.
fn session_requests(
    session: &mut Session,
    opts: &Options,
    defer: bool,
) -> Result<Option<FileResults>, Error> {
    // (None for anything but span files.)
    let Some(requests) = session.requests()? else {
        return Ok(None);
    };
    let (results, problem) = requests_results(&requests, &session.name(), opts, defer)?;
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
    requests_results(requests, file, opts, false)
}

/// [`analyze_requests`]; with `defer`, a request that lacks an end comes
/// back unmatched.
fn requests_results(
    requests: &Requests,
    file: &str,
    opts: &Options,
    defer: bool,
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
        if let Err(e) = &run {
            if let Some(r) = unmatched(e, file, &id, defer) {
                return Ok(r);
            }
        }
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

/// An analysis reduced to its critical states, most critical first.
pub(crate) fn result(a: &Analysis, file: &str, id: &str) -> TraceResult {
    let states = a
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
        .collect();
    TraceResult {
        file: file.to_string(),
        trace_id: id.to_string(),
        length_ns: a.critical_path.length_ns,
        // A span file's request (an id).
        states: if id.is_empty() {
            states
        } else {
            lanes_as_services(states)
        },
        unmatched: None,
    }
}

/// A request's critical states with its lanes' counted as their
/// service's (`db#2: q` as `db: q`): which lane a span takes depends on
/// the order its request's spans started in, so only the service's row
/// compares across requests. Most critical first, as before.
fn lanes_as_services(states: Vec<StateCrit>) -> Vec<StateCrit> {
    if !states.iter().any(|s| lane_of(&s.sm).is_some()) {
        return states;
    }
    let mut out: Vec<StateCrit> = Vec::with_capacity(states.len());
    let mut at: HashMap<(String, String, String), usize> = HashMap::new();
    for mut s in states {
        if let Some(base) = lane_of(&s.sm) {
            s.sm = base.to_string();
        }
        let key = (s.sys.clone(), s.sm.clone(), s.state.clone());
        match at.get(&key) {
            Some(&i) => {
                out[i].critical_ns += s.critical_ns;
                out[i].criticality += s.criticality;
            }
            None => {
                at.insert(key, out.len());
                out.push(s);
            }
        }
    }
    // A stable sort: equals stay in the table's order.
    out.sort_by_key(|s| std::cmp::Reverse(s.critical_ns));
    out
}
