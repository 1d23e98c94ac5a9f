//! `critpath convert`: a trace between JSONL and the native .cpt format,
//! losslessly; the output is written whole or not at all, and never over
//! the input. An output of `-` is standard output (in the format given by
//! --format).

use crate::error::{CliError, Result};
use crate::output::{is_stdout, refuse_binary_terminal, refuse_inputs, safe, write_file};
use crate::progress::{advance, clear, progress_bar};
use critpath_import::{open, AnySource, Format};
use critpath_readers::json::PROBLEMS_LISTED;
use critpath_readers::{Codec, CptWriter, JsonlWriter, TraceWriter};
use critpath_trace::{Interner, ReadError, Record, RecordSource, Summary};
use std::io;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    input: PathBuf,
    /// The converted trace; `-` is standard output (needs --format).
    output: PathBuf,
    /// Output format (default: from OUTPUT's extension, .cpt or .jsonl;
    /// with neither, the other side of the input: a .cpt becomes JSONL,
    /// anything else .cpt).
    #[arg(long, value_enum)]
    format: Option<OutFormat>,
    /// Compression of .cpt chunks.
    #[arg(long, value_enum, default_value = "zstd")]
    compress: Compress,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum OutFormat {
    Cpt,
    Jsonl,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Compress {
    None,
    Zstd,
}

/// What was read: the records written and the first reader error.
#[derive(Default)]
struct Pumped {
    records: u64,
    first_err: Option<ReadError>,
}

pub fn run(args: Args) -> Result<()> {
    let inputs = [args.input.clone()];
    refuse_inputs(&args.output, &inputs)?;
    if args.format.is_none() && is_stdout(&args.output) {
        return Err(CliError::input(
            "-: standard output has no name to tell the format from; pass --format jsonl or --format cpt",
        ));
    }
    let src = open(&args.input)?;
    let format = match args.format.or_else(|| named_format(&args.output)) {
        Some(f) => f,
        None => other_side(&args.output, src.format()),
    };
    if matches!(format, OutFormat::Cpt) {
        refuse_binary_terminal(&args.output, ".cpt")?;
    }
    let codec = match args.compress {
        Compress::None => Codec::None,
        Compress::Zstd => Codec::Zstd,
    };
    convert(src, &args.input, &args.output, format, codec)
}

/// `src`, opened from `input`, converted to `output` in `format`.
fn convert(
    mut src: AnySource,
    input: &Path,
    output: &Path,
    format: OutFormat,
    codec: Codec,
) -> Result<()> {
    // What the source says beside its records goes with them: a
    // recording's scope (its command) first, its summary at the end.
    let scope = src.scope();
    let pb = progress_bar(input);
    let pumped = write_file(output, &[input.to_path_buf()], |out| match format {
        OutFormat::Cpt => through(CptWriter::with_scope(out, codec, &scope)?, &mut src, &pb),
        OutFormat::Jsonl => {
            let mut w = JsonlWriter::new(out);
            w.scope(&scope)?;
            through(w, &mut src, &pb)
        }
    })?;
    clear(pb);
    match pumped.first_err {
        Some(e) => Err(CliError::input(format!(
            "{e} (converted the {} records that could be read)",
            pumped.records
        ))),
        None => Ok(()),
    }
}

/// The records of `src` written through `w`, then its summary.
fn through(
    mut w: impl TraceWriter,
    src: &mut AnySource,
    pb: &Option<indicatif::ProgressBar>,
) -> io::Result<Pumped> {
    let mut p = pump(src, pb, &mut |r, s| w.write(r, s))?;
    w.summary(&p.summary(src), &src.inferred_links())?;
    w.end()?;
    Ok(p)
}

/// The output format named by the output's extension, in any case.
fn named_format(output: &Path) -> Option<OutFormat> {
    let ext = output.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "cpt" => Some(OutFormat::Cpt),
        "jsonl" | "json" | "ndjson" => Some(OutFormat::Jsonl),
        _ => None,
    }
}

/// The format across from the input's, for a file whose name does not say
/// (`out.bin`): a .cpt becomes JSONL, anything else .cpt. Said on standard
/// error, so that the choice is never silent.
fn other_side(output: &Path, input: Format) -> OutFormat {
    let (format, name) = if input == Format::Cpt {
        (OutFormat::Jsonl, "JSONL")
    } else {
        (OutFormat::Cpt, "native .cpt")
    };
    eprintln!(
        "critpath: note: {}: the name says no format (.cpt or .jsonl); writing {name}, the other side of the {:?} input (--format chooses)",
        safe(&output.display().to_string()),
        input
    );
    format
}

impl Pumped {
    /// The source's summary after its last record: the error it holds (a
    /// recording found cut short at its end) is the conversion's too, if
    /// it had none before; its findings (`input-cut`) go with the records.
    fn summary(&mut self, src: &mut AnySource) -> Summary {
        let mut s = src.summary();
        match (s.error.take(), &self.first_err) {
            // Said once: the conversion's error repeats it.
            (Some(e), None) => self.first_err = Some(e),
            (Some(e), Some(_)) => eprintln!("critpath: warning: {}", safe(&e.to_string())),
            (None, _) => {}
        }
        s
    }
}

/// Copies every record the source yields to `write`; reader errors are
/// warned about (the first [`PROBLEMS_LISTED`] skipped records one by one,
/// the rest counted) and the first kept, a fatal one ends the copy.
fn pump(
    src: &mut AnySource,
    pb: &Option<indicatif::ProgressBar>,
    write: &mut dyn FnMut(&Record, &Interner) -> io::Result<()>,
) -> io::Result<Pumped> {
    let mut p = Pumped::default();
    let mut skipped = 0usize;
    loop {
        match src.next_record() {
            Ok(Some((r, _))) => {
                write(&r, src.strings())?;
                p.records += 1;
                if p.records & 0xffff == 0 {
                    advance(pb, src.bytes_read());
                }
            }
            Ok(None) => break,
            Err(e) => {
                let fatal = e.fatal;
                skipped += usize::from(!fatal);
                if fatal || skipped <= PROBLEMS_LISTED {
                    eprintln!("critpath: warning: {}", safe(&e.to_string()));
                }
                p.first_err.get_or_insert(e);
                if fatal {
                    break;
                }
            }
        }
    }
    if skipped > PROBLEMS_LISTED {
        eprintln!(
            "critpath: warning: {} more bad records skipped ({skipped} in all)",
            skipped - PROBLEMS_LISTED
        );
    }
    Ok(p)
}
