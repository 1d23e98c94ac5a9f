//! `critpath counters [-e EVENTS] [--sample] -- CMD` (pfmon/q-tools):
//! counts events on every CPU while a command runs (`perf stat -a -A`),
//! hardware counters where the machine has them and software counters
//! otherwise, saying which; normalizes each per interrupt, per packet (from
//! the net tracepoints) and per annotated unit of work (SM lives the SDKs
//! ended); and with `--sample`, a sampling profile of the command with its
//! call graph (flat profile, callers and callees, a Graphviz drawing). The
//! command's output and exit status pass through.

mod parse;
mod units;

use crate::error::{CliError, Result};
use crate::flags;
use crate::output::{emit, safe, write_file};
use crate::perf::{exit_code, has_tracepoint, outlive_interrupts, preflight};
use critpath_kernel::callgraph::CallGraph;
use critpath_views::counters::Counts;
use critpath_views::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Functions shown in the profile without `--top`.
const TOP: usize = 15;

#[derive(clap::Args)]
pub struct Args {
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
    #[command(flatten)]
    top: flags::Top,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    out: flags::Output,
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
}

/// What is counted when `-e` names nothing: the hardware counters (where
/// the machine has them) and the kernel's software counters.
const DEFAULT_EVENTS: &[&str] = &[
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];

/// The kernel's software counters (the rest without `:` are hardware).
const SOFTWARE: &[&str] = &[
    "task-clock",
    "cpu-clock",
    "context-switches",
    "cs",
    "cpu-migrations",
    "migrations",
    "page-faults",
    "faults",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
];

/// Counted always, as the units the others are normalized by.
const INTERRUPTS: &[&str] = &["irq:irq_handler_entry", "irq:softirq_entry"];
const PACKETS: &[&str] = &["net:net_dev_xmit", "net:netif_receive_skb"];

pub fn run(args: Args) -> Result<()> {
    let c = count(&args)?;
    let text = if args.print.json {
        json::pretty(&c)
    } else {
        critpath_views::counters::table(&c, args.top.top_or(TOP))
    };
    match &args.out.output {
        Some(p) => emit(Some(p), &[], text.as_bytes())?,
        None => eprint!("{}", safe(&text)),
    }
    match c.exit_status {
        0 => Ok(()),
        code => Err(CliError::Exit(code)),
    }
}

fn kind(event: &str) -> &'static str {
    if event.contains(':') {
        "tracepoint"
    } else if SOFTWARE.contains(&event) {
        "software"
    } else {
        "hardware"
    }
}

/// Scratch files perf writes for one run.
struct Scratch {
    _dir: tempfile::TempDir,
    stat: PathBuf,
    samples: PathBuf,
    annot: PathBuf,
    status: PathBuf,
}

impl Scratch {
    fn new() -> Result<Self> {
        let dir = tempfile::tempdir()
            .map_err(|e| CliError::input(format!("cannot make a scratch directory: {e}")))?;
        let at = |name: &str| dir.path().join(name);
        Ok(Scratch {
            stat: at("stat.csv"),
            samples: at("samples.data"),
            annot: at("units.annot"),
            status: at("status"),
            _dir: dir,
        })
    }
}

/// Runs the command under `perf stat` (and `perf record` when sampling).
fn count(args: &Args) -> Result<Counts> {
    let (perf, tfs) = preflight(
        &args.cmd,
        args.perf.as_deref(),
        "critpath counters [-e EVENTS]",
        "counted",
    )?;
    let (events, notes) = events(args, &tfs)?;
    let scratch = Scratch::new()?;
    outlive_interrupts();
    let status = Command::new(&perf)
        .args(perf_args(args, &perf, &events, &scratch))
        .env("CRITPATH_OUT", &scratch.annot)
        .status()
        .map_err(|e| CliError::input(format!("cannot run {}: {e}", perf.display())))?;
    let code = command_status(&scratch.status).unwrap_or_else(|| exit_code(&status));
    let text = std::fs::read_to_string(&scratch.stat).map_err(|_| {
        CliError::input(format!(
            "perf stat wrote no counts (exit status {code}); see its messages above"
        ))
    })?;
    let mut counts = parse::parse_stat(&text, &events);
    counts.command = args.cmd.clone();
    counts.exit_status = code;
    counts.notes.extend(notes);
    if !counts.hardware {
        counts.notes.push(software_only(&events));
    }
    counts.units = units::units(&scratch.annot);
    counts.unit = units::choose(&counts.units, args.unit.as_deref(), &mut counts.notes);
    normalize(&mut counts);
    if args.sample {
        sampled(&mut counts, &perf, &scratch.samples, args.dot.as_deref())?;
    }
    Ok(counts)
}

