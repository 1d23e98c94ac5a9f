//! Decoding a Kineto (PyTorch profiler) trace: the top-level object is read
//! key by key and the `traceEvents` array element by element, each event
//! decoded straight into a compact [`Ev`] (names interned) and handed to the
//! caller, so neither the document nor its events are ever held whole.
//! Gzip-compressed files are read through a decoder.

use critpath_readers::jsonsplit::{self, Ending, Part};
use critpath_trace::{CutNames, Limits};
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::cpucoll::{classify, default_group, normalise, CollKind, CpuColl};
use crate::guess::Pending;
use crate::peek::{Numbers, Peek};
use crate::streams::CollOp;

/// What kind of event a Kineto event is, from its `cat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `cpu_op`: an ATen operator or another CPU-side op.
    CpuOp,
    /// `cuda_runtime` / `cuda_driver`: a CUDA API call.
    Runtime,
    /// `user_annotation`: a CPU range (`ProfilerStep#N`, `record_function`).
    Annotation,
    /// `kernel`, `gpu_memcpy`, `gpu_memset`: work on a CUDA stream.
    GpuOp,
    /// `cuda_sync`: what a synchronization call waited for.
    Sync,
}

/// No name: an [`Ev`]'s collective fields when it is not a collective.
pub const NO_NAME: u32 = u32::MAX;

/// One complete (`ph: X`) event, with the arguments critpath uses. Names
/// are indexes into the trace's [`Names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ev {
    pub kind: Kind,
    /// Index into [`Trace::names`].
    pub name: u32,
    pub ts: u64,
    pub dur: u64,
    pub pid: i64,
    pub tid: i64,
    /// `correlation` (CUDA calls and GPU work), or -1.
    pub corr: i64,
    pub stream: i64,
    pub device: i64,
    pub wait_stream: i64,
    pub wait_record_corr: i64,
    /// A NCCL kernel's `Collective name`, `Process Group Name` and
    /// `Process Group Ranks` ([`NO_NAME`] when it has none).
    pub coll_name: u32,
    pub coll_group: u32,
    pub coll_ranks: u32,
    /// The event's place in the file (0 for the first kept event).
    pub index: u64,
}

impl Ev {
    pub fn end(&self) -> u64 {
        self.ts + self.dur
    }

    /// Is it a collective's kernel?
    pub fn is_collective(&self) -> bool {
        self.coll_name != NO_NAME && self.coll_group != NO_NAME
    }
}

/// A trace's names, each stored once; a name longer than the limit of a
/// name ([`Limits::max_name_bytes`]) is cut to it and counted, as every
/// reader does.
#[derive(Debug, Default)]
pub struct Names {
    list: Vec<String>,
    /// Each name's bytes -> its index.
    ids: HashMap<Box<[u8]>, u32, ahash::RandomState>,
    /// The names cut to the limit.
    pub cut: CutNames,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> u32 {
        if s.len() > Limits::DEFAULT.max_name_bytes {
            let mut cut = s.to_string();
            self.cut.cut(&mut cut);
            return self.intern(&cut);
        }
        match self.ids.get(s.as_bytes()) {
            Some(&i) => i,
            None => self.add(s),
        }
    }

    /// [`Names::intern`] of a name's bytes, checked to be UTF-8 only when
    /// new (a name met before is the bytes of a `str`); `None` when new
    /// and not UTF-8.
    pub fn intern_bytes(&mut self, b: &[u8]) -> Option<u32> {
        match self.ids.get(b) {
            Some(&i) => Some(i),
            None => Some(self.intern(std::str::from_utf8(b).ok()?)),
        }
    }

    fn add(&mut self, s: &str) -> u32 {
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.ids.insert(s.as_bytes().into(), i);
        i
    }

    pub fn get(&self, i: u32) -> &str {
        self.list.get(i as usize).map_or("", |s| s.as_str())
    }
}

