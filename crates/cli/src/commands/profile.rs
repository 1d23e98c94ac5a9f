//! `critpath profile`: KTAU's process and kernel profiles. The trace streams
//! through the engine once, the kernel events of a perf.data recording go
//! to `critpath-kernel`'s profiler as they are decoded, and the tables or
//! JSON are printed.

use crate::error::Result;
use crate::flags;
use crate::inputs::{finish_with, stream_visits};
use crate::output::{emit, refuse_inputs_opt, screen};
use critpath_kernel::profile::{Profile, Profiler, StateVisits};
use critpath_os::PerfSource;
use critpath_trace::{ReadError, RecordSource};
use critpath_views::{json, profile as view};
use std::path::{Path, PathBuf};

/// Processes listed in the table without `--top`.
const TOP: usize = 15;

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Process-centric (one process in detail) or kernel-wide.
    #[arg(long, value_enum, default_value = "process")]
    by: By,
    #[command(flatten)]
    top: flags::Top,
    /// The process shown in detail (default: the recorded command's,
    /// else the busiest).
    #[arg(long)]
    pid: Option<u32>,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    wide: flags::Wide,
    #[command(flatten)]
    out: flags::Output,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum By {
    Process,
    Kernel,
}

pub fn run(args: Args) -> Result<()> {
    let inputs = [args.trace.clone()];
    refuse_inputs_opt(args.out.file(), &inputs)?;
    let (p, target, err) = profile(&args.trace)?;
    let known = |pid: &u32| p.processes.iter().any(|u| u.pid == Some(*pid));
    if let Some(pid) = args.pid.filter(|pid| !known(pid)) {
        eprintln!(
            "critpath: warning: no process {pid} in {}; showing the busiest",
            args.trace.display()
        );
    }
    let name = args.trace.display().to_string();
    let width = args.wide.width(screen(args.out.file().is_some()).width);
    let text = if args.print.json {
        json::pretty(&p)
    } else if args.by == By::Kernel {
        view::kernel_table(&p, &name, width)
    } else {
        let chosen = args.pid.filter(known).or(target);
        view::process_table(&p, &name, args.top.top_or(TOP), chosen, width)
    };
    emit(args.out.file(), &inputs, text.as_bytes())?;
    finish_with(err)
}

/// The profile of a trace; for a perf.data recording, also the pid of the
/// recorded command.
fn profile(trace: &Path) -> Result<(Profile, Option<u32>, Option<ReadError>)> {
    let mut src = critpath_import::open(trace)?;
    if let Some(p) = src.downcast_mut::<PerfSource>() {
        p.observe(Box::new(Profiler::new()));
    }
    let mut states = StateVisits::default();
    let (_, err) = stream_visits(&mut src, trace, |v, _| states.visit(v))?;
    let kernel = src
        .downcast_mut::<PerfSource>()
        .and_then(|p| p.take_observer::<Profiler>());
    let target = src
        .scope()
        .from
        .and_then(|sm| critpath_os::names::thread_tid(&sm));
    let profile = kernel.unwrap_or_default().finish(states, src.strings());
    // The recorded command's main thread → its process.
    let target = target.and_then(|tid| {
        profile
            .threads
            .iter()
            .find(|u| u.tid == Some(tid))
            .and_then(|u| u.pid)
    });
    Ok((profile, target, err))
}
