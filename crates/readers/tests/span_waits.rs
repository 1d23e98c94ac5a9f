//! A parent span waits for the children it called: the records that span
//! files become (waited receives, a child that ends after its parent
//! delaying the parent's end up to the root span's, a child that starts
//! before its parent moved to the parent's start) and the diagnostics of
//! lost trace context.

mod common;

use common::*;
use critpath_readers::spans;
use critpath_trace::{DiagnosticKind, Event, RecordSource};

/// An OTLP document: per service, its spans as (trace, id, parent, name,
/// start ms, end ms, client).
type S<'a> = (&'a str, &'a str, &'a str, &'a str, u64, u64, bool);

fn otlp(services: &[(&str, &[S])]) -> String {
    let res: Vec<String> = services
        .iter()
        .map(|(svc, spans)| {
            let spans: Vec<String> = spans
                .iter()
                .map(|(t, id, parent, name, a, b, client)| {
                    format!(
                        r#"{{"traceId":"{t}","spanId":"{id}","parentSpanId":"{parent}","name":"{name}","kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}"#,
                        if *client { 3 } else { 2 },
                        a * 1_000_000,
                        b * 1_000_000
                    )
                })
                .collect();
            format!(
                r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{svc}"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}"#,
                spans.join(",")
            )
        })
        .collect();
    format!(r#"{{"resourceSpans":[{}]}}"#, res.join(","))
}

/// The receives of SM `sm`: (time in ms, waited).
fn recvs(doc: &str, sm: &str) -> Vec<(u64, bool)> {
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, errs) = drain(&mut src);
    assert!(errs.is_empty(), "{errs:?}");
    recs.iter()
        .filter_map(|r| match r.ev {
            Event::Recv { who, waited, .. } => {
                let critpath_trace::Who::Sm(s) = who else {
                    return None;
                };
                (src.strings().resolve(s) == sm).then_some((r.t / 1_000_000, waited))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn fan_out_waits_for_every_child_and_so_for_the_last() {
    // GET (front, 0-100) calls b 10-40 and c 20-80 at once.
    let doc = otlp(&[
        ("front", &[("t", "a", "", "GET", 0, 100, false)]),
        ("b", &[("t", "b1", "a", "work", 10, 40, false)]),
        ("c", &[("t", "c1", "a", "work", 20, 80, false)]),
    ]);
    assert_eq!(recvs(&doc, "front"), vec![(40, true), (80, true)]);
    // The children's lanes were idle: waiting for the call.
    assert_eq!(recvs(&doc, "b"), vec![(10, true)]);
    assert_eq!(recvs(&doc, "c"), vec![(20, true)]);
}

/// Each lane's calls: (SM, span name, start ms).
fn calls(doc: &str) -> Vec<(String, String, u64)> {
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, _) = drain(&mut src);
    let name = |s| src.strings().resolve(s).to_string();
    recs.iter()
        .filter_map(|r| match r.ev {
            Event::Call {
                who: critpath_trace::Who::Sm(sm),
                func,
            } => Some((name(sm), name(func), r.t / 1_000_000)),
            _ => None,
        })
        .collect()
}

#[test]
fn siblings_of_one_service_within_each_others_time_are_concurrent() {
    // api (0-100) calls w1 10-60, w2 10-80 and w3 10-30 of worker at once:
    // each lies within w2's time, but none called another, so each has a
    // lane of its own and api waits for every one (the last at 80).
    let doc = otlp(&[
        ("api", &[("t", "r", "", "fanout", 0, 100, false)]),
        (
            "worker",
            &[
                ("t", "a", "r", "w1", 10, 60, false),
                ("t", "b", "r", "w2", 10, 80, false),
                ("t", "c", "r", "w3", 10, 30, false),
            ],
        ),
    ]);
    let lanes: Vec<(String, String)> = calls(&doc).into_iter().map(|(sm, n, _)| (sm, n)).collect();
    for want in [("worker", "w2"), ("worker#2", "w1"), ("worker#3", "w3")] {
        assert!(lanes.contains(&(want.0.into(), want.1.into())), "{lanes:?}");
    }
    assert_eq!(recvs(&doc, "api"), vec![(30, true), (60, true), (80, true)]);
    // A child within its parent's time, of the same service, nests in it;
    // one within a sibling's does not.
    let doc = otlp(&[(
        "svc",
        &[
            ("t", "r", "", "root", 0, 100, false),
            ("t", "l", "r", "long", 10, 90, false),
            ("t", "s", "r", "short", 20, 30, false),
            ("t", "k", "l", "inner", 40, 50, false),
        ],
    )]);
    let want = [
        ("svc", "root", 0),
        ("svc", "long", 10),
        ("svc#2", "short", 20),
        ("svc", "inner", 40),
    ];
    let want: Vec<(String, String, u64)> = want
        .iter()
        .map(|&(a, b, t)| (a.into(), b.into(), t))
        .collect();
    assert_eq!(calls(&doc), want);
    // The root's lane is in long at 30: short's end is no wait of root's.
    assert_eq!(recvs(&doc, "svc"), vec![(30, false)]);
}

#[test]
fn a_span_and_its_caller_of_the_same_bounds_nest_caller_first() {
    // b calls a, both 10-50 in svc: a nests in b whatever their ids.
    let doc = otlp(&[(
        "svc",
        &[
            ("t", "r", "", "root", 0, 100, false),
            ("t", "b", "r", "outer", 10, 50, false),
            ("t", "a", "b", "inner", 10, 50, false),
        ],
    )]);
    let sms: Vec<String> = calls(&doc).into_iter().map(|c| c.0).collect();
    assert_eq!(sms, ["svc", "svc", "svc"]);
}

#[test]
fn work_of_the_parents_lane_inside_a_child_stays_work() {
    // GET (front, 0-100) calls c 20-80 and, meanwhile, runs render 50-90
    // in-process (same lane): at 80 the lane is in render, not waiting.
    let doc = otlp(&[
        (
            "front",
            &[
                ("t", "a", "", "GET", 0, 100, false),
                ("t", "r", "a", "render", 50, 90, false),
            ],
        ),
        ("c", &[("t", "c1", "a", "work", 20, 80, false)]),
    ]);
    assert_eq!(recvs(&doc, "front"), vec![(80, false)]);
}

/// The times (ms) at which SM `sm`'s spans return.
fn rets(doc: &str, sm: &str) -> Vec<u64> {
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, _) = drain(&mut src);
    recs.iter()
        .filter(|r| matches!(r.ev, Event::Ret { who: critpath_trace::Who::Sm(s), .. } if src.strings().resolve(s) == sm))
        .map(|r| r.t / 1_000_000)
        .collect()
}

/// The request's findings of `kind`.
fn findings(doc: &str, kind: DiagnosticKind) -> Vec<critpath_trace::Diagnostic> {
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    drain(&mut src);
    let all = src.summary().diagnostics;
    all.into_iter().filter(|d| d.kind == kind).collect()
}

#[test]
fn a_child_that_outlives_its_parent_delays_its_end() {
    // GET / (front, 0-100) calls p 10-50, which calls c 20-70: p waited
    // for c, so p ends at 70, when c does; the root is not delayed.
    let doc = otlp(&[
        ("front", &[("t", "a", "", "GET /", 0, 100, false)]),
        ("p", &[("t", "p1", "a", "P", 10, 50, false)]),
        ("c", &[("t", "c1", "p1", "C", 20, 70, false)]),
    ]);
    assert_eq!(rets(&doc, "p"), vec![70]);
    assert_eq!(rets(&doc, "c"), vec![70]);
    assert_eq!(rets(&doc, "front"), vec![100]);
    assert_eq!(recvs(&doc, "p"), vec![(10, true), (70, true)]);
    let d = findings(&doc, DiagnosticKind::ChildOutlivesParent);
    assert_eq!((d[0].count, d[0].ns), (Some(1), Some(20_000_000)));
    assert!(
        d[0].message.contains("delayed its parent's end"),
        "{}",
        d[0].message
    );
}

#[test]
fn a_child_that_starts_before_its_parent_starts_with_it() {
    // cart's clock is 50 ms behind: its span 950-1060 under GET / 1000-1100.
    let doc = otlp(&[
        ("front", &[("t", "a", "", "GET /", 1000, 1100, false)]),
        ("cart", &[("t", "c1", "a", "load", 950, 1060, false)]),
    ]);
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, _) = drain(&mut src);
    assert!(
        recs.iter().all(|r| r.t >= 1_000_000_000),
        "nothing before the root"
    );
    assert_eq!(recvs(&doc, "cart"), vec![(1000, true)]);
    let d = findings(&doc, DiagnosticKind::ClockOffset);
    assert_eq!((d[0].count, d[0].ns), (Some(1), Some(50_000_000)));
    assert!(
        d[0].message.contains("cart: load before front: GET /"),
        "{}",
        d[0].message
    );
}

#[test]
fn a_child_that_outlives_the_root_is_cut_at_the_roots_end() {
    // The client span GET cart (front, 10-50) is answered by cart 12-65:
    // the server span ends 15 ms after its caller, which waits for it, but
    // the request ends at 60, with its root span.
    let doc = otlp(&[
        (
            "front",
            &[
                ("t", "a", "", "GET /", 0, 60, false),
                ("t", "g", "a", "GET cart", 10, 50, true),
            ],
        ),
        ("cart", &[("t", "c", "g", "load", 12, 65, false)]),
    ]);
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, _) = drain(&mut src);
    let last_cart = recs
        .iter()
        .filter(|r| matches!(r.ev, Event::Ret { who: critpath_trace::Who::Sm(s), .. } if src.strings().resolve(s) == "cart"))
        .map(|r| r.t)
        .max();
    assert_eq!(last_cart, Some(60_000_000));
    assert!(recs.iter().all(|r| r.t <= 60_000_000));
    let d = src.summary().diagnostics;
    let d: Vec<_> = d
        .iter()
        .filter(|d| d.kind == DiagnosticKind::ChildOutlivesParent)
        .collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].count, d[0].ns), (Some(1), Some(15_000_000)));
    assert!(d[0].message.contains("cart: load"), "{}", d[0].message);
    assert_eq!(recvs(&doc, "front"), vec![(60, true)]);
    // Over a file, the count and the largest overshoot too.
    let requests = spans::read_requests(doc.as_bytes(), "t.json").unwrap();
    let d = requests.sanity().diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind, DiagnosticKind::ChildOutlivesParent);
    assert_eq!((d[0].count, d[0].ns), (Some(1), Some(15_000_000)));
    assert!(
        d[0].message
            .contains("cart: load after front: GET cart in t"),
        "{}",
        d[0].message
    );
}

