//! Opening the traces a command reads and running them through the engine:
//! one file, or several hosts' files merged with aligned clocks; with a
//! progress bar on a terminal, and with the observers of views that need
//! more than the analysis.

use crate::error::{CliError, Result};
use crate::progress::{advance, clear, progress_bar};
use critpath_engine::{analyze_observed, Analysis, Observer, Options, Visit};
use critpath_import::multi::{Alignment, MergedSource};
use critpath_import::{open, AnySource};
use critpath_trace::{Interner, ReadError, RecordSource};
use std::io;
use std::path::{Path, PathBuf};

/// The traces given to a command: one file, or several hosts' files merged
/// with aligned clocks.
pub struct Inputs<'a> {
    pub paths: &'a [PathBuf],
    pub alignment: Option<Alignment>,
    /// `--trace ID`: only this request of a span file.
    pub request: Option<String>,
}

/// Traces that share no link with the others: why, and each file's own
/// analysis.
pub struct Unlinked {
    pub message: String,
    pub analyses: Vec<(String, Analysis)>,
}

impl<'a> Inputs<'a> {
    pub fn new(paths: &'a [PathBuf]) -> Result<Self> {
        let alignment = if paths.len() > 1 {
            Some(critpath_import::multi::align(paths)?)
        } else {
            None
        };
        Ok(Inputs {
            paths,
            alignment,
            request: None,
        })
    }

    /// The traces limited to one request (`--trace ID`) of a span file,
    /// which must be the only trace.
    pub fn with_request(mut self, request: Option<String>) -> Result<Self> {
        if let Some(id) = &request {
            if self.paths.len() > 1 {
                return Err(CliError::input(format!(
                    "--trace {id}: picks one request of one span file; give one trace file"
                )));
            }
        }
        self.request = request;
        Ok(self)
    }

