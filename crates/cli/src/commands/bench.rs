//! `critpath bench`: generates synthetic traces of the sizes asked for,
//! analyzes each from disk, and prints records per second, peak RSS and the
//! cores used (CPU time over wall time), so speed claims are measured, never
//! asserted. The `-unique` formats give every message a string id that never
//! repeats; `--perf-data` adds a recording of the user's.

use crate::error::{CliError, Result};
use crate::output::stdout;
use critpath_engine::{Engine, Options};
use critpath_import::open;
use critpath_readers::{Codec, CptWriter, JsonlWriter};
use critpath_sim::synth::Synth;
use critpath_trace::{Interner, Pos};
use critpath_views::json::{self, BenchRow};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
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
];

#[derive(clap::Args)]
pub struct Args {
    /// Trace sizes in records (comma-separated; k and M suffixes allowed).
    #[arg(long, value_delimiter = ',', default_value = "1M,10M")]
    records: Vec<String>,
    /// Number of state machines in the synthetic pipeline.
    #[arg(long, default_value_t = 16)]
    stages: u32,
    /// Formats to measure: cpt, cpt-raw, jsonl, engine (no file), and
    /// cpt-unique, jsonl-unique (string ids that never repeat).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpt,cpt-raw,jsonl,cpt-unique"
    )]
    formats: Vec<String>,
    /// Also analyze this perf.data recording (or any trace) as it is.
    #[arg(long)]
    perf_data: Option<PathBuf>,
    /// Directory for the generated traces (default: a temporary one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the generated traces (in --dir) for other tools.
    #[arg(long, requires = "dir")]
    keep: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// One measurement.
struct Measured {
    bytes: u64,
    analyze_s: f64,
    /// CPU time (user and system) spent analyzing.
    cpu_s: f64,
    peak_kib: u64,
    nodes: u64,
    length_ns: u64,
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
    if !args.json {
        println!(
            "{:>12}  {:<12}  {:>10}  {:>8}  {:>9}  {:>14}  {:>12}  {:>5}",
            "records",
            "format",
            "bytes/rec",
            "gen s",
            "analyze s",
            "records/s",
            "peak RSS MiB",
            "cores"
        );
    }
    let mut rows = Vec::new();
    let print = |row: &BenchRow| {
        if !args.json {
            println!(
                "{:>12}  {:<12}  {:>10.2}  {:>8.2}  {:>9.3}  {:>14.0}  {:>12.1}  {:>5.2}",
                row.records,
                row.format,
                row.bytes as f64 / row.records.max(1) as f64,
                row.generate_s,
                row.analyze_s,
                row.records_per_s,
                row.peak_rss_kib as f64 / 1024.0,
                row.cores
            );
        }
    };
    for &n in &counts {
        for f in &args.formats {
            let t0 = Instant::now();
            let m = if f == "engine" {
                engine_alone(n, args.stages)?
            } else {
                from_disk(n, args.stages, f, &dir, args.keep)?
            };
            let gen_s = t0.elapsed().as_secs_f64() - m.analyze_s;
            let row = row(n, f, gen_s, &m);
            print(&row);
            rows.push(row);
        }
    }
    if let Some(p) = &args.perf_data {
        let (n, m) = measure(p)?;
        let row = row(n, "perf.data", 0.0, &m);
        print(&row);
        rows.push(row);
    }
    if args.json {
        stdout(json::document(&rows).as_bytes())?;
    }
    Ok(())
}

fn row<'a>(n: u64, format: &'a str, gen_s: f64, m: &Measured) -> BenchRow<'a> {
    BenchRow {
        records: n,
        format,
        bytes: m.bytes,
        generate_s: gen_s,
        analyze_s: m.analyze_s,
        records_per_s: n as f64 / m.analyze_s,
        peak_rss_kib: m.peak_kib,
        cpu_s: m.cpu_s,
        cores: m.cpu_s / m.analyze_s,
        nodes: m.nodes,
        length_ns: m.length_ns,
    }
}

/// Records straight from the generator: the engine alone.
fn engine_alone(n: u64, stages: u32) -> Result<Measured> {
    let mut strings = Interner::new();
    let gen = Synth::new(n, stages, 42, &mut strings);
    reset_peak();
    let t1 = Instant::now();
    let c1 = cpu_s();
    let mut engine = Engine::new(Options::default());
    for r in gen {
        engine.feed(&r, Pos::None, &strings);
    }
    let a = engine.finish(&strings).map_err(io_err)?;
    Ok(Measured {
        bytes: 0,
        analyze_s: t1.elapsed().as_secs_f64(),
        cpu_s: cpu_s() - c1,
        peak_kib: peak_rss_kib(),
        nodes: a.stats.nodes,
        length_ns: a.critical_path.length_ns,
    })
}

/// Writes a trace of `n` records in `format`, then analyzes it from disk.
fn from_disk(n: u64, stages: u32, format: &str, dir: &Path, keep: bool) -> Result<Measured> {
    let path = match format.strip_suffix("-unique") {
        Some(ext) => dir.join(format!("bench-{n}-unique.{ext}")),
        None => dir.join(format!("bench-{n}.{format}")),
    };
    generate(n, stages, format, &path)
        .map_err(|e| io_err(format!("cannot write {}: {e}", path.display())))?;
    let m = measure(&path)?;
    if !keep {
        let _ = std::fs::remove_file(&path);
    }
    Ok(m.1)
}

/// Analyzes the trace at `path`: how many records it held, and how fast.
fn measure(path: &Path) -> Result<(u64, Measured)> {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    reset_peak();
    let t1 = Instant::now();
    let c1 = cpu_s();
    let mut src = open(path)?;
    let (a, err) = crate::inputs::pump(&mut src, Options::default(), |_, _| {}).map_err(io_err)?;
    if let Some(e) = err {
        return Err(e.into());
    }
    let analyze_s = t1.elapsed().as_secs_f64();
    let cpu_s = cpu_s() - c1;
    let peak_kib = peak_rss_kib();
    let m = Measured {
        bytes,
        analyze_s,
        cpu_s,
        peak_kib,
        nodes: a.stats.nodes,
        length_ns: a.critical_path.length_ns,
    };
    Ok((a.stats.records, m))
}

/// Writes the synthetic trace in `format` (jsonl, cpt or cpt-raw; with
/// `-unique`, its string ids never repeat).
fn generate(n: u64, stages: u32, format: &str, path: &Path) -> std::io::Result<()> {
    let mut strings = Interner::new();
    let mut gen = Synth::new(n, stages, 42, &mut strings);
    let format = match format.strip_suffix("-unique") {
        Some(f) => {
            gen = gen.unique_ids();
            f
        }
        None => format,
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

fn parse_count(s: &str) -> Result<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('k') | Some('K') => (&s[..s.len() - 1], 1_000),
        Some('m') | Some('M') => (&s[..s.len() - 1], 1_000_000),
        Some('g') | Some('G') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
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
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

/// Resets the peak-RSS counter (Linux), so each measurement stands alone.
fn reset_peak() {
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
