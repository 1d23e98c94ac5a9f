//! `critpath bench`: generates synthetic traces of the sizes asked for,
//! analyzes each from disk, and prints records per second, peak RSS and the
//! cores used (CPU time over wall time), so speed claims are measured, never
//! asserted. Each trace is analyzed `--runs` times, each time by
//! `critpath analyze --json` in a process of its own, and the median run is
//! reported with the spread of all of them. The `-unique` formats give
//! every message a string id that never repeats; the `-deps` formats are a
//! dependence-heavy trace instead of the pipeline (256 SMs waiting on and
//! messaging each other, ids that never repeat, ties); `--perf-data` adds
//! a recording of the user's, as it is and replayed from `.cpt`.

use crate::error::{CliError, Result};
use crate::flags;
use crate::output::stdout;
use critpath_engine::{Engine, Options};
use critpath_readers::{Codec, CptWriter, JsonlWriter};
use critpath_sim::deps::Deps;
use critpath_sim::synth::Synth;
use critpath_trace::{Interner, Pos};
use critpath_views::json::{self, BenchRow};
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// What `--formats` accepts.
const FORMATS: &[&str] = &[
    "cpt",
    "cpt-raw",
    "jsonl",
    "engine",
    "cpt-unique",
    "cpt-raw-unique",
    "jsonl-unique",
    "cpt-deps",
    "jsonl-deps",
    "none",
];

#[derive(clap::Args)]
pub struct Args {
    /// Trace sizes in records (comma-separated; k and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "1M,10M")]
    records: Vec<String>,
    /// Number of state machines in the synthetic pipeline.
    #[arg(long, default_value_t = 16)]
    stages: u32,
    /// Formats to measure: cpt, cpt-raw, jsonl, engine (no file),
    /// cpt-unique, jsonl-unique (string ids that never repeat), and
    /// cpt-deps, jsonl-deps (the dependence-heavy trace); none for only
    /// --perf-data.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpt,cpt-raw,jsonl,cpt-unique"
    )]
    formats: Vec<String>,
    /// Also analyze this perf.data recording (or any trace) as it is, and
    /// replayed: converted to .cpt (in --dir), analyzed the same, checked
    /// to give the recording's path.
    #[arg(long)]
    perf_data: Option<PathBuf>,
    /// Directory for the generated traces (default: a temporary one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the generated traces (in --dir) for other tools.
    #[arg(long, requires = "dir")]
    keep: bool,
    /// Analyze each trace this many times, each in a process of its own,
    /// and report the median run (of an even number, the faster middle one)
    /// with the spread of all.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    #[command(flatten)]
    print: flags::Json,
}

/// The median of several runs, with the spread of all.
struct Runs {
    mid: Measured,
    /// The fastest and slowest run.
    min_s: f64,
    max_s: f64,
    runs: u32,
}

/// One measurement.
struct Measured {
    bytes: u64,
    records: u64,
    analyze_s: f64,
    /// CPU time (user and system) spent analyzing.
    cpu_s: f64,
    peak_kib: u64,
    nodes: u64,
    length_ns: u64,
}

/// This executable, which bench runs for each conversion and analysis.
fn own_exe() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| io_err(format!("cannot find critpath's own executable: {e}")))
}

fn io_err(e: impl std::fmt::Display) -> CliError {
    CliError::input(format!("bench: {e}"))
}

