//! `critpath record`: runs a command under the system's `perf` with the
//! kernel tracepoints the OS execution graph needs (SPEC §6), system-wide
//! and on CLOCK_MONOTONIC, and passes the command's input, output and exit
//! status through unchanged. Ctrl-C stops the command; perf still writes
//! the trace.

use crate::Failure;
use critpath_formats::perf;
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
fn tracefs() -> Result<PathBuf, Failure> {
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
fn check_privilege() -> Result<(), Failure> {
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

fn perf_binary(req: &Request) -> Result<PathBuf, Failure> {
    let perf = req.perf.clone().unwrap_or_else(|| PathBuf::from("perf"));
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

/// The perf command line for a request, and notes on what was left out.
pub fn perf_args(req: &Request, tracefs: &Path) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let available = |tp: &str| {
        tp.split_once(':')
            .map(|(s, n)| tracefs.join("events").join(s).join(n).is_dir())
            .unwrap_or(false)
    };
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
            .filter_map(|n| perf::syscalls::number(n))
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

extern "C" fn ignore(_: libc::c_int) {}

/// Runs the command under perf; returns its exit status.
pub fn record(req: &Request) -> Result<u8, Failure> {
    if req.cmd.is_empty() {
        return Err(fail(
            "critpath record needs a command to run: critpath record -o OUT -- CMD ARGS...",
        ));
    }
    if !req.functions.is_empty() || !req.kernel_functions.is_empty() {
        return Err(fail(
            "--functions and --kernel-functions are not supported by this build of critpath yet; record without them",
        ));
    }
    let prog = Path::new(&req.cmd[0]);
    let found = if prog.components().count() > 1 {
        prog.is_file()
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
            .unwrap_or(false)
    };
    if !found {
        return Err(fail(format!(
            "{}: command not found (nothing was recorded)",
            req.cmd[0]
        )));
    }
    let perf = perf_binary(req)?;
    check_privilege()?;
    let tfs = tracefs()?;
    if let Some(dir) = req.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(fail(format!(
                "{}: the output's directory does not exist",
                req.output.display()
            )));
        }
    }
    let (args, notes) = perf_args(req, &tfs);
    for n in &notes {
        eprintln!("critpath: note: {n}");
    }
    // Ctrl-C reaches the command and perf (same process group); critpath
    // waits for perf to write the trace. A handler (not SIG_IGN) is reset
    // in the children at exec, so they still stop on Ctrl-C.
    // SAFETY: installing a handler that does nothing.
    unsafe {
        libc::signal(libc::SIGINT, ignore as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, ignore as *const () as libc::sighandler_t);
    }
    // The SDKs (SPEC §7) write their annotations next to the trace; a
    // previous recording's would not belong to this one.
    let annot = critpath_formats::annot::sibling(&req.output);
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
    let status = command
        .status()
        .map_err(|e| fail(format!("cannot run {}: {e}", perf.display())))?;
    let code = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128 + sig as u8,
        _ => 1,
    };
    let size = std::fs::metadata(&req.output).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(fail(format!(
            "perf wrote no trace to {} (exit status {code}); see its messages above",
            req.output.display()
        )));
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
