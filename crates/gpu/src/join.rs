//! One rank's trace made ready for the time-ordered pass, in bounded
//! memory. Kineto writes CPU and GPU events in separate runs, and what
//! joins them is a correlation id, so the events go through external sorts
//! (`critpath_readers::extsort`), never all in memory:
//!
//! 1. reading: each event is sorted by correlation ([`ByCorr`]); the
//!    annotations that may be the window, and the `ProfilerStep`s, are kept.
//!    An event that joins nothing (a CPU op: correlation -1) goes straight
//!    to step 2's outputs when the read knows the window (the whole trace,
//!    or a window given), not through the sort;
//! 2. the join: per correlation, the runtime call (the last one in the
//!    file, as HTA keys them), its `cuda_sync` event and the GPU ops it
//!    launched meet. A CPU call learns how it waits and what it launched;
//!    a GPU op its launch. `cudaEventRecord` calls and the synchronizations
//!    that name them meet in a second, small sort ([`RecordRef`]);
//! 3. GPU ops go by stream to `streams` for their effective times;
//! 4. everything lands in one sort by time ([`Pass`]) that `pass` reads.
//!
//! Only the window's CPU ops, and GPU ops launched in it, are kept (HTA's
//! choice); without a window, all of them.

use crate::cpucoll;
use crate::emit::coll_wait;
use crate::items::{ByCorr, CallInfo, Pass, RecordRef, StreamKey, StreamOp, WaitKind};
use crate::kineto::{self, Ev, Guessed, Kind, Names, Only, Trace};
use crate::streams::{self, CollOp, RankStreams};
use critpath_readers::extsort::{disk_error, ExtSort, Spill};
use critpath_trace::{Location, ReadError};
use std::collections::BTreeSet;
use std::io::Read;

/// Which part of a trace to analyse.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Limit the analysis to one instance of the user annotation whose
    /// name starts with this (`ProfilerStep` for one training step), as
    /// HTA's `annotation` argument does; `None` or empty: the whole trace.
    pub annotation: Option<String>,
    /// Which instance (0-based, in time order).
    pub instance: usize,
}

/// Items each of the pipeline's sorts keeps in memory (`CRITPATH_SORT_ITEMS`
/// overrides it): about 15 MB of events per sort.
pub const EVENT_BUDGET: usize = 1 << 17;

/// One rank, joined and sorted by time, with what was learnt on the way.
pub struct Prepared {
    pub file: String,
    pub names: Names,
    pub trace_rank: Option<i64>,
    pub problems: kineto::Problems,
    /// The `ProfilerStep` annotations: (start, end, name), in time order.
    pub steps: Vec<(u64, u64, String)>,
    /// The CPU collectives to match across ranks (`cpucoll`), in the
    /// window.
    pub cpu_collectives: Vec<CollOp>,
    /// CPU threads (pid, tid) with ops in the window.
    pub threads: BTreeSet<(i64, i64)>,
    pub streams: RankStreams,
    /// Everything the pass reads, by time.
    pub pass: ExtSort<Pass>,
    /// GPU ops placed with no launch.
    pub unlaunched: Unlaunched,
}

fn in_window(w: Option<(u64, u64)>, t: u64) -> bool {
    w.is_none_or(|(a, b)| a <= t && t <= b)
}

/// What reading keeps besides the sorted events.
struct Read1 {
    by_corr: ExtSort<ByCorr>,
    /// Annotations whose name starts with the asked prefix: (start, end).
    windows: Vec<(u64, u64)>,
    steps: Vec<(u64, u64, String)>,
}

/// Where an event goes in the join: its correlation and class.
fn join_key(e: &Ev) -> Option<(i64, u8)> {
    match e.kind {
        Kind::Sync if e.corr >= 0 => Some((e.corr, ByCorr::SYNC)),
        Kind::Runtime if e.corr >= 0 => Some((e.corr, ByCorr::CALL)),
        Kind::GpuOp if e.stream >= 0 && e.corr >= 0 => Some((e.corr, ByCorr::GPU)),
        Kind::GpuOp if e.stream >= 0 => Some((-1, ByCorr::GPU)),
        Kind::CpuOp | Kind::Runtime if e.dur > 0 => Some((-1, ByCorr::CALL)),
        _ => None,
    }
}

/// The asked annotation prefix, if any.
fn prefix_of(opts: &GpuOptions) -> Option<&str> {
    opts.annotation.as_deref().filter(|a| !a.is_empty())
}

