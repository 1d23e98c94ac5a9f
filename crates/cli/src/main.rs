//! `critpath`: full-system critical-path analysis from the command line.
//! This file parses the arguments and dispatches; each subcommand is one
//! module of `commands/`, which reads its traces through `critpath-import`,
//! runs the engine of `critpath-engine` once, and hands the results to a
//! view of `critpath-views`.

mod commands;
mod error;
mod flags;
mod gpu;
mod inputs;
mod interrupt;
mod output;
mod perf;
mod progress;
mod requests;

use clap::{Parser, Subcommand};
use commands::*;
use critpath_views::text::printable;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "critpath",
    version,
    about = "Full-system critical-path analysis: which states bound end-to-end performance"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the built-in host + NIC + I/O-bus model and analyze it: PCI and PCI-X side by side.
    Demo(demo::Args),
    /// Predict the critical-path length if some states ran FACTOR times faster.
    Whatif(whatif::Args),
    /// Critical path, criticality table and diagnostics of a trace.
    Analyze(analyze::Args),
    /// Many traces (and the requests of span files) analyzed on all cores:
    /// the aggregate per state, the slowest requests against the rest, and
    /// the tables per_trace and states as Parquet or CSV.
    Batch(batch::Args),
    Collect(collect::Args),
    /// How much each state could grow before it joins the critical path.
    Slack(slack::Args),
    /// Write a self-contained interactive HTML report.
    Report(report::Args),
    /// Export the analysis for other tools: Perfetto/Chrome JSON, CSV, Parquet.
    ///
    /// Chrome/Perfetto trace JSON has the states as slices, the dependences
    /// as flows and the critical path as its own track; CSV and Parquet hold
    /// the table of states and that of the critical path's edges.
    Export(export::Args),
    /// Compare two runs state by state: criticality and time changes, and whether the bottleneck moved.
    Diff(diff::Args),
    /// Convert a trace between JSONL and the native .cpt format, losslessly.
    Convert(convert::Args),
    /// Record a command and the kernel under it with perf (system-wide,
    /// CLOCK_MONOTONIC); its input, output and exit status pass through.
    Record(record::Args),
    /// Module costs between event pairs (VTRACE): count, mean, std, median,
    /// min, max per module defined in a TOML file; nested modules get OTHER.
    ///
    /// modules.toml holds [[module]] tables: name, begin, end (a state the
    /// SM enters, or leave:STATE), and optionally sm (a glob on SM names).
    Modules(modules::Args),
    /// Process and kernel profiles (KTAU): per thread and process the
    /// inclusive and exclusive time of states and probed functions,
    /// voluntary and involuntary switches, interrupts, value events;
    /// kernel-wide interrupts per CPU and distributions across processes.
    Profile(profile::Args),
    /// The life of each packet in a `record --net --syscalls` recording:
    /// time per layer (application, syscall, driver, IRQ, softirq, stack,
    /// socket, copy), shares, per-send costs and a timeline.
    Packets(packets::Args),
    /// Count events on every CPU while a command runs (perf stat):
    /// hardware counters where the machine has them, software counters
    /// otherwise; each normalized per interrupt, per packet and per
    /// annotated unit of work. --sample adds a call-graph profile.
    ///
    /// The report goes to standard error (the command keeps standard
    /// output), or to -o FILE; the exit status is the command's.
    Counters(counters::Args),
    /// Validate a trace and the cgraph invariants; exit 1 on violation.
    Check(check::Args),
    /// Write the combined graph (cgraph) in Graphviz DOT or, when -o FILE
    /// ends in .svg, as SVG.
    Cgraph(cgraph::Args),
    /// Measure the engine: synthetic traces of given sizes, records/s and peak RSS.
    Bench(bench::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The settings of the run, from the environment (docs/settings.md).
    // The command line's edge: the environment is read here, once.
    let env = |name: &str| std::env::var(name).ok();
    let settings = critpath_session::env::settings_from(critpath_session::Settings::default(), env);
    critpath_session::env::install(&settings);
    // A panic contained where third-party code is called (a decoder on a
    // damaged input) is reported as an error there, not printed here.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !critpath_trace::contain::containing() {
            default_hook(info)
        }
    }));
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.is_reported() {
                // Names from the trace are escaped, line by line.
                let msg = e.to_string();
                let lines: Vec<_> = msg.split('\n').map(printable).collect();
                eprintln!("critpath: error: {}", lines.join("\n"));
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(cmd: Cmd) -> error::Result<()> {
    match cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Whatif(a) => whatif::run(a),
        Cmd::Analyze(a) => analyze::run(a),
        Cmd::Batch(a) => batch::run(a),
        Cmd::Collect(a) => collect::run(a),
        Cmd::Slack(a) => slack::run(a),
        Cmd::Report(a) => report::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::Diff(a) => diff::run(a),
        Cmd::Convert(a) => convert::run(a),
        Cmd::Record(a) => record::run(a),
        Cmd::Modules(a) => modules::run(a),
        Cmd::Profile(a) => profile::run(a),
        Cmd::Packets(a) => packets::run(a),
        Cmd::Counters(a) => counters::run(a),
        Cmd::Check(a) => check::run(a),
        Cmd::Cgraph(a) => cgraph::run(a),
        Cmd::Bench(a) => bench::run(a),
    }
}
