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
//! span nested in the parent) stays work. A child that starts after its
//! parent ended (a message handled later) is linked from the parent's end,
//! as a follows-from span is. The request's path ends with
//! its root span: the records' scope names the root's lane as the
//! destination, and spans after the root's end keep off that lane.

use super::cycles::break_cycles;
use super::lanes::{assign_lanes, Lane};
use super::open::OpenSpans;
use super::outlive::{
    after_root, cut_at_parents, depths, id_index, label, parents, parents_in, request_root,
};
use super::repeats::drop_repeats;
use super::sanity::check;
use super::shared::attach_to_servers;
use super::tree::Ancestry;
use super::Span;
use crate::tracks::{Slice, Tracks};
use critpath_trace::{Event, Interner, Sym, Who};
use rustc_hash::FxHashMap;

/// At one time, in dependence order: a lane starts idle; then the ends of
/// spans, the deepest first (a child's end reaches its parent before the
/// parent's own end leaves for its parent: a child cut at its parent's end
/// ends the parent's wait); then the starts, the root's first (a span's
/// start reaches it before it starts its children); then each lane's calls
/// and returns in their order. Within `End` and `Start` the records of a
/// link keep their order (send, then receive) and links are ordered by
/// [`slot`].
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
pub(super) enum Phase {
    Init = 0,
    End = 1,
    Start = 2,
    Track = 3,
}

impl From<Phase> for u8 {
    fn from(p: Phase) -> u8 {
        p as u8
    }
}

/// Where a link's record goes among those of its phase at one time: an
/// end by the depth of the span that ended, the deepest first; a start by
/// the depth of the span that started, the shallowest first.
fn slot(phase: Phase, depth: usize) -> (Phase, u32) {
    let d = depth.min(u32::MAX as usize / 2) as u32;
    match phase {
        Phase::End => (phase, u32::MAX - d),
        _ => (phase, d),
    }
}

/// The request's path ends with its root span's end, the last transition
/// of the root's lane (`sm`): the scope's destination, and an `after-root`
/// finding for the spans that started after that end (`spans` settled).
fn end_with_root(tr: &mut Tracks<Phase>, spans: &[Span], root: usize, sm: Sym) {
    let lane = tr.strings.resolve(sm).to_string();
    let at: Vec<(u64, u64)> = spans.iter().map(|s| (s.start, s.end)).collect();
    let after = after_root(spans, &at, root, |s| label(&s.service, &s.name));
    tr.diagnostics.extend(after.after_root(&lane));
    tr.scope.to = Some(lane);
}

fn lane_sm(strings: &mut Interner, &(svc, i): &Lane) -> Sym {
    match i {
        0 => strings.intern(svc),
        _ => strings.intern(&critpath_trace::lanes::lane_name(svc, i)),
    }
}

/// A link between lanes: its send leaves `from` and its receive arrives
/// at `to`, each in its [`slot`]; `waited`: the receiving lane was waiting
/// for it.
fn link(
    tr: &mut Tracks<Phase>,
    from: (Sym, u64, (Phase, u32)),
    to: (Sym, u64, (Phase, u32)),
    key: &str,
    waited: bool,
) {
    let id = tr.strings.intern_link(key);
    let state = tr.idle;
    let who = Who::Sm(from.0);
    tr.push_in(from.1, from.2, Event::Send { who, id });
    let who = Who::Sm(to.0);
    tr.push_in(
        to.1,
        to.2,
        Event::Recv {
            who,
            id,
            state,
            waited,
        },
    );
}

/// `args` written in `buf` (what it held before is gone).
fn named<'a>(buf: &'a mut String, args: std::fmt::Arguments) -> &'a str {
    buf.clear();
    let _ = std::fmt::Write::write_fmt(buf, args);
    buf
}

/// The links of every span to its parent (start and end) and to the spans
/// it follows from. A link is waited for when the lane it arrives on is in
/// the parent span itself (an end) or idle (a start).
fn links(
    tr: &mut Tracks<Phase>,
    spans: &[Span],
    (index, parent): (&FxHashMap<&str, usize>, &[Option<usize>]),
    lane_of: &[Lane],
) {
    let depth = depths(parent);
    let open = OpenSpans::new(spans, lane_of);
    // Each span's lane SM (all named already: the lanes' slices came first).
    let sms: Vec<Sym> = lane_of
        .iter()
        .map(|l| lane_sm(&mut tr.strings, l))
        .collect();
    // Each link's name, written in one buffer.
    let mut buf = String::new();
    for (i, s) in spans.iter().enumerate() {
        let sm = sms[i];
        let idle = || open.innermost(&lane_of[i], s.start).is_none();
        if let Some(p) = parent[i].filter(|&p| lane_of[p] != lane_of[i]) {
            let psm = sms[p];
            let key = named(&mut buf, format_args!("start:{}", s.id));
            if s.start >= spans[p].end {
                // A message handled after its sender's span ended: handed
                // on at that end, its time in the queue the receiver's wait.
                let from = (psm, spans[p].end, depth[p]);
                handed_on(tr, from, (sm, s.start, depth[i]), key, idle());
            } else {
                let at = slot(Phase::Start, depth[i]);
                link(tr, (psm, s.start, at), (sm, s.start, at), key, idle());
            }
            if s.start < spans[p].end && s.end <= spans[p].end {
                let waits = open.innermost(&lane_of[p], s.end) == Some(p);
                let key = named(&mut buf, format_args!("end:{}", s.id));
                let at = slot(Phase::End, depth[i]);
                link(tr, (sm, s.end, at), (psm, s.end, at), key, waits);
            }
        }
        for fr in &s.follows {
            if let Some(&p) = index.get(fr.as_str()) {
                if spans[p].end <= s.start {
                    let key = named(&mut buf, format_args!("follows:{fr}>{}", s.id));
                    let from = (sms[p], spans[p].end, depth[p]);
                    handed_on(tr, from, (sm, s.start, depth[i]), key, idle());
                }
            }
        }
    }
}

