//! Kineto traces as a [`RecordSource`]: one rank, or several ranks of one
//! job with their clocks aligned and their collectives joined.

use crate::breakdown::GpuFacts;
use crate::emit::{Emitter, Ordered};
use crate::join::{self, Again, GpuOptions, Prepared, EVENT_BUDGET};
use crate::kineto;
use crate::pass::{self, RankCtx};
use crate::ranks::{self, RankInput, RankOffset, RanksReport};
use critpath_readers::extsort::sort_budget;
use critpath_trace::{
    Diagnostic, DiagnosticKind, Interner, Location, Pos, ReadError, Record, RecordSource, Summary,
};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The records of one or several Kineto traces, with what the importer
/// knows about them.
pub struct GpuSource {
    inner: Ordered,
    at: u64,
    facts: GpuFacts,
    report: RanksReport,
    diagnostics: Vec<Diagnostic>,
    /// A file whose reading stopped at damage (exit code 2).
    error: Option<ReadError>,
}

impl GpuSource {
    /// Which SMs are streams and which states communication.
    pub fn facts(&self) -> &GpuFacts {
        &self.facts
    }
    /// Clock offsets and stragglers (several ranks only).
    pub fn report(&self) -> &RanksReport {
        &self.report
    }
}

impl RecordSource for GpuSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let Some(r) = self.inner.records.next_record()? else {
            return Ok(None);
        };
        self.at += 1;
        Ok(Some((r, Pos::record(self.at))))
    }
    fn strings(&self) -> &Interner {
        &self.inner.strings
    }
    fn summary(&mut self) -> Summary {
        Summary {
            diagnostics: std::mem::take(&mut self.diagnostics),
            error: self.error.take(),
            ..Summary::default()
        }
    }
}

/// One rank's trace to read: its name in messages and its JSON (already
/// decompressed); `again` reads it anew, for inputs that can be read twice
/// (one step of a trace is then read without parsing the rest).
pub struct KinetoInput {
    pub name: String,
    pub json: Box<dyn Read + Send>,
    pub again: Option<crate::join::Again>,
}

impl KinetoInput {
    /// A trace file (gzip or not), which can be read again.
    pub fn of_file(path: &Path) -> Result<KinetoInput, String> {
        let again = path.to_path_buf();
        let gz = kineto::gzipped_or_say(path)?;
        Ok(KinetoInput {
            name: path.display().to_string(),
            json: kineto::json_of(path, gz)?,
            again: Some(Again::new(Box::new(move || kineto::json_of_file(&again)))),
        })
    }
}

/// The diagnostics of what a rank's pass could not use as the trace said
/// (`windowed`: it read one annotation's window).
fn pass_notes(file: &str, done: &pass::Done, windowed: bool) -> Vec<Diagnostic> {
    let mut d = Vec::new();
    if done.unknown_records > 0 {
        let held = if windowed { " read in its window" } else { "" };
        d.push(Diagnostic::new(
            DiagnosticKind::InputSkipped,
            format!(
                "{file}: {} synchronization(s) (cudaStreamWaitEvent, cudaEventSynchronize) name an event record (its correlation id) that the trace{held} does not hold; they wait for nothing, and their time is the thread's own",
                done.unknown_records
            ),
        ));
    }
    if let Some(first) = &done.late.first {
        d.push(Diagnostic::new(
            DiagnosticKind::RecvWithoutSend,
            format!(
                "{file}: {} GPU op(s) start before the CUDA call their correlation id names as their launch (a correlation id that several calls have: the last of them is taken), which cannot have launched them; each starts after the previous op on its stream, with no dependence on a launch; the first: {first}",
                done.late.count
            ),
        ));
    }
    if done.cut_ops > 0 {
        d.push(Diagnostic::new(
            DiagnosticKind::StackMismatch,
            format!(
                "{file}: {} CPU op(s) end after the op they start in (they overlap it without nesting in it); each is cut at that op's end, and the thread's time after it is the enclosing state's",
                done.cut_ops
            ),
        ));
    }
    d
}

/// The diagnostics of what a file's reader skipped or found cut.
fn notes_of(name: &str, p: kineto::Problems) -> Vec<Diagnostic> {
    let mut d = Vec::new();
    if p.skipped > 0 {
        let first: Vec<String> = p
            .first
            .iter()
            .map(|(at, why)| format!("byte {at}: {why}"))
            .collect();
        d.push(Diagnostic::new(
            DiagnosticKind::InputSkipped,
            format!(
                "{name}: {} event(s) of traceEvents could not be read and were skipped; {}",
                p.skipped,
                first.join("; ")
            ),
        ));
    }
    if let Some(why) = p.rank {
        d.push(Diagnostic::new(
            DiagnosticKind::InputSkipped,
            format!(
                "{name}: {why}; the rank is not taken, and the file is read as one without a distributedInfo.rank (rank 0)"
            ),
        ));
    }
    if let Some((at, why)) = p.broken {
        d.push(Diagnostic::new(
            DiagnosticKind::InputCut,
            format!("{name}: at byte {at}: {why}; the events before it are read"),
        ));
    }
    if let Some(at) = p.cut_at {
        d.push(Diagnostic::new(
            DiagnosticKind::InputCut,
            format!(
                "{name}: the traceEvents array ends without its ']' (a trace the profiler did not finish writing): read up to its last whole event, which ends at byte {at}"
            ),
        ));
    }
    if let Some(msg) = p.cut_names {
        d.push(Diagnostic::new(
            DiagnosticKind::InputSkipped,
            format!("{name}: names: {msg}"),
        ));
    }
    d
}

