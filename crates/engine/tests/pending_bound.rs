//! The bound on pending sends: sends never received are dropped oldest
//! first once the bound is reached, counted, and a later `recv` of one is a
//! `pending-send-dropped` diagnostic rather than `recv-without-send`; a
//! trace that never has half the bound pending at once is analysed exactly
//! as without a bound.

use critpath_engine::{Analysis, Engine, Options, Visit};
use critpath_trace::{DiagnosticKind, Event, Interner, LinkId, Pos, Record, Sym, Who};
use proptest::prelude::*;

fn run(records: &[Record], s: &Interner, limit: Option<usize>) -> Analysis {
    let mut e = Engine::new(Options::default());
    if let Some(l) = limit {
        e.set_pending_limit(l);
    }
    for (i, r) in records.iter().enumerate() {
        e.feed(r, Pos::record(i as u64 + 1), s);
    }
    e.finish(s).expect("analysis")
}

fn rec(t: u64, ev: Event) -> Record {
    Record {
        t,
        sys: Sym::LOCAL,
        ev,
    }
}

fn count(a: &Analysis, kind: DiagnosticKind) -> usize {
    a.diagnostics.iter().filter(|d| d.kind == kind).count()
}

/// SM `a` sends ids 0..1000, none received but `late`; SM `b` receives
/// the last id, then each of `late`, each into a state of its own.
fn fire_and_forget(late: &[u64], s: &mut Interner) -> Vec<Record> {
    let n = 1000;
    let (a, b) = (Who::Sm(s.intern("a")), Who::Sm(s.intern("b")));
    let (run_, idle, got) = (s.intern("run"), s.intern("idle"), s.intern("got"));
    let mut v = vec![
        rec(
            0,
            Event::State {
                who: a,
                state: run_,
            },
        ),
        rec(
            0,
            Event::State {
                who: b,
                state: idle,
            },
        ),
    ];
    for k in 0..n {
        let id = LinkId::Num(k);
        v.push(rec(10 + k, Event::Send { who: a, id }));
    }
    let t = 10 + n + 1000;
    let id = LinkId::Num(n - 1);
    let (state, waited) = (got, true);
    v.push(rec(
        t,
        Event::Recv {
            who: b,
            id,
            state,
            waited,
        },
    ));
    for (i, &k) in late.iter().enumerate() {
        let (id, state) = (LinkId::Num(k), s.intern(&format!("late{k}")));
        v.push(rec(
            t + 1 + i as u64,
            Event::Recv {
                who: b,
                id,
                state,
                waited,
            },
        ));
    }
    v.push(rec(t + 100, Event::End { who: a }));
    v.push(rec(t + 101, Event::End { who: b }));
    v
}

fn message(a: &Analysis, kind: DiagnosticKind) -> Vec<String> {
    let d = a
        .diagnostics
        .iter()
        .filter(|d| d.kind == kind && d.count.is_none());
    d.map(|d| d.message.clone()).collect()
}

#[test]
fn unreceived_sends_are_dropped_and_a_recv_of_one_says_so() {
    let mut s = Interner::new();
    // With a bound of 64, 960 of the 1000 sends are dropped; the ids of the
    // last 64 dropped (896..960) are remembered.
    let recs = fire_and_forget(&[900, 0], &mut s);
    let free = run(&recs, &s, None);
    let bounded = run(&recs, &s, Some(64));
    // Unbounded, every recv matches its send.
    assert_eq!(count(&free, DiagnosticKind::PendingSendDropped), 0);
    assert_eq!(count(&free, DiagnosticKind::RecvWithoutSend), 0);
    // Bounded, the recent send still matches (the path is as long: b waited
    // for a's last send).
    let (pb, pf) = (&bounded.critical_path, &free.critical_path);
    assert_eq!(pb.length_ns, pf.length_ns);
    // A recently dropped id's recv says its send was dropped.
    let dropped = message(&bounded, DiagnosticKind::PendingSendDropped);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].contains("recv of id 900"), "{}", dropped[0]);
    assert!(dropped[0].contains("bound of 64"), "{}", dropped[0]);
    // One dropped long before is forgotten: a recv without send.
    let without = message(&bounded, DiagnosticKind::RecvWithoutSend);
    assert_eq!(without.len(), 1, "{without:?}");
    assert!(without[0].contains("recv of id 0 "), "{}", without[0]);
    // The summary counts the dropped sends.
    let summary = bounded
        .diagnostics
        .iter()
        .find(|d| d.kind == DiagnosticKind::PendingSendDropped && d.count.is_some())
        .expect("summary");
    assert_eq!(summary.count, Some(960), "{}", summary.message);
}