/// What decoding a trace gives besides its events.
#[derive(Debug, Default)]
pub struct Trace {
    pub names: Names,
    /// `distributedInfo.rank`, when present.
    pub rank: Option<i64>,
    /// `distributedInfo`'s default process group (name, ranks), from its
    /// `pg_config` or `world_size`.
    pub default_group: (String, Vec<i64>),
    /// `distributedInfo.backend` (`nccl`, `gloo`, `cpu:gloo,cuda:nccl`...).
    pub backend: Option<String>,
    /// The CPU collective events, in file order (see `cpucoll`).
    pub cpu_colls: Vec<CpuColl>,
    /// What could not be read: events skipped, and a cut event array.
    pub problems: Problems,
    /// What a read asked to guess the window ([`Only::Guess`]) did.
    pub guessed: Guessed,
}

/// What a read asked to guess the window did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Guessed {
    /// It was not asked to.
    #[default]
    No,
    /// It took this window and passed over the ops outside it.
    Window(u64, u64),
    /// The trace has fewer annotations than the instance asked.
    Whole,
    /// It let go of ops, held before it met this window, that may lie in
    /// it: the read is to be done again with the window.
    Lost(u64, u64),
}

/// Events of a trace that could not be used, and whether its event array
/// was cut (the trace of a profiler that did not finish writing).
#[derive(Default, Debug)]
pub struct Problems {
    /// Events skipped, and the first few (byte offset, why).
    pub skipped: u64,
    pub first: Vec<(u64, String)>,
    /// Where the last whole event ends when the array has no `]`.
    pub cut_at: Option<u64>,
    /// Where reading stopped at a document it could not go on with (a
    /// corrupt compressed stream, JSON beyond repair), and why; the events
    /// before it are read.
    pub broken: Option<(u64, String)>,
    /// Why `distributedInfo.rank` was refused, when it was.
    pub rank: Option<String>,
    /// What was said of the names cut to the limit of a name, if any.
    pub cut_names: Option<String>,
}

/// Skipped events described one by one; the rest are counted.
const PROBLEMS_SHOWN: usize = 5;

impl Trace {
    pub fn name(&self, e: &Ev) -> &str {
        self.names.get(e.name)
    }
}

/// A number that Kineto writes as an integer, a float or a string.
pub(crate) struct Num(pub(crate) i64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as i64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v as i64))
            }
            fn visit_str<E>(self, v: &str) -> Result<Num, E> {
                Ok(Num(v.trim().parse().unwrap_or(-1)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default)]
struct RawArgs {
    correlation: Option<Num>,
    stream: Option<Num>,
    device: Option<Num>,
    wait_on_stream: Option<Num>,
    wait_on_cuda_event_record_corr_id: Option<Num>,
    #[serde(rename = "Collective name")]
    collective: Option<String>,
    #[serde(rename = "Process Group Name")]
    group: Option<String>,
    #[serde(rename = "Process Group Ranks")]
    group_ranks: Option<String>,
    #[serde(rename = "Seq", alias = "seq")]
    seq: Option<Num>,
}

#[derive(Deserialize)]
pub(crate) struct RawEvent<'a> {
    #[serde(borrow)]
    pub(crate) ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) ts: Option<f64>,
    pub(crate) dur: Option<f64>,
    pid: Option<Num>,
    tid: Option<Num>,
    /// A flow event's id (an `ac2g` flow's is the launch's correlation).
    id: Option<Num>,
    args: Option<RawArgs>,
}

/// A complete event of `kind`'s start and length (ns), or why it cannot be
/// used: its times, or a GPU op without its stream.
fn usable(
    kind: Kind,
    ts: Option<f64>,
    dur: Option<f64>,
    stream: &Option<Num>,
) -> Result<(u64, u64), String> {
    let (ts, dur) = match (ts, dur) {
        (None, _) => return Err("no ts".into()),
        (_, None) => return Err("no dur".into()),
        (Some(t), _) if !t.is_finite() || t < 0.0 => return Err("a negative ts".into()),
        (_, Some(d)) if !d.is_finite() || d < 0.0 => return Err("a negative dur".into()),
        (Some(t), Some(d)) => (t, d),
    };
    if kind == Kind::GpuOp && stream.as_ref().is_none_or(|s| s.0 < 0) {
        return Err("a GPU op without its stream".into());
    }
    let past = |what: String| {
        let limit = LATEST_NS as f64 / 1000.0;
        format!("{what} is past the latest time ({LATEST_NS} ns, {limit} µs)")
    };
    let shown = crate::unread::readable;
    let t = ns(ts).ok_or_else(|| past(format!("ts {} µs", shown(ts))))?;
    let d = ns(dur).ok_or_else(|| past(format!("dur {} µs", shown(dur))))?;
    match ends(t, d) {
        Some(_) => Ok((t, d)),
        None => Err(format!(
            "it ends past the latest time ({LATEST_NS} ns): ts {t} ns + dur {d} ns"
        )),
    }
}

