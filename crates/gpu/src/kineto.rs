//! Decoding a Kineto (PyTorch profiler) trace: the top-level object is read
//! key by key and the `traceEvents` array element by element, each event
//! decoded straight into a compact [`Ev`] (names interned) and handed to the
//! caller, so neither the document nor its events are ever held whole.
//! Gzip-compressed files are read through a decoder.

use critpath_readers::jsonsplit::{self, Ending, Part};
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::cpucoll::{classify, default_group, normalise, CollKind, CpuColl};
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

/// A trace's names, each stored once.
#[derive(Debug, Default)]
pub struct Names {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.ids.insert(s.to_string(), i);
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
}

/// Skipped events described one by one; the rest are counted.
const PROBLEMS_SHOWN: usize = 5;

impl Trace {
    pub fn name(&self, e: &Ev) -> &str {
        self.names.get(e.name)
    }
}

/// A number that Kineto writes as an integer, a float or a string.
struct Num(i64);

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
    args: Option<RawArgs>,
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

/// Microseconds (Kineto's unit) to nanoseconds, the whole microseconds
/// apart so that epoch-sized times keep their precision.
pub(crate) fn ns(us: f64) -> u64 {
    if us <= 0.0 {
        return 0;
    }
    let whole = us.trunc();
    whole as u64 * 1000 + ((us - whole) * 1000.0).round() as u64
}

/// The ranks of a `Process Group Ranks` argument (`[0, 1, 2]`).
pub fn parse_ranks(s: &str) -> Vec<i64> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// Which events a read decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Only {
    /// Every event.
    All,
    /// Every event but the CPU ops that start outside this window (ns, both
    /// ends in) and are no collective: those are passed over unparsed (and
    /// unchecked), keeping their place in the count of events.
    Window(u64, u64),
}

/// Decodes events one by one, handing each to `sink`.
struct Builder<F> {
    trace: Trace,
    sink: F,
    index: u64,
    only: Only,
}

impl<F: FnMut(Ev, &Trace)> Builder<F> {
    fn add(&mut self, raw: RawEvent) {
        if raw.ph.as_deref() != Some("X") {
            return;
        }
        let Some(kind) = raw.cat.as_deref().and_then(kind_of) else {
            return;
        };
        let args = raw.args.unwrap_or_default();
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
            ts: ns(raw.ts.unwrap_or(0.0)),
            dur: ns(raw.dur.unwrap_or(0.0)),
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
            index: self.index,
        };
        self.index += 1;
        if let Some((ck, cname)) = coll {
            let seq = args.seq.map(|n| n.0);
            self.cpu_coll(&ev, (ck, cname, raw_name), seq);
        }
        (self.sink)(ev, &self.trace);
    }
}

#[derive(Deserialize)]
struct DistInfo {
    rank: Option<Num>,
    backend: Option<String>,
    world_size: Option<Num>,
    pg_config: Option<Vec<PgConfig>>,
}

#[derive(Deserialize)]
struct PgConfig {
    pg_name: Option<String>,
    ranks: Option<Vec<i64>>,
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
    fn part(&mut self, p: Part) -> Result<(), String> {
        match p {
            Part::Member("distributedInfo", v) => {
                let d: DistInfo =
                    serde_json::from_slice(v).map_err(|e| format!("distributedInfo: {e}"))?;
                self.trace.rank = d.rank.map(|n| n.0);
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
            Part::Element(v, _, _) if self.passes_over(v) => {}
            Part::Element(v, at, _) => match serde_json::from_slice::<RawEvent>(v) {
                Ok(ev) => self.add(ev),
                Err(e) => {
                    let p = &mut self.trace.problems;
                    p.skipped += 1;
                    if p.first.len() < PROBLEMS_SHOWN {
                        p.first.push((at, e.to_string()));
                    }
                }
            },
        }
        Ok(())
    }
}

impl<F> Builder<F> {
    /// Does the read pass over this event (see [`Only`])?
    fn passes_over(&mut self, v: &[u8]) -> bool {
        let Only::Window(a, b) = self.only else {
            return false;
        };
        let Some(p) = crate::peek::peek(v) else {
            return false;
        };
        let outside = p.ts.map(ns).is_some_and(|t| t < a || t > b);
        let plain_op = || {
            let name = p.name.and_then(|n| std::str::from_utf8(n).ok());
            name.is_some_and(|n| classify(n, false).is_none())
        };
        let skip = p.ph == Some(b"X") && p.cat == Some(b"cpu_op") && outside && plain_op();
        // It would have been an event of the count.
        self.index += u64::from(skip);
        skip
    }
}

/// Decodes a trace from a reader of (uncompressed) JSON, one event at a
/// time (`critpath_readers::jsonsplit`, on a thread of its own), each
/// handed to `sink` with the names so far: an event that cannot be read is
/// skipped and counted, an event array without its `]` is read up to its
/// last whole event, and a document that cannot be read on (a corrupt
/// compressed stream) is read up to there once events were found. `only`
/// passes over events unparsed.
pub fn read_json(
    r: impl Read + Send,
    only: Only,
    sink: impl FnMut(Ev, &Trace),
) -> Result<Trace, String> {
    let mut b = Builder {
        trace: Trace::default(),
        sink,
        index: 0,
        only,
    };
    let ending = match jsonsplit::split_ahead(r, "traceEvents", |p| b.part(p)) {
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
        Ending::Missing => return Err("not a Kineto trace: no traceEvents array".into()),
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
