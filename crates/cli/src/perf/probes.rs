//! Function probes for `record --functions` and `--kernel-functions`:
//! entry and return uprobes or kprobes added with `perf probe` for one
//! recording, and removed when it ends.

use crate::commands::record::Request;
use crate::error::{CliError, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The perf probe groups of `--functions` (uprobes) and
/// `--kernel-functions` (kprobes); the perf.data reader turns their events
/// into `running:FUNCTION` states.
const USER_GROUP: &str = "critpath_fn";
const KERNEL_GROUP: &str = "critpath_kfn";
/// At most this many functions are probed per pattern.
const MAX_FUNCTIONS: usize = 200;

/// A name perf accepts as an event name.
fn probe_name(f: &str) -> bool {
    !f.is_empty()
        && f.len() <= 56
        && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !f.starts_with(|c: char| c.is_ascii_digit())
}

/// The function symbols of an ELF binary matching `pat` (by `nm`).
fn user_functions(bin: &Path, pat: &str) -> Result<Vec<String>> {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(bin)
        .output()
        .map_err(|e| {
            CliError::input(format!(
                "--functions needs nm (binutils) to list functions: {e}"
            ))
        })?;
    if !out.status.success() {
        return Err(CliError::input(format!(
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
pub struct Probes {
    perf: PathBuf,
    groups: Vec<&'static str>,
}

impl Probes {
    fn run(perf: &Path, args: &[String]) -> Result<()> {
        let out = Command::new(perf)
            .arg("probe")
            .arg("-q")
            .args(args)
            .output()
            .map_err(|e| CliError::input(format!("cannot run perf probe: {e}")))?;
        if !out.status.success() {
            return Err(CliError::input(format!(
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
    fn run_each(perf: &Path, args: &[String], fixed: usize) -> Result<()> {
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
            return Err(CliError::input(
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
    pub fn add(perf: &Path, req: &Request, tracefs: &Path) -> Result<Probes> {
        if !req.kernel_functions.is_empty() && !tracefs.join("kprobe_events").exists() {
            let graph = std::fs::read_to_string(tracefs.join("available_tracers"))
                .is_ok_and(|t| t.split_whitespace().any(|x| x == "function_graph"));
            return Err(CliError::input(format!(
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
                return Err(CliError::input(format!(
                    "--functions {spec}: expected BIN:GLOB, e.g. ./server:handle_*"
                )));
            };
            // A binary in the current directory, else as the shell finds it.
            let here = Path::new(bin).is_file().then(|| PathBuf::from(bin));
            let Some(path) = here.or_else(|| super::which(bin)) else {
                return Err(CliError::input(format!(
                    "--functions {spec}: {bin}: no such file"
                )));
            };
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let funcs = user_functions(&path, pat)?;
            if funcs.is_empty() {
                return Err(CliError::input(format!(
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
                .map_err(|e| CliError::input(format!("cannot run perf probe: {e}")))?;
            let funcs: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::trim)
                .filter(|n| probe_name(n))
                .map(str::to_string)
                .collect();
            if funcs.is_empty() {
                return Err(CliError::input(format!(
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
    pub fn events(&self) -> Vec<String> {
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
