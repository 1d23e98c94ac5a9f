//! What the report shows of the critical path, gathered from the edges the
//! engine's walk back hands over (last first), so that the path is never
//! kept whole: its span, each lane's time on it and first start (which
//! lanes the timeline draws, see [`crate::timeline::lanes`]), and its
//! [`MAX_SEGMENTS`] longest segments with time, kept in a heap by length,
//! then position on the path (the earlier first).

use crate::timeline::lane_name;
use critpath_engine::results::PathSegment;
use critpath_engine::{Observer, PathEdge};
use critpath_trace::{Interner, Sym};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

/// Timeline segments drawn at most.
pub const MAX_SEGMENTS: usize = 20_000;

/// One lane's share of the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathLane {
    /// The lane's name ([`lane_name`]).
    pub name: String,
    /// Time of the path's edges charged to it.
    pub ns: u64,
    /// The earliest start of those edges.
    pub first_ns: u64,
}

/// The critical path as the report shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathPage {
    /// The earliest start and the latest end of its edges (`None`: no
    /// edge).
    pub span: Option<(u64, u64)>,
    /// Every lane with an edge of the path, in no order.
    pub lanes: Vec<PathLane>,
    /// The longest segments with time: by start (then the longer, then
    /// the earlier on the path first) when some were left out, else in the
    /// path's order.
    pub segments: Vec<PathSegment>,
    /// Segments with time left out.
    pub hidden: usize,
}

/// A segment kept: its length, then how many edges the walk met after it
/// (more: earlier on the path), order it.
struct Kept {
    len: u64,
    after: u64,
    seg: PathSegment,
}

impl Kept {
    fn key(&self) -> (u64, u64) {
        (self.len, self.after)
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Kept {}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Gathers a [`PathPage`] from the path's edges, last first: an observer
/// of the walk back (the path needs not be kept).
#[derive(Default)]
pub struct PathGather {
    /// Edges met so far.
    met: u64,
    /// Edges with time met so far.
    timed: usize,
    span: Option<(u64, u64)>,
    lanes: Vec<PathLane>,
    by_name: HashMap<String, usize>,
    by_sym: HashMap<(Sym, Sym), usize>,
    /// The longest segments, the least first out.
    longest: BinaryHeap<Reverse<Kept>>,
}

impl PathGather {
    /// The lane of name `name`, added when new.
    fn lane(&mut self, name: String, start_ns: u64) -> usize {
        let n = self.lanes.len();
        *self.by_name.entry(name).or_insert_with_key(|name| {
            self.lanes.push(PathLane {
                name: name.clone(),
                ns: 0,
                first_ns: start_ns,
            });
            n
        })
    }

    /// The edge before those met so far, on lane `lane`, over
    /// `[start_ns, end_ns)`; `row` makes its segment if it is kept.
    fn earlier(
        &mut self,
        lane: usize,
        (start_ns, end_ns): (u64, u64),
        row: impl FnOnce() -> PathSegment,
    ) {
        let l = &mut self.lanes[lane];
        l.ns += end_ns - start_ns;
        l.first_ns = l.first_ns.min(start_ns);
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(start_ns), b.max(end_ns)),
            None => (start_ns, end_ns),
        });
        let after = self.met;
        self.met += 1;
        if end_ns <= start_ns {
            return;
        }
        self.timed += 1;
        let len = end_ns - start_ns;
        let kept = |seg| Reverse(Kept { len, after, seg });
        if self.longest.len() < MAX_SEGMENTS {
            self.longest.push(kept(row()));
        } else if let Some(mut least) = self.longest.peek_mut() {
            if least.0.key() < (len, after) {
                *least = kept(row());
            }
        }
    }

    /// What was gathered.
    pub fn finish(self) -> PathPage {
        let mut kept: Vec<Kept> = self.longest.into_iter().map(|k| k.0).collect();
        let hidden = self.timed.saturating_sub(MAX_SEGMENTS);
        if hidden > 0 {
            // By start, then as ranked: the longer, then the earlier on
            // the path.
            kept.sort_by_key(|k| (k.seg.start_ns, Reverse(k.key())));
        } else {
            kept.sort_by_key(|k| Reverse(k.after));
        }
        PathPage {
            span: self.span,
            lanes: self.lanes,
            segments: kept.into_iter().map(|k| k.seg).collect(),
            hidden,
        }
    }
}

