//! `critpath cgraph`: the combined graph in Graphviz DOT, or laid out as
//! SVG (its heaviest edges when it is large).

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{finish_with, run_request_analysis};
use crate::output::{emit, refuse_inputs_opt};
use critpath_engine::{Analysis, Options};
use critpath_views::dot::{dot, pruned, svg_within, NotDrawn, LAYOUT_DEADLINE, MAX_EDGES};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[command(flatten)]
    out: flags::Output,
    #[command(flatten)]
    ends: flags::PathEnds,
    #[command(flatten)]
    request: flags::Request,
}

pub fn run(args: Args) -> Result<()> {
    let inputs = [args.trace.clone()];
    refuse_inputs_opt(args.out.file(), &inputs)?;
    let ext = args
        .out
        .file()
        .and_then(|o| o.extension())
        .and_then(|e| e.to_str())
        .unwrap_or("dot")
        .to_ascii_lowercase();
    if !["dot", "gv", "svg"].contains(&ext.as_str()) {
        return Err(CliError::input(format!(
            "{}: cgraph writes Graphviz DOT (.dot) or SVG (.svg)",
            args.out
                .file()
                .map(|o| o.display().to_string())
                .unwrap_or_default()
        )));
    }
    let opts = Options {
        from: args.ends.from.clone(),
        to: args.ends.to.clone(),
        ..Default::default()
    };
    let (a, err) = run_request_analysis(&args.trace, args.request.request.as_deref(), opts)?;
    let text = if ext == "svg" {
        drawing(&a)?
    } else {
        dot(&a, true)
    };
    emit(args.out.file(), &inputs, text.as_bytes())?;
    finish_with(err)
}

/// The SVG; laying out a huge graph takes long, so it draws the heaviest
/// edges, within a deadline. A cgraph without transitions is an SVG that
/// says so; one that cannot be laid out in time is refused (the .dot has
/// it).
fn drawing(a: &Analysis) -> Result<String> {
    let (g, hidden) = pruned(&a.cgraph);
    if hidden > 0 {
        eprintln!(
            "critpath: the cgraph has {} edges; the SVG draws the {MAX_EDGES} with the most critical and total time ({hidden} hidden; the .dot has them all)",
            a.cgraph.edges.len(),
        );
    }
    let edges = g.edges.len();
    let view = Analysis {
        cgraph: g,
        critical_path: a.critical_path.clone(),
        ..Analysis::default()
    };
    match svg_within(&view, LAYOUT_DEADLINE) {
        Ok(svg) => Ok(svg),
        Err(NotDrawn::Empty) => {
            eprintln!("critpath: warning: the cgraph has no transitions; the SVG says so");
            Ok(EMPTY_SVG.to_string())
        }
        Err(e @ NotDrawn::Late(_)) => Err(CliError::input(format!(
            "{e} ({edges} edges); write it as DOT (`-o FILE.dot`) for Graphviz"
        ))),
        Err(e) => Err(CliError::input(format!(
            "{e}; write it as DOT (`-o FILE.dot`) for Graphviz"
        ))),
    }
}

/// The drawing of a cgraph without transitions.
const EMPTY_SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"320\" height=\"40\"><text x=\"10\" y=\"25\" font-family=\"sans-serif\" font-size=\"14\">No transitions to draw.</text></svg>\n";
