//! Which span is open on a lane when a link arrives there: a `recv` at
//! time `t` comes before the lane's calls and returns at `t`
//! ([`super::build::Phase`]), so the spans open then are those that started
//! before `t` and end at `t` or later.

use super::lanes::Lane;
use super::Span;
use rustc_hash::FxHashMap;
use std::ops::Range;

/// A span on its lane, and the span enclosing it there.
struct Entry {
    start: u64,
    end: u64,
    span: usize,
    /// The enclosing span's place in the lane's list.
    up: Option<usize>,
}

/// Per lane, its spans in nesting order with their enclosing spans.
pub(super) struct OpenSpans<'a> {
    /// Every lane's list, one after the other.
    entries: Vec<Entry>,
    /// Where each lane's list is in `entries`.
    lanes: FxHashMap<Lane<'a>, Range<usize>>,
}

impl<'a> OpenSpans<'a> {
    /// `spans` in nesting order (by start, the enclosing one first), each
    /// on its lane as `lane_of` says.
    pub(super) fn new(spans: &[Span], lane_of: &[Lane<'a>]) -> Self {
        // The spans a lane's together, each lane's in nesting order.
        let mut order: Vec<usize> = (0..spans.len()).collect();
        order.sort_by_key(|&i| lane_of[i]);
        let mut entries: Vec<Entry> = Vec::with_capacity(spans.len());
        let mut lanes = FxHashMap::default();
        let mut stack: Vec<usize> = Vec::new();
        for run in order.chunk_by(|&a, &b| lane_of[a] == lane_of[b]) {
            let list = entries.len();
            stack.clear();
            for &i in run {
                let s = &spans[i];
                while stack
                    .last()
                    .is_some_and(|&k| entries[list + k].end <= s.start)
                {
                    stack.pop();
                }
                let up = stack.last().copied();
                stack.push(entries.len() - list);
                entries.push(Entry {
                    start: s.start,
                    end: s.end,
                    span: i,
                    up,
                });
            }
            lanes.insert(lane_of[run[0]], list..entries.len());
        }
        OpenSpans { entries, lanes }
    }

    /// The innermost span open on `lane` when a link arrives at `t`;
    /// `None` when the lane is idle then. The spans open at `t` enclose
    /// the last one started before `t`, so the walk goes up from it.
    pub(super) fn innermost(&self, lane: &Lane, t: u64) -> Option<usize> {
        let list = &self.entries[self.lanes.get(lane)?.clone()];
        let mut k = list.partition_point(|e| e.start < t).checked_sub(1)?;
        loop {
            let e = &list[k];
            if e.end >= t {
                return Some(e.span);
            }
            k = e.up?;
        }
    }
}
