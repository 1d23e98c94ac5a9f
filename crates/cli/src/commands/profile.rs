//! `critpath profile`: KTAU's process and kernel profiles. The trace streams
//! through the engine once, the kernel events of a perf.data recording go
//! to `critpath-kernel`'s profiler as they are decoded, and the tables or
//! JSON are printed.

use crate::error::Result;
use crate::inputs::{finish_with, stream_visits};
use crate::output::{emit, named, refuse_inputs_opt};
use critpath_kernel::profile::{Profile, Profiler, StateVisits};
use critpath_os::PerfSource;
use critpath_trace::{ReadError, RecordSource};
use critpath_views::{json, profile as view};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// Process-centric (one process in detail) or kernel-wide.
    #[arg(long, value_enum, default_value = "process")]
    by: By,
    /// Processes listed in the table.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// The process shown in detail (default: the recorded command's,
    /// else the busiest).
    #[arg(long)]
    pid: Option<u32>,
    /// Every thread, process and CPU as JSON.
    #[arg(long)]
    json: bool,
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum By {
    Process,
    Kernel,
}

pub fn run(mut args: Args) -> Result<()> {
    args.output = named(args.output.take());
    let inputs = [args.trace.clone()];
    refuse_inputs_opt(args.output.as_deref(), &inputs)?;
    let (p, target, err) = profile(&args.trace)?;
    let known = |pid: &u32| p.processes.iter().any(|u| u.pid == Some(*pid));
    if let Some(pid) = args.pid.filter(|pid| !known(pid)) {
        eprintln!(
            "critpath: warning: no process {pid} in {}; showing the busiest",
            args.trace.display()
        );
    }
    let name = args.trace.display().to_string();
    let text = if args.json {
        json::pretty(&p)
    } else if args.by == By::Kernel {
        view::kernel_table(&p, &name)
    } else {
        let chosen = args.pid.filter(known).or(target);
        view::process_table(&p, &name, args.top, chosen)
    };
    emit(args.output.as_deref(), &inputs, text.as_bytes())?;
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
