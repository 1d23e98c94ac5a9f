//! `critpath slack`: how much each state could grow before it joins the
//! critical path, least slack first.

use crate::error::Result;
use crate::inputs::{finish_with, run_request_analysis};
use crate::output::{screen, stdout};
use critpath_engine::Options;
use critpath_views::{compare, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Span files: analyze only the request (trace) of this trace id.
    #[arg(long = "trace", value_name = "ID")]
    request: Option<String>,
    #[arg(long)]
    json: bool,
    /// Print names in full, however wide the lines get (by default they
    /// are cut in the middle to fit COLUMNS or the terminal's width).
    #[arg(long)]
    wide: bool,
    /// Show only the first N states (least slack first).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

pub fn run(args: Args) -> Result<()> {
    let opts = Options {
        slack: true,
        ..Default::default()
    };
    let (mut a, err) = run_request_analysis(&args.trace, args.request.as_deref(), opts)?;
    a.sort_by_slack();
    if let Some(n) = args.top {
        a.truncate_states(n);
    }
    let text = if args.json {
        json::pretty(&a)
    } else {
        compare::slack(
            &a,
            &args.trace.display().to_string(),
            screen(false).width.filter(|_| !args.wide),
        )
    };
    stdout(text.as_bytes())?;
    finish_with(err)
}
