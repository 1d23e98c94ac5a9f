//! The traces a command reads, run through the engine: one input (a
//! critpath-session: opened once, later passes replayed), or several
//! hosts' files merged with aligned clocks; with a progress bar on a
//! terminal, and with the observers of views that need more than the
//! analysis.

use crate::error::{CliError, Result};
use crate::progress::{advance, clear, progress_bar};
use critpath_engine::{analyze_observed, Analysis, Observer, Options, Visit};
use critpath_import::multi::{Alignment, MergedSource};
use critpath_import::AnySource;
use critpath_session::{display_name, nonempty, Session, Settings};
use critpath_trace::{Interner, ReadError, RecordSource};
use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};

/// The traces given to a command: one file, or several hosts' files merged
/// with aligned clocks.
pub struct Inputs<'a> {
    pub paths: &'a [PathBuf],
    pub alignment: Option<Alignment>,
    /// `--trace ID`: only this request of a span file.
    pub request: Option<String>,
    /// One input: its session.
    session: Option<RefCell<Session>>,
}

/// Traces that share no link with the others: why, each file's own
/// analysis, and the first reader error among them (exit code 2 once the
/// analyses are out).
pub struct Unlinked {
    pub message: String,
    pub analyses: Vec<(String, Analysis)>,
    pub err: Option<ReadError>,
}

impl<'a> Inputs<'a> {
    pub fn new(paths: &'a [PathBuf]) -> Result<Self> {
        critpath_session::each_once(paths)?;
        // Span files are one set of requests, read together; other files
        // of several hosts are merged (a pipe among them is not sniffed
        // here, where its first bytes would be lost).
        let files = paths
            .iter()
            .all(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()));
        let session = match paths.len() == 1 || files {
            true => Some(Session::open(paths, &Settings::current())?),
            false => None,
        };
        let spans = |s: &Session| s.all(critpath_import::Format::Spans);
        let session = session.filter(|s| paths.len() == 1 || spans(s));
        let Some(session) = session else {
            return Ok(Inputs {
                paths,
                alignment: Some(critpath_import::multi::align(paths)?),
                request: None,
                session: None,
            });
        };
        Ok(Self::of_session(paths, session))
    }

    /// One input, opened already.
    pub fn of_session(paths: &'a [PathBuf], session: Session) -> Self {
        Inputs {
            paths,
            alignment: None,
            request: None,
            session: Some(RefCell::new(session)),
        }
    }

    /// The session of one input.
    pub fn session(&self) -> Option<std::cell::RefMut<'_, Session>> {
        self.session.as_ref().map(RefCell::borrow_mut)
    }

    /// The traces limited to one request (`--trace ID`) of a span file,
    /// which must be the only trace.
    pub fn with_request(mut self, request: Option<String>) -> Result<Self> {
        if let Some(id) = &request {
            let spans = self
                .session()
                .is_some_and(|s| s.all(critpath_import::Format::Spans));
            if self.paths.len() > 1 && !spans {
                return Err(CliError::input(format!(
                    "--trace {id}: picks one request of span files; the other traces are not span files"
                )));
            }
        }
        if let Some(mut s) = self.session() {
            s.set_request(request.clone());
        }
        self.request = request;
        Ok(self)
    }

    /// The traces' names, joined with ` + `.
    pub fn name(&self) -> String {
        self.paths
            .iter()
            .map(|t| display_name(t))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Runs a prepared engine over the traces; returns the analysis, the
    /// string table its symbols refer to, and a reader error that let the
    /// analysis finish (a trace without records is an error).
    pub fn run_engine(
        &self,
        engine: critpath_engine::Engine,
    ) -> Result<(Analysis, critpath_trace::Interner, Option<ReadError>)> {
        match &self.alignment {
            None => {
                let mut src = self.session().expect("one input").source()?;
                let (a, err) = run_to_end(&mut src, engine, &self.name())?;
                Ok((a, src.strings().clone(), err))
            }
            Some(al) => {
                let mut src = MergedSource::new(self.paths, al)?;
                let (a, err) = run_to_end(&mut src, engine, &self.name())?;
                Ok((a, src.strings().clone(), err))
            }
        }
    }

    /// The next most critical paths (see `critpath_engine::analyses::next_paths`).
    pub fn next_paths(
        &self,
        a: &Analysis,
        k: usize,
        remove: &[String],
        ends: &Options,
    ) -> Result<Vec<critpath_engine::analyses::NextPath>> {
        next_paths_by(a, k, remove, ends, |o| self.analyze(o).map(|(a, _)| a))
    }

    /// Analyzes the traces; a reader error that let the analysis finish
    /// comes back beside it.
    pub fn analyze(&self, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
        match self.session() {
            Some(mut s) => with_progress(&self.paths[0], |p| s.analyze(opts, p)),
            None => self.analyze_observed(opts, &mut |_: &Visit, _: &Interner| {}),
        }
    }

    /// [`Inputs::analyze`] with every state visit and dependence handed to
    /// `observer` as the engine goes.
    pub fn analyze_observed(
        &self,
        opts: Options,
        observer: &mut dyn Observer,
    ) -> Result<(Analysis, Option<ReadError>)> {
        match &self.alignment {
            None => {
                let mut s = self.session().expect("one input");
                with_progress(&self.paths[0], |p| s.analyze_observed(opts, observer, p))
            }
            Some(al) => {
                let mut src = MergedSource::new(self.paths, al)?;
                let opts = opts.with_settings(&Settings::current());
                let (mut a, err) = analyze_observed(&mut src, opts, observer, |_, _| {})
                    .map_err(CliError::analysis)?;
                a.diagnostics.extend(al.diagnostics());
                Ok((a, err))
            }
        }
    }

    /// When some files share no link with the others: why, and each file
    /// analyzed on its own (the `top` most critical states kept).
    pub fn unlinked(&self, top: Option<usize>) -> Result<Option<Unlinked>> {
        let Some(al) = self.alignment.as_ref() else {
            return Ok(None);
        };
        let then = ", so each trace is analyzed on its own (give the hosts' messages the same ids on both sides)";
        let Some(message) = al.unlinked_message(self.paths, then) else {
            return Ok(None);
        };
        let (mut analyses, mut first) = (Vec::new(), None);
        for p in self.paths {
            let mut s = request_session(p, None)?;
            one_request(&mut s)?;
            s.keep_records(0);
            // A file cut before its first record is shown so, with its
            // `input-cut`, beside the others.
            let (mut a, err) = match progress_run(p, |pr| s.analyze(Options::default(), pr))? {
                r @ (_, Some(_)) => r,
                r => nonempty(&display_name(p), r)?,
            };
            if let Some(n) = top {
                a.truncate_states(n);
            }
            first = first.or(err);
            analyses.push((display_name(p), a));
        }
        Ok(Some(Unlinked {
            message,
            analyses,
            err: first,
        }))
    }
}