#[test]
fn lost_context_is_counted_over_the_file_and_per_request() {
    // t1: front calls cart properly; an orphan db span names a parent that
    // is in no trace; a client span to pay has no server child. t2, t3:
    // cart alone (its context was lost).
    let doc = otlp(&[
        (
            "front",
            &[
                ("t1", "a", "", "GET /", 0, 60, false),
                ("t1", "g", "a", "GET cart", 10, 50, true),
                ("t1", "p", "a", "POST pay", 50, 55, true),
            ],
        ),
        (
            "cart",
            &[
                ("t1", "c", "g", "load", 12, 45, false),
                ("t2", "c2", "", "load", 100, 130, false),
                ("t3", "c3", "", "load", 200, 230, false),
            ],
        ),
        ("db", &[("t1", "d", "ff", "SELECT", 20, 30, false)]),
    ]);
    let requests = spans::read_requests(doc.as_bytes(), "t.json").unwrap();
    let msgs: Vec<String> = requests
        .sanity()
        .diagnostics()
        .into_iter()
        .inspect(|d| assert_eq!(d.kind, DiagnosticKind::SpanContext))
        .map(|d| d.message)
        .collect();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert!(msgs[0].starts_with("2 of 3 requests hold spans of one service only while the file has 3 services (e.g. t2 (cart), t3 (cart))"), "{}", msgs[0]);
    assert!(
        msgs[1].starts_with("1 orphan spans in 1 requests"),
        "{}",
        msgs[1]
    );
    assert!(msgs[1].contains("db: SELECT in t1"), "{}", msgs[1]);
    assert!(
        msgs[2].starts_with("1 client spans in 1 requests"),
        "{}",
        msgs[2]
    );
    assert!(msgs[2].contains("front: POST pay"), "{}", msgs[2]);
    // One request's analysis names its own orphans and lonely clients.
    let mut one = requests.request("t1").unwrap().unwrap();
    drain(&mut one);
    let kinds: Vec<_> = one.summary().diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, vec![DiagnosticKind::SpanContext; 2]);
    // A parent id that is no span id at all is named as such.
    let bad = doc.replace(r#""parentSpanId":"ff""#, r#""parentSpanId":"xyz""#);
    let requests = spans::read_requests(bad.as_bytes(), "t.json").unwrap();
    let d = requests.sanity().diagnostics();
    let said = r#"db: SELECT (its parent id "xyz" is not a valid span id) in t1"#;
    assert!(d[1].message.contains(said), "{}", d[1].message);
}