/// Is this event an instance of the annotation asked for?
fn is_window(ev: &Ev, t: &Trace, prefix: Option<&str>) -> bool {
    ev.kind == Kind::Annotation && prefix.is_some_and(|p| t.name(ev).starts_with(p))
}

/// The window, when a read knows it as it goes (the whole trace, or a
/// window given): then what joins nothing goes straight to the join's
/// outputs instead of through the sort by correlation.
fn known_window(opts: &GpuOptions, only: &Only) -> Option<Option<(u64, u64)>> {
    match (prefix_of(opts), only) {
        (None, _) => Some(None),
        (Some(_), Only::Window(a, b)) => Some(Some((*a, *b))),
        _ => None,
    }
}

/// Where an event goes in the join, if anywhere.
fn by_corr(ev: Ev, t: &Trace) -> Option<ByCorr> {
    if let Some((corr, class)) = join_key(&ev) {
        return Some(ByCorr { corr, class, ev });
    }
    // A gloo collective running on a worker thread is an op of that
    // thread, not a window.
    let gloo = ev.kind == Kind::Annotation && ev.dur > 0 && t.name(&ev).starts_with("gloo:");
    gloo.then_some(ByCorr {
        corr: -1,
        class: ByCorr::CALL,
        ev: Ev {
            kind: Kind::CpuOp,
            ..ev
        },
    })
}

fn read(
    json: Box<dyn Read + Send>,
    (opts, only): (&GpuOptions, Only),
    budget: usize,
    out: &mut Joined,
) -> Result<(Read1, Trace), String> {
    let prefix = prefix_of(opts);
    let known = known_window(opts, &only);
    let mut r = Read1 {
        by_corr: ExtSort::new(budget),
        windows: Vec::new(),
        steps: Vec::new(),
    };
    let trace = kineto::read_json(json, only, |ev, t| {
        if is_window(&ev, t, prefix) {
            r.windows.push((ev.ts, ev.end()));
        }
        if ev.kind == Kind::Annotation {
            let name = t.name(&ev);
            if name.starts_with("ProfilerStep") {
                r.steps.push((ev.ts, ev.end(), name.to_string()));
            }
        }
        match (by_corr(ev, t), known) {
            (Some(j), Some(window)) if j.corr < 0 => out.alone((&t.names, window), j),
            (Some(j), _) => r.by_corr.push(j),
            (None, _) => {}
        }
    })?;
    // Stable: annotations at one time keep their file order.
    r.windows.sort_by_key(|w| w.0);
    r.steps.sort_by_key(|x| (x.0, x.1));
    Ok((r, trace))
}

/// Reads the trace; one instance of an annotation, when the input can be
/// read `again`, in one pass that guesses the window as it goes
/// (`guess`). A wrong guess (the read's own annotations tell), or ops let
/// go that the window holds, cost one more read, with the right window.
fn read_for(
    json: Box<dyn Read + Send>,
    again: Option<Again>,
    (opts, budget): (&GpuOptions, usize),
    out: &mut Joined,
) -> Result<(Read1, Trace), String> {
    let (Some(again), Some(prefix)) = (again, prefix_of(opts)) else {
        return read(json, (opts, Only::All), budget, out);
    };
    let guess = Only::Guess {
        prefix: prefix.to_string(),
        instance: opts.instance,
        hold: again.hold,
    };
    let (r, trace) = read(json, (opts, guess), budget, out)?;
    match (trace.guessed, window_of(&r, opts)) {
        (Guessed::Window(a, b), Ok(Some(w))) if w == (a, b) => Ok((r, trace)),
        (_, Ok(Some((a, b)))) => {
            let again = (again.reopen)()?;
            read(again, (opts, Only::Window(a, b)), budget, out)
        }
        _ => Ok((r, trace)),
    }
}

/// The window of the asked instance; an error says how many there are.
fn window_of(r: &Read1, opts: &GpuOptions) -> Result<Option<(u64, u64)>, String> {
    let Some(prefix) = prefix_of(opts) else {
        return Ok(None);
    };
    match r.windows.get(opts.instance) {
        Some(&w) => Ok(Some(w)),
        None => Err(format!(
            "the trace has {} user annotation(s) starting with \"{prefix}\"; instance {} asked for",
            r.windows.len(),
            opts.instance
        )),
    }
}

