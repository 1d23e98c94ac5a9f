//! Helpers of the OS graph tests: the committed perf.data fixtures
//! (tests/fixtures, see README.md there) read with `PerfSource`, as
//! records, as links, and through the engine.

#![allow(dead_code)]

use critpath_engine::{Analysis, Options};
use critpath_os::{OsSm, OsState, PerfSource};
use critpath_trace::{Event, Interner, LinkId, Pos, Record, RecordSource, Summary, Who};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The path of fixture `NAME.data`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.data"))
}

/// A copy of fixture `NAME.data` (and its names of kernel functions) in
/// `dir`, with every `every`th sample record written twice in a row, as
/// some recordings hold a sample again; and the number of copies made.
pub fn with_repeated_samples(name: &str, dir: &Path, every: usize) -> (PathBuf, u64) {
    let mut copies = 0;
    let path = rewrite_samples(name, dir, |i, rec, out| {
        out.extend_from_slice(rec);
        if (i + 1) % every == 0 {
            out.extend_from_slice(rec);
            copies += 1;
        }
    });
    (path, copies)
}

/// A copy of fixture `NAME.data` (and its names of kernel functions) in
/// `dir` whose sample records are what `write(index, record, data)` puts
/// in the data section for each in its place.
pub fn rewrite_samples(
    name: &str,
    dir: &Path,
    mut write: impl FnMut(usize, &[u8], &mut Vec<u8>),
) -> PathBuf {
    let b = std::fs::read(fixture(name)).unwrap();
    let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (u(40) as usize, u(48) as usize);
    let mut data = Vec::new();
    let (mut at, mut samples) = (start, 0);
    while at < start + size {
        let len = u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize;
        let rec = &b[at..at + len];
        if u32::from_le_bytes(rec[0..4].try_into().unwrap()) == 9 {
            write(samples, rec, &mut data);
            samples += 1;
        } else {
            data.extend_from_slice(rec);
        }
        at += len;
    }
    let grown = data.len() as i64 - size as i64;
    // The feature sections follow the data: the table of where each lies
    // (one entry per feature bit of the header) moves by what was added.
    let features: u32 = b[72..104].iter().map(|x| x.count_ones()).sum();
    let mut out = b[..start].to_vec();
    out[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&data);
    let table = start + size;
    let mut rest = b[table..].to_vec();
    for i in 0..features as usize {
        let off = u64::from_le_bytes(rest[i * 16..i * 16 + 8].try_into().unwrap());
        let moved = (off as i64 + grown) as u64;
        rest[i * 16..i * 16 + 8].copy_from_slice(&moved.to_le_bytes());
    }
    out.extend_from_slice(&rest);
    let path = dir.join(format!("{name}.data"));
    std::fs::write(&path, out).unwrap();
    let syms = critpath_os::perf::symbols_path(&fixture(name));
    std::fs::copy(syms, critpath_os::perf::symbols_path(&path)).unwrap();
    path
}

/// The kernel events of the perf.data at `path` and how many samples the
/// reader dropped as copies.
pub fn kernel_events(path: &Path, in_place: bool) -> (u64, u64) {
    use critpath_readers::perf::KernelEvents;
    let mut strings = Interner::new();
    let mut r = KernelEvents::open(path, in_place, &mut strings).expect("opens");
    let (mut n, mut batch) = (0, Vec::new());
    // Small batches, so that copies fall on either side of their ends.
    while r.read_into(&mut strings, &mut batch, 5).expect("reads") {
        n += batch.len() as u64;
        batch.clear();
    }
    (n + batch.len() as u64, r.repeated())
}

/// One record with its names resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Rec {
    pub t: u64,
    pub sm: String,
    pub kind: Kind,
    /// A `recv` whose state waited for the link (a CPU's holder).
    pub waited: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    State(String),
    Wait(String),
    Send(u64),
    Recv(u64, String),
    /// A `held` point: the piece so far was held by (SM, state).
    Held(String, String),
    End,
}

/// Every record of a fixture (read in place, or with the general reader),
/// the source's summary, and the builder's counts of inferred transitions.
pub struct Read {
    pub recs: Vec<Rec>,
    pub summary: Summary,
    pub inferred: u64,
    pub scope: Option<String>,
}

