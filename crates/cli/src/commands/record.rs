//! `critpath record`: runs a command under the system's `perf` with the
//! kernel tracepoints the OS execution graph needs (docs/os-graph.md),
//! system-wide and on CLOCK_MONOTONIC, and passes the command's input,
//! output and exit status through unchanged. Ctrl-C stops the command;
//! perf still writes the trace.

use crate::error::{CliError, Result};
use crate::output::is_stdout;
use crate::perf::probes::Probes;
use crate::perf::{exit_code, forward_interrupts, has_tracepoint, outlive_interrupts, preflight};
use critpath_os::perf;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args)]
pub struct Args {
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
    /// Compress the recording as perf writes it (perf record -z, zstd):
    /// a smaller file for some of perf's CPU time while recording.
    #[arg(short = 'z', long)]
    compress: bool,
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
}

pub fn run(args: Args) -> Result<()> {
    if args.calibrate && args.cmd.is_empty() {
        let ns = critpath_sdk::calibrate();
        println!("{ns:.1} ns per annotation event (critpath-sdk, Rust, on this machine); `critpath record --calibrate -- CMD` has each annotated process measure its own SDK");
        return Ok(());
    }
    let _ = args.all_cpus;
    let code = record(&Request {
        output: args.output,
        net: args.net,
        syscalls: args.syscalls,
        kernel_functions: args.kernel_functions,
        functions: args.functions,
        mmap_pages: args.mmap_pages,
        compress: args.compress,
        perf: args.perf,
        calibrate: args.calibrate,
        cmd: args.cmd,
    })?;
    match code {
        0 => Ok(()),
        c => Err(CliError::Exit(c)),
    }
}

/// What to record.
pub struct Request {
    pub output: PathBuf,
    pub net: bool,
    pub syscalls: bool,
    pub kernel_functions: Vec<String>,
    pub functions: Vec<String>,
    pub mmap_pages: Option<u32>,
    /// perf record -z.
    pub compress: bool,
    pub perf: Option<PathBuf>,
    /// Have the SDKs measure their cost per event (CRITPATH_CALIBRATE).
    pub calibrate: bool,
    pub cmd: Vec<String>,
}

/// The system calls `--net` follows (their time becomes
/// `running:syscall:NAME` states, split at the packet tracepoints).
const NET_SYSCALLS: &[&str] = &[
    "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "write", "read",
];

/// The perf command line for a request, and notes on what was left out.
fn perf_args(req: &Request, tracefs: &Path) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let available = |tp: &str| has_tracepoint(tracefs, tp);
    let mut events: Vec<&str> = perf::CORE_TRACEPOINTS.to_vec();
    if req.net {
        events.extend_from_slice(perf::NET_TRACEPOINTS);
    }
    let mut args: Vec<String> = vec![
        "record".into(),
        "-q".into(),
        "-a".into(),
        "-k".into(),
        "CLOCK_MONOTONIC".into(),
        "-o".into(),
        req.output.display().to_string(),
    ];
    // perf's own start-up and wrap-up: BPF programs and build-ids are of
    // no use to the analysis and cost about a second per recording.
    args.extend(["--no-bpf-event".into(), "--no-buildid".into()]);
    // Without root, perf may lock only kernel.perf_event_mlock_kb a CPU:
    // its own default then, unless asked.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let pages = req
        .mmap_pages
        .or_else(|| root.then(|| buffer_pages(req.syscalls || req.net)));
    if let Some(p) = pages {
        args.push("--mmap-pages".into());
        args.push(p.to_string());
    }
    if req.compress {
        args.push("-z".into());
    }
    for e in events {
        if available(e) {
            args.push("-e".into());
            args.push(e.into());
        } else {
            notes.push(format!(
                "this kernel has no {e} tracepoint; recorded without it"
            ));
        }
    }
    let syscalls: Option<String> = if req.syscalls {
        Some(String::new())
    } else if req.net {
        let ids: Vec<String> = NET_SYSCALLS
            .iter()
            .filter_map(|n| critpath_os::syscalls::number(n))
            .map(|id| format!("id == {id}"))
            .collect();
        Some(ids.join(" || "))
    } else {
        None
    };
    if let Some(filter) = syscalls {
        for &e in perf::SYSCALL_TRACEPOINTS {
            if available(e) {
                args.push("-e".into());
                args.push(e.into());
                if !filter.is_empty() {
                    args.push("--filter".into());
                    args.push(filter.clone());
                }
                // perf's own writes of the recording are not the program's:
                // recorded, they fed on themselves (a third of the CPU
                // time of a short `--syscalls` recording).
                args.push("--exclude-perf".into());
            }
        }
    }
    args.push("--".into());
    args.extend(req.cmd.iter().cloned());
    (args, notes)
}

