//! `critpath cgraph`: the combined graph in Graphviz DOT, or laid out as
//! SVG (its heaviest edges when it is large).

use crate::error::{CliError, Result};
use crate::inputs::{finish_with, run_analysis};
use crate::output::{emit, named, refuse_inputs_opt};
use critpath_engine::{Analysis, Options};
use critpath_views::dot::{dot, pruned, svg, MAX_EDGES};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Output file (.dot or .svg); DOT on standard output when omitted
    /// or `-`.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[arg(long, value_name = "SM")]
    from: Option<String>,
    #[arg(long, value_name = "SM[:STATE]")]
    to: Option<String>,
}

pub fn run(mut args: Args) -> Result<()> {
    args.output = named(args.output.take());
    let inputs = [args.trace.clone()];
    refuse_inputs_opt(args.output.as_deref(), &inputs)?;
    let ext = args
        .output
        .as_ref()
        .and_then(|o| o.extension())
        .and_then(|e| e.to_str())
        .unwrap_or("dot");
    if !["dot", "gv", "svg"].contains(&ext) {
        return Err(CliError::input(format!(
            "{}: cgraph writes Graphviz DOT (.dot) or SVG (.svg)",
            args.output
                .as_ref()
                .map(|o| o.display().to_string())
                .unwrap_or_default()
        )));
    }
    let opts = Options {
        from: args.from.clone(),
        to: args.to.clone(),
        ..Default::default()
    };
    let (a, err) = run_analysis(&args.trace, opts)?;
    let text = if ext == "svg" {
        drawing(&a)?
    } else {
        dot(&a, true)
    };
    emit(args.output.as_deref(), &inputs, text.as_bytes())?;
    finish_with(err)
}

/// The SVG; laying out a huge graph takes long, so it draws the heaviest
/// edges.
fn drawing(a: &Analysis) -> Result<String> {
    let (g, hidden) = pruned(&a.cgraph);
    if hidden > 0 {
        eprintln!(
            "critpath: the cgraph has {} edges; the SVG draws the {MAX_EDGES} with the most critical and total time ({hidden} hidden; the .dot has them all)",
            a.cgraph.edges.len(),
        );
    }
    let view = Analysis {
        cgraph: g,
        critical_path: a.critical_path.clone(),
        ..Analysis::default()
    };
    svg(&view).map_err(|e| CliError::input(format!("cannot lay the cgraph out: {e}")))
}