/// The end of an event from `ts` for `dur` (ns), if not past [`LATEST_NS`].
fn ends(ts: u64, dur: u64) -> Option<u64> {
    ts.checked_add(dur).filter(|&e| e <= LATEST_NS)
}

fn kind_of(cat: &str) -> Option<Kind> {
    Some(match cat {
        "cpu_op" => Kind::CpuOp,
        "cuda_runtime" | "cuda_driver" => Kind::Runtime,
        "user_annotation" => Kind::Annotation,
        "kernel" | "gpu_memcpy" | "gpu_memset" => Kind::GpuOp,
        "cuda_sync" => Kind::Sync,
        _ => return None,
    })
}

/// The latest time critpath takes, ns (as every reader: a path's length
/// is at most `i64::MAX` ns, about 292 years).
pub(crate) const LATEST_NS: u64 = i64::MAX as u64;

/// Microseconds (Kineto's unit) to nanoseconds, the whole microseconds
/// apart so that epoch-sized times keep their precision; `None` past
/// [`LATEST_NS`] (or not a number). A negative time is 0.
pub(crate) fn ns(us: f64) -> Option<u64> {
    if us <= 0.0 {
        return Some(0);
    }
    if !us.is_finite() {
        return None;
    }
    // A float past u64's range converts to u64::MAX, which the product
    // refuses.
    let whole = us.trunc();
    let frac = ((us - whole) * 1000.0).round() as u64;
    (whole as u64)
        .checked_mul(1000)?
        .checked_add(frac)
        .filter(|&t| t <= LATEST_NS)
}

/// The ranks of a `Process Group Ranks` argument (`[0, 1, 2]`).
pub fn parse_ranks(s: &str) -> Vec<i64> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// Which events a read decodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Only {
    /// Every event.
    All,
    /// Every event but the CPU ops that start outside this window (ns, both
    /// ends in) and are no collective: those are passed over unparsed (and
    /// unchecked), keeping their place in the count of events.
    Window(u64, u64),
    /// The window of the `instance`-th (0-based, in time order) annotation
    /// whose name starts with `prefix`, guessed as the read goes
    /// (`guess`), holding at most `hold` bytes of ops meanwhile;
    /// [`Trace::guessed`] says how it went.
    Guess {
        prefix: String,
        instance: usize,
        hold: usize,
    },
}

/// Decodes events one by one, handing each to `sink`.
struct Builder<F> {
    trace: Trace,
    sink: F,
    index: u64,
    /// `All` or a `Window`: what decides the ops not held.
    only: Only,
    /// The window still being guessed, and the ops held until it is.
    pending: Option<Pending>,
    /// A CUDA call or GPU op without a `correlation` argument, held for
    /// the event after it: Kineto writes an op's `ac2g` flow event right
    /// after it (same pid, tid and ts), whose id is the correlation.
    uncorrelated: Option<Ev>,
}

