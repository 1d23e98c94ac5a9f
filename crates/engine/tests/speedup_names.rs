//! A speed-up names a thread without its id only when it names one SM; the
//! what-ifs critpath makes itself name a table row's state in full, so an SM
//! `known` is not confused with a thread `known:12` that has a state of the
//! same name.

use critpath_engine::{Engine, Error, Options, Speedup};
use critpath_trace::{Event, Interner, Pos, Record, Sym, Who};

/// SM `known` runs 0–100; thread `known:12` runs 0–80.
fn trace(s: &mut Interner) -> Vec<Record> {
    let (sm, thread) = (Who::Sm(s.intern("known")), Who::Sm(s.intern("known:12")));
    let running = s.intern("running");
    let rec = |t, ev| Record {
        t,
        sys: Sym::LOCAL,
        ev,
    };
    vec![
        rec(
            0,
            Event::State {
                who: sm,
                state: running,
            },
        ),
        rec(
            0,
            Event::State {
                who: thread,
                state: running,
            },
        ),
        rec(80, Event::End { who: thread }),
        rec(100, Event::End { who: sm }),
    ]
}

fn whatif(sp: Speedup) -> Result<critpath_engine::Analysis, Error> {
    let mut s = Interner::new();
    let recs = trace(&mut s);
    let mut e = Engine::new(Options {
        speedups: vec![sp],
        ..Default::default()
    });
    for (i, r) in recs.iter().enumerate() {
        e.feed(r, Pos::record(i as u64 + 1), &s);
    }
    e.finish(&s)
}

#[test]
fn a_typed_name_that_also_names_a_thread_without_its_id_is_ambiguous() {
    let e = whatif(Speedup::parse("known:running=2").unwrap()).unwrap_err();
    assert!(matches!(e, Error::AmbiguousSpeedup { .. }), "{e}");
    assert!(e.to_string().contains("known:12"), "{e}");
}

#[test]
fn a_state_named_in_full_scales_that_state_only() {
    let a = whatif(Speedup::of_state("local", "known", "running", 2.0)).unwrap();
    // `known` takes 50 ns, the thread keeps its 80: the path is the thread's.
    assert_eq!(a.critical_path.length_ns, 80);
    assert_eq!(a.stats.scaled_edges, 1);
    let a = whatif(Speedup::of_state("local", "known:12", "running", 4.0)).unwrap();
    assert_eq!(a.critical_path.length_ns, 100);
}