pub fn run(args: Args) -> Result<()> {
    let counts = args
        .records
        .iter()
        .map(|s| parse_count(s))
        .collect::<Result<Vec<_>>>()?;
    for f in &args.formats {
        if !FORMATS.contains(&f.as_str()) {
            return Err(CliError::input(format!(
                "--formats {f}: expected one of {}",
                FORMATS.join(", ")
            )));
        }
    }
    if let Some(p) = &args.perf_data {
        // Before minutes of generating, not after.
        std::fs::File::open(p)
            .map_err(|e| CliError::input(format!("--perf-data {}: {e}", p.display())))?;
    }
    let tmp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| {
                CliError::input(format!("--dir {}: cannot make it: {e}", d.display()))
            })?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| CliError::input(format!("cannot make a temporary directory: {e}")))?;
            tmp.path().to_path_buf()
        }
    };
    if !args.print.json {
        println!(
            "{:>7} {:<12} {:>6} {:>6} {:>9} {:>5} {:>9} {:>9} {:>5}",
            "records",
            "format",
            "B/rec",
            "gen s",
            "analyze s",
            "±",
            "records/s",
            "peak RSS",
            "cores"
        );
    }
    let mut rows = Vec::new();
    let print = |row: &BenchRow| {
        if !args.print.json {
            println!(
                "{:>7} {:<12} {:>6} {:>6.2} {:>9.3} {:>5} {:>9} {:>9} {:>5.2}",
                count(row.records),
                row.format,
                bytes_per_record(row),
                row.generate_s,
                row.analyze_s,
                spread(row),
                human(row.records_per_s, " "),
                format!("{:.1} MiB", row.peak_rss_kib as f64 / 1024.0),
                row.cores
            );
        }
    };
    for &n in &counts {
        for f in args.formats.iter().filter(|f| *f != "none") {
            let t0 = Instant::now();
            let (gen_s, m) = if f == "engine" {
                (0.0, median(args.runs, || engine_alone(n, args.stages))?)
            } else {
                let path = trace_path(n, f, &dir);
                generate(n, args.stages, f, &path)
                    .map_err(|e| io_err(format!("cannot write {}: {e}", path.display())))?;
                let gen_s = t0.elapsed().as_secs_f64();
                let m = median(args.runs, || measure(&path));
                if !args.keep {
                    let _ = std::fs::remove_file(&path);
                }
                (gen_s, m?)
            };
            let row = row(n, f, gen_s, &m);
            print(&row);
            rows.push(row);
        }
    }
    if let Some(p) = &args.perf_data {
        let m = median(args.runs, || measure(p))?;
        let as_is = row(m.mid.records, "perf.data", 0.0, &m);
        print(&as_is);
        rows.push(as_is);
        let (gen_s, r) = replay(p, &dir, &args, &m.mid)?;
        let replayed = row(r.mid.records, "replay.cpt", gen_s, &r);
        print(&replayed);
        rows.push(replayed);
    }
    if args.print.json {
        stdout(json::document(&rows).as_bytes())?;
    }
    Ok(())
}

/// The recording `p` replayed: converted to `.cpt` in `dir` (the seconds
/// that took) and analyzed `--runs` times; it must find the recording's
/// path (`as_is`'s length and nodes).
fn replay(p: &Path, dir: &Path, args: &Args, as_is: &Measured) -> Result<(f64, Runs)> {
    let path = dir.join("replay.cpt");
    let t0 = Instant::now();
    // In a process of its own, as the analyses: the memory it takes is not
    // counted in theirs.
    let o = Command::new(own_exe()?)
        .args(["convert".as_ref(), p.as_os_str(), path.as_os_str()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io_err(format!("cannot run critpath convert: {e}")))?;
    if !o.status.success() {
        let why = String::from_utf8_lossy(&o.stderr);
        return Err(io_err(format!(
            "converting {} to .cpt failed: {}",
            p.display(),
            why.trim()
        )));
    }
    let gen_s = t0.elapsed().as_secs_f64();
    let r = median(args.runs, || measure(&path));
    if !args.keep {
        let _ = std::fs::remove_file(&path);
    }
    let r = r?;
    let (got, want) = (
        (r.mid.length_ns, r.mid.nodes),
        (as_is.length_ns, as_is.nodes),
    );
    if got != want {
        return Err(io_err(format!(
            "{} replayed from .cpt found a path of {} ns over {} nodes, the recording {} ns over {}",
            p.display(),
            got.0,
            got.1,
            want.0,
            want.1
        )));
    }
    Ok((gen_s, r))
}

fn row<'a>(n: u64, format: &'a str, gen_s: f64, r: &Runs) -> BenchRow<'a> {
    let m = &r.mid;
    BenchRow {
        records: n,
        format,
        bytes: m.bytes,
        generate_s: gen_s,
        runs: r.runs,
        analyze_s: m.analyze_s,
        analyze_min_s: r.min_s,
        analyze_max_s: r.max_s,
        records_per_s: n as f64 / m.analyze_s,
        peak_rss_kib: m.peak_kib,
        cpu_s: m.cpu_s,
        cores: m.cpu_s / m.analyze_s,
        nodes: m.nodes,
        length_ns: m.length_ns,
    }
}