impl<F: FnMut(Ev, &Trace)> Builder<F> {
    /// Decodes an event; `held` is the index an op held until the window
    /// was known kept for it.
    fn add(&mut self, raw: RawEvent, (at, held): (u64, Option<u64>)) {
        if self.correlates(&raw) {
            return;
        }
        self.release();
        if raw.ph.as_deref() != Some("X") {
            return;
        }
        let Some(kind) = raw.cat.as_deref().and_then(kind_of) else {
            return;
        };
        let args = raw.args.unwrap_or_default();
        let named = match (&raw.name, kind) {
            (None, Kind::CpuOp | Kind::Runtime) => Err("no name (a string)".to_string()),
            _ => Ok(()),
        };
        let times = named.and_then(|()| usable(kind, raw.ts, raw.dur, &args.stream));
        let (ts, dur) = match times {
            Ok(times) => times,
            Err(why) => {
                let name = raw.name.as_deref().unwrap_or_default();
                return self.trace.problems.skip(at, format!("\"{name}\": {why}"));
            }
        };
        let num = |n: Option<Num>| n.map_or(-1, |n| n.0);
        let names = &mut self.trace.names;
        let (coll_name, coll_group, coll_ranks) = match (args.collective, args.group) {
            (Some(name), Some(group)) => (
                names.intern(&name),
                names.intern(&group),
                names.intern(args.group_ranks.as_deref().unwrap_or("")),
            ),
            _ => (NO_NAME, NO_NAME, NO_NAME),
        };
        let raw_name = raw.name.as_deref().unwrap_or_default();
        let coll = match kind {
            Kind::CpuOp | Kind::Annotation => classify(raw_name, kind == Kind::Annotation),
            _ => None,
        };
        let name = names.intern(raw_name);
        let ev = Ev {
            kind,
            name,
            ts,
            dur,
            pid: num(raw.pid),
            tid: num(raw.tid),
            corr: num(args.correlation),
            stream: num(args.stream),
            device: num(args.device),
            wait_stream: num(args.wait_on_stream),
            wait_record_corr: num(args.wait_on_cuda_event_record_corr_id),
            coll_name,
            coll_group,
            coll_ranks,
            index: held.unwrap_or(self.index),
        };
        self.index += u64::from(held.is_none());
        if let Some((ck, cname)) = coll {
            let seq = args.seq.map(|n| n.0);
            self.cpu_coll(&ev, (ck, cname, raw_name), seq);
        }
        let guess = match &mut self.pending {
            Some(p) if kind == Kind::Annotation && p.matches(raw_name) => p.met((ev.ts, ev.end())),
            _ => None,
        };
        if ev.corr < 0 && matches!(kind, Kind::Runtime | Kind::GpuOp) {
            self.uncorrelated = Some(ev);
            return;
        }
        (self.sink)(ev, &self.trace);
        if let Some(w) = guess {
            self.decide(Some(w));
        }
    }

    /// Is `raw` the `ac2g` flow event of the held uncorrelated op (at its
    /// pid, tid and time)? Then the flow's id is the op's correlation, and
    /// the op goes on with it.
    fn correlates(&mut self, raw: &RawEvent) -> bool {
        let Some(held) = &self.uncorrelated else {
            return false;
        };
        let flow = matches!(raw.ph.as_deref(), Some("s" | "f" | "t"))
            && raw.cat.as_deref() == Some("ac2g");
        let at = |n: &Option<Num>| n.as_ref().map_or(-1, |n| n.0);
        let here = (at(&raw.pid), at(&raw.tid), raw.ts.and_then(ns));
        let id = at(&raw.id);
        if !flow || id < 0 || here != (held.pid, held.tid, Some(held.ts)) {
            return false;
        }
        let mut ev = self.uncorrelated.take().expect("held");
        ev.corr = id;
        (self.sink)(ev, &self.trace);
        true
    }

    /// The held uncorrelated op goes on as it is (no flow followed it).
    fn release(&mut self) {
        if let Some(ev) = self.uncorrelated.take() {
            (self.sink)(ev, &self.trace);
        }
    }

    /// The window is known (`None`: there is none): the held ops in it are
    /// decoded, the others passed over.
    fn decide(&mut self, window: Option<(u64, u64)>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        (self.only, self.trace.guessed) = match window {
            Some((a, b)) if p.lost((a, b)) => (Only::Window(a, b), Guessed::Lost(a, b)),
            Some((a, b)) => (Only::Window(a, b), Guessed::Window(a, b)),
            None => (Only::All, Guessed::Whole),
        };
        for (index, at, ts, v) in p.held() {
            if self.outside(ts) {
                continue;
            }
            self.decode(Plain::of(v).as_ref(), v, at, Some(index));
        }
    }

