//! Running the system's `perf`: finding it and tracefs, checking the
//! privilege, finding the command, passing Ctrl-C and exit statuses
//! through. Shared by `record` and `counters`.

use crate::error::{CliError, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub mod probes;

const TRACEFS: &str = "/sys/kernel/tracing";

/// Finds tracefs, mounting it when it is not mounted.
pub fn tracefs() -> Result<PathBuf> {
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
    Err(CliError::input(format!(
        "the kernel's tracefs is not mounted at {TRACEFS} and could not be mounted (are you root?); mount it with `sudo mount -t tracefs nodev {TRACEFS}` (the kernel needs CONFIG_FTRACE)"
    )))
}

/// Can this process record kernel tracepoints on every CPU?
pub fn check_privilege() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if paranoid > -1 {
        return Err(CliError::input(format!(
            "recording kernel tracepoints on all CPUs needs root (or CAP_PERFMON) while kernel.perf_event_paranoid is {paranoid}: run critpath record as root, or allow it with `sudo sysctl kernel.perf_event_paranoid=-1`"
        )));
    }
    Ok(())
}

/// The perf to run (`--perf PATH`, else `perf`), if it runs.
pub fn perf_binary(perf: Option<&Path>) -> Result<PathBuf> {
    let perf = perf.map_or_else(|| PathBuf::from("perf"), Path::to_path_buf);
    match Command::new(&perf)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(perf),
        _ => Err(CliError::input(format!(
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

/// Whether `name` can be executed as a command, as the shell finds it:
/// a path is taken as it is, a bare name is looked up in `PATH` (the
/// first executable file there). Else why not: not found, a directory,
/// or no execute permission (what `execve` would refuse, so nothing is
/// run, rather than a recording of perf's failed exec).
pub fn runnable_command(name: &str) -> std::result::Result<PathBuf, &'static str> {
    let p = Path::new(name);
    let candidates: Vec<PathBuf> = if p.components().count() > 1 {
        vec![p.to_path_buf()]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).map(|d| d.join(p)).collect()
    };
    let mut why = "command not found";
    for c in candidates {
        match std::fs::metadata(&c) {
            Ok(m) if m.is_dir() => why = "is a directory",
            Ok(m) if m.is_file() && executable(&m) => return Ok(c),
            Ok(m) if m.is_file() => why = "permission denied: the file is not executable",
            _ => {}
        }
    }
    Err(why)
}

/// Has the file any execute bit (for root, what `execve` asks)?
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
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

/// SIGINT and SIGTERM sent to critpath alone (not to its process group,
/// as Ctrl-C is) are passed on to the command perf runs, then to perf
/// (`pid`), so that the recording ends as it does on Ctrl-C. (Ctrl-C
/// itself reaches them all; the copy passed on changes nothing.)
pub fn forward_interrupts(pid: u32) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("forward".into())
        .spawn(move || {
            for sig in signals.forever() {
                for child in children(pid) {
                    // SAFETY: kill only sends a signal.
                    unsafe { libc::kill(child, sig) };
                }
                // SAFETY: as above.
                unsafe { libc::kill(pid as i32, sig) };
            }
        });
    drop(spawned);
}

/// The children of process `pid` (perf's: the command it runs).
fn children(pid: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
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
) -> Result<(PathBuf, PathBuf)> {
    if cmd.is_empty() {
        return Err(CliError::input(format!(
            "{usage} needs a command to run: {usage} -- CMD ARGS..."
        )));
    }
    if let Err(why) = runnable_command(&cmd[0]) {
        return Err(CliError::input(format!(
            "{}: {why} (nothing was {what})",
            cmd[0]
        )));
    }
    let perf = perf_binary(perf)?;
    check_privilege()?;
    Ok((perf, tracefs()?))
}
