//! Helpers of the OS graph tests: the committed perf.data fixtures
//! (tests/fixtures, see README.md there) read with `PerfSource`, as
//! records, as links, and through the engine.

#![allow(dead_code)]

use critpath_engine::{Analysis, Options};
use critpath_os::{OsSm, OsState, PerfSource};
use critpath_trace::{Event, Interner, LinkId, Pos, Record, RecordSource, Summary, Who};
use std::collections::HashMap;
use std::path::PathBuf;

/// The path of fixture `NAME.data`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.data"))
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
        Event::Held { who, on, on_state } => (
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
    // The graphs these tests check charge waits for a CPU to its holders.
    critpath_os::osgraph::set_cpu_holders(true);
    let mut src = PerfSource::open_with(&fixture(name), in_place).expect("fixture opens");
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
    critpath_os::osgraph::set_cpu_holders(true);
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
