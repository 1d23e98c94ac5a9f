//! PyTorch profiler (Kineto) traces on the command line: one rank or
//! several, limited to one instance of an annotation (`--annotation`,
//! `--instance`) as HTA does; the path is broken down by what bounds it
//! while the engine walks it, so it is not kept unless asked for
//! (docs/gpu.md).

use crate::error::{CliError, Result};
use crate::progress::{advance, clear, progress_bar};
use critpath_engine::{Analysis, Observer, Options, Visit};
use critpath_gpu::{BreakdownObserver, GpuBreakdown, GpuOptions, RanksReport, Tally};
use critpath_trace::{Interner, ReadError};
use std::path::PathBuf;

/// A GPU trace's analysis with what the importer knows beside it.
pub struct GpuRun {
    pub analysis: Analysis,
    pub err: Option<ReadError>,
    pub breakdown: GpuBreakdown,
    /// Several ranks only.
    pub ranks: Option<RanksReport>,
}

/// Analyzes Kineto traces; `keep_path` keeps the path's segments in the
/// result.
pub fn analyze(
    traces: &[PathBuf],
    window: &GpuOptions,
    opts: Options,
    keep_path: bool,
) -> Result<GpuRun> {
    analyze_observed(
        traces,
        window,
        opts,
        keep_path,
        &mut |_: &Visit, _: &Interner| {},
    )
}

/// [`analyze`] with every state visit and dependence handed to `observer`.
pub fn analyze_observed(
    traces: &[PathBuf],
    window: &GpuOptions,
    opts: Options,
    keep_path: bool,
    observer: &mut dyn Observer,
) -> Result<GpuRun> {
    let mut src = critpath_import::open_gpu(traces, window)?;
    let facts = src.facts().clone();
    let ranks = (traces.len() > 1).then(|| src.report().clone());
    let opts = Options { keep_path, ..opts };
    let pb = progress_bar(&traces[0]);
    let mut tally = BreakdownObserver {
        tally: Tally::new(&facts, 0, u64::MAX),
        inner: observer,
    };
    let result = critpath_engine::analyze_observed(&mut src, opts, &mut tally, |_, bytes| {
        advance(&pb, bytes)
    });
    clear(pb);
    let breakdown = tally.tally.finish();
    let name = traces[0].display().to_string();
    let (analysis, err) = result.map_err(|e| CliError::analysis_of(&name, e))?;
    if analysis.stats.records == 0 {
        return Err(CliError::input(format!(
            "{name}: the trace holds no GPU or CPU op{}",
            match &window.annotation {
                Some(a) => format!(" inside annotation {a:?} instance {}", window.instance),
                None => String::new(),
            }
        )));
    }
    Ok(GpuRun {
        analysis,
        err,
        breakdown,
        ranks,
    })
}