/// The stream a `cuda_sync` event names (its device is `device` or `pid`).
fn stream_of(s: &Ev, stream: i64) -> StreamKey {
    (s.device.max(s.pid), stream)
}

/// How a call waits, from its name and its `cuda_sync` event (see `pass`).
fn wait_kind(names: &Names, call: &Ev, sync: Option<&Ev>) -> WaitKind {
    let name = names.get(call.name);
    if name == "cudaStreamWaitEvent" {
        return sync.map_or(WaitKind::None, |s| WaitKind::StreamWait {
            record: s.wait_record_corr,
            dest: stream_of(s, s.stream),
            recorded: stream_of(s, s.wait_stream),
        });
    }
    match (name, sync, sync.map(|s| names.get(s.name))) {
        ("cudaMemcpy", _, _) => WaitKind::Memcpy,
        (_, Some(s), Some("Event Sync")) => WaitKind::EventSync {
            record: s.wait_record_corr,
            stream: stream_of(s, s.wait_stream),
        },
        (_, Some(s), Some("Stream Sync")) => WaitKind::StreamSync(stream_of(s, s.stream)),
        (_, Some(s), Some("Context Sync")) => WaitKind::ContextSync(stream_of(s, 0).0),
        ("cudaDeviceSynchronize", None, _) => WaitKind::DeviceAll,
        ("cudaStreamSynchronize", None, _) => WaitKind::StreamLast,
        _ => WaitKind::None,
    }
}

/// The join's outputs.
struct Joined {
    pass: ExtSort<Pass>,
    ops: ExtSort<StreamOp>,
    records: ExtSort<RecordRef>,
    threads: BTreeSet<(i64, i64)>,
    unlaunched: Unlaunched,
}

/// GPU ops placed on their streams with no launch: their correlation id
/// matches no CUDA runtime call (or they have none).
#[derive(Debug, Default)]
pub struct Unlaunched {
    pub count: u64,
    /// The earliest: (ts, name, stream, correlation or -1).
    pub first: Option<(u64, u32, StreamKey, i64)>,
}

impl Unlaunched {
    fn note(&mut self, ev: &Ev) {
        self.count += 1;
        if self.first.is_none_or(|f| ev.ts < f.0) {
            self.first = Some((ev.ts, ev.name, (ev.device, ev.stream), ev.corr));
        }
    }
}

/// One correlation's events as the join meets them.
#[derive(Default)]
struct Group {
    corr: i64,
    sync: Option<Ev>,
    /// The latest runtime call: the launcher when the group ends.
    call: Option<Ev>,
    /// The latest `cudaEventRecord` call.
    record: Option<Ev>,
    launched: Vec<(u64, StreamKey)>,
}

struct Join<'a> {
    names: &'a Names,
    window: Option<(u64, u64)>,
    out: Joined,
    g: Group,
}

impl Joined {
    /// A CPU call in `window` goes to the pass, with how it waits (from
    /// `sync`, its correlation's `cuda_sync` event); a wait on an event
    /// record asks for the record.
    fn call(
        &mut self,
        (names, window): (&Names, Option<(u64, u64)>),
        ev: Ev,
        sync: Option<&Ev>,
        launched: Vec<(u64, StreamKey)>,
    ) {
        if ev.dur == 0 || !in_window(window, ev.ts) {
            return;
        }
        let wait = if ev.kind == Kind::Runtime {
            wait_kind(names, &ev, sync)
        } else {
            WaitKind::None
        };
        let looked = match wait {
            WaitKind::EventSync { record, stream } => Some((record, stream)),
            WaitKind::StreamWait {
                record, recorded, ..
            } => Some((record, recorded)),
            _ => None,
        };
        if let Some((corr, stream)) = looked.filter(|l| l.0 >= 0) {
            self.records.push(RecordRef {
                corr,
                class: RecordRef::LOOKUP,
                index: ev.index,
                ts: 0,
                stream,
            });
        }
        self.threads.insert((ev.pid, ev.tid));
        let info = CallInfo { wait, launched };
        self.pass.push(Pass::Call { ev, info });
    }