/// A random trace of sends and recvs over three SMs, ids from a small range
/// (so some are sent twice, received twice or never sent).
fn trace(ops: &[(u8, bool, u8)], s: &mut Interner) -> Vec<Record> {
    let sms: Vec<Who> = ["x", "y", "z"]
        .iter()
        .map(|n| Who::Sm(s.intern(n)))
        .collect();
    let st = [s.intern("p"), s.intern("q")];
    let mut v: Vec<Record> = sms
        .iter()
        .map(|&who| rec(0, Event::State { who, state: st[0] }))
        .collect();
    for (i, &(sm, send, id)) in ops.iter().enumerate() {
        let (who, t, id) = (
            sms[sm as usize % 3],
            1 + i as u64 * 3,
            LinkId::Num(id as u64),
        );
        v.push(rec(
            t,
            if send {
                Event::Send { who, id }
            } else {
                let state = st[i % 2];
                Event::Recv {
                    who,
                    id,
                    state,
                    waited: i % 3 == 0,
                }
            },
        ));
    }
    v
}

/// The most sends pending at once before a send, as the engine counts them.
fn peak_pending(ops: &[(u8, bool, u8)]) -> usize {
    let mut live = std::collections::HashSet::new();
    let mut peak = 0;
    for &(_, send, id) in ops {
        if send {
            peak = peak.max(live.len());
            live.insert(id);
        } else {
            live.remove(&id);
        }
    }
    peak
}

proptest! {
    #[test]
    fn under_half_the_bound_nothing_changes(
        ops in prop::collection::vec((0u8..3, any::<bool>(), 0u8..24), 1..200),
        limit in 2usize..40,
    ) {
        let mut s = Interner::new();
        let recs = trace(&ops, &mut s);
        let free = run(&recs, &s, None);
        let bounded = run(&recs, &s, Some(limit));
        if peak_pending(&ops) < limit / 2 {
            prop_assert_eq!(&bounded.critical_path, &free.critical_path);
            prop_assert_eq!(&bounded.diagnostics, &free.diagnostics);
        } else {
            // Bounded or not, every recv either matched, or says why not.
            let missing = |a: &Analysis| {
                count(a, DiagnosticKind::RecvWithoutSend)
                    + count(a, DiagnosticKind::PendingSendDropped)
            };
            prop_assert!(missing(&bounded) >= missing(&free));
        }
    }
}

/// A send of an id whose earlier send is still pending is said
/// (`send-id-reused`): the earlier send is dropped, and the recv of the id
/// depends on the later one. An id sent again after its recv is no reuse.
#[test]
fn a_send_of_a_pending_id_is_said_and_the_recv_takes_the_later() {
    let mut s = Interner::new();
    let (a, b) = (Who::Sm(s.intern("a")), Who::Sm(s.intern("b")));
    let (run_, idle, got) = (s.intern("run"), s.intern("idle"), s.intern("got"));
    let trace = |ids: [u64; 3]| {
        let send = |t, k| {
            rec(
                t,
                Event::Send {
                    who: a,
                    id: LinkId::Num(k),
                },
            )
        };
        let recv = |t, k| {
            rec(
                t,
                Event::Recv {
                    who: b,
                    id: LinkId::Num(k),
                    state: got,
                    waited: false,
                },
            )
        };
        vec![
            rec(
                0,
                Event::State {
                    who: a,
                    state: run_,
                },
            ),
            rec(
                0,
                Event::State {
                    who: b,
                    state: idle,
                },
            ),
            send(10, ids[0]),
            send(50, ids[1]),
            recv(60, 1),
            send(70, ids[2]),
            recv(80, 1),
            rec(90, Event::End { who: a }),
            rec(90, Event::End { who: b }),
        ]
    };
    let reused = run(&trace([1, 1, 1]), &s, None);
    let said: Vec<_> = (reused.diagnostics.iter())
        .filter(|d| d.kind == DiagnosticKind::SendIdReused)
        .collect();
    assert_eq!(said.len(), 1, "{:?}", reused.diagnostics);
    assert!(said[0].message.contains("at t=50") && said[0].message.contains("at t=10"));
    assert_eq!(count(&reused, DiagnosticKind::RecvWithoutSend), 0);
    // The recv at 60 took the send at 50 (the observer hears each link).
    let mut links = Vec::new();
    let mut obs = |v: &Visit, _: &Interner| {
        if let Visit::Link { sent, received, .. } = *v {
            links.push((sent, received));
        }
    };
    let mut e = Engine::observed(Options::default(), &mut obs);
    for (i, r) in trace([1, 1, 1]).iter().enumerate() {
        e.feed(r, Pos::record(i as u64 + 1), &s);
    }
    e.finish(&s).expect("analysis");
    assert_eq!(links, [(50, 60), (70, 80)]);
    // Distinct ids, or an id sent again once received: nothing to say.
    for ids in [[2, 1, 1], [1, 2, 1]] {
        let a = run(&trace(ids), &s, None);
        assert_eq!(count(&a, DiagnosticKind::SendIdReused), 0, "{ids:?}");
    }
}
