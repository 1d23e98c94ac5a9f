//! The analysis as Chrome / Perfetto trace JSON: every state visit a slice
//! on its SM's track, every dependence a flow arrow, and the critical path
//! as a track of its own.

use critpath_engine::{Analysis, Visit};
use critpath_trace::{Interner, Sym};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The trace document of an analysis and the visits it streamed.
pub fn trace_json(a: &Analysis, visits: &[Visit], s: &Interner) -> Value {
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
    // The critical path as its own track, in red.
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
