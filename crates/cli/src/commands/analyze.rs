//! `critpath analyze`: the critical path, the criticality table and the
//! diagnostics of one trace or of several hosts' traces merged; with the
//! path's edges, the next most critical paths, time windows and the
//! overhead correction on demand.

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{correct, finish_with, next_paths_by, Inputs, Unlinked};
use crate::output::{emit, refuse_inputs_opt, screen};
use critpath_batch::{Error as BatchError, TraceResult};
use critpath_engine::analyses::NextPath;
use critpath_engine::{Analysis, Options, Visit};
use critpath_import::Format;
use critpath_session::{display_name, Session, Settings};
use critpath_trace::Diagnostic;
use critpath_trace::Interner;
use critpath_views::analysis::{self as text, Faster, Layout};
use critpath_views::batch::{problem, Summary};
use critpath_views::gpu as gpu_view;
use critpath_views::json::{self, AnalyzeDoc, FileAnalysis, Finding, UnlinkedDoc};
use critpath_views::text::printable;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Trace file(s) (any format critpath reads; detected from the content). Several
    /// files are traces of different hosts, merged with aligned clocks.
    #[arg(required = true, num_args = 1..)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    print: flags::Json,
    #[command(flatten)]
    top: flags::Top,
    #[command(flatten)]
    wide: flags::Wide,
    #[command(flatten)]
    ends: flags::PathEnds,
    /// List the critical path's edges in time order (JSON: `path`).
    #[arg(long)]
    path: bool,
    /// Also find the next K most critical paths, each with the most
    /// critical state of the one before removed (JSON: `next_critical_path`).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
    next: Option<usize>,
    /// With --next: remove these states instead (repeatable).
    #[arg(long, value_name = "SM:STATE")]
    remove: Vec<String>,
    /// Break the critical path down by time windows (e.g. 10ms, 500us, 2s).
    #[arg(long, value_name = "DURATION")]
    window: Option<String>,
    /// Subtract the measured cost of annotation events from the states'
    /// times (needs `critpath record --calibrate`).
    #[arg(long)]
    correct_overhead: bool,
    #[command(flatten)]
    iteration: flags::Annotation,
    #[command(flatten)]
    request: flags::Request,
    /// Span files of several requests: the fraction of slowest requests
    /// compared with the rest.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1)]
    slowest: f64,
    #[command(flatten)]
    out: flags::Output,
}

/// Lines of a screen kept for the summary, the verdict and the footers
/// when a default `--top` fits the table to a terminal.
const SCREEN_MARGIN: usize = 10;

pub fn run(args: Args) -> Result<()> {
    refuse_inputs_opt(args.out.file(), &args.traces)?;
    if args.next == Some(0) {
        return Err(CliError::input(
            "--next 0: expected how many next paths to find, 1 or more (--next alone finds one)",
        ));
    }
    let window_ns = args.window.as_deref().map(parse_duration).transpose()?;
    // The verdict's what-if is answered from the first pass's graph
    // (Options::rewalk): no records are kept for it.
    let rewalk = !args.print.json;
    let opts = Options {
        from: args.ends.from.clone(),
        to: args.ends.to.clone(),
        keep_path: args.path,
        window_ns,
        rewalk,
        // No view of `analyze` shows the combined graph: its rows (a name
        // for each of up to hundreds of thousands of edges) are not made.
        no_cgraph: true,
        ..Default::default()
    };
    let mut session = Session::open(&args.traces, &Settings::current())?;
    session.check_annotation(args.iteration.annotation.as_deref())?;
    session.keep_records(match (args.next, args.remove.is_empty()) {
        (None, true) => 0,
        _ => usize::MAX,
    });
    if session.all(Format::Kineto) {
        return gpu(&args, opts, session);
    }
    if args.request.request.is_none() {
        if let Some(results) = requests(&args, &mut session)? {
            return many(&args, results);
        }
    }
    // Span files are one set of requests; other traces of several hosts
    // are merged with aligned clocks.
    let inputs = match args.traces.len() == 1 || session.all(Format::Spans) {
        true => Inputs::of_session(&args.traces, session),
        false => {
            // Closed before they are read again: a pipe's reading so far
            // goes to its copy, which the next reading starts from.
            drop(session);
            Inputs::new(&args.traces)?
        }
    };
    let inputs = inputs.with_request(args.request.request.clone())?;
    if let Some(u) = inputs.unlinked(args.top.top)? {
        let out = unlinked(&u, args.print.json);
        emit(args.out.file(), &args.traces, out.as_bytes())?;
        return finish_with(u.err);
    }
    let (mut a, err) = inputs.analyze(opts.clone())?;
    if args.correct_overhead {
        correct(&mut a, &args.traces[0])?;
    }
    let mut next = match (args.next, args.remove.is_empty()) {
        (None, true) => Vec::new(),
        // Each next path runs between the analysis's ends.
        (k, _) => inputs.next_paths(&a, k.unwrap_or(1), &args.remove, &opts)?,
    };
    let scr = screen(args.out.file().is_some());
    let faster = if args.print.json {
        None
    } else {
        verdict_whatif(&a, &args, |o| inputs.analyze(o).map(|(b, _)| b))?
    };
    let (top, folded) = match (args.top.top, scr.rows) {
        (Some(n), _) => (Some(n), 0),
        (None, Some(rows)) if !args.print.json => {
            let n = rows.saturating_sub(SCREEN_MARGIN).max(5);
            (Some(n), a.states.len().saturating_sub(n))
        }
        _ => (None, 0),
    };
    let layout = Layout {
        width: args.wide.width(scr.width),
        folded,
    };
    // The verdict weighs every row, not only those the table shows.
    let verdict = match args.print.json {
        true => String::new(),
        false => text::verdict(&a, faster, layout.width),
    };
    if let Some(n) = top {
        a.truncate_states(n);
    }
    let out = if args.print.json {
        if let Some(n) = args.top.top {
            next.iter_mut().for_each(|p| p.states.truncate(n));
        }
        let offsets = inputs.alignment.as_ref().map(|al| al.offsets.as_slice());
        json::document(&AnalyzeDoc::new(&a, &next, offsets))
    } else {
        table(&inputs, &a, &next, (top, verdict), layout)
    };
    emit(args.out.file(), &args.traces, out.as_bytes())?;
    finish_with(err)
}

