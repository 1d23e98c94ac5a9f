//! `critpath record`: runs a command under the system's `perf` with the
//! kernel tracepoints the OS execution graph needs (SPEC §6), system-wide
//! and on CLOCK_MONOTONIC, and passes the command's input, output and exit
//! status through unchanged. Ctrl-C stops the command; perf still writes
//! the trace.

use crate::Failure;
use critpath_os::perf;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What to record.
pub struct Request {
    pub output: PathBuf,
    pub net: bool,
    pub syscalls: bool,
    pub kernel_functions: Vec<String>,
    pub functions: Vec<String>,
    pub mmap_pages: Option<u32>,
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

const TRACEFS: &str = "/sys/kernel/tracing";

fn fail(msg: impl Into<String>) -> Failure {
    Failure::Input(msg.into())
}

/// Finds tracefs, mounting it when it is not mounted.
pub fn tracefs() -> Result<PathBuf, Failure> {
    for root in [TRACEFS, "/sys/kernel/debug/tracing"] {
        if Path::new(root).join("events").is_dir() {
            return Ok(PathBuf::from(root));
        }
    }
    let mounted = Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if mounted && Path::new(TRACEFS).join("events").is_dir() {
        return Ok(PathBuf::from(TRACEFS));
    }
    Err(fail(format!(
        "the kernel's tracefs is not mounted at {TRACEFS} and could not be mounted (are you root?); mount it with `sudo mount -t tracefs nodev {TRACEFS}` (the kernel needs CONFIG_FTRACE)"
    )))
}

/// Can this process record kernel tracepoints on every CPU?
pub fn check_privilege() -> Result<(), Failure> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if paranoid > -1 {
        return Err(fail(format!(
            "recording kernel tracepoints on all CPUs needs root (or CAP_PERFMON) while kernel.perf_event_paranoid is {paranoid}: run critpath record as root, or allow it with `sudo sysctl kernel.perf_event_paranoid=-1`"
        )));
    }
    Ok(())
}

/// The perf to run (`--perf PATH`, else `perf`), if it runs.
pub fn perf_binary(perf: Option<&Path>) -> Result<PathBuf, Failure> {
    let perf = perf.map_or_else(|| PathBuf::from("perf"), Path::to_path_buf);
    match Command::new(&perf)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(perf),
        _ => Err(fail(format!(
            "`{}` is not installed or does not run: install the distribution's perf (Debian: `apt-get install linux-perf`; the project's scripts/setup.sh does it), or name one with --perf PATH",
            perf.display()
        ))),
    }
}

/// Does the kernel have this tracepoint (`system:name`)?
pub fn has_tracepoint(tracefs: &Path, tp: &str) -> bool {
    tp.split_once(':')
        .map(|(s, n)| tracefs.join("events").join(s).join(n).is_dir())
        .unwrap_or(false)
}

/// The perf command line for a request, and notes on what was left out.
pub fn perf_args(req: &Request, tracefs: &Path) -> (Vec<String>, Vec<String>) {
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
    if let Some(p) = req.mmap_pages {
        args.push("--mmap-pages".into());
        args.push(p.to_string());
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
            }
        }
    }
    args.push("--".into());
    args.extend(req.cmd.iter().cloned());
    (args, notes)
}

/// The perf probe groups of `--functions` (uprobes) and
/// `--kernel-functions` (kprobes); the perf.data reader turns their events
/// into `running:FUNCTION` states.
const USER_GROUP: &str = "critpath_fn";
const KERNEL_GROUP: &str = "critpath_kfn";
/// At most this many functions are probed per pattern.
const MAX_FUNCTIONS: usize = 200;

/// The file a command name runs: a path as given, else the first match in
/// `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

/// A name perf accepts as an event name.
fn probe_name(f: &str) -> bool {
    !f.is_empty()
        && f.len() <= 56
        && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !f.starts_with(|c: char| c.is_ascii_digit())
}