    /// A plain op from its glance when it can be read from it, else the
    /// event's bytes parsed.
    fn decode(&mut self, plain: Option<&Plain>, v: &[u8], at: u64, held: Option<u64>) {
        if !plain.is_some_and(|p| self.add_plain(p, v, held)) {
            self.parse(v, at, held);
        }
    }

    /// A plain CPU op as [`Builder::add`] makes it of its parse, from its
    /// glance: no collective, no correlation, nothing of its `args`;
    /// `false` (nothing done) when a member cannot be read from the glance.
    fn add_plain(&mut self, p: &Plain, v: &[u8], held: Option<u64>) -> bool {
        // An op without a usable `dur` (or one that ends past the latest
        // time) is parsed, and skipped there.
        let Some((Some(dur @ 0.0..), pid, tid)) = p.numbers(v) else {
            return false;
        };
        let Some(dur) = ns(dur).filter(|&d| ends(p.ts, d).is_some()) else {
            return false;
        };
        let Some(name) = p.name(v).and_then(|b| self.trace.names.intern_bytes(b)) else {
            return false;
        };
        let ev = Ev {
            kind: Kind::CpuOp,
            name,
            ts: p.ts,
            dur,
            pid: pid.unwrap_or(-1),
            tid: tid.unwrap_or(-1),
            corr: -1,
            stream: -1,
            device: -1,
            wait_stream: -1,
            wait_record_corr: -1,
            coll_name: NO_NAME,
            coll_group: NO_NAME,
            coll_ranks: NO_NAME,
            index: held.unwrap_or(self.index),
        };
        self.index += u64::from(held.is_none());
        self.release();
        (self.sink)(ev, &self.trace);
        true
    }

    /// Decodes an event's bytes, or counts it skipped.
    fn parse(&mut self, v: &[u8], at: u64, held: Option<u64>) {
        match serde_json::from_slice::<RawEvent>(v) {
            Ok(ev) => self.add(ev, (at, held)),
            Err(e) => {
                let (at, why) = crate::unread::unparsed(v, at, &e);
                self.trace.problems.skip(at, why)
            }
        }
    }

    /// An element of the event array, with what the glance saw of it
    /// (`Plain::of`, on either thread): decoded (a plain CPU op from its
    /// glance), passed over outside the window, or held while the window
    /// is guessed.
    fn element(&mut self, v: &[u8], at: u64, plain: Option<Plain>) {
        let Some(plain) = plain else {
            return self.parse(v, at, None);
        };
        if let Some(p) = &mut self.pending {
            p.hold((self.index, at, plain.ts), v);
            self.index += 1;
        } else if self.outside(plain.ts) {
            // It would have been an event of the count.
            self.index += 1;
        } else {
            self.decode(Some(&plain), v, at, None);
        }
    }
}

#[derive(Deserialize)]
struct DistInfo {
    /// Any value: one that is no rank ([`rank_of`]) is refused, not the file.
    rank: Option<serde_json::Value>,
    backend: Option<String>,
    world_size: Option<Num>,
    pg_config: Option<Vec<PgConfig>>,
}

#[derive(Deserialize)]
struct PgConfig {
    pg_name: Option<String>,
    ranks: Option<Vec<i64>>,
}

/// The largest `distributedInfo.rank` taken: PyTorch's ranks are C `int`s.
const MAX_RANK: u64 = i32::MAX as u64;

/// A `distributedInfo.rank`: an integer from 0 to [`MAX_RANK`] written as
/// one, or why the value is not a rank.
fn rank_of(v: &serde_json::Value) -> Result<i64, String> {
    use serde_json::Value;
    let what = match v {
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(r), ..) if r <= MAX_RANK => return Ok(r as i64),
            (Some(_), ..) => "past the largest rank",
            (None, Some(_), _) => "negative",
            _ => "not written as an integer",
        },
        Value::String(_) => "a string",
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mut shown = v.to_string();
    if shown.len() > 40 {
        let cut = (0..=40)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    Err(format!(
        "distributedInfo.rank {shown} is {what}, where a rank is expected (an integer from 0 to {MAX_RANK})"
    ))
}