/// The first thing a file's reader could not read as the error of the
/// analysis (it exits 2; the diagnostics of [`notes_of`] say the rest),
/// where it lies in the file: the first event skipped, else the damage
/// reading stopped at, else the end of a cut event array, else the names
/// cut to the limit.
fn error_of(file: &str, p: &kineto::Problems) -> Option<ReadError> {
    let (at, msg) = if let Some((at, why)) = p.first.first() {
        let more = match p.skipped {
            0 | 1 => String::new(),
            n => format!(" ({n} events of traceEvents skipped in all)"),
        };
        let msg = format!("an event of traceEvents: {why}; skipped{more}");
        (Location::Offset(*at), msg)
    } else if let Some((at, why)) = &p.broken {
        let msg = format!("{why}; the events before it are read");
        (Location::Offset(*at), msg)
    } else if let Some(at) = p.cut_at {
        let msg = "the PyTorch profiler trace ends early: its traceEvents array ends without its ']' after the last whole event, which ends here; the events before it are read";
        (Location::Offset(at), msg.to_string())
    } else {
        (Location::File, format!("names: {}", p.cut_names.as_ref()?))
    };
    Some(ReadError::new(file, at, msg, false).saying_outcome())
}

/// The GPU ops a rank placed with no launch: how many, and the earliest.
fn unlaunched_note(p: &Prepared) -> Option<Diagnostic> {
    let u = &p.unlaunched;
    let (ts, name, (dev, stream), corr) = u.first?;
    let corr = match corr {
        -1 => "no correlation id".to_string(),
        c => format!("correlation id {c}"),
    };
    Some(Diagnostic::new(
        DiagnosticKind::LaunchUnmatched,
        format!(
            "{}: {} GPU op(s) match no CPU-side launch (no CUDA runtime call with their correlation id); each starts after the previous op on its stream, with no dependence on a launch; the first: \"{}\" on gpu{dev}:stream{stream} at ts {} µs ({corr})",
            p.file,
            u.count,
            p.names.get(name),
            ts as f64 / 1000.0
        ),
    ))
}

fn facts_of(preps: &[Prepared], prefixes: &[String]) -> GpuFacts {
    let mut facts = GpuFacts::default();
    for (prep, p) in preps.iter().zip(prefixes) {
        for &(dev, s) in &prep.streams.keys {
            facts.streams.insert(format!("{p}gpu{dev}:stream{s}"));
        }
        facts
            .comm_states
            .extend(prep.streams.comm_states.iter().cloned());
    }
    facts
}

/// A rank whose collective count and its partner's differ, and whose
/// collectives' ends, once aligned, spread more than they can: matched
/// wrongly.
fn ends_disagree(report: &RanksReport, o: &RankOffset) -> Diagnostic {
    let against = report.offsets.iter().find(|p| Some(p.rank) == o.against);
    let partner = against.map_or(String::from("the ranks aligned before it"), |p| {
        format!("rank {}", p.rank)
    });
    let counts: Vec<String> = std::iter::once(o)
        .chain(against)
        .map(|r| format!("rank {}: {}", r.rank, r.unmatched))
        .collect();
    Diagnostic::new(
        DiagnosticKind::CollectiveUnmatched,
        format!(
            "rank {} ({}): the ends of its {} collectives matched with {partner} spread over {} ns once aligned (more than {} ns), and their collective counts differ ({} without a counterpart): a rank lost a collective, and matching by order of occurrence pairs every later one with the wrong one. Its clock offset ({} ns, their median) is not claimed aligned, and the waits and stragglers of these collectives may be wrong",
            o.rank,
            o.file,
            o.collectives,
            o.end_spread_ns,
            ranks::END_TOLERANCE_NS,
            counts.join(", "),
            o.offset_ns
        ),
    )
}

