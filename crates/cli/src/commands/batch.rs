//! `critpath batch`: many traces, each file analyzed on its own (a span
//! file's requests one by one) on all cores, the per-request results
//! aggregated; the aggregate table and the slowest requests against the
//! rest are printed, and with `-o DIR` the tables `per_trace` and `states`
//! are written as Parquet or CSV. With `--scheduler ADDR` the Python
//! package runs the same on a Dask cluster.

use crate::error::{CliError, Result};
use crate::flags;
use crate::output::{is_stdout, safe, screen, stdout, write_file};
use crate::progress::{clear, files_bar};
use critpath_batch::{analyze_files, Options};
use critpath_views::batch::{per_trace_batch, states_agg_batch, Summary};
use critpath_views::tables::{write_csv, write_parquet};
use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    Parquet,
    Csv,
}

#[derive(clap::Args)]
pub struct Args {
    /// Trace files; a span file of several requests (trace ids) gives one
    /// result per request, any other trace one result.
    #[arg(required = true, num_args = 1..)]
    traces: Vec<PathBuf>,
    /// Write per_trace.parquet and states.parquet (or .csv) into DIR.
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// The tables' format.
    #[arg(long, value_enum, default_value_t = TableFormat::Parquet)]
    format: TableFormat,
    /// The fraction of slowest requests compared with the rest.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1)]
    slowest: f64,
    /// Run on the Dask cluster of this scheduler (needs the Python
    /// package: pip install ./python).
    #[arg(long, value_name = "ADDR")]
    scheduler: Option<String>,
    /// Files analyzed at once (default: one per core).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    ends: flags::PathEnds,
    #[command(flatten)]
    iteration: flags::Annotation,
    #[command(flatten)]
    top: flags::Top,
    #[command(flatten)]
    wide: flags::Wide,
}

pub fn run(args: Args) -> Result<()> {
    if !(args.slowest > 0.0 && args.slowest <= 1.0) {
        return Err(CliError::input(format!(
            "--slowest {}: expected a fraction of the requests, above 0 and at most 1 (0.1: the slowest 10%)",
            args.slowest
        )));
    }
    if args.threads == Some(0) {
        return Err(CliError::input("--threads 0: expected 1 or more"));
    }
    if args.output.as_deref().is_some_and(is_stdout) {
        return Err(CliError::input(
            "-o -: batch writes two tables into a directory (the summary goes to standard output); give a directory",
        ));
    }
    if let Some(addr) = &args.scheduler {
        return delegate(addr, &args);
    }
    let opts = Options {
        to: args.ends.to.clone(),
        from: args.ends.from.clone(),
        annotation: args.iteration.annotation.clone(),
        instance: Some(args.iteration.instance),
        trace: None,
        settings: critpath_session::Settings::current(),
    };
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pb = files_bar(args.traces.len());
    let outcomes = analyze_files(&args.traces, &opts, threads, |k| {
        if let Some(pb) = &pb {
            pb.set_position(k as u64);
        }
    });
    clear(pb);
    let mut results = Vec::new();
    // The files named on standard error (a request of several files
    // names them joined with ` + `).
    let mut failed = std::collections::BTreeSet::new();
    for (path, outcome) in args.traces.iter().zip(outcomes) {
        let err = match outcome {
            Ok((rs, err)) => {
                results.extend(rs);
                err
            }
            Err(e) => Some(e),
        };
        if let Some(e) = err {
            failed.insert(path.display().to_string());
            eprintln!("critpath: error: {}", safe(&e.naming(path)));
        }
    }
    // A request whose spans several files hold is one request.
    let (_, unjoined) = critpath_batch::join_split_requests(&mut results, &opts);
    for e in &unjoined {
        let msg = format!("{e}; the requests these files share are counted per file");
        eprintln!("critpath: error: {}", safe(&msg));
    }
    // A request that lacks --to's or --from's end in all its files.
    for e in critpath_batch::take_unmatched(&mut results) {
        if let critpath_batch::Error::Unmatched { file, .. } = &e {
            failed.extend(file.split(" + ").map(String::from));
        }
        eprintln!("critpath: error: {}", safe(&e.to_string()));
    }
    let failed = failed.len().min(args.traces.len());
    let sum = Summary::new(results, args.slowest);
    if let Some(dir) = &args.output {
        write_tables(dir, &args, &sum)?;
    }
    let scr = screen(false);
    let width = args.wide.width(scr.width);
    let what = format!("{} files", args.traces.len());
    stdout(sum.text(&what, args.top.top, width).as_bytes())?;
    if failed > 0 {
        return Err(CliError::input(format!(
            "{failed} of {} files could not be analyzed (or only in part); the results are of the rest",
            args.traces.len()
        )));
    }
    if !unjoined.is_empty() {
        return Err(CliError::input(format!(
            "{} group(s) of files that share requests could not be analyzed together",
            unjoined.len()
        )));
    }
    Ok(())
}