impl<F: FnMut(Ev, &Trace)> Builder<F> {
    /// Notes a CPU collective event (`cpucoll`); a `record_param_comms`
    /// without its collective's name and group says nothing.
    fn cpu_coll(
        &mut self,
        ev: &Ev,
        (kind, name, state): (CollKind, String, &str),
        seq: Option<i64>,
    ) {
        let names = &self.trace.names;
        let (name, group, ranks) = if kind == CollKind::Params {
            if !ev.is_collective() {
                return;
            }
            let ranks = parse_ranks(names.get(ev.coll_ranks));
            let group = names.get(ev.coll_group).to_string();
            (normalise(names.get(ev.coll_name)), group, ranks)
        } else {
            (name, String::new(), Vec::new())
        };
        let op = CollOp {
            op: ev.index,
            name,
            group,
            ranks,
            start: ev.ts,
            end: ev.end(),
            launched: ev.ts,
            seq,
        };
        let state = state.to_string();
        self.trace.cpu_colls.push(CpuColl { kind, state, op });
    }
}

impl<F: FnMut(Ev, &Trace)> Builder<F> {
    /// One piece of the document: `distributedInfo`, or an event.
    fn part(&mut self, p: Part, plain: Option<Option<Plain>>) -> Result<(), String> {
        match p {
            Part::Member("distributedInfo", v) => {
                let d: DistInfo =
                    serde_json::from_slice(v).map_err(|e| format!("distributedInfo: {e}"))?;
                self.trace.rank = None;
                match d.rank.as_ref().map(rank_of) {
                    Some(Ok(r)) => self.trace.rank = Some(r),
                    Some(Err(why)) => self.trace.problems.rank = Some(why),
                    None => {}
                }
                self.trace.backend = d.backend;
                let pg = d.pg_config.and_then(|c| c.into_iter().next()).map(|c| {
                    (
                        c.pg_name.unwrap_or_else(|| "0".into()),
                        c.ranks.unwrap_or_default(),
                    )
                });
                self.trace.default_group = default_group(pg, d.world_size.map(|n| n.0));
            }
            Part::Member(..) => {}
            Part::Element(v, at, _) => {
                let plain = plain.unwrap_or_else(|| Plain::of(v));
                self.element(v, at, plain)
            }
        }
        Ok(())
    }
}

/// A complete CPU op that is no collective, by its glance, and its start
/// (ns): a window passes over such ops (see [`Only`]). `None` for any
/// other event, or one the glance cannot judge (it is then parsed).
fn plain_op(p: Peek<'_>) -> Option<(Peek<'_>, u64)> {
    if p.ph != Some(b"X") || p.cat != Some(b"cpu_op") {
        return None;
    }
    let name = std::str::from_utf8(p.name?).ok()?;
    if classify(name, false).is_some() {
        return None;
    }
    // A negative start, or one past the latest time, is parsed, and
    // skipped there.
    let ts = p.ts.filter(|t| *t >= 0.0)?;
    Some((p, ns(ts)?))
}

/// A plain CPU op ([`plain_op`]) as its glance found it, owned, so that
/// the splitting thread can take it: where its `name`, `dur`, `pid` and
/// `tid` lie in its bytes, and its start. The numbers are read when the op
/// is decoded ([`Builder::add_plain`], on the decoding thread), not at the
/// glance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain {
    /// Start and end in the event's bytes; `NOWHERE` when not there.
    spots: [(u32, u32); 4],
    /// The start (ns).
    ts: u64,
}

/// A member [`Plain`] did not find.
const NOWHERE: (u32, u32) = (u32::MAX, u32::MAX);

impl Plain {
    /// The event of bytes `v`, if a plain CPU op.
    pub(crate) fn of(v: &[u8]) -> Option<Plain> {
        let (p, ts) = crate::peek::peek(v).and_then(plain_op)?;
        let spot = |s: Option<&[u8]>| {
            s.map_or(Some(NOWHERE), |s| {
                let a = u32::try_from(s.as_ptr() as usize - v.as_ptr() as usize).ok()?;
                Some((a, a.checked_add(u32::try_from(s.len()).ok()?)?))
            })
        };
        Some(Plain {
            spots: [spot(p.name)?, spot(p.dur)?, spot(p.pid)?, spot(p.tid)?],
            ts,
        })
    }

