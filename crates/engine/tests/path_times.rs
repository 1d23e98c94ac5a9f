//! Where the kept path's edges lie on the clock: each edge ends at its
//! node's time, also after a wait that weighs nothing (whose chain ending
//! it is shorter than the wait), and such a path is reported as shorter
//! than the time between its ends (`path-gap`), naming the wait.

use critpath_engine::{Engine, Options};
use critpath_trace::{DiagnosticKind, Event, Interner, LinkId, Pos, Record, Sym, Who};

fn rec(t: u64, ev: Event) -> Record {
    Record {
        t,
        sys: Sym::LOCAL,
        ev,
    }
}

/// `a` works 0–10, then waits (openly) until `b`'s message at 60; `b`
/// starts at 55, so its chain (5 ns) is shorter than `a`'s (10 ns): the
/// path stays on `a`, through its wait of weight 0, then `y` until 70.
fn trace(s: &mut Interner) -> Vec<Record> {
    let (a, b) = (Who::Sm(s.intern("a")), Who::Sm(s.intern("b")));
    let (x, w, y, z) = (s.intern("x"), s.intern("w"), s.intern("y"), s.intern("z"));
    let id = LinkId::Num(7);
    vec![
        rec(0, Event::State { who: a, state: x }),
        rec(
            10,
            Event::Wait {
                who: a,
                state: w,
                on: None,
                on_sys: None,
                on_state: None,
            },
        ),
        rec(55, Event::State { who: b, state: z }),
        rec(60, Event::Send { who: b, id }),
        rec(
            60,
            Event::Recv {
                who: a,
                id,
                state: y,
                waited: false,
            },
        ),
        rec(70, Event::End { who: a }),
    ]
}

#[test]
fn edges_end_at_their_nodes_times_after_a_wait_that_weighs_nothing() {
    let mut s = Interner::new();
    let recs = trace(&mut s);
    let mut e = Engine::new(Options {
        keep_path: true,
        ..Default::default()
    });
    for (i, r) in recs.iter().enumerate() {
        e.feed(r, Pos::record(i as u64 + 1), &s);
    }
    let a = e.finish(&s).expect("analysis");
    assert_eq!(a.critical_path.length_ns, 20);
    assert_eq!((a.critical_path.start.t, a.critical_path.end.t), (0, 70));
    let spans: Vec<(&str, u64, u64)> = a
        .path
        .as_ref()
        .expect("kept")
        .iter()
        .map(|p| (p.state.as_str(), p.start_ns, p.end_ns))
        .collect();
    assert_eq!(spans, [("x", 0, 10), ("w", 60, 60), ("y", 60, 70)]);
    let gap = a
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::PathGap)
        .expect("path-gap");
    assert!(
        gap.message.contains("50 ns") && gap.message.contains("a 'w' (50 ns)"),
        "{}",
        gap.message
    );
}
