//! Opening the traces a command reads and running them through the engine:
//! one file, or several hosts' files merged with aligned clocks; with a
//! progress bar on a terminal, and with the observers of views that need
//! more than the analysis.

use crate::error::{CliError, Result};
use crate::progress::{advance, clear, progress_bar};
use critpath_engine::{analyze, Analysis, Options};
use critpath_import::multi::{Alignment, MergedSource};
use critpath_import::{open, AnySource};
use critpath_trace::{ReadError, RecordSource};
use std::io;
use std::path::{Path, PathBuf};

/// The traces given to a command: one file, or several hosts' files merged
/// with aligned clocks.
pub struct Inputs<'a> {
    pub paths: &'a [PathBuf],
    pub alignment: Option<Alignment>,
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
        Ok(Inputs { paths, alignment })
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
                let mut src = open(&self.paths[0])?;
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
        let mut failure = None;
        let r = critpath_engine::analyses::next_paths(a, k, remove, |o| {
            self.analyze(o).map(|(a, _)| a).map_err(|f| {
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

    /// Analyzes the traces; a reader error that let the analysis finish
    /// comes back beside it.
    pub fn analyze(&self, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
        match &self.alignment {
            None => run_analysis(&self.paths[0], opts),
            Some(al) => {
                let mut src = MergedSource::new(self.paths, al)?;
                let (mut a, err) =
                    analyze(&mut src, opts, |_, _| {}).map_err(CliError::analysis)?;
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

/// Opens and analyzes a trace, with a progress bar on a terminal.
pub fn run_analysis(trace: &Path, opts: Options) -> Result<(Analysis, Option<ReadError>)> {
    let mut src = open(trace)?;
    analyze_source(&mut src, trace, opts)
}

/// Analyzes an opened trace; a trace without records is an error.
pub fn analyze_source(
    src: &mut AnySource,
    trace: &Path,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>)> {
    let pb = progress_bar(trace);
    let result = analyze(src, opts, |_, bytes| advance(&pb, bytes));
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
