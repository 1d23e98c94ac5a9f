//! `critpath diff`: two runs compared state by state, criticality and time
//! changes, and whether the bottleneck moved.

use crate::error::Result;
use crate::flags;
use crate::inputs::{finish_with, run_analysis};
use crate::output::{screen, stdout};
use critpath_engine::Options;
use critpath_views::{compare, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    a: PathBuf,
    b: PathBuf,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    wide: flags::Wide,
    #[command(flatten)]
    top: flags::Top,
}

pub fn run(args: Args) -> Result<()> {
    let (ra, ea) = run_analysis(&args.a, Options::default())?;
    let (rb, eb) = run_analysis(&args.b, Options::default())?;
    let mut d = critpath_engine::analyses::diff(&ra, &rb);
    let text = if args.print.json {
        d.states.truncate(args.top.top_or(usize::MAX));
        json::pretty(&d)
    } else {
        compare::diff(
            &d,
            &args.a.display().to_string(),
            &args.b.display().to_string(),
            args.top.top_or(15),
            args.wide.width(screen(false).width),
        )
    };
    stdout(text.as_bytes())?;
    finish_with(ea.or(eb))
}
