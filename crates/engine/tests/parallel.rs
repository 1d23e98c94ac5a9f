//! The two-thread pump gives the one-thread pump's analysis: same path,
//! tables and diagnostics (with the names of string ids the engine's thread
//! only knows from the batches), and the same reader errors in order.

use critpath_engine::{
    analyze, analyze_observed, analyze_parallel, observed_engine, run_parallel, Analysis, Options,
    Visit,
};
use critpath_sim::synth::Synth;
use critpath_trace::{Event, Interner, Location, Pos, ReadError, Record, RecordSource, Sym, Who};

/// A source over records made in advance whose string ids are transient
/// (made while reading, as a streaming reader makes them), with a skipped
/// record now and then and, optionally, a cut at the end.
struct Streamed {
    records: Vec<Record>,
    /// The text of each record's string id, if any.
    ids: Vec<Option<String>>,
    /// The name of an SM first seen at this record, interned when read.
    late: Vec<Option<String>>,
    strings: Interner,
    at: usize,
    skip_every: usize,
    cut: bool,
}

impl RecordSource for Streamed {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let i = self.at;
        if i == self.records.len() {
            if self.cut {
                self.cut = false;
                return Err(ReadError::new("s", Location::Offset(9), "cut here", true));
            }
            return Ok(None);
        }
        self.at += 1;
        if self.skip_every > 0 && i % self.skip_every == self.skip_every - 1 {
            return Err(ReadError::new("s", Location::Line(i as u64), "bad", false));
        }
        let mut r = self.records[i];
        if let (Some(name), Event::Recv { who, .. }) = (&self.late[i], &mut r.ev) {
            *who = Who::Sm(self.strings.intern(name));
        }
        if let Some(text) = &self.ids[i] {
            let id = self.strings.transient_link(text);
            r.ev = match r.ev {
                Event::Send { who, .. } => Event::Send { who, id },
                Event::Recv {
                    who, state, waited, ..
                } => Event::Recv {
                    who,
                    id,
                    state,
                    waited,
                },
                ev => ev,
            };
        }
        Ok(Some((r, Pos::record(i as u64 + 1))))
    }
    fn strings(&self) -> &Interner {
        &self.strings
    }
}

/// The bench's synthetic trace with unique string ids, plus recvs of ids
/// never sent (diagnostics that name their id) and late SMs (new strings
/// in the middle of the trace).
fn source(n: u64, skip_every: usize, cut: bool) -> Streamed {
    let mut strings = Interner::new();
    let mut gen = Synth::new(n, 5, 7, &mut strings).unique_ids();
    let mut scratch = strings.clone();
    let mut records = Vec::new();
    let mut ids = Vec::new();
    let mut late = Vec::new();
    while let Some(r) = gen.next_in(&mut scratch) {
        let text = match r.ev {
            Event::Send { id, .. } | Event::Recv { id, .. } => match id {
                critpath_trace::LinkId::Str { sym, .. } => Some(scratch.resolve(sym).to_string()),
                _ => None,
            },
            _ => None,
        };
        records.push(r);
        ids.push(text);
        late.push(None);
        if records.len() % 5000 == 0 {
            late.push(Some(format!("late{}", records.len())));
            let who = Who::Sm(Sym::LOCAL);
            let state = strings.intern("stray");
            let ev = Event::Recv {
                who,
                id: critpath_trace::LinkId::Num(0),
                state,
                waited: false,
            };
            records.push(Record {
                t: r.t,
                sys: Sym::LOCAL,
                ev,
            });
            ids.push(Some(format!("never-sent-{}", records.len())));
        }
    }
    Streamed {
        records,
        ids,
        late,
        strings,
        at: 0,
        skip_every,
        cut,
    }
}

fn both(n: u64, skip_every: usize, cut: bool) -> (String, String) {
    let show = |(a, e): (Analysis, Option<ReadError>)| format!("{a:?}\n{e:?}");
    let one = analyze(
        &mut source(n, skip_every, cut),
        Options::default(),
        |_, _| {},
    );
    let two = analyze_parallel(
        &mut source(n, skip_every, cut),
        Options::default(),
        |_, _| {},
    );
    (show(one.unwrap()), show(two.unwrap()))
}

#[test]
fn two_threads_give_the_analysis_of_one() {
    let (one, two) = both(60_000, 0, false);
    assert!(
        one.contains("never-sent-"),
        "string ids named in diagnostics"
    );
    assert!(one.contains("late"), "SMs named after the first batch");
    assert_eq!(one, two);
}

#[test]
fn two_threads_report_reader_errors_as_one_does() {
    let (one, two) = both(30_000, 997, true);
    assert!(
        one.contains("cut here") && one.contains("skipped"),
        "{one:.300}"
    );
    assert_eq!(one, two);
}

/// Every visit an observer hears of, named, in order.
fn heard(parallel: bool) -> (String, Vec<String>) {
    let mut visits = Vec::new();
    let mut observer = |v: &Visit, strings: &Interner| {
        visits.push(match *v {
            Visit::State {
                sm,
                state,
                start,
                end,
                ..
            } => {
                format!(
                    "{} {} {start} {end}",
                    strings.resolve(sm),
                    strings.resolve(state)
                )
            }
            Visit::Link {
                from_sm,
                to_sm,
                sent,
                received,
                ..
            } => {
                let (a, b) = (strings.resolve(from_sm), strings.resolve(to_sm));
                format!("{a} -> {b} {sent} {received}")
            }
        })
    };
    let mut src = source(20_000, 613, true);
    let run = if parallel {
        let engine = observed_engine(&mut src, Options::default(), &mut observer);
        run_parallel(&mut src, engine, |_, _| {})
    } else {
        analyze_observed(&mut src, Options::default(), &mut observer, |_, _| {})
    };
    let (a, e) = run.unwrap();
    (format!("{a:?}\n{e:?}"), visits)
}

#[test]
fn an_observer_hears_the_same_visits_from_two_threads() {
    let (one, visits_one) = heard(false);
    let (two, visits_two) = heard(true);
    assert!(visits_one.len() > 20_000, "{} visits", visits_one.len());
    assert!(visits_one.iter().any(|v| v.contains(" -> ")), "links");
    assert_eq!(one, two);
    assert_eq!(visits_one, visits_two);
}

/// On a dependence-heavy trace (inter-SM passes deferred, node-log entries
/// held behind them, a log that spills, encoded partly by the reader's
/// thread), two threads give the analysis of one, the node log's size
/// and the combined graph's edges in their order included.
#[test]
fn two_threads_log_the_nodes_of_one_on_a_dependence_heavy_trace() {
    use critpath_sim::deps::Deps;
    use critpath_trace::VecSource;
    let run = |parallel: bool| {
        let mut s = Interner::new();
        let mut gen = Deps::new(1_000_000, 3, &mut s);
        let mut records = Vec::new();
        while let Some(r) = gen.next_in(&mut s) {
            records.push(r);
        }
        let mut src = VecSource::new(records, s);
        let opts = Options::default();
        let (a, e) = match parallel {
            true => analyze_parallel(&mut src, opts, |_, _| {}),
            false => analyze(&mut src, opts, |_, _| {}),
        }
        .unwrap();
        assert!(a.stats.node_log_bytes > 0, "the log spilled");
        assert!(a.cgraph.edges.iter().filter(|e| e.inter).count() > 4096);
        format!("{a:?}\n{e:?}")
    };
    assert_eq!(run(false), run(true));
}
