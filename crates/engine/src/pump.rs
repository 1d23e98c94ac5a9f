//! The pump: feeds any [`RecordSource`] through the engine in batches, with
//! a progress callback, turning reader errors into diagnostics, and adds the
//! source's summary before the engine finishes. Every command that analyzes
//! a trace goes through here.
//!
//! [`analyze_parallel`] does the same on two cores: the reader (decoding,
//! decompression, the OS graph) runs on a thread of its own and hands
//! batches to the engine over a bounded channel, each with the strings its
//! records introduced, so the engine's copy of the string table always
//! covers what it is fed. Batches, errors and their order are those of the
//! one-thread pump, so the results are the same.
//!
//! [`analyze`] and [`analyze_parallel`] let a source name its SMs late
//! ([`RecordSource::prepare`]) when nothing in the options matches names
//! while records are read, and read it again when the source says its
//! late names showed the first pass wrong.

use crate::engine::{Engine, Options};
use crate::error::{Error, Result};
use crate::logshare::LogHelper;
use crate::observer::Observer;
use crate::results::Analysis;
use critpath_trace::{
    Diagnostic, DiagnosticKind, Interner, Pos, ReadError, Record, RecordSource, TransientTexts,
};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender, TrySendError};

/// Records handed from reader to engine at a time.
const BATCH: usize = 256;
/// Records per hand-off between threads: larger, so that the channel costs
/// little (without an observer, batch sizes change nothing in the result).
/// When the engine is the slower, the reader waits on a full channel and
/// each batch taken wakes it: 16,384 records a batch wake it a quarter as
/// often as 4,096 did (futex calls on a dependence-heavy trace of 20 M
/// records: 7,299 → 2,505, 6% less CPU).
const PAR_BATCH: usize = 16384;
/// Batches the reader's thread may be ahead of the engine's: enough that
/// neither often waits for the other, also when a third thread (a perf.data
/// source's decoder) shares two cores with them: two batches of 16,384
/// records ran as fast as four, in 2 MB less. Each batch carries the texts
/// of the transient ids made while it was read, so the engine's lag does
/// not matter to them.
const AHEAD: usize = 2;
/// How many records ahead of the one fed the engine fetches them: the
/// reader's core wrote them, and waiting for each costs a fifth of the
/// engine's time.
const AHEAD_RECORDS: usize = 16;

/// Skipped records reported one by one; the rest are counted.
const SKIPPED_DETAIL: u64 = 10;

/// `opts` with the source's scope (for a recording: the command's main
/// thread) as start and destination when neither is given, and the way
/// its what-ifs spread.
pub fn scoped<S: RecordSource + ?Sized>(source: &mut S, mut opts: Options) -> Options {
    let scope = source.scope();
    if opts.from.is_none() && opts.to.is_none() {
        opts.ends_from_source = scope.from.is_some() || scope.to.is_some();
        opts.from = scope.from;
        opts.to = scope.to;
    }
    for rule in scope.scales_with {
        if !opts.scales_with.contains(&rule) {
            opts.scales_with.push(rule);
        }
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
    mut progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    late_names_pass(source, opts, |source, opts| {
        run(source, Engine::new(opts), &mut progress)
    })
}

/// [`analyze`], telling `observer` of every state visit and dependence.
pub fn analyze_observed<S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    observer: &mut dyn Observer,
    progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let engine = observed_engine(source, opts, observer);
    run(source, engine, progress)
}

/// An engine telling `observer` of `source`'s records, the source's names
/// final first (the observer may keep names as it sees them) and its scope
/// applied, for [`run`] or [`run_parallel`] (the observer hears of the
/// same visits in the same order from either, on the caller's thread; from
/// the second, `after_batch` comes less often).
pub fn observed_engine<'o, S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    observer: &'o mut dyn Observer,
) -> Engine<'o> {
    source.prepare(false);
    let opts = scoped(source, opts);
    Engine::observed(opts, observer)
}