impl Observer for PathGather {
    fn wants_path(&self) -> bool {
        true
    }

    fn path_edge(&mut self, e: &PathEdge, strings: &Interner) {
        let lane = match self.by_sym.get(&(e.sys, e.sm)) {
            Some(&lane) => lane,
            None => {
                let name = lane_name(strings.resolve(e.sys), strings.resolve(e.sm));
                let lane = self.lane(name, e.start_ns);
                self.by_sym.insert((e.sys, e.sm), lane);
                lane
            }
        };
        self.earlier(lane, (e.start_ns, e.end_ns), || e.row(strings));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critpath_engine::Analysis;

    /// The page as the report made it from the whole path, kept (the
    /// oracle): lanes by name.
    fn whole(path: &[PathSegment]) -> PathPage {
        let mut keep: Vec<&PathSegment> = path.iter().filter(|s| s.end_ns > s.start_ns).collect();
        let hidden = keep.len().saturating_sub(MAX_SEGMENTS);
        if hidden > 0 {
            keep.sort_by_key(|s| Reverse(s.end_ns - s.start_ns));
            keep.truncate(MAX_SEGMENTS);
            keep.sort_by_key(|s| s.start_ns);
        }
        let mut lanes: HashMap<String, (u64, u64)> = HashMap::new();
        for s in path {
            let e = (lanes.entry(lane_name(&s.sys, &s.sm))).or_insert((0, s.start_ns));
            e.0 += s.end_ns - s.start_ns;
            e.1 = e.1.min(s.start_ns);
        }
        let mut lanes: Vec<PathLane> = (lanes.into_iter())
            .map(|(name, (ns, first_ns))| PathLane { name, ns, first_ns })
            .collect();
        lanes.sort_by(|x, y| x.name.cmp(&y.name));
        let start = path.iter().map(|s| s.start_ns).min();
        PathPage {
            span: start.map(|t0| (t0, path.iter().map(|s| s.end_ns).max().unwrap_or(0))),
            lanes,
            segments: keep.into_iter().cloned().collect(),
            hidden,
        }
    }

    /// The page gathered from the path's edges as the walk hands them
    /// over, lanes by name, and the most segments it held at once.
    fn gathered(path: &[PathSegment]) -> (PathPage, usize) {
        let a = Analysis {
            path: Some(path.to_vec()),
            ..Analysis::default()
        };
        let mut s = Interner::new();
        let mut g = PathGather::default();
        let mut most = 0;
        for e in crate::perfetto::tests::walked(&a, &mut s) {
            g.path_edge(&e, &s);
            most = most.max(g.longest.len());
        }
        let mut page = g.finish();
        page.lanes.sort_by(|x, y| x.name.cmp(&y.name));
        (page, most)
    }

    /// A path of `n` segments in time order: lengths of a few values (many
    /// ties), some without time, some overlapping, on 40 SMs of two
    /// systems.
    fn path(n: usize) -> Vec<PathSegment> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut t = 1_000;
        (0..n)
            .map(|_| {
                let len = [0, 1, 5, 5, 20, 100, 100][next(7) as usize] * (1 + next(3));
                t += next(40);
                let (sm, from) = (next(40), next(40));
                PathSegment {
                    sys: ["local", "h2"][(sm % 2) as usize].into(),
                    sm: format!("sm{sm}"),
                    state: ["", "run", "wait"][next(3) as usize].into(),
                    from_sm: format!("sm{from}"),
                    inter: sm != from,
                    start_ns: t - len.min(t),
                    end_ns: t,
                    inferred: sm != from && next(4) == 0,
                }
            })
            .collect()
    }

    #[test]
    fn the_walks_edges_give_the_page_of_the_whole_path_holding_at_most_its_segments() {
        for n in [0, 1, 1_000, 3 * MAX_SEGMENTS] {
            let p = path(n);
            let (page, most) = gathered(&p);
            assert_eq!(page, whole(&p), "{n} segments");
            assert!(most <= MAX_SEGMENTS, "{most} segments held at once");
        }
        let (page, _) = gathered(&path(3 * MAX_SEGMENTS));
        assert!(page.hidden > 0 && page.segments.len() == MAX_SEGMENTS);
        assert!(page.segments.iter().any(|s| s.inferred));
    }
}
