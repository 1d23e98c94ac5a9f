//! `critpath bench`: generates synthetic traces of the sizes asked for,
//! analyzes each from disk, and prints records per second and peak RSS, so
//! speed claims are measured, never asserted.

use crate::Failure;
use critpath_engine::{analyze, Engine, Options};
use critpath_import::open;
use critpath_readers::{Codec, CptWriter, JsonlWriter};
use critpath_sim::synth::Synth;
use critpath_trace::{Interner, Pos};
use std::io::BufWriter;
use std::path::Path;
use std::time::Instant;

fn parse_count(s: &str) -> Result<u64, Failure> {
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
            Failure::Input(format!(
                "--records {s}: expected a positive count such as 1000, 10k or 1M"
            ))
        })
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

pub fn run(
    records: &[String],
    stages: u32,
    formats: &[String],
    dir: Option<&Path>,
    keep: bool,
    json: bool,
) -> Result<(), Failure> {
    let counts = records
        .iter()
        .map(|s| parse_count(s))
        .collect::<Result<Vec<_>, _>>()?;
    for f in formats {
        if !["cpt", "cpt-raw", "jsonl", "engine"].contains(&f.as_str()) {
            return Err(Failure::Input(format!(
                "--formats {f}: expected cpt, cpt-raw, jsonl or engine"
            )));
        }
    }
    let tmp;
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| Failure::Input(format!("cannot make a temporary directory: {e}")))?;
            tmp.path().to_path_buf()
        }
    };
    fn io(e: impl std::fmt::Display) -> Failure {
        Failure::Input(format!("bench: {e}"))
    }
    let mut rows = Vec::new();
    if !json {
        println!(
            "{:>12}  {:<8}  {:>10}  {:>8}  {:>9}  {:>14}  {:>12}",
            "records", "format", "bytes/rec", "gen s", "analyze s", "records/s", "peak RSS MiB"
        );
    }
    for &n in &counts {
        for f in formats {
            let mut strings = Interner::new();
            let gen = Synth::new(n, stages, 42, &mut strings);
            let t0 = Instant::now();
            let (size, analyze_s, peak, nodes, length) = if f == "engine" {
                // Records straight from the generator: the engine alone.
                reset_peak();
                let t1 = Instant::now();
                let mut engine = Engine::new(Options::default());
                for r in gen {
                    engine.feed(&r, Pos::None, &strings);
                }
                let a = engine
                    .finish(&strings)
                    .map_err(|e| io(crate::engine_error(&e)))?;
                (
                    0,
                    t1.elapsed().as_secs_f64(),
                    peak_rss_kib(),
                    a.stats.nodes,
                    a.critical_path.length_ns,
                )
            } else {
                let path = dir.join(format!(
                    "bench-{n}.{}",
                    if f == "jsonl" { "jsonl" } else { f.as_str() }
                ));
                let file = std::fs::File::create(&path).map_err(io)?;
                let out = BufWriter::with_capacity(1 << 20, file);
                if f == "jsonl" {
                    let mut w = JsonlWriter::new(out);
                    for r in gen {
                        w.write(&r, &strings).map_err(io)?;
                    }
                    w.finish().map_err(io)?;
                } else {
                    let codec = if f == "cpt" { Codec::Zstd } else { Codec::None };
                    let mut w = CptWriter::new(out, codec).map_err(io)?;
                    for r in gen {
                        w.write(&r, &strings).map_err(io)?;
                    }
                    w.finish().map_err(io)?;
                }
                let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                reset_peak();
                let t1 = Instant::now();
                let mut src = open(&path)?;
                let (a, err) = analyze(&mut src, Options::default(), |_, _| {})
                    .map_err(|e| io(crate::engine_error(&e)))?;
                if let Some(e) = err {
                    return Err(e.into());
                }
                let secs = t1.elapsed().as_secs_f64();
                let peak = peak_rss_kib();
                if !keep {
                    let _ = std::fs::remove_file(&path);
                }
                (size, secs, peak, a.stats.nodes, a.critical_path.length_ns)
            };
            let gen_s = t0.elapsed().as_secs_f64() - analyze_s;
            let rate = n as f64 / analyze_s;
            if json {
                rows.push(serde_json::json!({
                    "records": n, "format": f, "bytes": size, "generate_s": gen_s, "analyze_s": analyze_s,
                    "records_per_s": rate, "peak_rss_kib": peak, "nodes": nodes, "length_ns": length,
                }));
            } else {
                println!(
                    "{:>12}  {:<8}  {:>10.2}  {:>8.2}  {:>9.3}  {:>14.0}  {:>12.1}",
                    n,
                    f,
                    size as f64 / n as f64,
                    gen_s,
                    analyze_s,
                    rate,
                    peak as f64 / 1024.0
                );
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).expect("json"));
    }
    Ok(())
}