/// Runs `once` `runs` times: the median run, with the fastest and slowest
/// times of all and the highest peak RSS.
fn median(runs: u32, mut once: impl FnMut() -> Result<Measured>) -> Result<Runs> {
    let mut all = (0..runs).map(|_| once()).collect::<Result<Vec<_>>>()?;
    let peak_kib = all.iter().map(|m| m.peak_kib).max().unwrap_or(0);
    all.sort_by(|a, b| a.analyze_s.total_cmp(&b.analyze_s));
    let (min_s, max_s) = (all[0].analyze_s, all[all.len() - 1].analyze_s);
    let mid = all.swap_remove((all.len() - 1) / 2);
    Ok(Runs {
        mid: Measured { peak_kib, ..mid },
        min_s,
        max_s,
        runs,
    })
}

/// Records straight from the generator: the engine alone, in this
/// process (its main thread, whose allocator memory is handed back first).
fn engine_alone(n: u64, stages: u32) -> Result<Measured> {
    let mut strings = Interner::new();
    let gen = Synth::new(n, stages, 42, &mut strings);
    reset_peak();
    let (t0, c0) = (Instant::now(), cpu_s());
    let mut engine = Engine::new(Options::default());
    for r in gen {
        engine.feed(&r, Pos::NONE, &strings);
    }
    let a = engine.finish(&strings).map_err(io_err)?;
    let analyze_s = t0.elapsed().as_secs_f64();
    Ok(Measured {
        bytes: 0,
        records: n,
        analyze_s,
        cpu_s: cpu_s() - c0,
        peak_kib: peak_rss_kib(),
        nodes: a.stats.nodes,
        length_ns: a.critical_path.length_ns,
    })
}

/// Where the trace of `n` records in `format` goes.
fn trace_path(n: u64, format: &str, dir: &Path) -> PathBuf {
    match shape_of(format) {
        (ext, "") => dir.join(format!("bench-{n}.{ext}")),
        (ext, shape) => dir.join(format!("bench-{n}-{shape}.{ext}")),
    }
}

/// A format's file format and its trace's shape (`unique`, `deps`, or
/// `""` for the pipeline).
fn shape_of(format: &str) -> (&str, &str) {
    for shape in ["unique", "deps"] {
        if let Some(f) = format.strip_suffix(shape).and_then(|f| f.strip_suffix('-')) {
            return (f, shape);
        }
    }
    (format, "")
}

/// The records of a bench trace: the pipeline, or the dependence-heavy
/// shape.
enum Gen {
    Pipeline(Synth),
    Deps(Deps),
}

impl Gen {
    fn next_in(&mut self, strings: &mut Interner) -> Option<critpath_trace::Record> {
        match self {
            Gen::Pipeline(g) => g.next_in(strings),
            Gen::Deps(g) => g.next_in(strings),
        }
    }
}