#[test]
fn a_file_whose_context_holds_says_nothing() {
    let doc = otlp(&[
        (
            "front",
            &[
                ("t1", "a", "", "GET /", 0, 60, false),
                ("t2", "b", "", "GET /", 70, 90, false),
            ],
        ),
        (
            "cart",
            &[
                ("t1", "c", "a", "load", 12, 45, false),
                ("t2", "d", "b", "load", 72, 80, false),
            ],
        ),
    ]);
    let requests = spans::read_requests(doc.as_bytes(), "t.json").unwrap();
    assert!(requests.sanity().diagnostics().is_empty());
}

/// The scope's destination of the request in `doc` (all its trace ids on
/// one timeline).
fn destination(doc: &str) -> Option<String> {
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    drain(&mut src);
    src.scope().to
}

#[test]
fn spans_after_the_root_leave_the_root_lane_and_the_path_ends_with_the_root() {
    // GET / (front, 0-100) calls p 10-50, which sends a message that c
    // handles at 120-150 (its child, started after the root's end); front
    // itself handles a follow-up 110-130 (no parent).
    let doc = otlp(&[
        (
            "front",
            &[
                ("t", "a", "", "GET /", 0, 100, false),
                ("t", "f", "", "follow-up", 110, 130, false),
            ],
        ),
        ("p", &[("t", "p1", "a", "P", 10, 50, false)]),
        ("c", &[("t", "c1", "p1", "handle", 120, 150, false)]),
    ]);
    assert_eq!(destination(&doc).as_deref(), Some("front"));
    // The root's lane ends with the root; the follow-up has a lane of its own.
    assert_eq!(rets(&doc, "front"), vec![100]);
    assert_eq!(rets(&doc, "front#2"), vec![130]);
    let d = findings(&doc, DiagnosticKind::AfterRoot);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].count, d[0].ns), (Some(2), Some(50_000_000)));
    assert!(
        d[0].message.contains("root span (front: GET /)") && d[0].message.contains("(c: handle)"),
        "{}",
        d[0].message
    );
    // Over a file of several requests, counted per request.
    let mut two = doc.replace(r#""traceId":"t""#, r#""traceId":"t1""#);
    two = two.replacen(r#"{"resourceSpans":["#, r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"front"}}]},"scopeSpans":[{"spans":[{"traceId":"t2","spanId":"z","name":"GET /","startTimeUnixNano":"0","endTimeUnixNano":"5"}]}]},"#, 1);
    let requests = spans::read_requests(two.as_bytes(), "t.json").unwrap();
    let d: Vec<_> = (requests.sanity().diagnostics().into_iter())
        .filter(|d| d.kind == DiagnosticKind::AfterRoot)
        .collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].count, d[0].ns), (Some(2), Some(50_000_000)));
    assert!(
        d[0].message
            .contains("2 spans in 1 requests started after their request's root span ended")
            && d[0].message.contains("c: handle after front: GET / in t1"),
        "{}",
        d[0].message
    );
    let mut one = requests.request("t1").unwrap().unwrap();
    drain(&mut one);
    assert_eq!(one.scope().to.as_deref(), Some("front"));
}

