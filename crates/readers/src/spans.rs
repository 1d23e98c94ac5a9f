//! Distributed-tracing spans (OpenTelemetry OTLP JSON, Jaeger JSON) as
//! critpath records: the critical path of a distributed request.
//!
//! Each service is an SM; spans of one service that overlap without nesting
//! go on extra lanes (`SERVICE#2`, ...), so each lane is in one state at a
//! time. A span is an implicit software state (`call` at its start, `ret` at
//! its end), gaps are `idle`. Links: a parent on another lane `send`s when a
//! child starts and the child's lane `recv`s; the child `send`s when it ends
//! and the parent's lane `recv`s then (re-entering the state it is in), so a
//! parent that waits for its children has them on its path; a
//! follows-from reference links the end of one span to the start of the next.

use crate::tracks::{Slice, Tracks};
use critpath_trace::{Event, Interner, LinkId, Location, ReadError, Sym, VecSource, Who};
use serde_json::Value;
use std::collections::HashMap;

struct Span {
    id: String,
    parent: Option<String>,
    follows: Vec<String>,
    service: String,
    name: String,
    start: u64,
    end: u64,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn nanos(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// Does this JSON document look like spans?
pub fn looks_like(head: &str) -> bool {
    head.contains("\"resourceSpans\"")
        || (head.contains("\"spans\"") && head.contains("\"traceID\""))
}

fn otlp(doc: &Value, out: &mut Vec<Span>) {
    for rs in doc["resourceSpans"].as_array().into_iter().flatten() {
        let service = rs["resource"]["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == "service.name")
            .and_then(|a| a["value"]["stringValue"].as_str())
            .unwrap_or("unknown_service")
            .to_string();
        let scopes = rs["scopeSpans"]
            .as_array()
            .or_else(|| rs["instrumentationLibrarySpans"].as_array());
        for ss in scopes.into_iter().flatten() {
            for sp in ss["spans"].as_array().into_iter().flatten() {
                let (Some(id), Some(start), Some(end)) = (
                    text(&sp["spanId"]),
                    nanos(&sp["startTimeUnixNano"]),
                    nanos(&sp["endTimeUnixNano"]),
                ) else {
                    continue;
                };
                out.push(Span {
                    id,
                    parent: text(&sp["parentSpanId"]),
                    follows: sp["links"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|l| text(&l["spanId"]))
                        .collect(),
                    service: service.clone(),
                    name: sp["name"].as_str().unwrap_or("?").to_string(),
                    start,
                    end: end.max(start),
                });
            }
        }
    }
}

fn jaeger(doc: &Value, out: &mut Vec<Span>) {
    for tr in doc["data"].as_array().into_iter().flatten() {
        let procs = &tr["processes"];
        for sp in tr["spans"].as_array().into_iter().flatten() {
            let (Some(id), Some(start)) = (text(&sp["spanID"]), sp["startTime"].as_u64()) else {
                continue;
            };
            let dur = sp["duration"].as_u64().unwrap_or(0);
            let mut parent = None;
            let mut follows = Vec::new();
            for r in sp["references"].as_array().into_iter().flatten() {
                if let Some(s) = text(&r["spanID"]) {
                    if r["refType"] == "CHILD_OF" {
                        parent = Some(s);
                    } else {
                        follows.push(s);
                    }
                }
            }
            let service = sp["processID"]
                .as_str()
                .and_then(|p| procs[p]["serviceName"].as_str())
                .unwrap_or("unknown_service")
                .to_string();
            out.push(Span {
                id,
                parent,
                follows,
                service,
                name: sp["operationName"].as_str().unwrap_or("?").to_string(),
                start: start * 1000,
                end: (start + dur) * 1000,
            });
        }
    }
}

/// At one time, in dependence order: a lane starts idle; a child that ends
/// sends, its parent receives; then a parent that starts a child sends and
/// the child receives; then each lane's calls and returns in their order.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Phase {
    Init = 0,
    EndSend = 1,
    EndRecv = 2,
    StartSend = 3,
    StartRecv = 4,
    Track = 5,
}

/// Reads OTLP or Jaeger JSON spans into records in time order.
pub fn read(bytes: &[u8], name: &str) -> Result<VecSource, ReadError> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| {
        ReadError::new(
            name,
            Location::Line(e.line() as u64),
            format!("expected OpenTelemetry or Jaeger JSON spans: {e}"),
            true,
        )
    })?;
    let mut spans = Vec::new();
    otlp(&doc, &mut spans);
    jaeger(&doc, &mut spans);
    if spans.is_empty() {
        return Err(ReadError::new(
            name,
            Location::File,
            "no spans found (expected OTLP `resourceSpans` or Jaeger `data[].spans`)",
            true,
        ));
    }
    // Lanes: per service, spans sorted by start (enclosing first); a span
    // goes on the first lane where it nests in the open span or follows it.
    spans.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.id.cmp(&b.id))
    });
    let mut lanes: HashMap<String, Vec<Vec<u64>>> = HashMap::new();
    let mut lane_of: Vec<(String, usize)> = Vec::with_capacity(spans.len());
    for s in &spans {
        let ls = lanes.entry(s.service.clone()).or_default();
        let mut chosen = None;
        for (i, stack) in ls.iter_mut().enumerate() {
            while stack.last().is_some_and(|&end| end <= s.start) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| s.end <= end) {
                stack.push(s.end);
                chosen = Some(i);
                break;
            }
        }
        let i = chosen.unwrap_or_else(|| {
            ls.push(vec![s.end]);
            ls.len() - 1
        });
        lane_of.push((s.service.clone(), i));
    }
    let mut tr: Tracks<Phase> = Tracks::new();
    let lane_sm = |strings: &mut Interner, (svc, i): &(String, usize)| {
        strings.intern(&if *i == 0 {
            svc.clone()
        } else {
            format!("{svc}#{}", i + 1)
        })
    };
    let index: HashMap<&str, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut by_lane: std::collections::BTreeMap<(String, usize), Vec<Slice>> = Default::default();
    for (i, (l, s)) in lane_of.iter().zip(&spans).enumerate() {
        by_lane.entry(l.clone()).or_default().push(Slice {
            start: s.start,
            end: s.end,
            name: s.name.clone(),
            order: i,
        });
    }
    for (lane, mut list) in by_lane {
        let sm = lane_sm(&mut tr.strings, &lane);
        tr.track(sm, &mut list, Phase::Init, Phase::Track);
    }
    // Links between lanes. `end`: the link leaves at a span's end.
    let link = |tr: &mut Tracks<Phase>,
                from: Sym,
                t_send: u64,
                to: Sym,
                t_recv: u64,
                key: String,
                end: bool| {
        let id = LinkId::Str(tr.strings.intern(&key));
        let idle = tr.idle;
        let send = if end {
            Phase::EndSend
        } else {
            Phase::StartSend
        };
        let recv = if end && t_recv == t_send {
            Phase::EndRecv
        } else {
            Phase::StartRecv
        };
        tr.push(
            t_send,
            send,
            Event::Send {
                who: Who::Sm(from),
                id,
            },
        );
        tr.push(
            t_recv,
            recv,
            Event::Recv {
                who: Who::Sm(to),
                id,
                state: idle,
            },
        );
    };
    for (i, s) in spans.iter().enumerate() {
        let sm = lane_sm(&mut tr.strings, &lane_of[i]);
        if let Some(&p) = s.parent.as_deref().and_then(|p| index.get(p)) {
            if lane_of[p] != lane_of[i] {
                let psm = lane_sm(&mut tr.strings, &lane_of[p]);
                link(
                    &mut tr,
                    psm,
                    s.start,
                    sm,
                    s.start,
                    format!("start:{}", s.id),
                    false,
                );
                if s.end <= spans[p].end {
                    link(
                        &mut tr,
                        sm,
                        s.end,
                        psm,
                        s.end,
                        format!("end:{}", s.id),
                        true,
                    );
                }
            }
        }
        for fr in &s.follows {
            if let Some(&p) = index.get(fr.as_str()) {
                if spans[p].end <= s.start {
                    let psm = lane_sm(&mut tr.strings, &lane_of[p]);
                    link(
                        &mut tr,
                        psm,
                        spans[p].end,
                        sm,
                        s.start,
                        format!("follows:{fr}>{}", s.id),
                        true,
                    );
                }
            }
        }
    }
    Ok(tr.finish())
}