    /// The traces' names, joined with ` + `.
    pub fn name(&self) -> String {
        self.paths
            .iter()
            .map(|t| t.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Runs a prepared engine over the traces; returns the analysis and the
    /// string table its symbols refer to.
    pub fn run_engine(
        &self,
        engine: critpath_engine::Engine,
    ) -> Result<(Analysis, critpath_trace::Interner)> {
        match &self.alignment {
            None => {
                let mut src = open_trace(&self.paths[0], self.request.as_deref())?;
                let a = run_to_end(&mut src, engine)?;
                Ok((a, src.strings().clone()))
            }
            Some(al) => {
                let mut src = MergedSource::new(self.paths, al)?;
                let a = run_to_end(&mut src, engine)?;
                Ok((a, src.strings().clone()))
            }
        }
    }

    /// The next most critical paths (see `critpath_engine::analyses::next_paths`).
    pub fn next_paths(
        &self,
        a: &Analysis,
        k: usize,
        remove: &[String],
    ) -> Result<Vec<critpath_engine::analyses::NextPath>> {
        next_paths_by(a, k, remove, |o| self.analyze(o).map(|(a, _)| a))
    }

    /// Analyzes the traces; a reader error that let the analysis finish
    /// comes back beside it.
    pub fn analyze(&self, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
        match &self.alignment {
            None => run_request_analysis(&self.paths[0], self.request.as_deref(), opts),
            Some(_) => self.analyze_observed(opts, &mut |_: &Visit, _: &Interner| {}),
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
                let mut src = open_trace(&self.paths[0], self.request.as_deref())?;
                analyze_source_observed(&mut src, &self.paths[0], opts, observer)
            }
            Some(al) => {
                let mut src = MergedSource::new(self.paths, al)?;
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
        let Some(message) = al.unlinked_message(self.paths) else {
            return Ok(None);
        };
        let mut analyses = Vec::new();
        for p in self.paths {
            let (mut a, _) = run_analysis(p, Options::default())?;
            if let Some(n) = top {
                a.truncate_states(n);
            }
            analyses.push((p.display().to_string(), a));
        }
        Ok(Some(Unlinked { message, analyses }))
    }
}

/// Runs an engine over a source; a reader error fails the command.
fn run_to_end(
    src: &mut impl RecordSource,
    engine: critpath_engine::Engine<'_>,
) -> Result<Analysis> {
    let (a, err) = critpath_engine::run(src, engine, |_, _| {}).map_err(CliError::analysis)?;
    match err {
        Some(e) => Err(e.into()),
        None => Ok(a),
    }
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
        .map_err(|e| CliError::analysis_of(&trace.display().to_string(), e))?;
    clear(pb);
    Ok((a, err))
}

/// The engine over `src`: with the reader on a second core (the default),
/// or on one thread when the environment sets `CRITPATH_THREADS=1`; the
/// results are the same.
/// JSONL, `.cpt` and perf.data files (decoding and the OS graph on one
/// core, a kernel observer with them); the other sources build their
/// records in memory.
pub fn pump(
    src: &mut AnySource,
    opts: Options,
    progress: impl FnMut(u64, u64),
) -> critpath_engine::error::Result<(Analysis, Option<ReadError>)> {
    use critpath_engine::analyze_parallel;
    if !critpath_trace::threads_allowed() {
        return critpath_engine::analyze(src, opts, progress);
    }
    match src {
        AnySource::Jsonl(r) => analyze_parallel(r, opts, progress),
        AnySource::Cpt(r) => analyze_parallel(r, opts, progress),
        AnySource::Perf(r) => analyze_parallel(&mut **r, opts, progress),
        _ => critpath_engine::analyze(src, opts, progress),
    }
}

/// Opens and analyzes a trace, with a progress bar on a terminal.
pub fn run_analysis(trace: &Path, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
    run_request_analysis(trace, None, opts)
}

/// Opens a trace, or only the request of trace id `request` in a span
/// file (`--trace ID`).
pub fn open_trace(trace: &Path, request: Option<&str>) -> Result<AnySource> {
    Ok(match request {
        Some(id) => critpath_import::open_request(trace, id)?,
        None => open(trace)?,
    })
}

/// [`run_analysis`] of one request of a span file when `request` names it.
pub fn run_request_analysis(
    trace: &Path,
    request: Option<&str>,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    let mut src = open_trace(trace, request)?;
    analyze_source(&mut src, trace, opts)
}

/// Analyzes any trace files a command is given: PyTorch profiler traces
/// (one rank or several), one trace (of one request with `request`), or
/// several hosts' traces merged with aligned clocks.
pub fn analyze_traces(
    paths: &[PathBuf],
    request: Option<String>,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    if request.is_none() && critpath_import::all_kineto(paths) {
        let window = critpath_gpu::GpuOptions::default();
        let run = crate::gpu::analyze(paths, &window, opts, false)?;
        return Ok((run.analysis, run.err));
    }
    Inputs::new(paths)?.with_request(request)?.analyze(opts)
}

/// Analyzes an opened trace (reading on a thread of its own where the
/// format allows); a trace without records is an error.
pub fn analyze_source(
    src: &mut AnySource,
    trace: &Path,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    with_progress(trace, |progress| pump(src, opts, progress))
}

/// [`analyze_source`] with every visit handed to `observer` (on one
/// thread: the observer sees the engine's visits as they happen).
fn analyze_source_observed(
    src: &mut AnySource,
    trace: &Path,
    opts: Options,
    observer: &mut dyn Observer,
) -> Result<(Analysis, Option<ReadError>)> {
    with_progress(trace, |progress| {
        analyze_observed(src, opts, observer, progress)
    })
}

/// Runs an analysis with a progress bar on a terminal; a trace without
/// records is an error.
fn with_progress(
    trace: &Path,
    run: impl FnOnce(
        &mut dyn FnMut(u64, u64),
    ) -> critpath_engine::error::Result<(Analysis, Option<ReadError>)>,
) -> Result<(Analysis, Option<ReadError>)> {
    let pb = progress_bar(trace);
    let result = run(&mut |_, bytes| advance(&pb, bytes));
    clear(pb);
    let (a, err) = result.map_err(|e| CliError::analysis_of(&trace.display().to_string(), e))?;
    if a.stats.records == 0 {
        if let Some(e) = err {
            return Err(e.into());
        }
        return Err(CliError::input(format!(
            "{}: the trace holds no records",
            trace.display()
        )));
    }
    Ok((a, err))
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
    mut analyze: impl FnMut(Options) -> Result<Analysis>,
) -> Result<Vec<critpath_engine::analyses::NextPath>> {
    let mut failure = None;
    let r = critpath_engine::analyses::next_paths(a, k, remove, |o| {
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