/// Writes `per_trace` and `states` into `dir` (created if missing), each
/// file whole or not at all.
fn write_tables(dir: &Path, args: &Args, sum: &Summary) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::CannotWrite {
        path: dir.to_path_buf(),
        source,
    })?;
    let ext = match args.format {
        TableFormat::Parquet => "parquet",
        TableFormat::Csv => "csv",
    };
    let tables = [
        ("per_trace", per_trace_batch(&sum.per_trace)),
        ("states", states_agg_batch(&sum.states)),
    ];
    for (name, batch) in &tables {
        let path = dir.join(format!("{name}.{ext}"));
        write_file(&path, &args.traces, |w| match args.format {
            TableFormat::Csv => write_csv(batch, w).map_err(io::Error::other),
            TableFormat::Parquet => write_parquet(batch, w).map_err(io::Error::other),
        })?;
    }
    Ok(())
}

/// The Python interpreter that runs the package (`CRITPATH_PYTHON`, by
/// default `python3`).
fn python() -> String {
    std::env::var("CRITPATH_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// `--scheduler ADDR`: the same batch run by the Python package
/// (`python3 -m critpath batch TRACES... --scheduler ADDR -o DIR`), which
/// has the Dask client; its exit status is the command's.
fn delegate(addr: &str, args: &Args) -> Result<()> {
    let py = python();
    let found = std::process::Command::new(&py)
        .args([
            "-c",
            "import importlib.util as u, sys; sys.exit(0 if u.find_spec('critpath') and u.find_spec('critpath.__main__') else 1)",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        return Err(CliError::input(format!(
            "--scheduler {addr}: --scheduler needs the Python package: pip install ./python (then `{py} -m critpath batch` runs the batch on the cluster)"
        )));
    }
    let Some(dir) = &args.output else {
        return Err(CliError::input(format!(
            "--scheduler {addr}: give -o DIR for the tables the cluster's run writes"
        )));
    };
    if args.iteration.annotation.is_some() {
        return Err(CliError::input(
            "--annotation: not with --scheduler (the Python package's batch does not take it)",
        ));
    }
    let mut cmd = std::process::Command::new(&py);
    cmd.args(["-m", "critpath", "batch"])
        .args(&args.traces)
        .args(["--scheduler", addr])
        .arg("-o")
        .arg(dir)
        .args(["--slowest", &args.slowest.to_string()]);
    if args.format == TableFormat::Csv {
        cmd.arg("--csv");
    }
    for (flag, v) in [("--to", &args.ends.to), ("--from", &args.ends.from)] {
        if let Some(v) = v {
            cmd.args([flag, v]);
        }
    }
    let status = cmd
        .status()
        .map_err(|e| CliError::input(format!("--scheduler {addr}: cannot run {py}: {e}")))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(c) => Err(CliError::Exit(c.clamp(1, 255) as u8)),
        None => Err(CliError::Exit(2)),
    }
}