#[test]
fn a_request_without_one_root_span_has_no_destination() {
    // Every span names a parent (the root was not exported).
    let orphans = otlp(&[
        ("b", &[("t", "b1", "a", "work", 10, 40, false)]),
        ("c", &[("t", "c1", "a", "work", 50, 80, false)]),
    ]);
    assert_eq!(destination(&orphans), None);
    // Two spans without a parent overlap: neither is the request.
    let two = otlp(&[
        ("front", &[("t", "a", "", "GET", 0, 100, false)]),
        ("b", &[("t", "b", "", "job", 50, 150, false)]),
    ]);
    assert_eq!(destination(&two), None);
    // The root within a longer span of its service that did not call it
    // (an orphan): not nested in it, on a lane of its own, which it ends.
    let nested = otlp(&[(
        "front",
        &[
            ("t", "o", "x", "outer", 0, 200, false),
            ("t", "a", "", "GET", 10, 100, false),
        ],
    )]);
    assert_eq!(destination(&nested).as_deref(), Some("front#2"));
    // Spans of several requests on one timeline.
    let many = otlp(&[(
        "front",
        &[
            ("t1", "a", "", "GET", 0, 10, false),
            ("t2", "b", "", "GET", 20, 30, false),
        ],
    )]);
    assert_eq!(destination(&many), None);
    // One root, a follower inside it: the root's lane.
    let one = otlp(&[(
        "front",
        &[
            ("t", "a", "", "GET", 0, 100, false),
            ("t", "b", "", "job", 50, 90, false),
        ],
    )]);
    assert_eq!(destination(&one).as_deref(), Some("front"));
    assert!(findings(&one, DiagnosticKind::AfterRoot).is_empty());
}

