//! The pump: feeds any [`RecordSource`] through the engine in batches, with
//! a progress callback, turning reader errors into diagnostics, and adds the
//! source's summary before the engine finishes. Every command that analyzes
//! a trace goes through here.

use crate::engine::{Engine, Options};
use crate::error::Result;
use crate::observer::Observer;
use crate::results::Analysis;
use critpath_trace::{Diagnostic, DiagnosticKind, ReadError, RecordSource};

/// Records handed from reader to engine at a time.
const BATCH: usize = 256;
/// Skipped records reported one by one; the rest are counted.
const SKIPPED_DETAIL: u64 = 10;

/// `opts` with the source's scope (for a recording: the command's main
/// thread) as start and destination when neither is given.
pub fn scoped<S: RecordSource + ?Sized>(source: &S, mut opts: Options) -> Options {
    if opts.from.is_none() && opts.to.is_none() {
        let scope = source.scope();
        opts.from = scope.from;
        opts.to = scope.to;
    }
    opts
}

/// Runs the engine over a whole source; with neither start nor destination
/// given, over the part the source calls its scope (a recorded command).
/// Reader errors that let reading go on become diagnostics; the first error
/// of all is returned beside the analysis so the caller can report it
/// without losing what was read. `progress` is called now and then with
/// (records, bytes read).
pub fn analyze<S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let opts = scoped(source, opts);
    run(source, Engine::new(opts), progress)
}

/// [`analyze`], telling `observer` of every state visit and dependence.
pub fn analyze_observed<S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    observer: &mut dyn Observer,
    progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let opts = scoped(source, opts);
    run(source, Engine::observed(opts, observer), progress)
}

/// [`analyze`] with an engine set up by the caller (observed, say), and no
/// scope applied.
pub fn run<S: RecordSource + ?Sized>(
    source: &mut S,
    mut engine: Engine<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let mut errors = ReadErrors::default();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let res = source.next_batch(&mut batch, BATCH);
        for (rec, pos) in &batch {
            engine.feed(rec, *pos, source.strings());
        }
        engine.after_batch(source.strings());
        match res {
            Ok(()) if batch.is_empty() => break,
            Ok(()) => progress(engine.records(), source.bytes_read()),
            Err(e) => {
                if errors.add(e, &mut engine) {
                    break;
                }
            }
        }
    }
    errors.count_skipped(&mut engine);
    let summary = source.summary();
    for d in summary.diagnostics {
        engine.add_diagnostic(d);
    }
    let first_error = errors.first.or(summary.error);
    let mut analysis = engine.finish(source.strings())?;
    analysis.annotation_costs = summary.annotation_costs;
    Ok((analysis, first_error))
}

/// The reader's errors during a pass: the first, and how many records were
/// skipped.
#[derive(Default)]
struct ReadErrors {
    first: Option<ReadError>,
    skipped: u64,
}

impl ReadErrors {
    /// Reports `e` to the engine as `input-cut` (reading ends: returns true)
    /// or `input-skipped`.
    fn add(&mut self, e: ReadError, engine: &mut Engine<'_>) -> bool {
        let fatal = e.fatal;
        if fatal || self.skipped < SKIPPED_DETAIL {
            engine.add_diagnostic(if fatal {
                Diagnostic::new(
                    DiagnosticKind::InputCut,
                    format!("{e}; the analysis covers the records before this point"),
                )
            } else {
                Diagnostic::new(DiagnosticKind::InputSkipped, format!("{e}; record skipped"))
            });
        }
        if !fatal {
            self.skipped += 1;
        }
        self.first.get_or_insert(e);
        fatal
    }

    /// One diagnostic for the skipped records not reported one by one.
    fn count_skipped(&self, engine: &mut Engine<'_>) {
        let skipped = self.skipped;
        if skipped > SKIPPED_DETAIL {
            engine.add_diagnostic(
                Diagnostic::new(
                    DiagnosticKind::InputSkipped,
                    format!(
                        "{} more bad records skipped ({skipped} in all)",
                        skipped - SKIPPED_DETAIL
                    ),
                )
                .count(skipped - SKIPPED_DETAIL),
            );
        }
    }
}
