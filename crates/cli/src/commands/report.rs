//! `critpath report`: the analysis as one self-contained interactive HTML
//! file (critpath-views' report).

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{correct, finish_with, Inputs};
use crate::output::{emit, is_stdout, refuse_inputs};
use critpath_engine::{Analysis, Observer, Options};
use critpath_import::Format;
use critpath_session::{nonempty, Session, Settings};
use critpath_trace::DiagnosticKind;
use critpath_trace::ReadError;
use critpath_views::analysis::correction;
use critpath_views::report_runs::{self, FirstRun};
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
    #[command(flatten)]
    request: flags::Request,
    /// Span files of several requests: the fraction of slowest requests
    /// compared with the rest.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1)]
    slowest: f64,
}

pub fn run(args: Args) -> Result<()> {
    refuse_inputs(&args.output, &args.traces)?;
    let mut opened = Session::open(&args.traces, &Settings::current())?;
    if args.request.request.is_none() {
        if let Some((html, err)) = crate::requests::report(&mut opened, args.slowest)? {
            emit(Some(&args.output), &args.traces, html.as_bytes())?;
            if !is_stdout(&args.output) {
                eprintln!("wrote {}", args.output.display());
            }
            return err.map_or(Ok(()), |e| Err(e.into()));
        }
    }
    // The timeline's pass reads a regular file again rather than keep
    // its records; the next paths (a pass each) replay them.
    if args.next.is_none() {
        opened.read_files_again();
    }
    let gpu = opened.all(Format::Kineto);
    let spans = opened.all(Format::Spans);
    let inputs = match gpu || spans || args.traces.len() == 1 {
        true => Inputs::of_session(&args.traces, opened),
        false => {
            // Closed before they are read again (see `analyze`).
            drop(opened);
            Inputs::new(&args.traces)?
        }
    };
    let inputs = inputs.with_request(args.request.request.clone())?;
    let src = Source {
        inputs,
        gpu: std::cell::Cell::new(gpu),
    };
    let mut first = FirstRun::default();
    let (mut a, err) = src.analysis(&mut first)?;
    if args.correct_overhead {
        correct(&mut a, &args.traces[0])?;
        let said = correction(&a);
        a.diagnostics.push(critpath_trace::Diagnostic::new(
            DiagnosticKind::OverheadCorrection,
            said.trim(),
        ));
    }
    let next = match args.next {
        Some(k) if a.critical_path.found && !gpu => {
            src.inputs.next_paths(&a, k, &[], &Options::default())?
        }
        _ => Vec::new(),
    };
    let extras = report_runs::extras(&a, first, &mut |o, obs| src.run(o, obs).map(|(b, _)| b))?;
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
    /// PyTorch profiler (Kineto) traces, not analyzed yet.
    gpu: std::cell::Cell<bool>,
}

impl Source<'_> {
    /// The analysis, `obs` told of its path's edges (the path is not
    /// kept); a trace without records is an error, as for every command.
    fn analysis(&self, obs: &mut dyn Observer) -> Result<(Analysis, Option<ReadError>)> {
        // The what-ifs are answered from the first pass's graph.
        let opts = Options {
            rewalk: true,
            ..Default::default()
        };
        // (The session's borrow ends before `run` borrows it again.)
        if self.gpu.get() || self.inputs.session().is_none() {
            return self.run(opts, obs);
        }
        let mut s = self.inputs.session().expect("one input");
        match s.analyze_observed(opts, obs, &mut |_, _| {}) {
            Err(critpath_session::Error::Engine { source, .. }) => Err(CliError::analysis(source)),
            r => Ok(nonempty(&s.name(), r?)?),
        }
    }

    fn run(&self, opts: Options, obs: &mut dyn Observer) -> Result<(Analysis, Option<ReadError>)> {
        if self.gpu.replace(false) {
            let window = critpath_gpu::GpuOptions::default();
            let mut s = self.inputs.session().expect("Kineto inputs");
            let first = &self.inputs.paths[0];
            let keep_path = opts.keep_path;
            let run = crate::gpu::analyze_observed(&mut s, first, &window, opts, keep_path, obs)?;
            Ok((run.analysis, run.err))
        } else {
            self.inputs.analyze_observed(opts, obs)
        }
    }
}
