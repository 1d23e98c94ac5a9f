//! `critpath report`: the analysis as one self-contained interactive HTML
//! file (critpath-views' report).

use crate::error::{CliError, Result};
use crate::inputs::{correct, finish_with, Inputs};
use crate::output::{emit, refuse_inputs};
use critpath_engine::{analyze, Analysis, Options};
use critpath_import::open;
use critpath_trace::DiagnosticKind;
use critpath_trace::ReadError;
use critpath_views::analysis::correction;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true, num_args = 1..)]
    traces: Vec<PathBuf>,
    /// Output file (.html).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Also show the next K most critical paths.
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
    next: Option<usize>,
    /// Subtract the measured cost of annotation events (see `analyze`).
    #[arg(long)]
    correct_overhead: bool,
}

pub fn run(args: Args) -> Result<()> {
    refuse_inputs(&args.output, &args.traces)?;
    let inputs = Inputs::new(&args.traces)?;
    let (mut a, err) = analysis(&inputs)?;
    if args.correct_overhead {
        correct(&mut a, &args.traces[0])?;
        let said = correction(&a);
        a.diagnostics.push(critpath_trace::Diagnostic::new(
            DiagnosticKind::OverheadCorrection,
            said.trim(),
        ));
    }
    let next = match args.next {
        Some(k) if a.critical_path.found => inputs.next_paths(&a, k, &[])?,
        _ => Vec::new(),
    };
    let html = critpath_views::report::html(&a, &inputs.name(), &next);
    emit(Some(&args.output), &args.traces, html.as_bytes())?;
    eprintln!("wrote {}", args.output.display());
    finish_with(err)
}

/// The analysis with its path; an empty trace still gets a report that
/// says so.
fn analysis(inputs: &Inputs) -> Result<(Analysis, Option<ReadError>)> {
    let opts = Options {
        keep_path: true,
        ..Default::default()
    };
    match inputs.paths {
        [one] if critpath_import::is_empty_trace(one) => Ok((Analysis::default(), None)),
        [one] => {
            let mut src = open(one)?;
            analyze(&mut src, opts, |_, _| {}).map_err(CliError::analysis)
        }
        _ => inputs.analyze(opts),
    }
}
