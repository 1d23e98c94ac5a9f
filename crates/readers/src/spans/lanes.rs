//! A request's lanes: the SMs its spans run on. Per service, spans come
//! sorted by start (enclosing first); a span goes on the first lane where
//! it nests in the open span, that span one of its callers (an ancestor),
//! or follows it. A span never nests in one that did not call it: siblings
//! (or strangers) that overlap in time are concurrent, each on a lane of
//! its own, so that the parent waits for each. No span starting at or
//! after the end of the request's root span goes on the root's lane, so
//! that the lane's last transition is the root's end.
//!
//! The first lane that fits is found without looking at every lane: a
//! lane that is empty at a span's start is among the service's free lanes
//! (the lowest is a candidate), and a lane whose open span can be the
//! span's caller is the lane of one of its ancestors. A fan-out of N
//! concurrent calls to one service makes N lanes in O(N log N), not
//! O(N²).

use super::tree::Ancestry;
use super::Span;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// A lane: its service (borrowed from its spans) and its number within
/// the service.
pub(super) type Lane<'a> = (&'a str, usize);

/// One service's lanes.
#[derive(Default)]
struct Lanes {
    /// Each lane's open spans (end, index), outermost first; their ends
    /// never grow from the outermost in (a span nests in the one below).
    stacks: Vec<Vec<(u64, usize)>>,
    /// The empty lanes, the root's lane once closed excepted.
    free: BTreeSet<usize>,
    /// The other lanes, by the end of their outermost span (when it
    /// ends the whole lane is empty).
    busy: BinaryHeap<Reverse<(u64, usize)>>,
}

/// The root's lane once placed: its service, number and the root's end.
type Sealed<'a> = Option<(&'a str, usize, u64)>;

/// Whether lane `at` of `svc` is the root's, closed to a span starting at
/// `start`.
fn closed(sealed: Sealed, svc: &str, at: usize, start: u64) -> bool {
    sealed.is_some_and(|(s, lane, end)| lane == at && start >= end && s == svc)
}