    /// Member `i`'s bytes in `v`, the bytes it was taken of.
    fn spot<'a>(&self, v: &'a [u8], i: usize) -> Option<&'a [u8]> {
        match self.spots[i] {
            NOWHERE => None,
            (a, b) => v.get(a as usize..b as usize),
        }
    }

    /// The name's bytes (checked UTF-8 by the glance).
    fn name<'a>(&self, v: &'a [u8]) -> Option<&'a [u8]> {
        self.spot(v, 0)
    }

    /// `dur`, `pid` and `tid` as the parse reads them ([`Peek::numbers`]).
    fn numbers(&self, v: &[u8]) -> Option<Numbers> {
        let glance = Peek {
            dur: self.spot(v, 1),
            pid: self.spot(v, 2),
            tid: self.spot(v, 3),
            ..Peek::default()
        };
        glance.numbers()
    }
}

impl<F> Builder<F> {
    /// Does an op that starts at `ts` lie outside the window?
    fn outside(&self, ts: u64) -> bool {
        matches!(self.only, Only::Window(a, b) if ts < a || ts > b)
    }
}

impl Problems {
    /// An event that could not be read: counted, and described when it is
    /// among the first few in the file.
    fn skip(&mut self, at: u64, why: String) {
        self.skipped += 1;
        self.first.push((at, why));
        // Ops held while a window was guessed are read out of file order.
        self.first.sort_by_key(|f| f.0);
        self.first.truncate(PROBLEMS_SHOWN);
    }
}

/// Decodes a trace from a reader of (uncompressed) JSON, one event at a
/// time (`critpath_readers::jsonsplit`, on a thread of its own), each
/// handed to `sink` with the names so far: an event that cannot be read is
/// skipped and counted, an event array without its `]` is read up to its
/// last whole event, and a document that cannot be read on (a corrupt
/// compressed stream) is read up to there once events were found. `only`
/// passes over events unparsed, or guesses the window it passes over by
/// ([`Trace::guessed`] says how); a plain CPU op is decoded from its
/// glance (`peek`), its `args` unread.
pub fn read_json(
    r: impl Read + Send,
    only: Only,
    sink: impl FnMut(Ev, &Trace),
) -> Result<Trace, String> {
    let (only, pending) = match only {
        Only::Guess {
            prefix,
            instance,
            hold,
        } => (Only::All, Some(Pending::new(&prefix, instance, hold))),
        only => (only, None),
    };
    let mut b = Builder {
        trace: Trace::default(),
        sink,
        index: 0,
        only,
        pending,
        uncorrelated: None,
    };
    let split =
        jsonsplit::split_ahead_glancing(r, "traceEvents", Plain::of, |p, plain| b.part(p, plain));
    b.release();
    // No window met (fewer annotations than asked): every held op is read.
    b.decide(None);
    b.trace.problems.cut_names = b.trace.names.cut.message();
    let ending = match split {
        Ok(ending) => ending,
        // Damage past the first events: those before it are kept.
        Err(e) if b.index > 0 => {
            b.trace.problems.broken = Some((e.offset, e.message));
            Ending::Closed
        }
        Err(e) => {
            return Err(format!(
                "not a Kineto trace: at byte {}: {}",
                e.offset, e.message
            ))
        }
    };
    match ending {
        Ending::Missing => {
            return Err("a PyTorch profiler (Kineto) header without its `traceEvents` array: no events to analyze".into())
        }
        Ending::Unterminated { at, .. } => b.trace.problems.cut_at = Some(at),
        Ending::Closed => {}
    }
    Ok(b.trace)
}

/// Is this a gzip stream?
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Is this file gzip-compressed?
pub fn gzipped(path: &Path) -> std::io::Result<bool> {
    let mut magic = [0u8; 2];
    let n = std::fs::File::open(path)?.read(&mut magic)?;
    Ok(is_gzip(&magic[..n]))
}