fn resolve(r: &Record, s: &Interner) -> Rec {
    let sm = |w: &Who| match w {
        Who::Sm(x) => s.resolve(*x).to_string(),
        other => panic!("the OS graph names SMs directly, not {other:?}"),
    };
    let link = |id: &LinkId| match id {
        LinkId::Num(n) => *n,
        other => panic!("the OS graph's links are numbers, not {other:?}"),
    };
    let (who, kind) = match &r.ev {
        Event::State { who, state } => (who, Kind::State(s.resolve(*state).into())),
        Event::Wait { who, state, .. } => (who, Kind::Wait(s.resolve(*state).into())),
        Event::Send { who, id } => (who, Kind::Send(link(id))),
        Event::Recv { who, id, state, .. } => (who, Kind::Recv(link(id), s.resolve(*state).into())),
        Event::Held {
            who, on, on_state, ..
        } => (
            who,
            Kind::Held(s.resolve(*on).into(), s.resolve(*on_state).into()),
        ),
        Event::End { who } => (who, Kind::End),
        other => panic!("the OS graph makes no {other:?}"),
    };
    Rec {
        t: r.t,
        sm: sm(who),
        kind,
        waited: matches!(r.ev, Event::Recv { waited: true, .. }),
    }
}

/// A fixture's records, read in place or by the general reader, and
/// decoded on a thread of its own or not.
pub fn read_with(name: &str, in_place: bool, thread: bool) -> Read {
    read_path_with(&fixture(name), in_place, thread)
}

/// [`read_with`] of the file at `path`.
pub fn read_path_with(path: &Path, in_place: bool, thread: bool) -> Read {
    let mut src = PerfSource::open_with(path, in_place).expect("fixture opens");
    if !thread {
        src.decode_inline();
    }
    let mut batch: Vec<(Record, Pos)> = Vec::new();
    let mut recs = Vec::new();
    loop {
        src.next_batch(&mut batch, 256).expect("fixture reads");
        if batch.is_empty() {
            break;
        }
        recs.extend(batch.iter().map(|(r, _)| resolve(r, src.strings())));
    }
    let inferred = src.builder().counts.inferred;
    Read {
        recs,
        summary: src.summary(),
        inferred,
        scope: src.scope().from,
    }
}

pub fn read(name: &str) -> Read {
    read_with(name, true, true)
}

/// The engine's analysis of a fixture (over the recorded command), with
/// the critical path's segments.
pub fn analyze(name: &str) -> Analysis {
    analyze_with(name, Options::default())
}

/// The same with other options (the path's segments always kept).
pub fn analyze_with(name: &str, opts: Options) -> Analysis {
    let mut src = PerfSource::open(&fixture(name)).expect("fixture opens");
    let opts = Options {
        keep_path: true,
        ..opts
    };
    let (a, err) = critpath_engine::analyze(&mut src, opts, |_, _| {}).expect("analysis");
    assert!(err.is_none(), "{name}: {err:?}");
    a
}

/// The thread SMs of a fixture whose command name is `comm`.
pub fn threads<'a>(recs: &'a [Rec], comm: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = recs
        .iter()
        .map(|r| r.sm.as_str())
        .filter(|sm| matches!(OsSm::parse(sm), Some(OsSm::Thread { comm: c, .. }) if c == comm))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Each link's sender: its SM and time.
pub fn senders(recs: &[Rec]) -> HashMap<u64, (&str, u64)> {
    recs.iter()
        .filter_map(|r| match r.kind {
            Kind::Send(l) => Some((l, (r.sm.as_str(), r.t))),
            _ => None,
        })
        .collect()
}

/// The links from SM `from` to SM `to` received in `state`: (send time,
/// receive time).
pub fn links(recs: &[Rec], from: &str, to: &str, state: &str) -> Vec<(u64, u64)> {
    let sent = senders(recs);
    recs.iter()
        .filter_map(|r| match &r.kind {
            Kind::Recv(l, st) if r.sm == to && st == state => {
                let &(sm, t) = sent.get(l)?;
                (sm == from).then_some((t, r.t))
            }
            _ => None,
        })
        .collect()
}

/// The state a name stands for (panics on names the OS graph does not
/// make).
pub fn os_state(name: &str) -> OsState<'_> {
    OsState::parse(name).unwrap_or_else(|| panic!("not an OS state: {name}"))
}

/// A state's row of the analysis: (total ns, critical ns).
pub fn row(a: &Analysis, sm: &str, state: &str) -> (u64, u64) {
    a.states
        .iter()
        .find(|r| r.sm == sm && r.state == state)
        .map_or((0, 0), |r| (r.total_ns, r.critical_ns))
}
