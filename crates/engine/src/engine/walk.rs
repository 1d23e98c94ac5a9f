//! The backwards walk: from the destination node, follow each node's chosen
//! predecessor in the node log to the path's start, charging every edge's
//! weight to its cgraph edge and state as critical time, and keeping the
//! path's segments and windows when asked.

use super::blame::Blamer;
use super::windows::Windows;
use super::{Engine, NodeRef, NONE32};
use crate::nodelog::NO_PRED;
use crate::results::{CriticalPath, Endpoint, PathSegment};
use critpath_trace::{Interner, Sym};
use std::io;

/// One edge of the path as the walk meets it: cgraph edge ends, state key,
/// inter-SM or not, and its time span.
pub(super) struct Segment {
    from: u32,
    to: u32,
    key: u32,
    inter: bool,
    span: (u64, u64),
}

/// What the walk found.
pub(super) struct Walked {
    pub path: CriticalPath,
    /// The path's edges from the end back to the start, when kept.
    pub segments: Vec<Segment>,
    pub windows: Option<Windows>,
    /// Path time blamed on the SMs that held what states waited for.
    pub blame: Blamer,
}

impl Engine<'_> {
    /// Walks the node log back from `dest` (node and SM), if any.
    pub(super) fn walk(
        &mut self,
        dest: Option<(NodeRef, u32)>,
        strings: &Interner,
    ) -> io::Result<Walked> {
        let mut w = Walked {
            path: CriticalPath::default(),
            segments: Vec::new(),
            windows: Windows::new(self.opts.window_ns),
            blame: Blamer::default(),
        };
        let Some((n, sm)) = dest else {
            return Ok(w);
        };
        let s = &self.m.sms[sm as usize];
        w.path.found = true;
        w.path.length_ns = n.l.max(0) as u64;
        w.path.end = endpoint(strings, (s.sys, s.name), n.t);
        let (mut id, mut t) = (n.id, n.t);
        let hand_over = self.observer.as_ref().is_some_and(|o| o.wants_path());
        loop {
            let e = self.logs.nodes.get(id)?;
            if e.pred == NO_PRED {
                let s = &self.m.sms[e.tag as usize];
                w.path.start = endpoint(strings, (s.sys, s.name), e.weight);
                w.blame.end();
                return Ok(w);
            }
            let ce = &self.g.cedges[e.tag as usize];
            let sms = (
                self.g.cnodes[ce.from as usize].sm,
                self.g.cnodes[ce.to as usize].sm,
            );
            if ce.held_for != NONE32 {
                // A piece held by the waiter itself blames no one.
                let holder = self.m.keys[ce.key as usize].sm;
                let weight = if holder == sms.1 { 0 } else { e.weight };
                w.blame.held(ce.held_for, holder, weight);
            } else {
                w.blame.edge(sms, ce.key, e.weight, ce.held);
            }
            let ce = &mut self.g.cedges[e.tag as usize];
            ce.critical += e.weight;
            if ce.key != NONE32 {
                self.m.keys[ce.key as usize].critical += e.weight;
            }
            w.path.edges += 1;
            if let Some(win) = w.windows.as_mut() {
                win.add(ce.key, (t.saturating_sub(e.weight), t));
            }
            let seg = Segment {
                from: ce.from,
                to: ce.to,
                key: ce.key,
                inter: ce.inter,
                span: (t - e.weight.min(t), t),
            };
            if hand_over {
                let row = self.segment_row(&seg, strings);
                self.observer.as_mut().expect("checked").path_edge(&row);
            }
            if self.opts.keep_path {
                w.segments.push(seg);
            }
            t = t.saturating_sub(e.weight);
            id = e.pred;
        }
    }

    /// The path's segments from start to end, as result rows.
    pub(super) fn segment_rows(
        &self,
        mut segments: Vec<Segment>,
        strings: &Interner,
    ) -> Vec<PathSegment> {
        segments.reverse();
        segments
            .iter()
            .map(|seg| self.segment_row(seg, strings))
            .collect()
    }

    /// One segment as a result row.
    fn segment_row(&self, seg: &Segment, strings: &Interner) -> PathSegment {
        // The SM whose state the time is charged to: the edge's own SM, or
        // the holder for a `held` piece.
        let sm = match seg.key {
            NONE32 => self.g.cnodes[seg.to as usize].sm,
            key => self.m.keys[key as usize].sm,
        };
        let s = &self.m.sms[sm as usize];
        let from_sm = &self.m.sms[self.g.cnodes[seg.from as usize].sm as usize];
        PathSegment {
            sys: strings.resolve(s.sys).to_string(),
            sm: strings.resolve(s.name).to_string(),
            state: self.state_name(seg.key, strings),
            from_sm: strings.resolve(from_sm.name).to_string(),
            inter: seg.inter,
            start_ns: seg.span.0,
            end_ns: seg.span.1,
        }
    }
}

/// A path end: SM `(sys, name)` at `t`.
fn endpoint(strings: &Interner, (sys, name): (Sym, Sym), t: u64) -> Endpoint {
    Endpoint {
        sys: strings.resolve(sys).to_string(),
        sm: strings.resolve(name).to_string(),
        t,
    }
}