/// [`analyze`] with the reader on a thread of its own (see the module's
/// documentation): the same analysis on two cores.
pub fn analyze_parallel<S: RecordSource + Send + ?Sized>(
    source: &mut S,
    opts: Options,
    mut progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    late_names_pass(source, opts, |source, opts| {
        run_parallel(source, Engine::new(opts), &mut progress)
    })
}

/// Runs `pass` over `source` prepared for late names when nothing in
/// `opts` matches SM names while records are read (see
/// [`RecordSource::prepare`]), and again, names final first, when the
/// source says the late names showed the first pass wrong.
fn late_names_pass<S: RecordSource + ?Sized>(
    source: &mut S,
    opts: Options,
    mut pass: impl FnMut(&mut S, Options) -> Result<(Analysis, Option<ReadError>)>,
) -> Result<(Analysis, Option<ReadError>)> {
    let late = opts.from.is_none() && opts.speedups.is_empty();
    source.prepare(late);
    let scope = scoped(source, opts.clone());
    let first = pass(source, scope)?;
    if !(late && source.restart()) {
        return Ok(first);
    }
    source.prepare(false);
    let scope = scoped(source, opts);
    pass(source, scope)
}

/// One hand-off from the reader's thread to the engine's: records, the
/// strings they introduced, the text of their transient ids, and how the
/// read went.
#[derive(Default)]
struct Batch {
    records: Vec<(Record, Pos)>,
    /// Permanent strings added to the reader's table since the last batch.
    strings: Vec<Box<str>>,
    /// The texts of the transient ids the reader made since the last batch.
    ids: TransientTexts,
    res: Option<ReadError>,
    bytes: u64,
}

/// The reader's side of [`run_parallel`]: reads batches as [`run`] would
/// and sends them, until the end or a fatal error. While the engine is
/// behind (the channel full), it encodes the engine's node log (`log`).
fn read_ahead<S: RecordSource + ?Sized>(
    source: &mut S,
    tx: SyncSender<Batch>,
    spent: Receiver<Batch>,
    log: LogHelper,
) {
    // The engine's table starts, like every table, with "local".
    let mut sent = 1;
    let mut ids_sent = 0;
    loop {
        let mut b = spent.try_recv().unwrap_or_default();
        let res = source.next_batch(&mut b.records, PAR_BATCH);
        let strings = source.strings();
        b.strings.clear();
        b.strings.extend(strings.since(sent).map(Box::from));
        sent = strings.len();
        // The engine's table mirrors every transient id the reader's made
        // (those of records held for later batches too).
        strings.transients_since(ids_sent, &mut b.ids);
        ids_sent = strings.transients_made();
        b.bytes = source.bytes_read();
        let stop = match &res {
            Ok(()) => b.records.is_empty(),
            Err(e) => e.fatal,
        };
        b.res = res.err();
        if !send(&tx, b, &log) || stop {
            return;
        }
    }
}

/// Sends `b` to the engine, encoding its node log first if the engine is
/// behind; false once the engine has stopped taking batches.
fn send(tx: &SyncSender<Batch>, b: Batch, log: &LogHelper) -> bool {
    match tx.try_send(b) {
        Ok(()) => true,
        Err(TrySendError::Full(b)) => {
            log.encode_queued();
            tx.send(b).is_ok()
        }
        Err(TrySendError::Disconnected(_)) => false,
    }
}

