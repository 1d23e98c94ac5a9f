use super::TraceWriter;
use critpath_engine::results::PathSegment;
use critpath_engine::{Analysis, Observer, PathEdge, Visit};
use critpath_trace::{Interner, Sym};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::rc::Rc;

/// The document as one `serde_json::Value`, built whole from every visit
/// (how the export was made before it streamed): the streamed bytes must
/// be its bytes.
fn document(a: &Analysis, visits: &[Visit], s: &Interner) -> Value {
    let mut events = Vec::new();
    let mut pids: HashMap<Sym, u64> = HashMap::new();
    let mut tids: HashMap<(Sym, Sym), u64> = HashMap::new();
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut track = |events: &mut Vec<Value>, sys: Sym, sm: Sym| -> (u64, u64) {
        let n = pids.len() as u64 + 1;
        let pid = *pids.entry(sys).or_insert_with(|| {
            events.push(json!({"ph": "M", "name": "process_name", "pid": n, "args": {"name": s.resolve(sys)}}));
            n
        });
        let n = tids.len() as u64 + 1;
        let tid = *tids.entry((sys, sm)).or_insert_with(|| {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": n, "args": {"name": s.resolve(sm)}}));
            n
        });
        (pid, tid)
    };
    let mut flow = 0u64;
    for v in visits {
        match *v {
            Visit::State {
                sys,
                sm,
                state,
                start,
                end,
            } => {
                let (pid, tid) = track(&mut events, sys, sm);
                events.push(json!({"ph": "X", "name": s.resolve(state), "cat": "state", "pid": pid, "tid": tid, "ts": us(start), "dur": us(end - start)}));
            }
            Visit::Link {
                from_sys,
                from_sm,
                to_sys,
                to_sm,
                sent,
                received,
                wait,
            } => {
                let (p1, t1) = track(&mut events, from_sys, from_sm);
                let (p2, t2) = track(&mut events, to_sys, to_sm);
                flow += 1;
                let name = if wait { "wait" } else { "message" };
                events.push(json!({"ph": "s", "name": name, "cat": "dependence", "id": flow, "pid": p1, "tid": t1, "ts": us(sent)}));
                events.push(json!({"ph": "f", "bp": "e", "name": name, "cat": "dependence", "id": flow, "pid": p2, "tid": t2, "ts": us(received)}));
            }
        }
    }
    let pid = pids.len() as u64 + 1;
    events.push(
        json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "critical path"}}),
    );
    events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": 1, "args": {"name": format!("critical path ({} ns)", a.critical_path.length_ns)}}));
    for seg in a.path.iter().flatten() {
        let what = if seg.inter {
            format!("{} waits on {}: {}", seg.sm, seg.from_sm, seg.state)
        } else {
            format!("{}: {}", seg.sm, seg.state)
        };
        events.push(json!({
            "ph": "X", "name": what, "cat": "critical", "cname": "terrible", "pid": pid, "tid": 1,
            "ts": us(seg.start_ns), "dur": us(seg.end_ns - seg.start_ns),
            "args": {"sys": seg.sys, "sm": seg.sm, "state": seg.state, "inter": seg.inter},
        }));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"critpath_length_ns": a.critical_path.length_ns}})
}

/// A spool the test can look into while the writer holds it.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Cursor<Vec<u8>>>>);

impl Shared {
    fn len(&self) -> usize {
        self.0.borrow().get_ref().len()
    }
}

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().read(buf)
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Shared {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.0.borrow_mut().seek(to)
    }
}

/// Visits over two systems and several SMs, with odd times (fractions of
/// a microsecond), links both ways, and a name to escape.
fn visits(s: &mut Interner, n: u64) -> Vec<Visit> {
    let sys = [s.intern("local"), s.intern("host \"b\"")];
    let sms = [s.intern("a"), s.intern("b\n"), s.intern("c")];
    let states = [s.intern("compute"), s.intern("wait ✓")];
    let mut out = Vec::new();
    for i in 0..n {
        let (start, end) = (i * 1_337 + i % 7, i * 1_337 + 1_000 + i % 1_000);
        out.push(Visit::State {
            sys: sys[(i % 2) as usize],
            sm: sms[(i % 3) as usize],
            state: states[(i % 5 % 2) as usize],
            start,
            end,
        });
        if i % 4 == 1 {
            out.push(Visit::Link {
                from_sys: sys[(i % 2) as usize],
                from_sm: sms[(i % 3) as usize],
                to_sys: sys[(i / 2 % 2) as usize],
                to_sm: sms[((i + 1) % 3) as usize],
                sent: end,
                received: end + 123,
                wait: i % 8 == 1,
            });
        }
    }
    out
}