    /// An event that joins nothing (correlation -1): a CPU call, or a GPU
    /// op with no launcher (kept only without a window).
    fn alone(&mut self, (names, window): (&Names, Option<(u64, u64)>), j: ByCorr) {
        match j.class {
            ByCorr::GPU if window.is_none() => {
                self.unlaunched.note(&j.ev);
                self.ops.push(StreamOp {
                    ev: j.ev,
                    launch: None,
                })
            }
            ByCorr::GPU => {}
            _ => self.call((names, window), j.ev, None, Vec::new()),
        }
    }
}

impl Join<'_> {
    fn call(&mut self, ev: Ev, sync: Option<&Ev>, launched: Vec<(u64, StreamKey)>) {
        self.out.call((self.names, self.window), ev, sync, launched);
    }

    /// A GPU op, with the runtime call of its correlation if any: kept
    /// when launched in the window (any, without one).
    fn gpu(&mut self, ev: Ev, launcher: Option<Ev>) {
        let launch = launcher
            .filter(|c| c.dur > 0)
            .map(|c| (c.ts, (c.pid, c.tid)));
        let keep = match (self.window, launch) {
            (None, _) => true,
            (Some(_), Some(l)) => in_window(self.window, l.0),
            (Some(_), None) => false,
        };
        if !keep {
            return;
        }
        if launch.is_some() {
            self.g.launched.push((ev.index, (ev.device, ev.stream)));
        } else if launcher.is_none() {
            self.out.unlaunched.note(&ev);
        }
        self.out.ops.push(StreamOp { ev, launch });
    }

    /// The end of a correlation: its launcher and its record go out.
    fn close(&mut self) {
        let g = std::mem::take(&mut self.g);
        if let Some(record) = g.record {
            self.out.records.push(RecordRef {
                corr: g.corr,
                class: RecordRef::RECORD,
                index: record.index,
                ts: record.ts,
                stream: (0, 0),
            });
        }
        if let Some(call) = g.call {
            self.call(call, g.sync.as_ref(), g.launched);
        }
    }

    fn item(&mut self, j: ByCorr) {
        if j.corr < 0 {
            self.out.alone((self.names, self.window), j);
            return;
        }
        if j.corr != self.g.corr {
            self.close();
            self.g.corr = j.corr;
        }
        match j.class {
            ByCorr::SYNC => self.g.sync = Some(j.ev),
            ByCorr::CALL => {
                // An earlier call of the same correlation launched nothing.
                if let Some(prev) = self.g.call.replace(j.ev) {
                    let sync = self.g.sync;
                    self.call(prev, sync.as_ref(), Vec::new());
                }
                if self.names.get(j.ev.name) == "cudaEventRecord" {
                    self.g.record = Some(j.ev);
                }
            }
            _ => self.gpu(j.ev, self.g.call),
        }
    }
}

/// Drains a finished sort into `f`.
fn drain<T: Spill>(s: ExtSort<T>, mut f: impl FnMut(T)) -> std::io::Result<()> {
    let mut sorted = s.finish()?;
    while let Some(x) = sorted.next_item()? {
        f(x);
    }
    Ok(())
}

/// One record's correlation, time (once met) and the streams its lookups
/// name, with how many name each.
type Looked = (i64, Option<u64>, Vec<(StreamKey, u32)>);

/// A record that lookups name goes to the pass at its time.
fn flush_record(c: Option<Looked>, pass: &mut ExtSort<Pass>) {
    if let Some((corr, Some(ts), streams)) = c.filter(|c| !c.2.is_empty()) {
        pass.push(Pass::Record { ts, corr, streams });
    }
}

/// Records looked up, as pass items at the records' times.
fn records(refs: ExtSort<RecordRef>, pass: &mut ExtSort<Pass>) -> std::io::Result<()> {
    let mut cur: Option<Looked> = None;
    drain(refs, |r| {
        if cur.as_ref().is_none_or(|c| c.0 != r.corr) {
            flush_record(cur.take(), pass);
            cur = Some((r.corr, None, Vec::new()));
        }
        let c = cur.as_mut().expect("set");
        if r.class == RecordRef::RECORD {
            c.1 = Some(r.ts);
        } else if let Some(s) = c.2.iter_mut().find(|s| s.0 == r.stream) {
            s.1 += 1;
        } else {
            c.2.push((r.stream, 1));
        }
    })?;
    flush_record(cur, pass);
    Ok(())
}

