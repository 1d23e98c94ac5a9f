//! `critpath slack`: how much each state could grow before it joins the
//! critical path, least slack first.

use crate::error::Result;
use crate::inputs::{finish_with, run_analysis};
use crate::output::stdout;
use critpath_engine::Options;
use critpath_views::{compare, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[arg(long)]
    json: bool,
    /// Show only the first N states (least slack first).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

pub fn run(args: Args) -> Result<()> {
    let opts = Options {
        slack: true,
        ..Default::default()
    };
    let (mut a, err) = run_analysis(&args.trace, opts)?;
    a.sort_by_slack();
    if let Some(n) = args.top {
        a.truncate_states(n);
    }
    let text = if args.json {
        json::pretty(&a)
    } else {
        compare::slack(&a, &args.trace.display().to_string())
    };
    stdout(text.as_bytes())?;
    finish_with(err)
}