/// The per-request results of span files of several requests (trace
/// ids; the spans of one id are one request whichever file holds them),
/// analyzed as critpath-batch analyzes them; `None` for any other trace.
fn requests(args: &Args, session: &mut Session) -> Result<Option<Many>> {
    let opts = critpath_batch::Options {
        from: args.ends.from.clone(),
        to: args.ends.to.clone(),
        settings: session.settings().clone(),
        ..Default::default()
    };
    let found = critpath_batch::analyze_session_requests(session, &opts)?;
    Ok(found.map(|f| (f.results, f.problem, f.diagnostics)))
}

/// The traces' names, joined with ` + `.
fn names(traces: &[PathBuf]) -> String {
    let names: Vec<String> = traces.iter().map(|t| display_name(t)).collect();
    names.join(" + ")
}

/// A span file of several requests: the aggregate over its requests and
/// the slowest against the rest (docs/json.md, "Many requests").
/// A span file's per-request results, a problem reading it, and its
/// file-wide diagnostics.
type Many = (Vec<TraceResult>, Option<BatchError>, Vec<Diagnostic>);

fn many(args: &Args, (results, err, diagnostics): Many) -> Result<()> {
    let single = [
        (args.path, "--path"),
        (args.next.is_some() || !args.remove.is_empty(), "--next"),
        (args.window.is_some(), "--window"),
        (args.correct_overhead, "--correct-overhead"),
    ];
    if let Some((_, flag)) = single.iter().find(|(on, _)| *on) {
        return Err(CliError::input(format!(
            "{flag}: {} holds {} requests (trace ids); {flag} works on one: pick it with --trace ID (e.g. --trace {})",
            names(&args.traces),
            results.len(),
            results[0].trace_id
        )));
    }
    crate::requests::check_slowest(args.slowest)?;
    let name = names(&args.traces);
    let mut sum = Summary::new(results, args.slowest);
    sum.file_diagnostics = diagnostics;
    let out = if args.print.json {
        if let Some(n) = args.top.top {
            sum.states.truncate(n);
        }
        sum.document(err.as_ref())
    } else {
        let scr = screen(args.out.file().is_some());
        let top = args
            .top
            .top
            .or(scr.rows.map(|r| r.saturating_sub(SCREEN_MARGIN).max(5)));
        let mut t = sum.text(&name, top, args.wide.width(scr.width));
        if let Some(e) = &err {
            let (kind, msg) = (problem(e).kind, e.to_string());
            t.push_str(&format!(
                "\ndiagnostics (1):\n  {kind}: {}\n",
                printable(&msg)
            ));
        }
        t
    };
    emit(args.out.file(), &args.traces, out.as_bytes())?;
    match err {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// PyTorch profiler traces: the table or JSON with the path broken down
/// by what bounds it and, for several ranks, the stragglers.
fn gpu(args: &Args, opts: Options, session: Session) -> Result<()> {
    let window = critpath_gpu::GpuOptions {
        annotation: args.iteration.annotation.clone(),
        instance: args.iteration.instance,
    };
    let inputs = Inputs::of_session(&args.traces, session);
    let mut run = {
        let mut s = inputs.session().expect("one session");
        let noop = &mut |_: &Visit, _: &Interner| {};
        let o = opts.clone();
        crate::gpu::analyze_observed(&mut s, &args.traces[0], &window, o, args.path, noop)?
    };
    let mut next = match (args.next, args.remove.is_empty()) {
        (None, true) => Vec::new(),
        (k, _) => next_paths_by(&run.analysis, k.unwrap_or(1), &args.remove, &opts, |o| {
            inputs.analyze(o).map(|(a, _)| a)
        })?,
    };
    let layout = Layout {
        width: args.wide.width(screen(args.out.file().is_some()).width),
        folded: 0,
    };
    // The verdict weighs every row, not only those the table shows.
    let verdict = match args.print.json {
        true => String::new(),
        false => {
            let faster =
                verdict_whatif(&run.analysis, args, |o| inputs.analyze(o).map(|(a, _)| a))?;
            text::verdict(&run.analysis, faster, layout.width)
        }
    };
    if let Some(n) = args.top.top {
        run.analysis.truncate_states(n);
    }
    let out = if args.print.json {
        if let Some(n) = args.top.top {
            next.iter_mut().for_each(|p| p.states.truncate(n));
        }
        let mut doc = AnalyzeDoc::new(&run.analysis, &next, None);
        doc.gpu = Some(&run.breakdown);
        doc.ranks = run.ranks.as_ref();
        json::document(&doc)
    } else {
        let name = names(&args.traces);
        let mut t = verdict;
        t.push_str(&run.ranks.as_ref().map(gpu_view::ranks).unwrap_or_default());
        t.push_str(&text::table_in(&run.analysis, &name, layout));
        t.push_str(&gpu_view::breakdown(&run.breakdown));
        t.push_str(&text::next_paths(&next, args.top.top_or(10), layout.width));
        t.push_str(&text::windows(&run.analysis, layout.width));
        t
    };
    emit(args.out.file(), &args.traces, out.as_bytes())?;
    finish_with(run.err)
}

/// The verdict's what-if (the top state twice as fast), from the first
/// pass's kept graph or, failing that, a second pass.
fn verdict_whatif(
    a: &Analysis,
    args: &Args,
    analyze: impl FnOnce(Options) -> Result<Analysis>,
) -> Result<Option<Faster>> {
    let base = Options {
        from: args.ends.from.clone(),
        to: args.ends.to.clone(),
        ..Default::default()
    };
    let p = critpath_engine::analyses::top_twice(a, base, analyze)?;
    Ok(p.map(Faster::from))
}

/// The text report: the verdict, clock offsets, the table, the correction,
/// the next paths and the windows.
fn table(
    inputs: &Inputs,
    a: &Analysis,
    next: &[NextPath],
    (top, verdict): (Option<usize>, String),
    layout: Layout,
) -> String {
    let mut t = verdict;
    if let Some(al) = &inputs.alignment {
        t.push_str(&text::offsets(&al.offsets));
    }
    t.push_str(&text::table_in(a, &inputs.name(), layout));
    t.push_str(&text::correction(a));
    t.push_str(&text::next_paths(next, top.unwrap_or(10), layout.width));
    t.push_str(&text::windows(a, layout.width));
    t
}

/// Traces that share no link: the finding, then each file's analysis.
fn unlinked(u: &Unlinked, as_json: bool) -> String {
    if as_json {
        return json::document(&UnlinkedDoc {
            diagnostics: vec![Finding {
                kind: "disconnected",
                message: u.message.clone(),
            }],
            analyses: u
                .analyses
                .iter()
                .map(|(file, analysis)| FileAnalysis { analysis, file })
                .collect(),
        });
    }
    let mut t = format!("disconnected: {}\n\n", printable(&u.message));
    for (f, a) in &u.analyses {
        t.push_str(&text::table(a, f));
        t.push('\n');
    }
    t
}

/// Parses `--window`'s duration (see [`duration`]).
fn parse_duration(s: &str) -> Result<u64> {
    duration("--window", s)
}

/// Parses a duration such as `10ms`, `2.5s`, `500us`, `100ns` or `1000`
/// (ns) given to option `flag`.
pub(crate) fn duration(flag: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mul = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if mul.is_finite() && v * mul >= 1.0 => Ok((v * mul).round() as u64),
        _ => Err(CliError::input(format!(
            "{flag} {s}: expected a positive duration such as 10ms, 500us, 2s or 1000 (ns)"
        ))),
    }
}