/// [`gzipped`], its error as the readers of a file say it.
pub(crate) fn gzipped_or_say(path: &Path) -> Result<bool, String> {
    gzipped(path).map_err(|e| format!("cannot read: {e}"))
}

/// A trace file's JSON, decompressed when it is gzip.
pub fn json_of_file(path: &Path) -> Result<Box<dyn Read + Send>, String> {
    json_of(path, gzipped_or_say(path)?)
}

/// [`json_of_file`] of a file known to be gzip (`gz`) or not.
pub(crate) fn json_of(path: &Path, gz: bool) -> Result<Box<dyn Read + Send>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let r = BufReader::with_capacity(1 << 20, f);
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::GzDecoder::new(r),
        ))
    } else {
        Box::new(r)
    })
}

/// The first bytes of a file, decompressed when it is gzip.
pub fn head_of(path: &Path, max: usize) -> std::io::Result<Vec<u8>> {
    let gz = gzipped(path)?;
    let f = std::fs::File::open(path)?;
    let mut out = Vec::with_capacity(max);
    if gz {
        let _ = flate2::read::GzDecoder::new(f)
            .take(max as u64)
            .read_to_end(&mut out);
    } else {
        f.take(max as u64).read_to_end(&mut out)?;
    }
    Ok(out)
}

/// Does this text look like a Kineto trace (a Chrome trace written by the
/// PyTorch profiler)?
pub fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.contains("\"schemaVersion\"")
        && (text.contains("\"deviceProperties\"")
            || text.contains("\"distributedInfo\"")
            || text.contains("\"cpu_op\"")
            || text.contains("\"cuda_runtime\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The real traces at hand: the DDP example's ranks and, when present,
    /// the shared PyTorch traces.
    fn real_traces() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut all = vec![
            root.join("examples/ddp/rank0.pt.trace.json.gz"),
            root.join("examples/ddp/rank1.pt.trace.json.gz"),
        ];
        let shared = root.join("../shared/data/kineto");
        for name in ["alexnet.pt.trace.json.gz", "nccl_rank0.json.gz"] {
            all.extend(Some(shared.join(name)).filter(|p| p.exists()));
        }
        all
    }

    /// Every CPU op decoded from its glance is the event its parse gives,
    /// and its `args` hold none of the arguments critpath reads.
    #[test]
    fn a_plain_op_from_its_glance_is_the_parsed_op() {
        let mut glanced = 0;
        for path in real_traces() {
            fn builder<F: FnMut(Ev, &Trace)>(sink: F) -> Builder<F> {
                Builder {
                    trace: Trace::default(),
                    sink,
                    index: 0,
                    only: Only::All,
                    pending: None,
                    uncorrelated: None,
                }
            }
            let (mut fast, mut full) = (Vec::new(), Vec::new());
            let mut a = builder(|ev, _: &Trace| fast.push(ev));
            let mut b = builder(|ev, _: &Trace| full.push(ev));
            let json = json_of_file(&path).unwrap();
            jsonsplit::split(json, "traceEvents", |part| {
                let Part::Element(v, _, _) = part else {
                    return Ok(());
                };
                let Some(plain) = Plain::of(v) else {
                    return Ok(());
                };
                glanced += 1;
                assert!(
                    a.add_plain(&plain, v, None),
                    "{}",
                    String::from_utf8_lossy(v)
                );
                b.parse(v, 0, None);
                let parsed: RawEvent = serde_json::from_slice(v).unwrap();
                let x = parsed.args.unwrap_or_default();
                let read = [
                    x.correlation.is_some(),
                    x.stream.is_some(),
                    x.device.is_some(),
                    x.wait_on_stream.is_some(),
                    x.wait_on_cuda_event_record_corr_id.is_some(),
                    x.collective.is_some(),
                    x.group.is_some(),
                ];
                assert!(!read.contains(&true), "{}", String::from_utf8_lossy(v));
                Ok(())
            })
            .unwrap();
            let names = (a.trace.names.list.clone(), b.trace.names.list.clone());
            drop((a, b));
            assert_eq!(fast, full, "{}", path.display());
            assert_eq!(names.0, names.1);
        }
        assert!(glanced > 1000, "{glanced}");
    }
}
