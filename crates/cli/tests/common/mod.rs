//! Helpers shared by the end-to-end tests: run the `critpath` binary, read
//! its JSON, find examples, write scratch files.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_critpath"))
        .args(args)
        .output()
        .expect("runs")
}

/// Runs a command that must succeed: its standard output, as it is.
pub fn stdout_of(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// Runs a command that must succeed and prints JSON.
pub fn json_of(args: &[&str]) -> Value {
    serde_json::from_str(&stdout_of(args)).expect("JSON")
}

/// A file of `examples/`.
pub fn example(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

/// `critpath bench`'s synthetic trace of `records` records in `format`
/// (`cpt`, `jsonl`), kept in `dir`.
pub fn bench_trace(dir: &Path, records: u64, format: &str) -> PathBuf {
    let (d, n) = (dir.to_str().unwrap(), records.to_string());
    let args = ["bench", "--records", &n, "--formats", format];
    let o = run(&[&args[..], &["--dir", d, "--keep"]].concat());
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir.join(format!("bench-{records}.{format}"))
}

pub fn write(dir: &Path, name: &str, body: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A state's critical time in an analysis, 0 when absent.
pub fn crit(v: &Value, sm: &str, state: &str) -> u64 {
    v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"] == sm && s["state"] == state)
        .map(|s| s["critical_ns"].as_u64().unwrap())
        .unwrap_or(0)
}

/// A state's row of an analysis (panics when absent).
pub fn state_row(v: &Value, sm: &str, state: &str) -> Value {
    v["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sm"] == sm && s["state"] == state)
        .unwrap_or_else(|| panic!("no state {sm}:{state}"))
        .clone()
}

/// Compiles C source `src` into `dir/name` with the C SDK's header on the
/// include path (and `extra` flags); panics if the compiler fails.
pub fn cc(dir: &Path, src: &str, name: &str, extra: &[&str]) -> PathBuf {
    let bin = dir.join(name);
    let st = std::process::Command::new("cc")
        .args(["-O2", "-pthread", "-I"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/c"))
        .args(extra)
        .arg("-o")
        .arg(&bin)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc {src}");
    bin
}

/// Why recording cannot work here, if it cannot.
pub fn cannot_record() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if !uid.stdout.starts_with(b"0\n") {
        return Some("not root: recording kernel tracepoints system-wide needs root".into());
    }
    for (tool, arg) in [("perf", "--version"), ("cc", "--version")] {
        let ok = Command::new(tool)
            .arg(arg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            return Some(format!(
                "{tool} is not installed (scripts/setup.sh installs it)"
            ));
        }
    }
    None
}

/// Recordings are system-wide: one at a time, so that one test's trace is
/// not another's load (two CPUs shared by several recorded programs make
/// every thread wait for a CPU).
static RECORDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The right to record, held for the test's duration.
pub struct Slot {
    _guard: std::sync::MutexGuard<'static, ()>,
    _file: std::fs::File,
}

/// The right to record, held for the test's duration; `None` (after
/// saying why) where recording cannot work here. It is taken across
/// processes too (a lock file in the temporary directory): two test runs
/// on one machine would otherwise add the same uprobes and load each
/// other's recordings.
pub fn recording_slot() -> Option<Slot> {
    if let Some(why) = cannot_record() {
        eprintln!("skipped: {why}");
        return None;
    }
    let guard = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join("critpath-recording.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(Slot {
        _guard: guard,
        _file: file,
    })
}

/// `critpath record FLAGS -o DIR/NAME.data -- CMD`: the recording's path
/// and the run's output (not checked: some tests expect a failure).
pub fn record(dir: &Path, name: &str, flags: &[&str], cmd: &[&str]) -> (PathBuf, Output) {
    let out = dir.join(format!("{name}.data"));
    let mut args = vec!["record"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["-o", out.to_str().unwrap(), "--"]);
    args.extend_from_slice(cmd);
    let o = run(&args);
    (out, o)
}

/// The state rows of the threads whose SM name is `comm:TID`.
pub fn thread_states<'a>(v: &'a Value, comm: &str) -> Vec<&'a Value> {
    let prefix = format!("{comm}:");
    v["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["sm"].as_str().unwrap().starts_with(&prefix))
        .collect()
}

/// A JSON count of nanoseconds as a float.
/// The kinds of an analysis's diagnostics, in order.
pub fn diagnostic_kinds(v: &Value) -> Vec<&str> {
    (v["diagnostics"].as_array().expect("diagnostics").iter())
        .map(|d| d["kind"].as_str().expect("kind"))
        .collect()
}

pub fn ns(v: &Value) -> f64 {
    v.as_u64().unwrap() as f64
}
