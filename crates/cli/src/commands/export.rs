//! `critpath export`: the analysis in the formats other tools read.
//! Chrome / Perfetto trace JSON (every state visit as a slice on its SM's
//! track, dependences as flow arrows, the critical path as a track of its
//! own), and CSV or Parquet tables of the states and of the path's edges.

use crate::error::{CliError, Result};
use crate::inputs::{finish_with, Inputs};
use crate::output::{is_stdout, refuse_inputs, safe, stage};
use critpath_engine::{Analysis, Engine, Options, Visit};
use critpath_trace::{Interner, ReadError};
use critpath_views::tables::{edges_batch, states_batch, write_csv, write_parquet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Perfetto,
    Chrome,
    Csv,
    Parquet,
}

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true, num_args = 1..)]
    traces: Vec<PathBuf>,
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Output file; tables also write FILE-path.EXT for the path's edges.
    /// `-` is standard output (trace JSON only).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let two = matches!(args.format, ExportFormat::Csv | ExportFormat::Parquet);
    if two && is_stdout(&args.output) {
        return Err(CliError::input(
            "-o -: CSV and Parquet are two tables (FILE and FILE-path.EXT); give a file name, or use --format perfetto for standard output",
        ));
    }
    refuse_inputs(&args.output, &args.traces)?;
    refuse_inputs(&sibling(&args.output, "path"), &args.traces)?;
    let inputs = Inputs::new(&args.traces)?;
    let (msg, err) = match args.format {
        ExportFormat::Perfetto | ExportFormat::Chrome => trace_json(&inputs, &args.output)?,
        ExportFormat::Csv | ExportFormat::Parquet => tables(&inputs, args.format, &args.output)?,
    };
    eprint!("{}", safe(&msg));
    finish_with(err)
}

/// Chrome / Perfetto trace JSON.
fn trace_json(inputs: &Inputs, output: &Path) -> Result<(String, Option<ReadError>)> {
    let (a, visits, strings, err) = with_visits(inputs)?;
    let doc = critpath_views::perfetto::trace_json(&a, &visits, &strings);
    stage(output, inputs.paths, |mut w| {
        serde_json::to_writer(&mut w, &doc)?;
        w.flush()
    })?
    .commit()?;
    let msg = format!(
        "wrote {} ({} slices, {} flows, a critical-path track of {} slices): open it in ui.perfetto.dev or chrome://tracing\n",
        if is_stdout(output) {
            "the trace JSON to standard output".into()
        } else {
            output.display().to_string()
        },
        visits.iter().filter(|v| matches!(v, Visit::State { .. })).count(),
        visits.iter().filter(|v| matches!(v, Visit::Link { .. })).count(),
        a.path.as_ref().map_or(0, Vec::len)
    );
    Ok((msg, err))
}

/// The states table in `output`, the path's edges in `FILE-path.EXT`.
fn tables(
    inputs: &Inputs,
    format: ExportFormat,
    output: &Path,
) -> Result<(String, Option<ReadError>)> {
    let (a, err) = inputs.analyze(Options {
        keep_path: true,
        ..Default::default()
    })?;
    let (states, edges) = (states_batch(&a), edges_batch(&a));
    let second = sibling(output, "path");
    // Both tables are written whole before either is put in place: the
    // pair appears together or not at all.
    let mut staged = Vec::new();
    for (batch, path) in [(&states, output), (&edges, second.as_path())] {
        staged.push(stage(path, inputs.paths, |w| match format {
            ExportFormat::Csv => write_csv(batch, w).map_err(io::Error::other),
            _ => write_parquet(batch, w).map_err(io::Error::other),
        })?);
    }
    for s in staged {
        s.commit()?;
    }
    let msg = format!(
        "wrote {} ({} states) and {} ({} critical-path edges)\n",
        output.display(),
        states.num_rows(),
        second.display(),
        edges.num_rows()
    );
    Ok((msg, err))
}

/// `FILE.ext` -> `FILE-path.ext`, for the second table.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("export");
    let ext = path
        .extension()
        .and_then(|s| s.to_str())
        .map(|e| format!(".{e}"))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{suffix}{ext}"))
}

/// The analysis with its critical path, and every visit and dependence.
fn with_visits(inputs: &Inputs) -> Result<(Analysis, Vec<Visit>, Interner, Option<ReadError>)> {
    let mut visits = Vec::new();
    let mut collect = |v: &Visit, _: &Interner| visits.push(*v);
    let opts = Options {
        keep_path: true,
        ..Default::default()
    };
    let (a, strings, err) = inputs.run_engine(Engine::observed(opts, &mut collect))?;
    Ok((a, visits, strings, err))
}