/// Each span's lane (`parent`: each span's parent, by index; `tree` its
/// ancestry), and whether the root (`root`) is outermost on its lane
/// (then that lane's last transition is the root's end).
pub(super) fn assign_lanes<'a>(
    spans: &'a [Span],
    parent: &[Option<usize>],
    tree: &Ancestry,
    root: Option<usize>,
) -> (Vec<Lane<'a>>, bool) {
    let mut services: FxHashMap<&str, Lanes> = FxHashMap::default();
    let mut lane_of: Vec<Lane> = Vec::with_capacity(spans.len());
    let mut sealed: Sealed = None;
    let mut outermost = false;
    for (k, s) in spans.iter().enumerate() {
        let svc = s.service.as_str();
        let lanes = services.entry(svc).or_default();
        while let Some(&Reverse((end, at))) = lanes.busy.peek() {
            if end > s.start {
                break;
            }
            lanes.busy.pop();
            lanes.stacks[at].clear();
            if !closed(sealed, svc, at, s.start) {
                lanes.free.insert(at);
            }
        }
        let mut best = lanes.free.first().copied();
        // A caller open on a lane: the lowest such lane, the ancestors
        // walked up until no lower lane is possible. (An ancestor placed
        // after the span, sharing its bounds, cannot be open yet.)
        let mut up = parent[k];
        while let Some(p) = up.filter(|&p| best != Some(0) && tree.is_ancestor(p, k)) {
            up = parent[p];
            let Some(&(psvc, at)) = lane_of.get(p) else {
                continue;
            };
            if best.is_some_and(|b| at >= b) || psvc != svc || closed(sealed, svc, at, s.start) {
                continue;
            }
            let stack = &mut lanes.stacks[at];
            while stack.last().is_some_and(|&(end, _)| end <= s.start) {
                stack.pop();
            }
            if stack
                .last()
                .is_some_and(|&(end, top)| top == p && s.end <= end)
            {
                best = Some(at);
            }
        }
        let at = best.unwrap_or_else(|| {
            lanes.stacks.push(Vec::new());
            lanes.stacks.len() - 1
        });
        let stack = &mut lanes.stacks[at];
        if stack.is_empty() {
            lanes.free.remove(&at);
            lanes.busy.push(Reverse((s.end, at)));
        }
        stack.push((s.end, k));
        if Some(k) == root {
            sealed = Some((svc, at, s.end));
            outermost = stack.len() == 1;
        }
        lane_of.push((svc, at));
    }
    (lane_of, outermost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The rule as written: every lane of the service looked at in turn.
    fn first_fit<'a>(
        spans: &'a [Span],
        tree: &Ancestry,
        root: Option<usize>,
    ) -> (Vec<Lane<'a>>, bool) {
        // Every lane in the order made: its service and the spans open on it
        // (end, index), outermost first (a request has a few lanes).
        let mut lanes: Vec<(&str, Vec<(u64, usize)>)> = Vec::new();
        let mut lane_of: Vec<Lane> = Vec::with_capacity(spans.len());
        // The root's lane and the root's end, once placed.
        let mut sealed: Option<(usize, u64)> = None;
        let mut outermost = false;
        for (k, s) in spans.iter().enumerate() {
            let svc = s.service.as_str();
            // The lanes of the service before the one chosen.
            let mut i = 0;
            let mut chosen = None;
            for (at, (_, stack)) in lanes.iter_mut().enumerate().filter(|(_, (l, _))| *l == svc) {
                let closed = sealed.is_some_and(|(lane, end)| lane == at && s.start >= end);
                while stack.last().is_some_and(|&(end, _)| end <= s.start) {
                    stack.pop();
                }
                let nests = |&(end, open): &(u64, usize)| s.end <= end && tree.is_ancestor(open, k);
                if !closed && stack.last().is_none_or(nests) {
                    stack.push((s.end, k));
                    chosen = Some(at);
                    break;
                }
                i += 1;
            }
            let at = chosen.unwrap_or_else(|| {
                lanes.push((svc, vec![(s.end, k)]));
                lanes.len() - 1
            });
            if Some(k) == root {
                sealed = Some((at, s.end));
                outermost = lanes[at].1.len() == 1;
            }
            lane_of.push((svc, i));
        }
        (lane_of, outermost)
    }

    /// Spans by start: (service, parent, start step, length).
    fn spans_of(raw: &[(u8, Option<usize>, u64, u64)]) -> (Vec<Span>, Vec<Option<usize>>) {
        let mut t = 0;
        let mut spans = Vec::new();
        let mut parent = Vec::new();
        for (k, &(svc, p, step, len)) in raw.iter().enumerate() {
            t += step;
            spans.push(Span {
                service: format!("s{svc}"),
                start: t,
                end: t + len,
                ..Span::default()
            });
            parent.push(p.filter(|&p| p < k));
        }
        (spans, parent)
    }

    proptest! {
        #[test]
        fn the_first_lane_that_fits_as_if_every_lane_were_looked_at(
            raw in prop::collection::vec(
                (0u8..3, prop::option::weighted(0.8, 0usize..40), 0u64..4, 0u64..30),
                1..40,
            ),
            root in prop::option::of(0usize..40),
        ) {
            let (spans, parent) = spans_of(&raw);
            let tree = Ancestry::new(&parent);
            let root = root.filter(|&r| r < spans.len());
            prop_assert_eq!(
                assign_lanes(&spans, &parent, &tree, root),
                first_fit(&spans, &tree, root)
            );
        }
    }

    #[test]
    fn a_fan_out_makes_a_lane_a_call_and_nested_calls_share_one() {
        // 0 calls 1..=3 at once (three lanes of s0 besides 0's); 4 nests
        // in 3 (3's lane); 5 starts after all end (the first lane free).
        let raw = [
            (0, None, 0, 100),
            (0, Some(0), 1, 50),
            (0, Some(0), 0, 50),
            (0, Some(0), 0, 50),
            (0, Some(3), 1, 10),
            (0, Some(0), 60, 5),
        ];
        let (spans, parent) = spans_of(&raw);
        let tree = Ancestry::new(&parent);
        let (lanes, outermost) = assign_lanes(&spans, &parent, &tree, Some(0));
        let at: Vec<usize> = lanes.iter().map(|l| l.1).collect();
        assert_eq!(at, [0, 0, 1, 2, 2, 0]);
        assert!(outermost);
    }
}