/// The CPU collectives of a rank to match across ranks, in the window, in
/// the default process group unless their arguments name one; their
/// states (`gloo:*`, and `NAME wait`) are communication.
fn cpu_collectives(
    trace: &Trace,
    window: Option<(u64, u64)>,
    comm: &mut BTreeSet<String>,
) -> Vec<CollOp> {
    let mut out = if cpucoll::gpu_backend(trace.backend.as_deref()) {
        // The CPU ops of an NCCL collective only ask for it: its kernels
        // are the collective, whether or not they carry its fields.
        let runs = |c: &&cpucoll::CpuColl| c.kind == cpucoll::CollKind::Execution;
        trace
            .cpu_colls
            .iter()
            .filter(runs)
            .map(|c| c.op.clone())
            .collect()
    } else {
        cpucoll::chosen(&trace.cpu_colls)
    };
    out.retain(|c| in_window(window, c.start));
    let (group, ranks) = &trace.default_group;
    for c in &mut out {
        if c.group.is_empty() {
            c.group.clone_from(group);
        }
        if c.ranks.is_empty() {
            c.ranks.clone_from(ranks);
        }
        comm.insert(coll_wait(&c.name));
    }
    // The collectives' own running is communication: gloo's executions,
    // and on a rank without them the CPU ops taken for its collectives
    // (`record_param_comms`, a synchronous `c10d::barrier`).
    let taken = match cpucoll::gpu_backend(trace.backend.as_deref()) {
        true => None,
        false => cpucoll::chosen_kind(&trace.cpu_colls),
    };
    for c in &trace.cpu_colls {
        if c.kind == cpucoll::CollKind::Execution {
            comm.insert(coll_wait(&c.op.name));
        }
        if c.kind == cpucoll::CollKind::Execution || Some(c.kind) == taken {
            comm.insert(c.state.clone());
        }
    }
    out
}

/// A way to read an input a second time (a file; not a pipe).
pub struct Again {
    /// The input anew from its start, decompressed.
    pub reopen: Box<dyn Fn() -> Result<Box<dyn Read + Send>, String> + Send>,
    /// Bytes of ops a read that guesses a step's window holds at most
    /// (`guess`): past them the ops held are let go, and a window that
    /// holds one of them costs a second read.
    pub hold: usize,
}

impl Again {
    pub fn new(reopen: Box<dyn Fn() -> Result<Box<dyn Read + Send>, String> + Send>) -> Self {
        Again {
            reopen,
            hold: crate::guess::HOLD_CAP,
        }
    }
}

/// Reads one rank's trace and prepares its pass; `budget` items per sort.
/// One of several ranks (`of_several`) notes its collectives, and its pass
/// waits in one file on disk, so that the ranks waiting for each other
/// hold neither memory nor many open files. With an annotation asked for
/// and an input that can be read `again`, the read guesses the window as
/// it goes and passes over the CPU ops outside it.
pub fn prepare(
    file: &str,
    (json, again): (Box<dyn Read + Send>, Option<Again>),
    opts: &GpuOptions,
    budget: usize,
    of_several: bool,
) -> Result<Prepared, ReadError> {
    let err = |m: String| ReadError::new(file, Location::File, m, true);
    let disk = |e| disk_error(file, "sort the trace's events in", e);
    let mut out = Joined {
        pass: ExtSort::new(budget),
        ops: ExtSort::new(budget),
        records: ExtSort::new(budget),
        threads: BTreeSet::new(),
        unlaunched: Unlaunched::default(),
    };
    let (r, trace) = read_for(json, again, (opts, budget), &mut out).map_err(err)?;
    let window = window_of(&r, opts).map_err(err)?;
    let mut j = Join {
        names: &trace.names,
        window,
        out,
        g: Group {
            corr: -1,
            ..Group::default()
        },
    };
    drain(r.by_corr, |x| j.item(x)).map_err(disk)?;
    j.close();
    let Joined {
        mut pass,
        ops,
        records: refs,
        threads,
        unlaunched,
    } = j.out;
    records(refs, &mut pass).map_err(disk)?;
    let mut streams = streams::order(ops, &trace.names, &mut pass, of_several).map_err(disk)?;
    let cpu_collectives = cpu_collectives(&trace, window, &mut streams.comm_states);
    if of_several {
        pass.settle().map_err(disk)?;
    }
    Ok(Prepared {
        file: file.to_string(),
        names: trace.names,
        trace_rank: trace.rank,
        problems: trace.problems,
        steps: r.steps,
        cpu_collectives,
        threads,
        streams,
        pass,
        unlaunched,
    })
}
