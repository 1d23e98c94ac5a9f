//! Which span is open on a lane when a link arrives there: a `recv` at
//! time `t` comes before the lane's calls and returns at `t`
//! ([`super::build::Phase`]), so the spans open then are those that started
//! before `t` and end at `t` or later.

use super::build::Lane;
use super::Span;
use rustc_hash::FxHashMap;

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
    lanes: FxHashMap<Lane<'a>, Vec<Entry>>,
}

impl<'a> OpenSpans<'a> {
    /// `spans` in nesting order (by start, the enclosing one first), each
    /// on its lane as `lane_of` says.
    pub(super) fn new(spans: &[Span], lane_of: &[Lane<'a>]) -> Self {
        let mut lanes: FxHashMap<Lane, Vec<Entry>> = FxHashMap::default();
        let mut stacks: FxHashMap<Lane, Vec<usize>> = FxHashMap::default();
        for (i, (s, &lane)) in spans.iter().zip(lane_of).enumerate() {
            let list = lanes.entry(lane).or_default();
            let stack = stacks.entry(lane).or_default();
            while stack.last().is_some_and(|&k| list[k].end <= s.start) {
                stack.pop();
            }
            stack.push(list.len());
            list.push(Entry {
                start: s.start,
                end: s.end,
                span: i,
                up: stack.iter().rev().nth(1).copied(),
            });
        }
        OpenSpans { lanes }
    }

    /// The innermost span open on `lane` when a link arrives at `t`;
    /// `None` when the lane is idle then. The spans open at `t` enclose
    /// the last one started before `t`, so the walk goes up from it.
    pub(super) fn innermost(&self, lane: &Lane, t: u64) -> Option<usize> {
        let list = self.lanes.get(lane)?;
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