/// perf's ring buffer per CPU, in pages, when `--mmap-pages` is not given:
/// large enough that perf keeps up with a busy program (with system calls
/// traced, a ping-pong of 1.5M round trips fills 32 MiB a CPU and loses
/// nothing), at most 1/16 of the memory over all CPUs; a power of two.
fn buffer_pages(syscalls: bool) -> u32 {
    let want: u64 = if syscalls { 8192 } else { 2048 };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(u64::MAX, |kb| kb * 1024);
    let cap = mem / 16 / (cpus * 4096);
    let pages = want.min(cap).max(64);
    // The largest power of two not above it.
    1 << (63 - pages.leading_zeros())
}

/// Runs the command under perf; returns its exit status.
fn record(req: &Request) -> Result<u8> {
    if is_stdout(&req.output) {
        return Err(CliError::input(
            "-o -: perf writes the recording to a file, which is analyzed from there; give a file name",
        ));
    }
    let (perf, tfs) = preflight(
        &req.cmd,
        req.perf.as_deref(),
        "critpath record -o OUT",
        "recorded",
    )?;
    if let Some(dir) = req.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(CliError::input(format!(
                "{}: the output's directory does not exist",
                req.output.display()
            )));
        }
    }
    let (mut args, notes) = perf_args(req, &tfs);
    for n in &notes {
        eprintln!("critpath: note: {n}");
    }
    let probes = Probes::add(&perf, req, &tfs)?;
    // The probe events go before the command (`-- CMD` ends the list).
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    for (i, e) in probes.events().into_iter().enumerate() {
        args.insert(at + 2 * i, "-e".into());
        args.insert(at + 2 * i + 1, e);
    }
    outlive_interrupts();
    // The SDKs write their annotations next to the trace; a
    // previous recording's would not belong to this one.
    let annot = critpath_readers::annot::sibling(&req.output);
    if annot.exists() {
        std::fs::remove_file(&annot).map_err(|e| {
            CliError::input(format!(
                "{}: cannot remove the old annotations: {e}",
                annot.display()
            ))
        })?;
    }
    let annot_abs = std::path::absolute(&annot).unwrap_or_else(|_| annot.clone());
    let mut command = Command::new(&perf);
    command.args(&args).env("CRITPATH_OUT", &annot_abs);
    if req.calibrate {
        command.env("CRITPATH_CALIBRATE", "1");
    }
    let recorder = critpath_readers::perf::recorder_path(&req.output);
    let _ = std::fs::remove_file(&recorder);
    let status = command.spawn().and_then(|mut child| {
        // The analysis reports the recorder's own share of the CPUs.
        let _ = critpath_os::recorder::save(&req.output, child.id());
        forward_interrupts(child.id());
        child.wait()
    });
    drop(probes);
    let status =
        status.map_err(|e| CliError::input(format!("cannot run {}: {e}", perf.display())))?;
    let code = exit_code(&status);
    let size = std::fs::metadata(&req.output).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(CliError::input(format!(
            "perf wrote no trace to {} (exit status {code}); see its messages above",
            req.output.display()
        )));
    }
    // Timer callbacks by name, from this kernel, for wherever the trace
    // is analyzed.
    let syms = perf::symbols_path(&req.output);
    let _ = std::fs::remove_file(&syms);
    if let Err(e) = perf::save_symbols(&req.output) {
        eprintln!("critpath: note: kernel function names not saved ({e}); analysis will read this machine's /proc/kallsyms");
    }
    let annotations = match std::fs::metadata(&annot) {
        Ok(m) => format!(
            " and {} ({:.1} MB of annotations, merged when analyzed)",
            annot.display(),
            m.len() as f64 / 1e6
        ),
        Err(_) => String::new(),
    };
    eprintln!(
        "critpath: recorded {} ({:.1} MB){annotations}; analyze it with: critpath analyze {}",
        req.output.display(),
        size as f64 / 1e6,
        req.output.display()
    );
    Ok(code)
}