#[test]
fn a_message_handled_later_is_handed_on_at_its_senders_end() {
    // GET / (front, 0-100) calls publish (p, 10-20), whose message c
    // consumes at 30-40, also following from x (22-28).
    let doc = otlp(&[
        ("front", &[("t", "a", "", "GET /", 0, 100, false)]),
        ("p", &[("t", "b", "a", "publish", 10, 20, false)]),
        ("x", &[("t", "x", "a", "other", 22, 28, false)]),
        ("c", &[("t", "c", "b", "consume", 30, 40, false)]),
    ])
    .replace(
        r#""spanId":"c","#,
        r#""links":[{"traceId":"t","spanId":"x"}],"spanId":"c","#,
    );
    let mut src = spans::read(doc.as_bytes(), "t.json").unwrap();
    let (recs, _) = drain(&mut src);
    let sends: Vec<(u64, String)> = recs
        .iter()
        .filter_map(|r| match r.ev {
            Event::Send {
                who: critpath_trace::Who::Sm(s),
                ..
            } => Some((r.t / 1_000_000, src.strings().resolve(s).to_string())),
            _ => None,
        })
        .collect();
    // The start of c leaves p at publish's end, not at c's start.
    assert!(sends.contains(&(20, "p".to_string())), "{sends:?}");
    assert!(!sends.contains(&(30, "p".to_string())), "{sends:?}");
    // Both links reach c's idle lane, waited for: the queue is c's wait.
    assert_eq!(recvs(&doc, "c"), vec![(30, true), (30, true)]);
}

#[test]
fn a_span_given_twice_counts_once_and_a_reused_id_is_dropped() {
    // GET / (front, 0-100) calls work (back, 20-70); an exporter's retry
    // sends work again, and another span reuses the root's id.
    let once = otlp(&[
        ("front", &[("t", "a", "", "GET /", 0, 100, false)]),
        ("back", &[("t", "b", "a", "work", 20, 70, false)]),
    ]);
    let twice = otlp(&[
        ("front", &[("t", "a", "", "GET /", 0, 100, false)]),
        ("back", &[("t", "b", "a", "work", 20, 70, false)]),
        (
            "back",
            &[
                ("t", "b", "a", "work", 20, 70, false),
                ("t", "a", "", "other", 5, 200, false),
            ],
        ),
    ]);
    assert_eq!(recvs(&twice, "front"), recvs(&once, "front"));
    assert_eq!(rets(&twice, "back"), vec![70]);
    let d = findings(&twice, DiagnosticKind::InputSkipped);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(d[0].count, Some(1));
    assert!(
        d[0].message.starts_with("1 span was given again"),
        "{}",
        d[0].message
    );
    assert!(
        d[1].message.starts_with("1 span reuses"),
        "{}",
        d[1].message
    );
    assert!(
        d[1].message.contains("span id a: back: other"),
        "{}",
        d[1].message
    );
    assert!(findings(&once, DiagnosticKind::InputSkipped).is_empty());
    // Over a file, counted the same; the request's findings as if given once.
    let requests = spans::read_requests(twice.as_bytes(), "t.json").unwrap();
    let d = requests.sanity().diagnostics();
    let kinds: Vec<_> = d.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [DiagnosticKind::InputSkipped; 2], "{d:?}");
}

#[test]
fn spans_on_a_cycle_of_parents_are_named_and_have_no_parent() {
    // GET / (front, 0-100) calls call (mid, 10-50), which calls work (back,
    // 20-70); work names call as its parent and call names work: a cycle.
    // And a span its own parent.
    let doc = otlp(&[
        ("front", &[("t", "a", "", "GET /", 0, 100, false)]),
        ("mid", &[("t", "b", "c", "call", 10, 50, false)]),
        ("back", &[("t", "c", "b", "work", 20, 70, false)]),
        ("solo", &[("t", "d", "d", "self", 30, 40, false)]),
    ]);
    let d = findings(&doc, DiagnosticKind::SpanContext);
    let cycle = d.iter().find(|d| d.message.contains("cycles of parent"));
    let cycle = cycle.unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(cycle.count, Some(3));
    assert!(cycle.message.contains("d → d"), "{}", cycle.message);
    assert!(
        cycle.message.contains("b → c → b") || cycle.message.contains("c → b → c"),
        "{}",
        cycle.message
    );
    // Neither moved nor delayed as a child of the other.
    assert!(findings(&doc, DiagnosticKind::ClockOffset).is_empty());
    assert_eq!(rets(&doc, "mid"), vec![50]);
    let requests = spans::read_requests(doc.as_bytes(), "t.json").unwrap();
    let d = requests.sanity().diagnostics();
    assert!(
        d.iter().all(|d| d.kind != DiagnosticKind::ClockOffset),
        "{d:?}"
    );
    assert!(
        d[0].message
            .starts_with("3 spans in 1 requests are on cycles"),
        "{d:?}"
    );
}