/// [`run`] with the reader on a thread of its own. Batches are larger than
/// [`run`]'s, so an observer's `after_batch` comes less often.
pub fn run_parallel<S: RecordSource + Send + ?Sized>(
    source: &mut S,
    mut engine: Engine<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let mut errors = ReadErrors::default();
    let mut over = None;
    let mut strings = Interner::new();
    let (tx, rx) = sync_channel::<Batch>(AHEAD);
    let (spent_tx, spent_rx) = channel::<Batch>();
    let log = engine.share_log();
    std::thread::scope(|sc| {
        let src = &mut *source;
        sc.spawn(move || read_ahead(src, tx, spent_rx, log));
        let rx = rx;
        for mut b in rx.iter() {
            for s in b.strings.drain(..) {
                strings.push(&s);
            }
            strings.put_transients(&b.ids);
            for (i, (rec, pos)) in b.records.iter().enumerate() {
                critpath_trace::hint::prefetch(&b.records, i + AHEAD_RECORDS);
                engine.feed(rec, *pos, &strings);
            }
            engine.after_batch(&strings);
            if let Some(e) = over_limit(&engine, &b.records) {
                over = Some(e);
                break;
            }
            match b.res.take() {
                None if b.records.is_empty() => break,
                None => progress(engine.records(), b.bytes),
                Some(e) => {
                    if errors.add(e, &mut engine) {
                        break;
                    }
                }
            }
            let _ = spent_tx.send(b);
        }
        drop(rx);
    });
    if let Some(e) = over {
        return Err(e);
    }
    finish(source, engine, errors)
}

/// [`analyze`] with an engine set up by the caller (observed, say), and no
/// scope applied.
pub fn run<S: RecordSource + ?Sized>(
    source: &mut S,
    mut engine: Engine<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<(Analysis, Option<ReadError>)> {
    let mut errors = ReadErrors::default();
    // The batch of the analysis before on this thread, if it kept one.
    let mut batch = crate::spare::take::<Records>().unwrap_or_else(|| Vec::with_capacity(BATCH));
    loop {
        let res = source.next_batch(&mut batch, BATCH);
        for (rec, pos) in &batch {
            engine.feed(rec, *pos, source.strings());
        }
        engine.after_batch(source.strings());
        if let Some(e) = over_limit(&engine, &batch) {
            return Err(e);
        }
        match res {
            Ok(()) if batch.is_empty() => {
                crate::spare::keep(batch);
                break;
            }
            Ok(()) => progress(engine.records(), source.bytes_read()),
            Err(e) => {
                if errors.add(e, &mut engine) {
                    break;
                }
            }
        }
    }
    finish(source, engine, errors)
}

/// Records read at a time, with their places.
type Records = Vec<(Record, Pos)>;

/// The engine's tables past their limit, after `batch`.
fn over_limit(engine: &Engine<'_>, batch: &[(Record, Pos)]) -> Option<Error> {
    let pos = batch.last().map_or(Pos::NONE, |r| r.1);
    engine.over_limit(pos)
}

/// After the last record: the skipped count, the source's summary, and the
/// engine's result.
fn finish<S: RecordSource + ?Sized>(
    source: &mut S,
    mut engine: Engine<'_>,
    errors: ReadErrors,
) -> Result<(Analysis, Option<ReadError>)> {
    errors.count_skipped(&mut engine);
    let summary = source.summary();
    for d in summary.diagnostics {
        engine.add_diagnostic(d);
    }
    engine.renamed(&summary.renamed);
    engine.annotation_costs(&summary.annotation_costs);
    let first_error = errors.first.or(summary.error);
    engine.inferred_links(source.inferred_links());
    // The source renamed its SMs in its string table (`summary.renamed`):
    // the kept graph is sealed with their final names, as the tables are.
    let from_source = engine.options().ends_from_source;
    let mut analysis = match engine.finish(source.strings()) {
        Err(
            Error::UnknownTo { spec, .. }
            | Error::UnknownToState { spec, .. }
            | Error::UnknownFrom { spec, .. },
        ) if from_source => {
            let why = match &first_error {
                Some(e) => format!(" (the input: {e})"),
                None => String::new(),
            };
            return Err(Error::ScopeNotInTrace { spec, why });
        }
        a => a?,
    };
    analysis.annotation_costs = summary.annotation_costs;
    analysis.program = summary.program;
    analysis.wall_clock = summary.wall_clock;
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
            } else if e.says_outcome {
                Diagnostic::new(DiagnosticKind::InputSkipped, e.to_string())
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
