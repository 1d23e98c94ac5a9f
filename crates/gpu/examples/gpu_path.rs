//! Analyses Kineto traces (one rank, or several ranks of one job) and
//! prints the path's length, its GPU breakdown, the top states and, for
//! several ranks, the clock offsets and stragglers, with the time taken:
//!
//!     cargo run --release -p critpath-gpu --example gpu_path -- [--annotation NAME [--instance K]] TRACE...

use critpath_engine::{analyze, Options};
use critpath_gpu::{bound_by, open_ranks_with, GpuOptions};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut opts = GpuOptions::default();
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--annotation" => opts.annotation = args.next(),
            "--instance" => opts.instance = args.next().and_then(|k| k.parse().ok()).unwrap_or(0),
            _ => paths.push(a.into()),
        }
    }
    let t0 = Instant::now();
    let mut src = match open_ranks_with(&paths, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t1 = Instant::now();
    let peak_read = peak_kb();
    let facts = src.facts().clone();
    let report = src.report().clone();
    let eopts = Options {
        keep_path: true,
        ..Options::default()
    };
    let (a, _) = analyze(&mut src, eopts, |_, _| {}).expect("analysis");
    let b = bound_by(&a, &facts);
    let t2 = Instant::now();
    let out = serde_json::json!({
        "length_ns": a.critical_path.length_ns,
        "hta_comparable_ns": b.hta_comparable_ns(),
        "gpu": b,
        "top": a.states.iter().take(5).map(|s| (format!("{}:{}", s.sm, s.state), s.critical_ns)).collect::<Vec<_>>(),
        "ranks": report,
        "read_s": (t1 - t0).as_secs_f64(),
        "peak_kb_after_read": peak_read,
        "peak_kb": peak_kb(),
        "analysis_s": (t2 - t1).as_secs_f64(),
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}

/// The process's peak resident memory so far (Linux), kB.
fn peak_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
