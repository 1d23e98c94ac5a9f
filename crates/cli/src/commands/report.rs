//! `critpath report`: the analysis as one self-contained interactive HTML
//! file (critpath-views' report).

use crate::error::{CliError, Result};
use crate::inputs::{correct, finish_with, Inputs};
use crate::output::{emit, is_stdout, refuse_inputs};
use critpath_engine::{analyze_observed, Analysis, Observer, Options};
use critpath_import::open;
use critpath_trace::DiagnosticKind;
use critpath_trace::ReadError;
use critpath_views::analysis::correction;
use critpath_views::report_runs;
use critpath_views::timeline::Links;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true, num_args = 1..)]
    traces: Vec<PathBuf>,
    /// Output file (.html); `-` is standard output.
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
    let gpu = critpath_import::all_kineto(&args.traces);
    let inputs = if gpu {
        Inputs {
            paths: &args.traces,
            alignment: None,
            request: None,
        }
    } else {
        Inputs::new(&args.traces)?
    };
    let src = Source { inputs, gpu };
    let mut links = Links::default();
    let (mut a, err) = src.analysis(&mut links)?;
    if args.correct_overhead {
        correct(&mut a, &args.traces[0])?;
        let said = correction(&a);
        a.diagnostics.push(critpath_trace::Diagnostic::new(
            DiagnosticKind::OverheadCorrection,
            said.trim(),
        ));
    }
    let next = match args.next {
        Some(k) if a.critical_path.found && !gpu => src.inputs.next_paths(&a, k, &[])?,
        _ => Vec::new(),
    };
    let extras = report_runs::extras(&a, &links, &mut |o, obs| src.run(o, obs).map(|(b, _)| b))?;
    let html = critpath_views::report::html(&a, &src.inputs.name(), &next, &extras);
    emit(Some(&args.output), &args.traces, html.as_bytes())?;
    if !is_stdout(&args.output) {
        eprintln!("wrote {}", args.output.display());
    }
    finish_with(err)
}

/// The traces a report reads, run through the engine as often as the
/// report needs (the analysis, the timeline's states, the what-ifs).
struct Source<'a> {
    inputs: Inputs<'a>,
    /// PyTorch profiler (Kineto) traces.
    gpu: bool,
}

impl Source<'_> {
    /// The analysis with its path; an empty trace still gets a report that
    /// says so.
    fn analysis(&self, obs: &mut dyn Observer) -> Result<(Analysis, Option<ReadError>)> {
        let opts = Options {
            keep_path: true,
            ..Default::default()
        };
        match self.inputs.paths {
            [one] if !self.gpu && critpath_import::is_empty_trace(one) => {
                Ok((Analysis::default(), None))
            }
            [one] if !self.gpu => {
                let mut src = open(one)?;
                analyze_observed(&mut src, opts, obs, |_, _| {}).map_err(CliError::analysis)
            }
            _ => self.run(opts, obs),
        }
    }

    fn run(&self, opts: Options, obs: &mut dyn Observer) -> Result<(Analysis, Option<ReadError>)> {
        if self.gpu {
            let window = critpath_gpu::GpuOptions::default();
            let run = crate::gpu::analyze_observed(self.inputs.paths, &window, opts, true, obs)?;
            Ok((run.analysis, run.err))
        } else {
            self.inputs.analyze_observed(opts, obs)
        }
    }
}
