//! `critpath`: full-system critical-path analysis from the command line.
//! Each subcommand reads a trace through `critpath-formats`, runs the
//! engine of `critpath-core` once, and hands the results to a view.

mod bench;
mod counters;
mod demo;
mod export;
mod kernel;
mod modules;
mod record;
mod report;
mod views;

use clap::{Parser, Subcommand, ValueEnum};
use critpath_engine::{analyze, Analysis, Options};
use critpath_import::{open, AnySource};
use critpath_readers::{Codec, CptWriter, JsonlWriter};
use critpath_trace::{ReadError, RecordSource};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
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
    Demo {
        /// One bus only (default: both, side by side).
        #[arg(long, value_enum)]
        bus: Option<BusArg>,
        /// UDP payload per send, bytes (1 to 65507; over 1480 needs IP fragmentation).
        #[arg(long, default_value_t = 1480)]
        payload: u64,
        /// Netfilter hooks in the IP output path.
        #[arg(long, value_enum, default_value = "off")]
        netfilter: OnOff,
        /// Number of sends in the stream.
        #[arg(long, default_value_t = 20_000)]
        packets: u64,
        /// Override a model parameter (see --list-params).
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// List the model's parameters, values and sources.
        #[arg(long)]
        list_params: bool,
        /// Print SPEC §5 JSON plus `model`.
        #[arg(long)]
        json: bool,
        /// Write the trace (.cpt); without --bus, FILE-pci.cpt and FILE-pcix.cpt.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// States shown per run.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Predict the critical-path length if some states ran FACTOR times faster.
    Whatif {
        trace: PathBuf,
        /// SM:STATE=FACTOR (repeatable); a huge FACTOR such as 1e9 removes the state.
        #[arg(long = "speedup", value_name = "SM:STATE=FACTOR", required = true)]
        speedups: Vec<String>,
        #[arg(long)]
        json: bool,
        /// States shown.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Critical path, criticality table and diagnostics of a trace.
    Analyze {
        /// Trace file(s) (JSONL or .cpt; detected from the content). Several
        /// files are traces of different hosts, merged with aligned clocks.
        #[arg(required = true, num_args = 1..)]
        traces: Vec<PathBuf>,
        /// Print the JSON report (SPEC §5) instead of a table.
        #[arg(long)]
        json: bool,
        /// Show only the N most critical states.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
        /// Keep only paths that start at this SM's first node (SM or SYS/SM).
        #[arg(long, value_name = "SM")]
        from: Option<String>,
        /// End at this SM's last node, or its last transition into STATE.
        #[arg(long, value_name = "SM[:STATE]")]
        to: Option<String>,
        /// List the critical path's edges in time order (JSON: `path`).
        #[arg(long)]
        path: bool,
        /// Also find the next K most critical paths, each with the most
        /// critical state of the one before removed (JSON: `next_critical_path`).
        #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
        next: Option<usize>,
        /// With --next: remove these states instead (repeatable).
        #[arg(long, value_name = "SM:STATE")]
        remove: Vec<String>,
        /// Break the critical path down by time windows (e.g. 10ms, 500us, 2s).
        #[arg(long, value_name = "DURATION")]
        window: Option<String>,
        /// Subtract the measured cost of annotation events from the states'
        /// times (needs `critpath record --calibrate`).
        #[arg(long)]
        correct_overhead: bool,
        /// Write the output to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// How much each state could grow before it joins the critical path.
    Slack {
        trace: PathBuf,
        #[arg(long)]
        json: bool,
        /// Show only the first N states (least slack first).
        #[arg(long, value_name = "N")]
        top: Option<usize>,
    },
    /// Write a self-contained interactive HTML report.
    Report {
        #[arg(required = true, num_args = 1..)]
        traces: Vec<PathBuf>,
        /// Output file (.html).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Also show the next K most critical paths.
        #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
        next: Option<usize>,
        /// Subtract the measured cost of annotation events (see `analyze`).
        #[arg(long)]
        correct_overhead: bool,
    },
    /// Export the analysis for other tools: Perfetto/Chrome JSON, CSV, Parquet.
    ///
    /// Chrome/Perfetto trace JSON has the states as slices, the dependences
    /// as flows and the critical path as its own track; CSV and Parquet hold
    /// the table of states and that of the critical path's edges.
    Export {
        #[arg(required = true, num_args = 1..)]
        traces: Vec<PathBuf>,
        #[arg(long, value_enum)]
        format: export::ExportFormat,
        /// Output file; tables also write FILE-path.EXT for the path's edges.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Compare two runs state by state: criticality and time changes, and whether the bottleneck moved.
    Diff {
        a: PathBuf,
        b: PathBuf,
        #[arg(long)]
        json: bool,
        /// Show only the N largest changes.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
    },
    /// Convert a trace between JSONL and the native .cpt format, losslessly.
    Convert {
        input: PathBuf,
        output: PathBuf,
        /// Output format (default: from OUTPUT's extension, .cpt or .jsonl).
        #[arg(long, value_enum)]
        format: Option<OutFormat>,
        /// Compression of .cpt chunks.
        #[arg(long, value_enum, default_value = "zstd")]
        compress: Compress,
    },
    /// Record a command and the kernel under it with perf (system-wide,
    /// CLOCK_MONOTONIC); its input, output and exit status pass through.
    Record {
        /// Where to write the trace (perf.data).
        #[arg(short, long, value_name = "OUT", default_value = "perf.data")]
        output: PathBuf,
        /// Also record packets (net_dev_queue, net_dev_xmit, netif_rx,
        /// netif_receive_skb) and the network system calls.
        #[arg(long)]
        net: bool,
        /// Also record every system call (running:syscall:NAME states).
        #[arg(long)]
        syscalls: bool,
        /// Record the whole system (always done: wakeups from other
        /// contexts are needed; accepted for perf's users).
        #[arg(short = 'a', long = "all-cpus")]
        all_cpus: bool,
        /// User functions for function-level states: BIN:GLOB.
        #[arg(long, value_name = "BIN:GLOB")]
        functions: Vec<String>,
        /// Kernel functions for function-level states.
        #[arg(long, value_name = "GLOB")]
        kernel_functions: Vec<String>,
        /// perf's ring-buffer size per CPU, in pages (more loses fewer events).
        #[arg(long, value_name = "PAGES")]
        mmap_pages: Option<u32>,
        /// Have the annotated program measure its cost per annotation event
        /// (for `analyze --correct-overhead`); alone, print this machine's.
        #[arg(long)]
        calibrate: bool,
        /// The perf binary to use.
        #[arg(long, value_name = "PATH")]
        perf: Option<PathBuf>,
        /// The command and its arguments (after --).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required_unless_present = "calibrate",
            value_name = "CMD"
        )]
        cmd: Vec<String>,
    },
    /// Module costs between event pairs (VTRACE): count, mean, std, median,
    /// min, max per module defined in a TOML file; nested modules get OTHER.
    ///
    /// modules.toml holds [[module]] tables: name, begin, end (a state the
    /// SM enters, or leave:STATE), and optionally sm (a glob on SM names).
    Modules {
        trace: PathBuf,
        /// The module definitions.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        #[arg(long)]
        json: bool,
        /// Take the calibrated cost of annotation events out of each instance.
        #[arg(long)]
        correct_overhead: bool,
    },
    /// Process and kernel profiles (KTAU): per thread and process the
    /// inclusive and exclusive time of states and probed functions,
    /// voluntary and involuntary switches, interrupts, value events;
    /// kernel-wide interrupts per CPU and distributions across processes.
    Profile {
        trace: PathBuf,
        /// Process-centric (one process in detail) or kernel-wide.
        #[arg(long, value_enum, default_value = "process")]
        by: ByArg,
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
    },
    /// The life of each packet in a `record --net --syscalls` recording:
    /// time per layer (application, syscall, driver, IRQ, softirq, stack,
    /// socket, copy), shares, per-send costs and a timeline.
    Packets {
        trace: PathBuf,
        /// Packets shown in the timeline (and in the JSON).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Count events on every CPU while a command runs (perf stat):
    /// hardware counters where the machine has them, software counters
    /// otherwise; each normalized per interrupt, per packet and per
    /// annotated unit of work. --sample adds a call-graph profile.
    ///
    /// The report goes to standard error (the command keeps standard
    /// output), or to -o FILE; the exit status is the command's.
    Counters {
        /// Events to count (comma-separated, repeatable; `perf list`
        /// names). Default: cycles, instructions, cache-references,
        /// cache-misses, branch-misses, task-clock, context-switches,
        /// cpu-migrations, page-faults.
        #[arg(short = 'e', long = "events", value_name = "EVENTS")]
        events: Vec<String>,
        /// Also sample the command's call stacks: flat profile, callers
        /// and callees.
        #[arg(long)]
        sample: bool,
        /// Samples per second with --sample.
        #[arg(long, default_value_t = 999, value_parser = clap::value_parser!(u32).range(1..))]
        frequency: u32,
        /// Write the call graph as Graphviz DOT (needs --sample).
        #[arg(long, value_name = "FILE", requires = "sample")]
        dot: Option<PathBuf>,
        /// The unit of work: an annotated SM (its lives) or SM:STATE (its
        /// entries). Default: the SM with the most lives.
        #[arg(long, value_name = "SM[:STATE]")]
        unit: Option<String>,
        /// Functions shown in the profile.
        #[arg(long, default_value_t = 15)]
        top: usize,
        #[arg(long)]
        json: bool,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The perf binary to use.
        #[arg(long, value_name = "PATH")]
        perf: Option<PathBuf>,
        /// The command and its arguments (after --).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required = true,
            value_name = "CMD"
        )]
        cmd: Vec<String>,
    },
    /// Validate a trace and the cgraph invariants; exit 1 on violation.
    Check {
        trace: PathBuf,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the combined graph (cgraph) in Graphviz DOT or as SVG.
    Cgraph {
        trace: PathBuf,
        /// Output file (.dot or .svg); DOT on standard output when omitted.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[arg(long, value_name = "SM")]
        from: Option<String>,
        #[arg(long, value_name = "SM[:STATE]")]
        to: Option<String>,
    },
    /// Measure the engine: synthetic traces of given sizes, records/s and peak RSS.
    Bench {
        /// Trace sizes in records (comma-separated; k and M suffixes allowed).
        #[arg(long, value_delimiter = ',', default_value = "1M,10M")]
        records: Vec<String>,
        /// Number of state machines in the synthetic pipeline.
        #[arg(long, default_value_t = 16)]
        stages: u32,
        /// Formats to measure.
        #[arg(long, value_delimiter = ',', default_value = "cpt,cpt-raw,jsonl")]
        formats: Vec<String>,
        /// Directory for the generated traces (default: a temporary one).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Keep the generated traces (in --dir) for other tools.
        #[arg(long, requires = "dir")]
        keep: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ByArg {
    Process,
    Kernel,
}

#[derive(Clone, Copy, ValueEnum)]
enum BusArg {
    Pci,
    Pcix,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutFormat {
    Cpt,
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
enum Compress {
    None,
    Zstd,
}

/// Why a command failed, and its exit code.
pub enum Failure {
    /// Bad input or usage: exit 2.
    Input(String),
    /// A check found violations: exit 1.
    Check,
    /// Exit with this status (a recorded command's).
    Exit(u8),
}

impl From<ReadError> for Failure {
    fn from(e: ReadError) -> Self {
        Failure::Input(e.to_string())
    }
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
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Check) => ExitCode::from(1),
        Err(Failure::Exit(code)) => ExitCode::from(code),
        Err(Failure::Input(msg)) => {
            eprintln!("critpath: error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(cmd: Cmd) -> Result<(), Failure> {
    match cmd {
        Cmd::Demo {
            bus,
            payload,
            netfilter,
            packets,
            params,
            list_params,
            json,
            output,
            top,
        } => {
            if list_params {
                return emit(None, demo::list_params().as_bytes());
            }
            demo::demo(demo::DemoArgs {
                bus: bus.map(|b| match b {
                    BusArg::Pci => critpath_sim::Bus::Pci,
                    BusArg::Pcix => critpath_sim::Bus::Pcix,
                }),
                payload,
                netfilter: netfilter == OnOff::On,
                packets,
                params,
                json,
                output,
                top,
            })
        }
        Cmd::Whatif {
            trace,
            speedups,
            json,
            top,
        } => demo::whatif(&trace, &speedups, json, top),
        Cmd::Analyze {
            traces,
            json,
            top,
            from,
            to,
            path,
            next,
            remove,
            window,
            correct_overhead,
            output,
        } => {
            let window_ns = window.as_deref().map(parse_duration).transpose()?;
            let opts = Options {
                from,
                to,
                keep_path: path || correct_overhead,
                window_ns,
                ..Default::default()
            };
            let inputs = Inputs::new(&traces)?;
            if let Some(text) = inputs.unlinked_report(json, top)? {
                emit(output.as_deref(), text.as_bytes())?;
                return Ok(());
            }
            let (mut a, err) = inputs.analyze(opts)?;
            if correct_overhead {
                correct(&mut a, &traces[0])?;
                if !path {
                    a.path = None;
                }
            }
            let next = match (next, remove.is_empty()) {
                (None, true) => Vec::new(),
                (k, _) => inputs.next_paths(&a, k.unwrap_or(1), &remove)?,
            };
            if let Some(n) = top {
                a.truncate_states(n);
            }
            let name = traces
                .iter()
                .map(|t| t.display().to_string())
                .collect::<Vec<_>>()
                .join(" + ");
            let text = if json {
                let mut v = serde_json::to_value(&a).expect("analysis serializes");
                let mut next = next.clone();
                if let Some(n) = top {
                    next.iter_mut().for_each(|p| p.states.truncate(n));
                }
                if let Some(first) = next.first() {
                    v["next_critical_path"] = serde_json::to_value(first).expect("json");
                    v["next_critical_paths"] = serde_json::to_value(&next).expect("json");
                }
                if let Some(al) = &inputs.alignment {
                    v["clock_offsets"] = serde_json::to_value(&al.offsets).expect("json");
                }
                serde_json::to_string_pretty(&v).expect("json") + "\n"
            } else {
                let mut t = String::new();
                if let Some(al) = &inputs.alignment {
                    t.push_str(&views::offsets(&al.offsets));
                }
                t.push_str(&views::table(&a, &name));
                t.push_str(&views::correction(&a));
                t.push_str(&views::next_paths(&next, top.unwrap_or(10)));
                t.push_str(&views::windows(&a));
                t
            };
            emit(output.as_deref(), text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Report {
            traces,
            output,
            next,
            correct_overhead,
        } => {
            let inputs = Inputs::new(&traces)?;
            let opts = Options {
                keep_path: true,
                ..Default::default()
            };
            // An empty trace still gets a report that says so.
            let (a, err) = if traces.len() == 1 && critpath_import::is_empty_trace(&traces[0]) {
                (Analysis::default(), None)
            } else if traces.len() == 1 {
                let mut src = open(&traces[0])?;
                analyze(&mut src, opts, |_, _| {})
                    .map_err(|e| Failure::Input(format!("analysis failed: {}", engine_error(&e))))?
            } else {
                inputs.analyze(opts)?
            };
            let mut a = a;
            if correct_overhead {
                correct(&mut a, &traces[0])?;
                let said = views::correction(&a);
                a.diagnostics.push(critpath_trace::Diagnostic::new(
                    critpath_trace::DiagnosticKind::OverheadCorrection,
                    said.trim(),
                ));
            }
            let next = match next {
                Some(k) if a.critical_path.found => inputs.next_paths(&a, k, &[])?,
                _ => Vec::new(),
            };
            let name = traces
                .iter()
                .map(|t| t.display().to_string())
                .collect::<Vec<_>>()
                .join(" + ");
            let html = report::html(&a, &name, &next);
            std::fs::write(&output, html)
                .map_err(|e| Failure::Input(format!("{}: cannot write: {e}", output.display())))?;
            eprintln!("wrote {}", output.display());
            finish_with(err)
        }
        Cmd::Export {
            traces,
            format,
            output,
        } => {
            let msg = export::export(&traces, format, &output)?;
            eprint!("{msg}");
            Ok(())
        }
        Cmd::Slack { trace, json, top } => {
            let (mut a, err) = run_analysis(
                &trace,
                Options {
                    slack: true,
                    ..Default::default()
                },
            )?;
            a.states.sort_by(|x, y| {
                x.slack_ns
                    .unwrap_or(u64::MAX)
                    .cmp(&y.slack_ns.unwrap_or(u64::MAX))
                    .then(y.total_ns.cmp(&x.total_ns))
                    .then_with(|| (&x.sys, &x.sm, &x.state).cmp(&(&y.sys, &y.sm, &y.state)))
            });
            if let Some(n) = top {
                a.truncate_states(n);
            }
            let text = if json {
                serde_json::to_string_pretty(&a).expect("json") + "\n"
            } else {
                views::slack(&a, &trace.display().to_string())
            };
            emit(None, text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Diff { a, b, json, top } => {
            let (ra, ea) = run_analysis(&a, Options::default())?;
            let (rb, eb) = run_analysis(&b, Options::default())?;
            let d = critpath_engine::analyses::diff(&ra, &rb);
            let text = if json {
                let mut d = d;
                d.states.truncate(top.unwrap_or(usize::MAX));
                serde_json::to_string_pretty(&d).expect("json") + "\n"
            } else {
                views::diff(
                    &d,
                    &a.display().to_string(),
                    &b.display().to_string(),
                    top.unwrap_or(15),
                )
            };
            emit(None, text.as_bytes())?;
            finish_with(ea.or(eb))
        }
        Cmd::Convert {
            input,
            output,
            format,
            compress,
        } => convert(&input, &output, format, compress),
        Cmd::Check { trace, json } => check(&trace, json),
        Cmd::Profile {
            trace,
            by,
            top,
            pid,
            json,
            output,
        } => {
            let (p, target, err) = kernel::profile(&trace)?;
            if let Some(pid) = pid {
                if !p.processes.iter().any(|u| u.pid == Some(pid)) {
                    eprintln!(
                        "critpath: warning: no process {pid} in {}; showing the busiest",
                        trace.display()
                    );
                }
            }
            let name = trace.display().to_string();
            let text = if json {
                serde_json::to_string_pretty(&p).expect("json") + "\n"
            } else if by == ByArg::Kernel {
                kernel::kernel_table(&p, &name)
            } else {
                let chosen = pid
                    .filter(|x| p.processes.iter().any(|u| u.pid == Some(*x)))
                    .or(target);
                kernel::process_table(&p, &name, top, chosen)
            };
            emit(output.as_deref(), text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Counters {
            events,
            sample,
            frequency,
            dot,
            unit,
            top,
            json,
            output,
            perf,
            cmd,
        } => {
            let c = counters::run(&counters::Request {
                events,
                sample,
                frequency,
                dot,
                unit,
                perf,
                cmd,
            })?;
            let text = if json {
                serde_json::to_string_pretty(&c).expect("json") + "\n"
            } else {
                counters::table(&c, top)
            };
            match output {
                Some(p) => emit(Some(&p), text.as_bytes())?,
                None => eprint!("{text}"),
            }
            match c.exit_status {
                0 => Ok(()),
                code => Err(Failure::Exit(code)),
            }
        }
        Cmd::Packets {
            trace,
            limit,
            json,
            output,
        } => {
            let (p, err) = kernel::packets(&trace, limit)?;
            if p.packets == 0 {
                for n in &p.notes {
                    eprintln!("critpath: warning: {n}");
                }
            }
            let text = if json {
                serde_json::to_string_pretty(&p).expect("json") + "\n"
            } else {
                kernel::packets_table(&p, &trace.display().to_string())
            };
            emit(output.as_deref(), text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Modules {
            trace,
            config,
            json,
            correct_overhead,
        } => {
            let specs = modules::config(&config)?;
            let (m, err) = modules::compute(&trace, specs, correct_overhead)?;
            for w in &m.warnings {
                eprintln!("critpath: warning: {}", w.message);
            }
            let text = if json {
                serde_json::to_string_pretty(&m).expect("json") + "\n"
            } else {
                modules::table(&m, &trace.display().to_string())
            };
            emit(None, text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Record {
            output,
            net,
            syscalls,
            all_cpus: _,
            functions,
            kernel_functions,
            mmap_pages,
            perf,
            calibrate,
            cmd,
        } => {
            if calibrate && cmd.is_empty() {
                let ns = critpath_sdk::calibrate();
                println!("{ns:.1} ns per annotation event (critpath-sdk, Rust, on this machine); `critpath record --calibrate -- CMD` has each annotated process measure its own SDK");
                return Ok(());
            }
            let code = record::record(&record::Request {
                output,
                net,
                syscalls,
                kernel_functions,
                functions,
                mmap_pages,
                perf,
                calibrate,
                cmd,
            })?;
            match code {
                0 => Ok(()),
                c => Err(Failure::Exit(c)),
            }
        }
        Cmd::Cgraph {
            trace,
            output,
            from,
            to,
        } => {
            let ext = output
                .as_ref()
                .and_then(|o| o.extension())
                .and_then(|e| e.to_str())
                .unwrap_or("dot");
            if !["dot", "gv", "svg"].contains(&ext) {
                return Err(Failure::Input(format!(
                    "{}: cgraph writes Graphviz DOT (.dot) or SVG (.svg)",
                    output
                        .as_ref()
                        .map(|o| o.display().to_string())
                        .unwrap_or_default()
                )));
            }
            let (a, err) = run_analysis(
                &trace,
                Options {
                    from,
                    to,
                    ..Default::default()
                },
            )?;
            let text = if ext == "svg" {
                // Laying out a huge graph takes long: draw its heaviest edges.
                let (g, hidden) = report::pruned(&a.cgraph);
                if hidden > 0 {
                    eprintln!(
                        "critpath: the cgraph has {} edges; the SVG draws the {} with the most critical and total time ({hidden} hidden; the .dot has them all)",
                        a.cgraph.edges.len(),
                        report::MAX_EDGES
                    );
                }
                let view = Analysis {
                    cgraph: g,
                    critical_path: a.critical_path.clone(),
                    ..Analysis::default()
                };
                views::svg(&view)
                    .map_err(|e| Failure::Input(format!("cannot lay the cgraph out: {e}")))?
            } else {
                views::dot(&a, true)
            };
            emit(output.as_deref(), text.as_bytes())?;
            finish_with(err)
        }
        Cmd::Bench {
            records,
            stages,
            formats,
            dir,
            keep,
            json,
        } => bench::run(&records, stages, &formats, dir.as_deref(), keep, json),
    }
}

/// The traces given to `analyze`: one file, or several hosts' files merged
/// with aligned clocks.
struct Inputs<'a> {
    paths: &'a [PathBuf],
    alignment: Option<critpath_import::multi::Alignment>,
}

impl<'a> Inputs<'a> {
    fn new(paths: &'a [PathBuf]) -> Result<Self, Failure> {
        let alignment = if paths.len() > 1 {
            Some(critpath_import::multi::align(paths)?)
        } else {
            None
        };
        Ok(Inputs { paths, alignment })
    }

    /// Runs a prepared engine over the traces; returns the analysis and the
    /// string table its symbols refer to.
    fn run_engine(
        &self,
        engine: critpath_engine::Engine<'_>,
    ) -> Result<(Analysis, critpath_trace::Interner), Failure> {
        let done = |r: critpath_engine::error::Result<(Analysis, Option<ReadError>)>| {
            r.map_err(|e| Failure::Input(format!("analysis failed: {}", engine_error(&e))))
        };
        match &self.alignment {
            None => {
                let mut src = open(&self.paths[0])?;
                let (a, err) = done(critpath_engine::run(&mut src, engine, |_, _| {}))?;
                if let Some(e) = err {
                    return Err(e.into());
                }
                Ok((a, src.strings().clone()))
            }
            Some(al) => {
                let mut src = critpath_import::multi::MergedSource::new(self.paths, al)?;
                let (a, err) = done(critpath_engine::run(&mut src, engine, |_, _| {}))?;
                if let Some(e) = err {
                    return Err(e.into());
                }
                Ok((a, src.strings().clone()))
            }
        }
    }

    /// The next most critical paths (see `critpath_engine::analyses::next_paths`).
    fn next_paths(
        &self,
        a: &Analysis,
        k: usize,
        remove: &[String],
    ) -> Result<Vec<critpath_engine::analyses::NextPath>, Failure> {
        let mut failure = None;
        let r = critpath_engine::analyses::next_paths(a, k, remove, |o| {
            self.analyze(o).map(|(a, _)| a).map_err(|f| {
                failure = Some(f);
                io::Error::other("analysis failed")
            })
        });
        match (r, failure) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(f)) => Err(f),
            (Err(e), None) => Err(Failure::Input(e.to_string())),
        }
    }

    fn analyze(&self, opts: Options) -> Result<(Analysis, Option<ReadError>), Failure> {
        match &self.alignment {
            None => run_analysis(&self.paths[0], opts),
            Some(al) => {
                let mut src = critpath_import::multi::MergedSource::new(self.paths, al)?;
                let (mut a, err) = analyze(&mut src, opts, |_, _| {}).map_err(|e| {
                    Failure::Input(format!("analysis failed: {}", engine_error(&e)))
                })?;
                for o in al.offsets.iter().filter(|o| o.method != "reference") {
                    a.diagnostics.push(critpath_trace::Diagnostic::new(
                        critpath_trace::DiagnosticKind::ClockOffset,
                        format!(
                            "{} (system {}): clock offset {} ns from the first trace, from {} send/recv pairs out and {} in ({})",
                            o.file, o.sys, o.offset_ns, o.links_out, o.links_in, o.method
                        ),
                    ));
                }
                Ok((a, err))
            }
        }
    }

    /// When some files share no link with the others: a diagnostic, and each
    /// file analyzed on its own.
    fn unlinked_report(&self, json: bool, top: Option<usize>) -> Result<Option<String>, Failure> {
        let Some(al) = &self.alignment else {
            return Ok(None);
        };
        if al.unlinked.is_empty() {
            return Ok(None);
        }
        let names: Vec<String> = al
            .unlinked
            .iter()
            .map(|&i| self.paths[i].display().to_string())
            .collect();
        let msg = format!(
            "no send/recv link joins {} to {}: their clocks cannot be aligned and no dependence crosses between them, so each trace is analyzed on its own (give the hosts' messages the same ids on both sides)",
            names.join(", "),
            self.paths[0].display()
        );
        let mut all = Vec::new();
        for p in self.paths {
            let (mut a, _) = run_analysis(p, Options::default())?;
            if let Some(n) = top {
                a.truncate_states(n);
            }
            all.push((p.display().to_string(), a));
        }
        let text = if json {
            let v = serde_json::json!({
                "diagnostics": [{"kind": "disconnected", "message": msg}],
                "analyses": all.iter().map(|(f, a)| {
                    let mut v = serde_json::to_value(a).expect("json");
                    v["file"] = serde_json::Value::String(f.clone());
                    v
                }).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        } else {
            let mut t = format!("disconnected: {msg}\n\n");
            for (f, a) in &all {
                t.push_str(&views::table(a, f));
                t.push('\n');
            }
            t
        };
        Ok(Some(text))
    }
}

/// Parses a duration such as `10ms`, `2.5s`, `500us`, `100ns` or `1000` (ns).
fn parse_duration(s: &str) -> Result<u64, Failure> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mul = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if mul.is_finite() && v * mul >= 1.0 => Ok((v * mul).round() as u64),
        _ => Err(Failure::Input(format!(
            "--window {s}: expected a positive duration such as 10ms, 500us, 2s or 1000 (ns)"
        ))),
    }
}

/// A reader error that still let the analysis finish becomes exit code 2
/// after the results are out.
fn finish_with(err: Option<ReadError>) -> Result<(), Failure> {
    match err {
        Some(e) => Err(Failure::Input(e.to_string())),
        None => Ok(()),
    }
}

fn emit(output: Option<&Path>, bytes: &[u8]) -> Result<(), Failure> {
    match output {
        Some(p) => std::fs::write(p, bytes)
            .map_err(|e| Failure::Input(format!("{}: cannot write: {e}", p.display()))),
        None => {
            let mut out = io::stdout().lock();
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Failure::Input(format!(
                    "cannot write to standard output: {e}"
                ))),
            }
        }
    }
}

/// A progress bar over the input's bytes, drawn only on a terminal and
/// only for inputs big enough to take a while.
pub fn progress_bar(path: &Path) -> Option<ProgressBar> {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if len < (32 << 20) || !io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(path.display().to_string());
    Some(pb)
}

/// Runs an opened trace through the engine with a progress bar, handing
/// every state visit and dependence to `visit` after each batch (views
/// that need more than the analysis; memory stays bounded).
pub fn stream_visits(
    src: &mut AnySource,
    trace: &Path,
    mut visit: impl FnMut(&critpath_engine::Visit, &critpath_trace::Interner),
) -> Result<(Analysis, Option<ReadError>), Failure> {
    let engine = critpath_engine::Engine::observed(Options::default(), &mut visit);
    let pb = progress_bar(trace);
    let (a, err) = critpath_engine::run(src, engine, |_, bytes| {
        if let Some(pb) = &pb {
            pb.set_position(bytes);
        }
    })
    .map_err(|e| {
        Failure::Input(format!(
            "{}: analysis failed: {}",
            trace.display(),
            engine_error(&e)
        ))
    })?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok((a, err))
}

/// Opens and analyzes a trace, with a progress bar on a terminal.
pub fn run_analysis(trace: &Path, opts: Options) -> Result<(Analysis, Option<ReadError>), Failure> {
    let mut src = open(trace)?;
    analyze_source(&mut src, trace, opts)
}

fn analyze_source(
    src: &mut AnySource,
    trace: &Path,
    opts: Options,
) -> Result<(Analysis, Option<ReadError>), Failure> {
    let pb = progress_bar(trace);
    let result = analyze(src, opts, |_, bytes| {
        if let Some(pb) = &pb {
            pb.set_position(bytes);
        }
    });
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let (a, err) = result.map_err(|e| match e.is_usage() {
        true => Failure::Input(engine_error(&e)),
        false => Failure::Input(format!("{}: analysis failed: {e}", trace.display())),
    })?;
    if a.stats.records == 0 {
        if let Some(e) = err {
            return Err(e.into());
        }
        return Err(Failure::Input(format!(
            "{}: the trace holds no records",
            trace.display()
        )));
    }
    Ok((a, err))
}

/// An engine error in the command line's terms: the option at fault, then
/// what is wrong with it.
pub fn engine_error(e: &critpath_engine::Error) -> String {
    use critpath_engine::Input;
    match e.input() {
        Some((Input::From, spec)) => format!("--from {spec}: {e}"),
        Some((Input::To, spec)) => format!("--to {spec}: {e}"),
        Some((Input::Speedup, spec)) => format!("--speedup {spec}: {e}"),
        None => e.to_string(),
    }
}

fn convert(
    input: &Path,
    output: &Path,
    format: Option<OutFormat>,
    compress: Compress,
) -> Result<(), Failure> {
    let format = match format {
        Some(f) => f,
        None => match output.extension().and_then(|e| e.to_str()) {
            Some("cpt") => OutFormat::Cpt,
            Some("jsonl") | Some("json") | Some("ndjson") => OutFormat::Jsonl,
            _ => {
                return Err(Failure::Input(format!(
                "{}: cannot tell the output format from the name; use .cpt or .jsonl, or --format",
                output.display()
            )))
            }
        },
    };
    let mut src = open(input)?;
    let file = std::fs::File::create(output)
        .map_err(|e| Failure::Input(format!("{}: cannot create: {e}", output.display())))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let werr = |e: io::Error| Failure::Input(format!("{}: write failed: {e}", output.display()));
    let pb = progress_bar(input);
    let mut first_err: Option<ReadError> = None;
    let mut n = 0u64;
    let mut pump = |write: &mut dyn FnMut(
        &critpath_trace::Record,
        &critpath_trace::Interner,
    ) -> io::Result<()>,
                    src: &mut AnySource|
     -> Result<(), Failure> {
        loop {
            match src.next_record() {
                Ok(Some((r, _))) => {
                    write(&r, src.strings()).map_err(werr)?;
                    n += 1;
                    if n & 0xffff == 0 {
                        if let Some(pb) = &pb {
                            pb.set_position(src.bytes_read());
                        }
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => {
                    let fatal = e.fatal;
                    eprintln!("critpath: warning: {e}");
                    first_err.get_or_insert(e);
                    if fatal {
                        return Ok(());
                    }
                }
            }
        }
    };
    match format {
        OutFormat::Cpt => {
            let codec = match compress {
                Compress::None => Codec::None,
                Compress::Zstd => Codec::Zstd,
            };
            let mut w = CptWriter::new(out, codec).map_err(werr)?;
            pump(&mut |r, s| w.write(r, s), &mut src)?;
            w.finish().map_err(werr)?;
        }
        OutFormat::Jsonl => {
            let mut w = JsonlWriter::new(out);
            pump(&mut |r, s| w.write(r, s), &mut src)?;
            w.finish().map_err(werr)?;
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    match first_err {
        Some(e) => Err(Failure::Input(format!(
            "{e} (converted the {n} records that could be read)"
        ))),
        None => Ok(()),
    }
}

fn check(trace: &Path, json: bool) -> Result<(), Failure> {
    let (a, err) = run_analysis(trace, Options::default())?;
    let violations = critpath_engine::check::violations(&a);
    let trace_errors = critpath_engine::check::trace_errors(&a);
    let ok = violations.is_empty() && trace_errors.is_empty();
    if json {
        let v = serde_json::json!({
            "ok": ok,
            "invariant_violations": violations,
            "trace_errors": trace_errors,
            "stats": a.stats,
            "cgraph": {"nodes": a.cgraph.nodes.len(), "edges": a.cgraph.edges.len()},
        });
        emit(
            None,
            (serde_json::to_string_pretty(&v).expect("json") + "\n").as_bytes(),
        )?;
    } else {
        let mut o = String::new();
        for v in &violations {
            o.push_str(&format!("violation: {v}\n"));
        }
        for d in &trace_errors {
            o.push_str(&format!("{}: {}\n", d.kind, d.message));
        }
        o.push_str(&format!(
            "{}: {} records, {} nodes, {} state machines, cgraph {} nodes / {} edges: {}\n",
            trace.display(),
            a.stats.records,
            a.stats.nodes,
            a.stats.state_machines,
            a.cgraph.nodes.len(),
            a.cgraph.edges.len(),
            if ok { "ok" } else { "FAILED" }
        ));
        emit(None, o.as_bytes())?;
    }
    if let Some(e) = err {
        return Err(e.into());
    }
    if ok {
        Ok(())
    } else {
        Err(Failure::Check)
    }
}

/// `--correct-overhead`: takes the calibrated cost of annotation events out
/// of the analysis, or says how to calibrate.
fn correct(a: &mut Analysis, trace: &Path) -> Result<(), Failure> {
    match critpath_engine::analyses::correct_overhead(a) {
        Some(_) => Ok(()),
        None => Err(uncalibrated(trace)),
    }
}

/// The error for `--correct-overhead` on a trace without calibration.
pub fn uncalibrated(trace: &Path) -> Failure {
    Failure::Input(format!(
        "{}: no annotation in this trace says what an event costs; record it with `critpath record --calibrate -o OUT -- CMD` (or run the annotated program with CRITPATH_CALIBRATE=1)",
        trace.display()
    ))
}