/// Runs an engine over a source (of the traces named `name`).
fn run_to_end(
    src: &mut impl RecordSource,
    engine: critpath_engine::Engine<'_>,
    name: &str,
) -> Result<(Analysis, Option<ReadError>)> {
    let r = critpath_engine::run(src, engine, |_, _| {}).map_err(CliError::analysis)?;
    Ok(nonempty(name, r)?)
}

/// A reader error that still let the analysis finish becomes exit code 2
/// after the results are out.
pub fn finish_with(err: Option<ReadError>) -> Result<()> {
    match err {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Runs an opened trace through the engine with a progress bar, handing
/// every state visit and dependence to `visit` after each batch (views
/// that need more than the analysis; memory stays bounded).
pub fn stream_visits(
    src: &mut AnySource,
    trace: &Path,
    mut visit: impl FnMut(&critpath_engine::Visit, &critpath_trace::Interner),
) -> Result<(Analysis, Option<ReadError>)> {
    let engine = critpath_engine::Engine::observed(Options::default(), &mut visit);
    let pb = progress_bar(trace);
    let (a, err) = critpath_engine::run(src, engine, |_, bytes| advance(&pb, bytes))
        .map_err(|e| CliError::analysis_of(&display_name(trace), e))?;
    clear(pb);
    Ok((a, err))
}

/// Opens and analyzes a trace, with a progress bar on a terminal.
pub fn run_analysis(trace: &Path, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
    run_request_analysis(trace, None, opts)
}

/// [`run_analysis`] of one request of a span file when `request` names it.
pub fn run_request_analysis(
    trace: &Path,
    request: Option<&str>,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    analyze_session(trace, &mut request_session(trace, request)?, opts)
}

/// The session of `trace`, of one request of a span file when `request`
/// names it.
pub fn request_session(trace: &Path, request: Option<&str>) -> Result<Session> {
    let paths = [trace.to_path_buf()];
    let mut s = Session::open(&paths, &Settings::current())?;
    s.set_request(request.map(str::to_string));
    Ok(s)
}

/// Analyzes the one trace of session `s`, opened from `trace` (a span
/// file of several requests without a request named is an error).
pub fn analyze_session(
    trace: &Path,
    s: &mut Session,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    one_request(s)?;
    s.keep_records(0);
    with_progress(trace, |p| s.analyze(opts, p))
}

/// Any trace files a command is given, opened once: PyTorch profiler
/// traces (one rank or several), one trace (of one request with
/// `request`), or several hosts' traces merged with aligned clocks.
pub struct Traces<'a> {
    pub inputs: Inputs<'a>,
    /// Kineto traces, not analyzed yet (their first pass is the GPU one).
    gpu: std::cell::Cell<bool>,
}

impl<'a> Traces<'a> {
    pub fn open(paths: &'a [PathBuf], request: Option<String>) -> Result<Self> {
        let inputs = match paths.len() {
            1 => Inputs::of_session(paths, Session::open(paths, &Settings::current())?),
            _ if request.is_none() && critpath_import::all_kineto(paths) => {
                Inputs::of_session(paths, Session::open(paths, &Settings::current())?)
            }
            _ => Inputs::new(paths)?,
        };
        let gpu = request.is_none()
            && inputs
                .session()
                .is_some_and(|s| s.all(critpath_import::Format::Kineto));
        let inputs = inputs.with_request(request)?;
        if let Some(mut s) = inputs.session() {
            one_request(&mut s)?;
        }
        Ok(Traces {
            inputs,
            gpu: std::cell::Cell::new(gpu),
        })
    }

    /// Analyzes the traces (the first time by reading them, later by
    /// replaying them).
    pub fn analyze(&self, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
        if self.gpu.replace(false) {
            let mut s = self.inputs.session().expect("Kineto inputs");
            let window = critpath_gpu::GpuOptions::default();
            let noop = &mut |_: &Visit, _: &Interner| {};
            let first = &self.inputs.paths[0];
            let run = crate::gpu::analyze_observed(&mut s, first, &window, opts, false, noop)?;
            return Ok((run.analysis, run.err));
        }
        self.inputs.analyze(opts)
    }
}

/// Span files of several requests given to a command that analyzes one
/// trace, without `--trace ID`: refused. Merged into one trace, unrelated
/// requests would make one path through the idle time between them (only
/// `analyze` and `report` take such files request by request). Span files
/// of one request go on as that request.
fn one_request(s: &mut Session) -> Result<()> {
    if !s.request_id().is_empty() || !s.all(critpath_import::Format::Spans) {
        return Ok(());
    }
    match s.requests()? {
        None => Ok(()),
        Some(r) => Err(CliError::input(format!(
            "{} holds {} requests (trace ids), and this command analyzes one trace: pick a request with --trace ID (e.g. --trace {}; whatif, slack, cgraph and report take it), or analyze them all, request by request, with `critpath analyze`",
            s.name(),
            r.len(),
            r.first_id()
        ))),
    }
}

/// Runs an analysis of the session with a progress bar on a terminal; a
/// trace without records is an error.
fn with_progress(
    trace: &Path,
    run: impl FnOnce(
        &mut dyn FnMut(u64, u64),
    ) -> critpath_session::Result<(Analysis, Option<ReadError>)>,
) -> Result<(Analysis, Option<ReadError>)> {
    Ok(nonempty(&display_name(trace), progress_run(trace, run)?)?)
}

/// Runs an analysis with a progress bar on a terminal.
fn progress_run(
    trace: &Path,
    run: impl FnOnce(
        &mut dyn FnMut(u64, u64),
    ) -> critpath_session::Result<(Analysis, Option<ReadError>)>,
) -> critpath_session::Result<(Analysis, Option<ReadError>)> {
    let pb = progress_bar(trace);
    let result = run(&mut |_, bytes| advance(&pb, bytes));
    clear(pb);
    result
}

/// `--correct-overhead`: takes the calibrated cost of annotation events out
/// of the analysis, or says how to calibrate.
pub fn correct(a: &mut Analysis, trace: &Path) -> Result<()> {
    match critpath_engine::analyses::correct_overhead(a, critpath_os::names::kernel_bound) {
        Some(_) => Ok(()),
        None => Err(CliError::Uncalibrated(trace.to_path_buf())),
    }
}

/// The next most critical paths, each found by `analyze` run with the
/// options `critpath_engine::analyses::next_paths` gives it; an analysis
/// that fails is reported as the error of `--remove`.
pub fn next_paths_by(
    a: &Analysis,
    k: usize,
    remove: &[String],
    ends: &Options,
    mut analyze: impl FnMut(Options) -> Result<Analysis>,
) -> Result<Vec<critpath_engine::analyses::NextPath>> {
    let mut failure = None;
    let r = critpath_engine::analyses::next_paths(a, k, remove, ends, |o| {
        analyze(o).map_err(|f| {
            failure = Some(f);
            io::Error::other("analysis failed")
        })
    });
    match (r, failure) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(f)) => Err(f.for_flag("--remove")),
        (Err(e), None) => Err(CliError::input(e.to_string())),
    }
}
