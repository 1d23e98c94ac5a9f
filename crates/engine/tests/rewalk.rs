//! What-ifs answered from a pass's kept graph (`Options::rewalk`) on a
//! trace large enough that the log spills to its file (over 1 MiB) and the
//! walk keeps its lengths in a mapped file (over a million nodes): each
//! prediction equals what a pass of its own under the speed-ups finds,
//! with the log written by its own thread and on the engine's.
//! (`oracle.rs` checks the same on thousands of small random traces.)

use critpath_engine::{Analysis, Engine, Options, Prediction, Speedup};
use critpath_trace::{Event, Interner, LinkId, Pos, Record, ScalesWith, Sym, Who};

/// 1.3M records of 40 SMs in 6 states, with messages between them, waits
/// on each other and pieces held by another SM, from a fixed seed.
fn trace(s: &mut Interner) -> Vec<Record> {
    let sms: Vec<Sym> = (0..40).map(|i| s.intern(&format!("sm{i}"))).collect();
    let states: Vec<Sym> = (0..6).map(|i| s.intern(&format!("s{i}"))).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut t, mut out, mut sent) = (0u64, Vec::new(), Vec::new());
    for id in 0..1_300_000u64 {
        let r = next();
        t += r % 50;
        let who = Who::Sm(sms[(r >> 8) as usize % sms.len()]);
        let state = states[(r >> 16) as usize % states.len()];
        let other = sms[(r >> 24) as usize % sms.len()];
        let ev = match (r >> 32) % 10 {
            0..=3 => Event::State { who, state },
            4 => {
                sent.push(id);
                Event::Send {
                    who,
                    id: LinkId::Num(id),
                }
            }
            5 if !sent.is_empty() => Event::Recv {
                who,
                id: LinkId::Num(sent.swap_remove((r >> 40) as usize % sent.len())),
                state,
                waited: r & (1 << 63) != 0,
            },
            6 => Event::Wait {
                who,
                state,
                on: Some(other),
                on_sys: None,
                on_state: None,
            },
            7 => Event::Held {
                who,
                on: other,
                on_state: state,
                ended: r & (1 << 62) != 0,
            },
            _ => Event::State { who, state },
        };
        out.push(Record {
            t,
            sys: Sym::LOCAL,
            ev,
        });
    }
    out
}

fn pass(recs: &[Record], s: &Interner, opts: Options) -> Analysis {
    let mut e = Engine::new(opts);
    for r in recs {
        e.feed(r, Pos::NONE, s);
    }
    e.finish(s).expect("analysis")
}

#[test]
fn a_rewalk_of_a_spilled_graph_predicts_what_a_pass_finds() {
    let mut s = Interner::new();
    let recs = trace(&mut s);
    let scales_with = vec![ScalesWith {
        state: "s1".into(),
        with: "s0".into(),
    }];
    for one_thread in [false, true] {
        let opts = Options {
            rewalk: true,
            one_thread,
            scales_with: scales_with.clone(),
            ..Default::default()
        };
        let first = pass(&recs, &s, opts);
        assert!(first.stats.nodes > 1 << 20, "{} nodes", first.stats.nodes);
        let kept = first.rewalk.as_ref().expect("a kept graph");
        for (target, factor) in [("sm3:s0", 2.0), ("sm7", 4.0), ("sm1:s2", 0.5)] {
            let speedups = vec![Speedup::parse(&format!("{target}={factor}")).unwrap()];
            let opts = Options {
                speedups: speedups.clone(),
                scales_with: scales_with.clone(),
                ..Default::default()
            };
            let b = pass(&recs, &s, opts);
            let want = Prediction {
                length_ns: b.critical_path.length_ns,
                scaled_edges: b.stats.scaled_edges,
            };
            assert!(want.scaled_edges > 0, "{target}: nothing scaled");
            assert_eq!(kept.predict(&speedups), Some(want), "{target}={factor}");
        }
        let none = [Speedup::parse("nosuchsm:s0=2").unwrap()];
        assert_eq!(kept.predict(&none), None);
    }
}