/// A link from the end of one span (`from`: its lane, end and depth) to
/// the later start of another (`to`), the receiving lane `idle` (then
/// waiting for it): the time between is the link's, charged to the state
/// the receiving lane leaves.
fn handed_on(
    tr: &mut Tracks<Phase>,
    (psm, sent, from_depth): (Sym, u64, usize),
    (sm, arrives, depth): (Sym, u64, usize),
    key: &str,
    idle: bool,
) {
    let out = slot(Phase::End, from_depth);
    let at = if sent == arrives {
        out
    } else {
        slot(Phase::Start, depth)
    };
    link(tr, (psm, sent, out), (sm, arrives, at), key, idle);
}

/// Sorts `spans` in nesting order: by start, the enclosing first (the
/// longer, then a caller before the spans it called, as spans of the same
/// bounds are), then by id.
fn nesting_order(spans: &mut [Span]) {
    let by_bounds = |x: &Span, y: &Span| x.start.cmp(&y.start).then(y.end.cmp(&x.end));
    spans.sort_by(|x, y| by_bounds(x, y).then(x.id.cmp(&y.id)));
    // Depths (a map of the ids) only where two spans share their bounds,
    // which most requests never have.
    if !spans.windows(2).any(|w| by_bounds(&w[0], &w[1]).is_eq()) {
        return;
    }
    let depth = depths(&parents(spans));
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&spans[a], &spans[b]);
        by_bounds(x, y)
            .then(depth[a].cmp(&depth[b]))
            .then(x.id.cmp(&y.id))
    });
    let mut sorted: Vec<Span> = order
        .iter()
        .map(|&i| std::mem::take(&mut spans[i]))
        .collect();
    for (s, t) in spans.iter_mut().zip(sorted.drain(..)) {
        *s = t;
    }
}

/// Spans as records: lanes, their slices, the links between them; first,
/// spans given again are dropped ([`drop_repeats`]), the children of a
/// shared Zipkin id go to its server span ([`attach_to_servers`]), spans on cycles of
/// parent references lose their parents ([`break_cycles`]), a child that started
/// before its parent starts with it, and one that outlives its parent
/// delays the parent's end (up to the root's).
pub(super) fn records(spans: &mut [Span]) -> Tracks<Phase> {
    let (kept, repeats) = drop_repeats(spans);
    let spans = &mut spans[..kept];
    attach_to_servers(spans, |s| s.service.clone());
    let cycles = break_cycles(spans);
    let (outlived, early) = cut_at_parents(spans);
    let context = check(spans, |s| &s.service).diagnostics();
    nesting_order(spans);
    let index = id_index(spans);
    let parent = parents_in(spans, &index);
    let root = request_root(spans);
    let (lane_of, outermost) = assign_lanes(spans, &parent, &Ancestry::new(&parent), root);
    let mut tr: Tracks<Phase> = Tracks::new();
    let slices: Vec<Slice> = (spans.iter().enumerate())
        .map(|(i, s)| Slice {
            start: s.start,
            end: s.end,
            name: tr.strings.intern(&s.name),
            order: i as u64,
        })
        .collect();
    // Lane by lane in their order, each lane's slices in the spans' order.
    let mut by_lane: Vec<usize> = (0..spans.len()).collect();
    by_lane.sort_by_key(|&i| lane_of[i]);
    let mut list = Vec::new();
    for run in by_lane.chunk_by(|&a, &b| lane_of[a] == lane_of[b]) {
        list.clear();
        list.extend(run.iter().map(|&i| slices[i]));
        let sm = lane_sm(&mut tr.strings, &lane_of[run[0]]);
        tr.track(sm, &mut list, Phase::Init, Phase::Track);
    }
    links(&mut tr, spans, (&index, &parent), &lane_of);
    if let Some(r) = root.filter(|_| outermost) {
        let sm = lane_sm(&mut tr.strings, &lane_of[r]);
        end_with_root(&mut tr, spans, r, sm);
    }
    tr.diagnostics.extend(outlived.outlived());
    tr.diagnostics.extend(early.early());
    tr.diagnostics.extend(context);
    tr.diagnostics.extend(repeats.diagnostics());
    tr.diagnostics.extend(cycles);
    tr
}