/// Analyzes the trace at `path` once, as `critpath analyze --json PATH`
/// in a process of its own: its wall time, CPU time and peak RSS are those
/// a user running it sees, whatever was measured before.
fn measure(path: &Path) -> Result<Measured> {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let exe = own_exe()?;
    let t0 = Instant::now();
    let mut child = Command::new(exe)
        .args(["analyze", "--json"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io_err(format!("cannot run critpath analyze: {e}")))?;
    let mut err = child.stderr.take().expect("stderr is piped");
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut out = Vec::new();
    let read = child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_end(&mut out);
    let (ok, ru) = reap(child.id()).map_err(io_err)?;
    let analyze_s = t0.elapsed().as_secs_f64();
    let errs = errs.join().unwrap_or_default();
    let doc = read
        .ok()
        .filter(|_| ok)
        .and_then(|_| serde_json::from_slice::<serde_json::Value>(&out).ok())
        .ok_or_else(|| {
            let why: Vec<&str> = errs
                .lines()
                .map(|l| l.strip_prefix("critpath: error: ").unwrap_or(l))
                .collect();
            let why = match why.join("\n") {
                w if w.trim().is_empty() => format!("{}: no analysis came back", path.display()),
                w => w,
            };
            CliError::input(format!("bench: analyzing failed: {why}"))
        })?;
    let num = |p: &str| {
        doc.pointer(p)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Measured {
        bytes,
        records: num("/stats/records"),
        analyze_s,
        cpu_s: cpu_of(&ru),
        peak_kib: ru.ru_maxrss.max(0) as u64,
        nodes: num("/stats/nodes"),
        length_ns: num("/critical_path/length_ns"),
    })
}

/// Waits for child `pid`: whether it exited with status 0, and its
/// resource usage (`wait4`; `std::process::Child` does not give it).
fn reap(pid: u32) -> std::io::Result<(bool, libc::rusage)> {
    let mut status = 0;
    // SAFETY: wait4 only writes the status and the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if r == pid as libc::pid_t {
            let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            return Ok((ok, ru));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes the synthetic trace in `format` (jsonl, cpt or cpt-raw; with
/// `-unique`, its string ids never repeat; `-deps`, the dependence-heavy
/// shape).
fn generate(n: u64, stages: u32, format: &str, path: &Path) -> std::io::Result<()> {
    let mut strings = Interner::new();
    let (format, shape) = shape_of(format);
    let mut gen = match shape {
        "deps" => Gen::Deps(Deps::new(n, 42, &mut strings)),
        "unique" => Gen::Pipeline(Synth::new(n, stages, 42, &mut strings).unique_ids()),
        _ => Gen::Pipeline(Synth::new(n, stages, 42, &mut strings)),
    };
    let out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let out = if format == "jsonl" {
        let mut w = JsonlWriter::new(out);
        while let Some(r) = gen.next_in(&mut strings) {
            w.write(&r, &strings)?;
        }
        w.finish()?
    } else {
        let codec = if format == "cpt" {
            Codec::Zstd
        } else {
            Codec::None
        };
        let mut w = CptWriter::new(out, codec)?;
        while let Some(r) = gen.next_in(&mut strings) {
            w.write(&r, &strings)?;
        }
        w.finish()?
    };
    // On disk before it is measured: the kernel writing the trace back
    // would otherwise take a core from the analysis now and then.
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// The suffixes of counts, largest first: written by `human` and `count`,
/// read by `parse_count` (in either case).
const UNITS: [(u64, char); 3] = [(1_000_000_000, 'G'), (1_000_000, 'M'), (1_000, 'k')];

/// `x` with a k, M or G suffix and three significant digits.
fn human(x: f64, sep: &str) -> String {
    let Some(&(unit, suffix)) = UNITS.iter().find(|&&(u, _)| x >= u as f64) else {
        return format!("{x:.0}");
    };
    let v = x / unit as f64;
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{sep}{suffix}")
}

/// A count of records as asked for: 10M, 500k, 14.8M.
fn count(n: u64) -> String {
    match UNITS.iter().find(|&&(u, _)| n >= u) {
        Some(&(u, suffix)) if n.is_multiple_of(u) => format!("{}{suffix}", n / u),
        _ => human(n as f64, ""),
    }
}

/// Bytes of the trace per record, "-" without a file.
fn bytes_per_record(row: &BenchRow) -> String {
    match row.bytes {
        0 => "-".to_string(),
        b => format!("{:.2}", b as f64 / row.records.max(1) as f64),
    }
}

/// Half the spread of the runs' times, as a share of the median: "3%".
fn spread(row: &BenchRow) -> String {
    if row.runs < 2 {
        return "-".to_string();
    }
    let half = (row.analyze_max_s - row.analyze_min_s) / 2.0;
    format!(
        "{:.0}%",
        100.0 * half / row.analyze_s.max(f64::MIN_POSITIVE)
    )
}

fn parse_count(s: &str) -> Result<u64> {
    let s = s.trim();
    let last = s.chars().last().map(|c| c.to_ascii_lowercase());
    let (num, mul) = match UNITS
        .iter()
        .find(|&&(_, c)| Some(c.to_ascii_lowercase()) == last)
    {
        Some(&(u, _)) => (&s[..s.len() - 1], u),
        None => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .map(|n| n * mul)
        .ok_or_else(|| {
            CliError::input(format!(
                "--records {s}: expected a positive count such as 1000, 10k or 1M"
            ))
        })
}

/// User and system CPU time of the whole process so far, in seconds
/// (getrusage), all threads together.
fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    cpu_of(&ru)
}

/// User and system CPU time of a `rusage`, in seconds.
fn cpu_of(ru: &libc::rusage) -> f64 {
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

/// Resets the peak-RSS counter (Linux), so each measurement stands alone:
/// first hands back to the system what the allocator kept from the run
/// before, then starts the high-water mark from here.
fn reset_peak() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size in KiB since the last reset.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