/// The events to count: those asked for (or the default), and the
/// interrupt and packet tracepoints the kernel has; notes on those missing.
fn events(args: &Args, tfs: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let mut notes = Vec::new();
    let mut events: Vec<String> = if args.events.is_empty() {
        DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
    } else {
        args.events
            .iter()
            .flat_map(|e| e.split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    };
    for e in events.iter().filter(|e| kind(e) == "tracepoint") {
        if !has_tracepoint(tfs, e) {
            return Err(CliError::input(format!(
                "{e}: this kernel has no such tracepoint (see `perf list tracepoint`)"
            )));
        }
    }
    for tp in INTERRUPTS.iter().chain(PACKETS) {
        if !events.iter().any(|e| e == tp) {
            if has_tracepoint(tfs, tp) {
                events.push(tp.to_string());
            } else {
                notes.push(format!("this kernel has no {tp} tracepoint"));
            }
        }
    }
    Ok((events, notes))
}

/// `perf [record ... -- perf] stat -a -A ... -- CMD`.
fn perf_args(args: &Args, perf: &Path, events: &[String], scratch: &Scratch) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if args.sample {
        v.extend(
            [
                "record",
                "-q",
                "-g",
                "-F",
                &args.frequency.to_string(),
                "-e",
                "cpu-clock",
                "-o",
                &scratch.samples.display().to_string(),
                "--",
                &perf.display().to_string(),
            ]
            .map(str::to_string),
        );
    }
    v.extend(
        [
            "stat",
            "-a",
            "-A",
            "-x",
            ",",
            "-o",
            &scratch.stat.display().to_string(),
            "-e",
            &events.join(","),
            "--",
        ]
        .map(str::to_string),
    );
    v.extend(["sh", "-c", STATUS_KEEPER, "critpath"].map(str::to_string));
    v.push(scratch.status.display().to_string());
    v.extend(args.cmd.iter().cloned());
    v
}

/// Runs `"$@"` after the status file `$1` and writes its exit status
/// there. perf stat's own exit status is not the command's when the command
/// exits before perf waits for it (perf 6.1 then skips the wait and says 0).
const STATUS_KEEPER: &str = r#"f=$1; shift; "$@"; s=$?; echo $s > "$f"; exit $s"#;

/// The command's exit status as its shell wrote it (None if the shell did
/// not get that far, e.g. killed by a signal).
fn command_status(file: &Path) -> Option<u8> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// The note when no hardware counter counted.
fn software_only(events: &[String]) -> String {
    let asked: Vec<&str> = events
        .iter()
        .filter(|e| kind(e) == "hardware")
        .map(String::as_str)
        .collect();
    if asked.is_empty() {
        "software counters and tracepoints only (no hardware counter was asked for)".into()
    } else {
        format!(
            "this machine has no hardware counters for {} (a VM without a virtual PMU?): the figures are the kernel's software counters and tracepoints",
            asked.join(", ")
        )
    }
}

/// Each counter per interrupt, per packet and per unit of work.
fn normalize(counts: &mut Counts) {
    let per_unit = counts
        .unit
        .as_ref()
        .and_then(|u| counts.units.get(u))
        .map(|&n| n as f64);
    let (irq, pk) = (counts.interrupts, counts.packets);
    for c in &mut counts.counters {
        let ratio = |d: f64| c.total.filter(|_| d > 0.0).map(|t| t / d);
        c.per_interrupt = ratio(irq);
        c.per_packet = ratio(pk);
        c.per_unit = per_unit.and_then(ratio);
    }
}

/// The sampling profile, and its drawing in `dot`.
fn sampled(counts: &mut Counts, perf: &Path, samples: &Path, dot: Option<&Path>) -> Result<()> {
    let g = profile(perf, samples)?;
    if g.samples == 0 {
        counts
            .notes
            .push("the sampling profile has no samples of the command".into());
    }
    if let Some(path) = dot {
        let text = g.dot(0.01);
        write_file(path, &[], |mut w| {
            w.write_all(text.as_bytes())?;
            w.flush()
        })?;
    }
    counts.profile = Some(g);
    Ok(())
}

/// The command's samples, symbolized by `perf script`, as a call graph.
fn profile(perf: &Path, samples: &Path) -> Result<CallGraph> {
    let out = Command::new(perf)
        .args(["script", "-F", "comm,tid,ip,sym,dso", "-i"])
        .arg(samples)
        .output()
        .map_err(|e| CliError::input(format!("cannot run perf script: {e}")))?;
    if !out.status.success() {
        return Err(CliError::input(format!(
            "perf script could not read the samples: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(parse::call_graph(&String::from_utf8_lossy(&out.stdout)))
}
