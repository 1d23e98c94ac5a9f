//! `critpath diff`: two runs compared state by state, criticality and time
//! changes, and whether the bottleneck moved.

use crate::error::Result;
use crate::inputs::{finish_with, run_analysis};
use crate::output::{screen, stdout};
use critpath_engine::Options;
use critpath_views::{compare, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    a: PathBuf,
    b: PathBuf,
    #[arg(long)]
    json: bool,
    /// Print names in full, however wide the lines get (by default they
    /// are cut in the middle to fit COLUMNS or the terminal's width).
    #[arg(long)]
    wide: bool,
    /// Show only the N largest changes.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

pub fn run(args: Args) -> Result<()> {
    let (ra, ea) = run_analysis(&args.a, Options::default())?;
    let (rb, eb) = run_analysis(&args.b, Options::default())?;
    let mut d = critpath_engine::analyses::diff(&ra, &rb);
    let text = if args.json {
        d.states.truncate(args.top.unwrap_or(usize::MAX));
        json::pretty(&d)
    } else {
        compare::diff(
            &d,
            &args.a.display().to_string(),
            &args.b.display().to_string(),
            args.top.unwrap_or(15),
            screen(false).width.filter(|_| !args.wide),
        )
    };
    stdout(text.as_bytes())?;
    finish_with(ea.or(eb))
}
