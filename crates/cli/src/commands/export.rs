//! `critpath export`: the analysis in the formats other tools read.
//! Chrome / Perfetto trace JSON (every state visit as a slice on its SM's
//! track, dependences as flow arrows, the critical path as a track of its
//! own), and CSV or Parquet tables of the states and of the path's edges.

use crate::error::{CliError, Result};
use crate::inputs::{finish_with, Inputs};
use crate::output::{is_stdout, refuse_inputs, safe, stage};
use critpath_engine::{Engine, Options};
use critpath_trace::ReadError;
use critpath_views::perfetto::TraceWriter;
use critpath_views::tables::{edges_batch, states_batch, write_csv, write_parquet};
use std::fs::File;
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

/// Chrome / Perfetto trace JSON, its events spooled as the engine's pass
/// hands them over (see `critpath_views::perfetto`), then written to the
/// output in one piece.
fn trace_json(inputs: &Inputs, output: &Path) -> Result<(String, Option<ReadError>)> {
    let spool = || spool_beside(output).map_err(|e| cannot_spool(output, e));
    let mut writer = TraceWriter::new(spool()?, spool()?);
    let (a, strings, err) = inputs.run_engine(Engine::observed(Options::default(), &mut writer))?;
    let counts = (writer.slices(), writer.flows(), writer.path_edges());
    stage(output, inputs.paths, |mut w| {
        writer.finish(&a, &strings, &mut w)?;
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
        counts.0,
        counts.1,
        counts.2
    );
    Ok((msg, err))
}

/// An unnamed temporary file for a spool: beside an output file (where
/// the output itself will need as much room), else (standard output, a
/// device, a FIFO, a directory not writable) in the temporary directory.
/// It disappears when closed, whatever ends the command.
fn spool_beside(output: &Path) -> io::Result<File> {
    let file = !is_stdout(output) && std::fs::metadata(output).map_or(true, |m| m.is_file());
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty());
    match file {
        true => {
            tempfile::tempfile_in(dir.unwrap_or(Path::new("."))).or_else(|_| tempfile::tempfile())
        }
        false => tempfile::tempfile(),
    }
}

fn cannot_spool(output: &Path, source: io::Error) -> CliError {
    CliError::CannotWrite {
        path: output.to_path_buf(),
        source,
    }
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
