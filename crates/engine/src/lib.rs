//! critpath-engine: the streaming critical-path engine with its on-disk node
//! log, the result tables that every view renders, and the analyses derived
//! from them.
//!
//! Data flows one way: a [`RecordSource`] yields [`Record`]s, the [`Engine`]
//! consumes them in one pass, and [`Engine::finish`] returns an [`Analysis`].

pub mod analyses;
pub mod check;
pub mod engine;
pub mod modules;
pub mod nodelog;
pub mod results;
pub mod slack;

pub use engine::{Engine, Options, Speedup, Visit};
pub use results::Analysis;

use critpath_trace::{Diagnostic, Interner, ReadError, RecordSource};

/// Records handed from reader to engine at a time.
const BATCH: usize = 256;

/// Runs the engine over a whole source; with neither `--from` nor `--to`
/// given, over the part the source calls its scope (a recorded command). Reader errors that let reading go on
/// become diagnostics; the first error of all is returned beside the
/// analysis so the caller can report it (exit code 2) without losing what
/// was read. `progress` is called now and then with (records, bytes read).
pub fn analyze<S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    progress: impl FnMut(u64, u64),
) -> std::io::Result<(Analysis, Option<ReadError>)> {
    let mut opts = opts;
    if opts.from.is_none() && opts.to.is_none() {
        let scope = source.scope();
        opts.from = scope.from;
        opts.to = scope.to;
    }
    run(source, Engine::new(opts), progress)
}

/// [`analyze`] with an engine set up by the caller (a hook, say).
pub fn run<S: RecordSource + ?Sized>(
    source: &mut S,
    engine: Engine,
    progress: impl FnMut(u64, u64),
) -> std::io::Result<(Analysis, Option<ReadError>)> {
    run_with(source, engine, progress, |_| {})
}

/// [`run`], calling `after_batch` with the source's names after each batch
/// of records is fed (to consume what an engine hook gathered, streaming).
pub fn run_with<S: RecordSource + ?Sized>(
    source: &mut S,
    mut engine: Engine,
    mut progress: impl FnMut(u64, u64),
    mut after_batch: impl FnMut(&Interner),
) -> std::io::Result<(Analysis, Option<ReadError>)> {
    let mut first_error: Option<ReadError> = None;
    let mut skipped = 0u64;
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let res = source.next_batch(&mut batch, BATCH);
        for (rec, pos) in &batch {
            engine.feed(rec, *pos, source.strings());
        }
        after_batch(source.strings());
        match res {
            Ok(()) if batch.is_empty() => break,
            Ok(()) => progress(engine.records(), source.bytes_read()),
            Err(e) => {
                let fatal = e.fatal;
                if fatal || skipped < 10 {
                    engine.add_diagnostic(Diagnostic::new(
                        if fatal { "input-cut" } else { "input-skipped" },
                        if fatal {
                            format!("{e}; the analysis covers the records before this point")
                        } else {
                            format!("{e}; record skipped")
                        },
                    ));
                }
                if !fatal {
                    skipped += 1;
                }
                if first_error.is_none() {
                    first_error = Some(e);
                }
                if fatal {
                    break;
                }
            }
        }
    }
    if skipped > 10 {
        engine.add_diagnostic(
            Diagnostic::new(
                "input-skipped",
                format!(
                    "{} more bad records skipped ({skipped} in all)",
                    skipped - 10
                ),
            )
            .count(skipped - 10),
        );
    }
    let summary = source.summary();
    for d in summary.diagnostics {
        engine.add_diagnostic(d);
    }
    if first_error.is_none() {
        first_error = summary.error;
    }
    let mut analysis = engine.finish(source.strings())?;
    analysis.annotation_costs = summary.annotation_costs;
    Ok((analysis, first_error))
}