fn diagnostics_of(report: &RanksReport) -> Vec<Diagnostic> {
    let mut d = Vec::new();
    let reference = report.offsets.first().map_or(0, |o| o.rank);
    if report.matched == 0 && report.offsets.len() > 1 {
        d.push(Diagnostic::new(
            DiagnosticKind::CollectiveUnmatched,
            format!(
                "{} ranks share no matched collective (no NCCL kernel with its process group, no gloo:*, c10d::* or record_param_comms op met on every rank of its group): no rank's wait for another is known, and their clocks are taken as they are, not aligned",
                report.offsets.len()
            ),
        ));
        return d;
    }
    for o in report.offsets.iter().skip(1) {
        if !o.aligned && o.collectives > 0 {
            d.push(ends_disagree(report, o));
            continue;
        }
        if !o.aligned {
            d.push(Diagnostic::new(
                DiagnosticKind::CollectiveUnmatched,
                format!(
                    "rank {} ({}) shares no matched collective with the ranks aligned to rank {reference}: its clock is taken as it is, not aligned",
                    o.rank, o.file
                ),
            ));
            continue;
        }
        d.push(Diagnostic::new(DiagnosticKind::ClockOffset,
            format!(
                "rank {} ({}): clock offset {} ns from rank {reference}, from the ends of {} collectives",
                o.rank, o.file, o.offset_ns, o.collectives
            ),
        ));
    }
    let steps = report.steps.len();
    for g in report.stragglers(3) {
        let longest: Vec<String> = g
            .longest
            .iter()
            .map(|s| format!("{} ({} ns)", s.step, s.others_waited_ns))
            .collect();
        d.push(Diagnostic::new(
            DiagnosticKind::Straggler,
            format!(
                "rank {} arrived last in {} of {steps} steps; the other ranks waited {} ns for it in all, longest in {}",
                g.rank,
                g.steps,
                g.others_waited_ns,
                longest.join(", ")
            ),
        ));
    }
    if report.unmatched > 0 {
        d.push(Diagnostic::new(
            DiagnosticKind::CollectiveUnmatched,
            format!(
                "{} collectives (NCCL kernels or CPU collective ops) have no counterpart on every rank of their group",
                report.unmatched
            ),
        ));
    }
    d
}

/// Analyses several ranks' traces as one (SM names prefixed `rank{R}/`).
pub fn open_ranks_with(paths: &[PathBuf], opts: &GpuOptions) -> Result<GpuSource, ReadError> {
    let first = paths.first().map(|p| p.display().to_string());
    at_most_max_ranks(paths.len(), first.as_deref())?;
    let inputs = paths
        .iter()
        .map(|p| {
            KinetoInput::of_file(p)
                .map_err(|m| ReadError::new(&p.display().to_string(), Location::File, m, true))
        })
        .collect::<Result<_, _>>()?;
    open_inputs(inputs, opts)
}

/// Items each rank's sorts keep in memory: `CRITPATH_SORT_ITEMS`, else
/// [`EVENT_BUDGET`] shared by the ranks (their sorts wait together for the
/// ranks to be joined).
fn budget(ranks: usize) -> usize {
    sort_budget((EVENT_BUDGET / ranks.max(1)).max(1 << 12))
}

/// Each input's rank: its `distributedInfo.rank` (0 when it has none), or
/// its place in the list when the files do not name distinct ranks; then a
/// `duplicate-rank` diagnostic names each pair of files that share a rank.
fn ranks_of(preps: &[Prepared]) -> (Vec<i64>, Vec<Diagnostic>) {
    let named: Vec<i64> = preps.iter().map(|p| p.trace_rank.unwrap_or(0)).collect();
    let mut first: HashMap<i64, usize> = HashMap::new();
    let mut clashes = Vec::new();
    for (i, &r) in named.iter().enumerate() {
        if let Some(&j) = first.get(&r) {
            clashes.push((j, i, r));
        } else {
            first.insert(r, i);
        }
    }
    if clashes.is_empty() {
        return (named, Vec::new());
    }
    let unnamed = |i: usize| preps[i].trace_rank.is_none();
    let diagnostics = clashes
        .into_iter()
        .map(|(j, i, r)| {
            let (a, b) = (&preps[j].file, &preps[i].file);
            let why = match (unnamed(j), unnamed(i)) {
                (false, false) => "distributedInfo.rank".to_string(),
                (true, true) => "neither has a distributedInfo.rank: taken as 0".to_string(),
                (true, false) => format!("{a} has no distributedInfo.rank: taken as 0"),
                (false, true) => format!("{b} has no distributedInfo.rank: taken as 0"),
            };
            Diagnostic::new(
                DiagnosticKind::DuplicateRank,
                format!(
                    "{a} and {b} both have rank {r} ({why}); every file was numbered by its place in the list instead (rank0/ to rank{}/), so rank{j}/ is {a} and rank{i}/ is {b}",
                    preps.len() - 1,
                ),
            )
        })
        .collect();
    ((0..preps.len() as i64).collect(), diagnostics)
}

