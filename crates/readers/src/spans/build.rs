//! Spans of one request as records: lanes per service, each span a
//! `call`/`ret` on its lane, and the links between lanes.
//!
//! A parent waits for the children it called: a child on another lane
//! `send`s at its end and the parent's lane `recv`s then, and when the
//! parent itself is the innermost span open on its lane at that moment the
//! `recv` is a waited one (the parent's time since its lane's previous
//! transition weighs nothing: the child's end is what ended it). Overlapping
//! children (fan-out) each end the wait, so the parent waits for the last.
//! Likewise a lane that is idle when a span starts on it was waiting for
//! the call. Work of the parent's lane inside the child's time (another
//! span nested in the parent) stays work.

use super::open::OpenSpans;
use super::outlive::{cut_at_parents, id_index, parents_in};
use super::sanity::check;
use super::Span;
use crate::tracks::{Slice, Tracks};
use critpath_trace::{Event, Interner, Sym, Who};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// At one time, in dependence order: a lane starts idle; a child that ends
/// sends, its parent receives; then a parent that starts a child sends and
/// the child receives; then each lane's calls and returns in their order.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
pub(super) enum Phase {
    Init = 0,
    EndSend = 1,
    EndRecv = 2,
    StartSend = 3,
    StartRecv = 4,
    Track = 5,
}

impl From<Phase> for u8 {
    fn from(p: Phase) -> u8 {
        p as u8
    }
}

/// A lane: its service (borrowed from its spans) and its number within
/// the service.
pub(super) type Lane<'a> = (&'a str, usize);

/// Lanes: per service, spans sorted by start (enclosing first); a span
/// goes on the first lane where it nests in the open span or follows it.
fn assign_lanes(spans: &[Span]) -> Vec<Lane<'_>> {
    let mut lanes: FxHashMap<&str, Vec<Vec<u64>>> = FxHashMap::default();
    let mut lane_of: Vec<Lane> = Vec::with_capacity(spans.len());
    for s in spans {
        let ls = lanes.entry(&s.service).or_default();
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
        lane_of.push((&s.service, i));
    }
    lane_of
}

fn lane_sm(strings: &mut Interner, &(svc, i): &Lane) -> Sym {
    match i {
        0 => strings.intern(svc),
        _ => strings.intern(&format!("{svc}#{}", i + 1)),
    }
}

/// A link between lanes; `end`: it leaves at a span's end; `waited`: the
/// receiving lane was waiting for it.
fn link(
    tr: &mut Tracks<Phase>,
    from: (Sym, u64),
    to: (Sym, u64),
    key: String,
    end: bool,
    waited: bool,
) {
    let id = tr.strings.intern_link(&key);
    let state = tr.idle;
    let send = if end {
        Phase::EndSend
    } else {
        Phase::StartSend
    };
    let recv = if end && to.1 == from.1 {
        Phase::EndRecv
    } else {
        Phase::StartRecv
    };
    let who = Who::Sm(from.0);
    tr.push(from.1, send, Event::Send { who, id });
    let who = Who::Sm(to.0);
    tr.push(
        to.1,
        recv,
        Event::Recv {
            who,
            id,
            state,
            waited,
        },
    );
}

/// The links of every span to its parent (start and end) and to the spans
/// it follows from. A link is waited for when the lane it arrives on is in
/// the parent span itself (an end) or idle (a start).
fn links(tr: &mut Tracks<Phase>, spans: &[Span], lane_of: &[Lane]) {
    let index = id_index(spans);
    let parent = parents_in(spans, &index);
    let open = OpenSpans::new(spans, lane_of);
    // Each span's lane SM (all named already: the lanes' slices came first).
    let sms: Vec<Sym> = lane_of
        .iter()
        .map(|l| lane_sm(&mut tr.strings, l))
        .collect();
    for (i, s) in spans.iter().enumerate() {
        let sm = sms[i];
        if let Some(p) = parent[i].filter(|&p| lane_of[p] != lane_of[i]) {
            let psm = sms[p];
            let key = format!("start:{}", s.id);
            let idle = open.innermost(&lane_of[i], s.start).is_none();
            link(tr, (psm, s.start), (sm, s.start), key, false, idle);
            if s.end <= spans[p].end {
                let waits = open.innermost(&lane_of[p], s.end) == Some(p);
                let key = format!("end:{}", s.id);
                link(tr, (sm, s.end), (psm, s.end), key, true, waits);
            }
        }
        for fr in &s.follows {
            if let Some(&p) = index.get(fr.as_str()) {
                if spans[p].end <= s.start {
                    let psm = sms[p];
                    let key = format!("follows:{fr}>{}", s.id);
                    let idle = open.innermost(&lane_of[i], s.start).is_none();
                    link(tr, (psm, spans[p].end), (sm, s.start), key, true, idle);
                }
            }
        }
    }
}

/// Spans as records: lanes, their slices, the links between them; a
/// child that outlives its parent is cut at the parent's end first.
pub(super) fn records(mut spans: Vec<Span>) -> Tracks<Phase> {
    let outlived = cut_at_parents(&mut spans);
    let context = check(&spans, |s| &s.service).diagnostics();
    spans.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.id.cmp(&b.id))
    });
    let lane_of = assign_lanes(&spans);
    let mut tr: Tracks<Phase> = Tracks::new();
    let mut by_lane: BTreeMap<Lane, Vec<Slice>> = BTreeMap::new();
    for (i, (&l, s)) in lane_of.iter().zip(&spans).enumerate() {
        by_lane.entry(l).or_default().push(Slice {
            start: s.start,
            end: s.end,
            name: tr.strings.intern(&s.name),
            order: i as u64,
        });
    }
    for (lane, mut list) in by_lane {
        let sm = lane_sm(&mut tr.strings, &lane);
        tr.track(sm, &mut list, Phase::Init, Phase::Track);
    }
    links(&mut tr, &spans, &lane_of);
    tr.diagnostics.extend(outlived.diagnostic());
    tr.diagnostics.extend(context);
    tr
}