/// The function symbols of an ELF binary matching `pat` (by `nm`).
fn user_functions(bin: &Path, pat: &str) -> Result<Vec<String>, Failure> {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(bin)
        .output()
        .map_err(|e| {
            fail(format!(
                "--functions needs nm (binutils) to list functions: {e}"
            ))
        })?;
    if !out.status.success() {
        return Err(fail(format!(
            "{}: cannot list its functions: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (_, kind, name) = (it.next()?, it.next()?, it.next()?);
            matches!(kind, "T" | "t").then(|| name.to_string())
        })
        // Names starting with _ are the runtime's (_start, _init...)
        // unless the pattern asks for them.
        .filter(|n| {
            probe_name(n)
                && critpath_engine::modules::glob(pat, n)
                && (pat.starts_with('_') || !n.starts_with('_'))
        })
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

/// Function probes added for one recording, removed when dropped.
struct Probes {
    perf: PathBuf,
    groups: Vec<&'static str>,
}

impl Probes {
    fn run(perf: &Path, args: &[String]) -> Result<(), Failure> {
        let out = Command::new(perf)
            .arg("probe")
            .arg("-q")
            .args(args)
            .output()
            .map_err(|e| fail(format!("cannot run perf probe: {e}")))?;
        if !out.status.success() {
            return Err(fail(format!(
                "perf probe {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Adds the probes `args` (`-a DEF` pairs after `fixed` leading
    /// arguments) at once; when that fails, function by function, skipping
    /// (and naming) the ones perf cannot probe.
    fn run_each(perf: &Path, args: &[String], fixed: usize) -> Result<(), Failure> {
        if Self::run(perf, args).is_ok() {
            return Ok(());
        }
        let (head, defs) = args.split_at(fixed);
        let mut added = 0;
        let mut skipped = Vec::new();
        // Each function: -a entry -a return.
        for pair in defs.chunks(4) {
            let mut a = head.to_vec();
            a.extend_from_slice(pair);
            match Self::run(perf, &a) {
                Ok(()) => added += 1,
                Err(_) => skipped.push(
                    pair[1]
                        .split_once('=')
                        .map_or(pair[1].clone(), |(_, f)| f.to_string()),
                ),
            }
        }
        if !skipped.is_empty() {
            eprintln!(
                "critpath: note: perf cannot probe {}; recorded without {}",
                skipped.join(", "),
                if skipped.len() == 1 { "it" } else { "them" }
            );
        }
        if added == 0 {
            return Err(fail(
                "perf probe could add none of the function probes asked for",
            ));
        }
        Ok(())
    }

    fn remove(perf: &Path, group: &str) {
        let _ = Command::new(perf)
            .args(["probe", "-q", "-d", &format!("{group}:*")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Adds entry and return probes on the functions `--functions` and
    /// `--kernel-functions` name.
    fn add(perf: &Path, req: &Request, tracefs: &Path) -> Result<Probes, Failure> {
        if !req.kernel_functions.is_empty() && !tracefs.join("kprobe_events").exists() {
            let graph = std::fs::read_to_string(tracefs.join("available_tracers"))
                .is_ok_and(|t| t.split_whitespace().any(|x| x == "function_graph"));
            return Err(fail(format!(
                "--kernel-functions: this kernel has no kprobe events ({}/kprobe_events; CONFIG_KPROBE_EVENTS){}, so kernel functions cannot become states here; record without --kernel-functions",
                tracefs.display(),
                if graph {
                    ""
                } else {
                    ", and its function tracer reports entries without returns (no function_graph tracer)"
                }
            )));
        }
        let mut probes = Probes {
            perf: perf.to_path_buf(),
            groups: Vec::new(),
        };
        let mut seen = std::collections::HashSet::new();
        // (perf names a return probe EVENT__return itself.)
        let mut entry = |group: &str, f: &str, args: &mut Vec<String>| {
            if seen.insert(f.to_string()) {
                args.push("-a".into());
                args.push(format!("{group}:{f}={f}"));
                args.push("-a".into());
                args.push(format!("{group}:{f}={f}%return"));
            }
        };
        for spec in &req.functions {
            let Some((bin, pat)) = spec.rsplit_once(':') else {
                return Err(fail(format!(
                    "--functions {spec}: expected BIN:GLOB, e.g. ./server:handle_*"
                )));
            };
            // A binary in the current directory, else as the shell finds it.
            let here = Path::new(bin).is_file().then(|| PathBuf::from(bin));
            let Some(path) = here.or_else(|| which(bin)) else {
                return Err(fail(format!("--functions {spec}: {bin}: no such file")));
            };
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let funcs = user_functions(&path, pat)?;
            if funcs.is_empty() {
                return Err(fail(format!(
                    "--functions {spec}: no function of {} matches {pat}",
                    path.display()
                )));
            }
            if funcs.len() > MAX_FUNCTIONS {
                eprintln!(
                    "critpath: note: {spec} matches {} functions; probing the first {MAX_FUNCTIONS}",
                    funcs.len()
                );
            }
            if probes.groups.is_empty() {
                Self::remove(perf, USER_GROUP);
            }
            if !probes.groups.contains(&USER_GROUP) {
                probes.groups.push(USER_GROUP);
            }
            let mut args = vec!["-x".to_string(), path.display().to_string()];
            for f in funcs.iter().take(MAX_FUNCTIONS) {
                entry(USER_GROUP, f, &mut args);
            }
            Self::run_each(perf, &args, 2)?;
        }
        for pat in &req.kernel_functions {
            let out = Command::new(perf)
                .args(["probe", "-F", pat])
                .output()
                .map_err(|e| fail(format!("cannot run perf probe: {e}")))?;
            let funcs: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::trim)
                .filter(|n| probe_name(n))
                .map(str::to_string)
                .collect();
            if funcs.is_empty() {
                return Err(fail(format!(
                    "--kernel-functions {pat}: no kernel function matches (perf probe -F {pat} lists none){}",
                    if out.stderr.is_empty() { String::new() } else { format!(": {}", String::from_utf8_lossy(&out.stderr).trim()) }
                )));
            }
            if funcs.len() > MAX_FUNCTIONS {
                eprintln!(
                    "critpath: note: {pat} matches {} kernel functions; probing the first {MAX_FUNCTIONS}",
                    funcs.len()
                );
            }
            if !probes.groups.contains(&KERNEL_GROUP) {
                Self::remove(perf, KERNEL_GROUP);
                probes.groups.push(KERNEL_GROUP);
            }
            let mut args = Vec::new();
            for f in funcs.iter().take(MAX_FUNCTIONS) {
                entry(KERNEL_GROUP, f, &mut args);
            }
            Self::run_each(perf, &args, 0)?;
        }
        Ok(probes)
    }

    /// The `-e` arguments that record the probes.
    fn events(&self) -> Vec<String> {
        self.groups.iter().map(|g| format!("{g}:*")).collect()
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        for g in &self.groups {
            Self::remove(&self.perf, g);
        }
    }
}

extern "C" fn ignore(_: libc::c_int) {}

/// Ctrl-C reaches the command and perf (same process group); critpath
/// waits for perf to finish its output. A handler (not SIG_IGN) is reset
/// in the children at exec, so they still stop on Ctrl-C.
pub fn outlive_interrupts() {
    // SAFETY: installing a handler that does nothing.
    unsafe {
        libc::signal(libc::SIGINT, ignore as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, ignore as *const () as libc::sighandler_t);
    }
}

/// A child's exit status as a shell reports it (128 + signal).
pub fn exit_code(status: &std::process::ExitStatus) -> u8 {
    match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(status),
    ) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128 + sig as u8,
        _ => 1,
    }
}

/// What running a command under perf needs, checked before anything runs:
/// a command that exists, perf, the privilege, tracefs. `usage` says how
/// to call the subcommand, `what` what would have been done ("recorded").
/// Returns perf and tracefs.
pub fn preflight(
    cmd: &[String],
    perf: Option<&Path>,
    usage: &str,
    what: &str,
) -> Result<(PathBuf, PathBuf), Failure> {
    if cmd.is_empty() {
        return Err(fail(format!(
            "{usage} needs a command to run: {usage} -- CMD ARGS..."
        )));
    }
    if which(&cmd[0]).is_none() {
        return Err(fail(format!(
            "{}: command not found (nothing was {what})",
            cmd[0]
        )));
    }
    let perf = perf_binary(perf)?;
    check_privilege()?;
    Ok((perf, tracefs()?))
}

/// Runs the command under perf; returns its exit status.
pub fn record(req: &Request) -> Result<u8, Failure> {
    let (perf, tfs) = preflight(
        &req.cmd,
        req.perf.as_deref(),
        "critpath record -o OUT",
        "recorded",
    )?;
    if let Some(dir) = req.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(fail(format!(
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
    // The SDKs (SPEC §7) write their annotations next to the trace; a
    // previous recording's would not belong to this one.
    let annot = critpath_readers::annot::sibling(&req.output);
    if annot.exists() {
        std::fs::remove_file(&annot).map_err(|e| {
            fail(format!(
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
    let status = command.status();
    drop(probes);
    let status = status.map_err(|e| fail(format!("cannot run {}: {e}", perf.display())))?;
    let code = exit_code(&status);
    let size = std::fs::metadata(&req.output).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(fail(format!(
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