/// Ranks one analysis takes at most: a link's id holds the rank's place
/// in the list in 16 bits (`emit::link`, the joins of collectives).
pub const MAX_RANKS: usize = 1 << 16;

/// Refuses more than [`MAX_RANKS`] traces, naming the first.
pub fn at_most_max_ranks(n: usize, first: Option<&str>) -> Result<(), ReadError> {
    if n <= MAX_RANKS {
        return Ok(());
    }
    let msg = format!("{n} PyTorch profiler traces given to one analysis; critpath analyzes at most {MAX_RANKS} ranks together (analyze a group of ranks, or one rank, at a time)");
    Err(ReadError::new(
        first.unwrap_or("-"),
        Location::File,
        msg,
        true,
    ))
}

/// Analyses several ranks' traces, given as readers, as one.
pub fn open_inputs(inputs: Vec<KinetoInput>, opts: &GpuOptions) -> Result<GpuSource, ReadError> {
    at_most_max_ranks(inputs.len(), inputs.first().map(|i| i.name.as_str()))?;
    let budget = budget(inputs.len());
    let several = inputs.len() > 1;
    let windowed = opts.annotation.as_deref().is_some_and(|a| !a.is_empty());
    let mut preps: Vec<Prepared> = inputs
        .into_iter()
        .map(|i| join::prepare(&i.name, (i.json, i.again), opts, budget, several))
        .collect::<Result<_, _>>()?;
    let (ranks, rank_notes) = ranks_of(&preps);
    let mut out = Emitter::new();
    let multi = preps.len() > 1;
    let plan = if multi {
        // CPU collectives whose trace names no group are in every rank's.
        for p in &mut preps {
            for c in p.cpu_collectives.iter_mut().filter(|c| c.ranks.is_empty()) {
                c.ranks.clone_from(&ranks);
            }
        }
        let inputs: Vec<RankInput> = preps
            .iter()
            .zip(&ranks)
            .map(|(p, &rank)| RankInput {
                rank,
                file: &p.file,
                collectives: if p.streams.collectives.is_empty() {
                    &p.cpu_collectives
                } else {
                    &p.streams.collectives
                },
                steps: &p.steps,
            })
            .collect();
        ranks::plan(&inputs, &mut out.strings)
    } else {
        ranks::Plan {
            shifts: vec![0],
            roles: vec![HashMap::new()],
            report: RanksReport::default(),
        }
    };
    let prefixes: Vec<String> = ranks
        .iter()
        .map(|r| {
            if multi {
                format!("rank{r}/")
            } else {
                String::new()
            }
        })
        .collect();
    let facts = facts_of(&preps, &prefixes);
    let error = preps.iter().find_map(|p| error_of(&p.file, &p.problems));
    let mut diagnostics: Vec<Diagnostic> = preps
        .iter_mut()
        .flat_map(|p| {
            let mut d = notes_of(&p.file, std::mem::take(&mut p.problems));
            d.extend(unlaunched_note(p));
            d
        })
        .collect();
    diagnostics.extend(rank_notes);
    diagnostics.extend(diagnostics_of(&plan.report));
    // Messages about the sort's temporary files name the inputs.
    let names: Vec<String> = preps.iter().map(|p| p.file.clone()).collect();
    let mut base = 0;
    for (index, prep) in preps.into_iter().enumerate() {
        let ctx = RankCtx {
            prefix: prefixes[index].clone(),
            shift: plan.shifts[index],
            index,
            roles: &plan.roles[index],
            base,
        };
        let file = prep.file.clone();
        let done = pass::run(prep, &mut out, ctx)?;
        base = done.group;
        diagnostics.extend(pass_notes(&file, &done, windowed));
    }
    Ok(GpuSource {
        inner: out.finish(&names.join(", "))?,
        at: 0,
        facts,
        report: plan.report,
        diagnostics,
        error,
    })
}

/// [`open_ranks_with`] over the whole traces.
pub fn open_ranks(paths: &[PathBuf]) -> Result<GpuSource, ReadError> {
    open_ranks_with(paths, &GpuOptions::default())
}

/// One rank's trace.
pub fn open_with(path: &Path, opts: &GpuOptions) -> Result<GpuSource, ReadError> {
    open_ranks_with(&[path.to_path_buf()], opts)
}

/// One rank's whole trace.
pub fn open(path: &Path) -> Result<GpuSource, ReadError> {
    open_with(path, &GpuOptions::default())
}

/// Is this file a Kineto trace (plain or gzip-compressed JSON)?
pub fn is_kineto_file(path: &Path) -> bool {
    // Only a regular file: peeking at a pipe (`-`, /dev/stdin, `<(…)`)
    // would consume the bytes its reader needs.
    path.metadata().is_ok_and(|m| m.is_file())
        && kineto::head_of(path, 8192).is_ok_and(|h| kineto::looks_like(&h))
}