/// An analysis whose path has two segments, one of them a wait.
fn analysis() -> Analysis {
    let seg = |sm: &str, from: &str, inter, (start_ns, end_ns)| PathSegment {
        sys: "local".into(),
        sm: sm.into(),
        state: "compute".into(),
        from_sm: from.into(),
        inter,
        start_ns,
        end_ns,
        inferred: false,
    };
    let mut a = Analysis {
        path: Some(vec![
            seg("a", "a", false, (0, 1_500)),
            seg("c", "a", true, (1_500, 2_001)),
        ]),
        ..Analysis::default()
    };
    a.critical_path.length_ns = 2_001;
    a
}

/// The edges of `a`'s path as the walk back hands them over: last first.
pub(crate) fn walked(a: &Analysis, s: &mut Interner) -> Vec<PathEdge> {
    let edges = a.path.iter().flatten().map(|seg| PathEdge {
        sys: s.intern(&seg.sys),
        sm: s.intern(&seg.sm),
        state: (!seg.state.is_empty()).then(|| s.intern(&seg.state)),
        from_sm: s.intern(&seg.from_sm),
        inter: seg.inter,
        start_ns: seg.start_ns,
        end_ns: seg.end_ns,
        inferred: seg.inferred,
    });
    edges.rev().collect()
}

/// The document as a `TraceWriter` streams it from the visits, then the
/// path's edges.
fn streamed(a: &Analysis, visits: &[Visit], s: &mut Interner) -> Vec<u8> {
    let edges = walked(a, s);
    let mut w = TraceWriter::new(Cursor::new(Vec::new()), Cursor::new(Vec::new()));
    for v in visits {
        w.visit(v, s);
    }
    for e in &edges {
        w.path_edge(e, s);
    }
    assert_eq!(w.path_edges(), edges.len() as u64);
    let mut path_free = a.clone();
    path_free.path = None;
    let mut out = Vec::new();
    w.finish(&path_free, s, &mut out).unwrap();
    out
}

#[test]
fn the_streamed_document_is_the_whole_one_byte_for_byte() {
    let mut s = Interner::new();
    let visits = visits(&mut s, 2_000);
    for a in [analysis(), Analysis::default()] {
        let whole = serde_json::to_vec(&document(&a, &visits, &s)).unwrap();
        let streamed = streamed(&a, &visits, &mut s);
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            String::from_utf8(whole).unwrap()
        );
    }
    // No visit at all: the path's track alone.
    let a = analysis();
    let whole = serde_json::to_vec(&document(&a, &[], &s)).unwrap();
    assert_eq!(streamed(&a, &[], &mut s), whole);
}

#[test]
fn events_leave_for_the_spool_while_the_pass_goes() {
    let mut s = Interner::new();
    let visits = visits(&mut s, 40_000);
    let spool = Shared::default();
    let mut w = TraceWriter::new(spool.clone(), Shared::default());
    for v in &visits {
        w.visit(v, &s);
    }
    // All but the writer's buffer (64 KiB) is in the spool before the end.
    let whole = serde_json::to_vec(&document(&Analysis::default(), &visits, &s)).unwrap();
    assert!(
        spool.len() + (1 << 16) >= whole.len() - 400,
        "{} of {} bytes spooled",
        spool.len(),
        whole.len()
    );
    assert_eq!((w.slices(), w.flows()), (40_000, 10_000));
    let mut out = Vec::new();
    w.finish(&Analysis::default(), &s, &mut out).unwrap();
    assert_eq!(out, whole);
}
