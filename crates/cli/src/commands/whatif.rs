//! `critpath whatif`: the critical-path length predicted if some states ran
//! FACTOR times faster, and the most critical states then.

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{finish_with, Traces};
use crate::output::{screen, stdout};
use critpath_engine::analyses::{predicted_range, shares};
use critpath_engine::{Options, Speedup};
use critpath_views::json::{self, SpeedupDoc, WhatifDoc};
use critpath_views::whatif::{read_problems, speedup, whatif};
use std::path::PathBuf;

/// States shown without `--top`, in the text and the JSON.
const TOP: usize = 10;

#[derive(clap::Args)]
pub struct Args {
    /// Trace file(s): several are hosts merged with aligned clocks, or the
    /// ranks of one PyTorch job.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    request: flags::Request,
    /// SM:STATE=FACTOR (repeatable), or SM=FACTOR for every state of SM and its
    /// lanes SM#N but idle; a huge FACTOR such as 1e9 removes the state.
    #[arg(long = "speedup", value_name = "SM:STATE=FACTOR", required = true)]
    speedups: Vec<String>,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    wide: flags::Wide,
    #[command(flatten)]
    top: flags::Top,
}

pub fn run(args: Args) -> Result<()> {
    if args.speedups.is_empty() {
        return Err(CliError::input(
            "whatif needs at least one --speedup SM:STATE=FACTOR",
        ));
    }
    let parsed = args
        .speedups
        .iter()
        .map(|s| Speedup::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::analysis)?;
    // A damaged input (a cut file, a bad line) is analyzed as far as it
    // reads, like `analyze` does: the prediction is printed, then the
    // reader's error, exit 2.
    let traces = Traces::open(&args.traces, args.request.request.clone())?;
    let (base, err) = traces.analyze(Options {
        no_cgraph: true,
        ..Default::default()
    })?;
    let opts = Options {
        speedups: parsed.clone(),
        no_cgraph: true,
        ..Default::default()
    };
    let pred = match traces.analyze(opts) {
        Ok((pred, _)) => pred,
        // A state named by --speedup may lie beyond the damage: the
        // damage is the error to report.
        Err(e) => return Err(err.map_or(e, CliError::from)),
    };
    // The predicted path's own contention and interrupts: another run may
    // see none of it, or twice as much.
    // The program's own threads' contention is not in it: another run of
    // the program has it again.
    let shares = shares(&pred, critpath_os::names::machine_dependent);
    let range = predicted_range(pred.critical_path.length_ns, shares.machine);
    let top = args.top.top_or(TOP);
    let text = if args.print.json {
        let (b, p) = (base.critical_path.length_ns, pred.critical_path.length_ns);
        json::document(&WhatifDoc {
            baseline_length_ns: b,
            predicted_length_ns: p,
            predicted_speedup: speedup(b, p),
            predicted_range_ns: range,
            machine_share: shares.machine,
            program_share: shares.program,
            scaled_edges: pred.stats.scaled_edges,
            speedups: parsed
                .iter()
                .map(|s| SpeedupDoc {
                    state: &s.target,
                    factor: s.factor,
                })
                .collect(),
            states: &pred.states[..pred.states.len().min(top)],
            baseline_states: &base.states[..base.states.len().min(top)],
            diagnostics: read_problems(&base),
        })
    } else {
        let what: Vec<String> = parsed
            .iter()
            .map(|s| format!("{} {}x faster", s.target, s.factor))
            .collect();
        whatif(
            &base,
            &pred,
            &what,
            Some((range, shares)),
            top,
            args.wide.width(screen(false).width),
        )
    };
    stdout(text.as_bytes())?;
    finish_with(err)
}
