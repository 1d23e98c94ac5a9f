//! Chrome / Perfetto trace JSON (the Trace Event Format) as critpath records.
//!
//! Each thread `(pid, tid)` is an SM, named after its `thread_name` metadata
//! (`NAME:TID`) or `pid:tid`; each async track (`b`/`e` events) is an SM
//! named `CAT:ID`. Complete (`X`) and begin/end (`B`/`E`) slices become
//! implicit software states with `call`/`ret`, so nesting returns to the
//! enclosing slice and the gaps between slices are a state of their own,
//! `idle`. Flow events (`s`, `t`, `f`, and `bind_id` with
//! `flow_out`/`flow_in`) become `send`/`recv` links. Times (`ts`, `dur`) are
//! microseconds and become integer nanoseconds.
//!
//! The JSON is one document, so the importer reads it whole and sorts the
//! records in memory; convert big traces to `.cpt` once.

use crate::tracks::{Slice, Tracks};
use critpath_trace::{Event, LinkId, Location, ReadError, VecSource, Who};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

fn us(v: &Value) -> Option<u64> {
    let f = v.as_f64()?;
    (f.is_finite() && f >= 0.0).then(|| (f * 1000.0).round() as u64)
}

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// At one time: sends first (a point in the slice that may end then), then
/// receives (so the wait for a flow is charged to the state before the slice
/// it starts, often `idle`), then each track's calls and returns in their
/// own order.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Phase {
    Send = 0,
    Recv = 1,
    Track = 2,
}

/// Reads a Chrome / Perfetto JSON trace into records in time order.
pub fn read(bytes: &[u8], name: &str) -> Result<VecSource, ReadError> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| {
        ReadError::new(
            name,
            Location::Line(e.line() as u64),
            format!("expected Chrome/Perfetto trace JSON: {e}"),
            true,
        )
    })?;
    let events = match &doc {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("traceEvents") {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(ReadError::new(
                    name,
                    Location::File,
                    "expected a `traceEvents` array (Chrome/Perfetto trace JSON)",
                    true,
                ));
            }
        },
        _ => {
            return Err(ReadError::new(
                name,
                Location::File,
                "expected a JSON array or object of trace events",
                true,
            ))
        }
    };
    // Thread names first (metadata may come anywhere).
    let mut names: HashMap<(String, String), String> = HashMap::new();
    for e in events {
        if e["ph"] == "M" && e["name"] == "thread_name" {
            if let (Some(p), Some(t), Some(n)) = (
                id_text(&e["pid"]),
                id_text(&e["tid"]),
                e["args"]["name"].as_str(),
            ) {
                names.insert((p, t.clone()), format!("{n}:{t}"));
            }
        }
    }
    let track = |e: &Value| -> String {
        let p = id_text(&e["pid"]).unwrap_or_else(|| "0".into());
        let t = id_text(&e["tid"]).unwrap_or_else(|| "0".into());
        names
            .get(&(p.clone(), t.clone()))
            .cloned()
            .unwrap_or(format!("{p}:{t}"))
    };
    let mut slices: BTreeMap<String, Vec<Slice>> = BTreeMap::new();
    let mut open: HashMap<String, Vec<(u64, String, usize)>> = HashMap::new();
    // (time, phase, order, track, send?, link id)
    let mut flows: Vec<(u64, String, bool, String, usize)> = Vec::new();
    for (order, e) in events.iter().enumerate() {
        let ph = e["ph"].as_str().unwrap_or("");
        let ts = us(&e["ts"]);
        let ev_name = e["name"].as_str().unwrap_or("?").to_string();
        match (ph, ts) {
            ("X", Some(ts)) => {
                let dur = us(&e["dur"]).unwrap_or(0);
                let tr = track(e);
                slices.entry(tr.clone()).or_default().push(Slice {
                    start: ts,
                    end: ts + dur,
                    name: ev_name,
                    order,
                });
                if let Some(b) = id_text(&e["bind_id"]) {
                    if e["flow_out"] == true {
                        flows.push((ts + dur, tr.clone(), true, format!("bind:{b}"), order));
                    }
                    if e["flow_in"] == true {
                        flows.push((ts, tr, false, format!("bind:{b}"), order));
                    }
                }
            }
            ("B", Some(ts)) | ("E", Some(ts)) | ("b", Some(ts)) | ("e", Some(ts)) => {
                // Threads' B/E and async tracks' b/e: begin and end pairs.
                let tr = if ph == "B" || ph == "E" {
                    track(e)
                } else {
                    let cat = e["cat"].as_str().unwrap_or("async");
                    let id = id_text(&e["id"])
                        .or_else(|| id_text(&e["id2"]["local"]))
                        .unwrap_or_default();
                    format!("{cat}:{id}")
                };
                if ph == "B" || ph == "b" {
                    open.entry(tr).or_default().push((ts, ev_name, order));
                } else if let Some((start, n, o)) = open.get_mut(&tr).and_then(|s| s.pop()) {
                    slices.entry(tr).or_default().push(Slice {
                        start,
                        end: ts.max(start),
                        name: n,
                        order: o,
                    });
                }
                // An end without a begin is ignored.
            }
            ("s", Some(ts)) | ("t", Some(ts)) | ("f", Some(ts)) => {
                let cat = e["cat"].as_str().unwrap_or("");
                let Some(id) = id_text(&e["id"]) else {
                    continue;
                };
                let link = format!("flow:{cat}:{id}");
                let tr = track(e);
                if ph != "s" {
                    flows.push((ts, tr.clone(), false, link.clone(), order));
                }
                if ph != "f" {
                    flows.push((ts, tr, true, link, order));
                }
            }
            // Metadata, instants, counters, object events: no state.
            _ => {}
        }
    }
    // Slices still open at the end close at the last time seen.
    let last = slices
        .values()
        .flatten()
        .map(|s| s.end)
        .chain(flows.iter().map(|f| f.0))
        .max()
        .unwrap_or(0);
    for (tr, stack) in open {
        for (start, n, o) in stack {
            slices.entry(tr.clone()).or_default().push(Slice {
                start,
                end: last.max(start),
                name: n,
                order: o,
            });
        }
    }
    if slices.is_empty() && flows.is_empty() {
        return Err(ReadError::new(
            name,
            Location::File,
            "this Chrome/Perfetto trace holds no slices (X, B/E or b/e events) to analyze",
            true,
        ));
    }

    let mut tr: Tracks<Phase> = Tracks::new();
    for (name, mut list) in slices {
        let sm = tr.strings.intern(&name);
        tr.track(sm, &mut list, Phase::Track, Phase::Track);
    }
    // Flows: a send is a point in the sender's current state; a receive
    // re-enters the receiver's current state.
    flows.sort_by(|a, b| a.0.cmp(&b.0).then(a.4.cmp(&b.4)));
    for (t, name, send, link, _) in flows {
        let sm = Who::Sm(tr.strings.intern(&name));
        let id = LinkId::Str(tr.strings.intern(&link));
        let idle = tr.idle;
        if send {
            tr.push(t, Phase::Send, Event::Send { who: sm, id });
        } else {
            tr.push(
                t,
                Phase::Recv,
                Event::Recv {
                    who: sm,
                    id,
                    state: idle,
                },
            );
        }
    }
    Ok(tr.finish())
}
