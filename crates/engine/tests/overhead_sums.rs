//! The overhead's correction takes one annotation event's cost out of each
//! critical-path edge charged to an annotated SM, never more than the edge
//! weighs. The engine sums it per state as it walks
//! (`Analysis::path_overhead`), so that the path needs not be kept: the
//! sums are those of the path's segments, and the same from the walk on
//! one thread, split over two, or edge by edge.

use critpath_engine::results::PathOverhead;
use critpath_engine::{Analysis, Engine, Options};
use critpath_trace::{AnnotationCost, Event, Interner, LinkId, Pos, Record, Sym, Who};
use std::collections::BTreeMap;

/// Four SMs that work in states of many lengths (some shorter than an
/// event's cost) and pass messages around a ring.
fn trace(s: &mut Interner) -> Vec<Record> {
    let sms: Vec<Who> = (0..4)
        .map(|i| Who::Sm(s.intern(&format!("sm{i}"))))
        .collect();
    let states: Vec<Sym> = ["run", "io", "pack"].iter().map(|n| s.intern(n)).collect();
    let mut out = Vec::new();
    let mut t = 0;
    for i in 0..4_000u64 {
        let (who, next) = (sms[(i % 4) as usize], sms[((i + 1) % 4) as usize]);
        t += [1, 3, 20, 70][(i * 7 % 4) as usize];
        let state = states[(i % 3) as usize];
        out.push(Record {
            t,
            sys: Sym::LOCAL,
            ev: Event::State { who, state },
        });
        if i % 3 == 0 {
            let id = LinkId::Num(i % 16);
            out.push(Record {
                t,
                sys: Sym::LOCAL,
                ev: Event::Send { who, id },
            });
            t += 2 + i % 5;
            let ev = Event::Recv {
                who: next,
                id,
                state: states[1],
                waited: false,
            };
            out.push(Record {
                t,
                sys: Sym::LOCAL,
                ev,
            });
        }
    }
    out
}

/// The costs: a fraction (rounded), one larger than most edges, none on
/// `sm3`.
fn costs() -> Vec<AnnotationCost> {
    [("sm0", 2.4), ("sm1", 2.6), ("sm2", 45.0)]
        .iter()
        .map(|&(sm, c)| AnnotationCost {
            sys: "local".into(),
            sm: sm.into(),
            ns_per_event: c,
        })
        .collect()
}

fn analyze(keep_path: bool, split: bool) -> Analysis {
    let mut s = Interner::new();
    let recs = trace(&mut s);
    let mut e = Engine::new(Options {
        keep_path,
        ..Default::default()
    });
    if split {
        e.split_walks_early();
    }
    for (i, r) in recs.iter().enumerate() {
        e.feed(r, Pos::record(i as u64 + 1), &s);
    }
    e.annotation_costs(&costs());
    e.finish(&s).expect("analyzes")
}

fn by_state(rows: &[PathOverhead]) -> BTreeMap<(String, String, String), u64> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry((r.sys.clone(), r.sm.clone(), r.state.clone()))
            .or_default() += r.ns;
    }
    m.retain(|_, ns| *ns > 0);
    m
}

#[test]
fn the_walks_sums_per_state_are_those_of_the_paths_segments() {
    let kept = analyze(true, false);
    let mut oracle = BTreeMap::new();
    for seg in kept.path.as_deref().expect("kept") {
        let Some(c) = costs().into_iter().find(|c| c.sm == seg.sm) else {
            continue;
        };
        let x = (c.ns_per_event.round() as u64).min(seg.end_ns - seg.start_ns);
        *oracle
            .entry((seg.sys.clone(), seg.sm.clone(), seg.state.clone()))
            .or_default() += x;
    }
    oracle.retain(|_, ns| *ns > 0);
    assert!(oracle.len() >= 6, "{oracle:?}");
    assert_eq!(by_state(&kept.path_overhead), oracle);
    for split in [false, true] {
        let walked = analyze(false, split);
        assert_eq!(walked.path_overhead, kept.path_overhead, "split: {split}");
    }
}
