//! `critpath packets`: the life of each packet in a `record --net
//! --syscalls` recording. The kernel events go to `critpath-kernel`'s packet
//! tracker as they are decoded; the table or JSON is printed.

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{finish_with, stream_visits};
use crate::output::{emit, refuse_inputs_opt, safe};
use critpath_kernel::packets::{Packets, Tracker};
use critpath_os::PerfSource;
use critpath_trace::{DiagnosticKind, ReadError};
use critpath_views::json;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Packets shown in the timeline (and in the JSON).
    #[arg(long, default_value_t = 20)]
    limit: usize,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    out: flags::Output,
}

pub fn run(args: Args) -> Result<()> {
    let inputs = [args.trace.clone()];
    refuse_inputs_opt(args.out.file(), &inputs)?;
    let (p, err) = packets(&args.trace, args.limit)?;
    if p.packets == 0 {
        for n in &p.notes {
            eprintln!("critpath: warning: {}", safe(n));
        }
    }
    let text = if args.print.json {
        json::pretty(&p)
    } else {
        critpath_views::packets::packets_table(&p, &args.trace.display().to_string())
    };
    emit(args.out.file(), &inputs, text.as_bytes())?;
    finish_with(err)
}

/// Follows the packets of a perf.data recording.
fn packets(trace: &Path, limit: usize) -> Result<(Packets, Option<ReadError>)> {
    let mut src = critpath_import::open(trace)?;
    let format = src.format();
    match src.downcast_mut::<PerfSource>() {
        Some(p) => p.observe(Box::new(Tracker::new(limit))),
        None => {
            return Err(CliError::input(format!(
                "{}: a {format:?} trace has no kernel packet events; `critpath packets` reads a perf.data recording made with `critpath record --net --syscalls -o FILE -- CMD`",
                trace.display(),
            )))
        }
    }
    let (a, err) = stream_visits(&mut src, trace, |_, _| {})?;
    let tracker = src
        .downcast_mut::<PerfSource>()
        .and_then(|p| p.take_observer::<Tracker>());
    let mut p = tracker.unwrap_or_else(|| Tracker::new(0)).finish();
    // What the reader lost or skipped bears on the packets' lives too: a
    // packet whose first events were lost has no sender, say.
    let input = a.diagnostics.iter().filter(|d| {
        use DiagnosticKind::*;
        matches!(
            d.kind,
            LostEvents | InputSkipped | InputCut | TracepointFormats
        )
    });
    p.notes.extend(input.map(|d| d.message.clone()));
    Ok((p, err))
}
