//! `critpath slack`: how much each state could grow before it joins the
//! critical path, least slack first.

use crate::error::Result;
use crate::flags;
use crate::inputs::{finish_with, run_request_analysis};
use crate::output::{screen, stdout};
use critpath_engine::Options;
use critpath_views::{compare, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    #[command(flatten)]
    request: flags::Request,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    wide: flags::Wide,
    #[command(flatten)]
    top: flags::Top,
}

pub fn run(args: Args) -> Result<()> {
    let opts = Options {
        slack: true,
        no_cgraph: true,
        ..Default::default()
    };
    let (mut a, err) = run_request_analysis(&args.trace, args.request.request.as_deref(), opts)?;
    a.sort_by_slack();
    if let Some(n) = args.top.top {
        a.truncate_states(n);
    }
    let text = if args.print.json {
        json::pretty(&a)
    } else {
        compare::slack(
            &a,
            &args.trace.display().to_string(),
            args.wide.width(screen(false).width),
        )
    };
    stdout(text.as_bytes())?;
    finish_with(err)
}
