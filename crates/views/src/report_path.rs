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
    /// The longest segments with time: in time order when some were
    /// left out, else in the path's order.
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
        let key = (end_ns - start_ns, after);
        if self.longest.len() >= MAX_SEGMENTS {
            match self.longest.peek_mut() {
                Some(mut least) if least.0.key() < key => {
                    least.0 = Kept {
                        len: key.0,
                        after,
                        seg: row(),
                    };
                }
                _ => {}
            }
            return;
        }
        self.longest.push(Reverse(Kept {
            len: key.0,
            after,
            seg: row(),
        }));
    }

    /// What was gathered.
    pub fn finish(self) -> PathPage {
        let mut kept: Vec<Kept> = self.longest.into_iter().map(|k| k.0).collect();
        let hidden = self.timed.saturating_sub(MAX_SEGMENTS);
        if hidden > 0 {
            kept.sort_by_key(|k| (k.seg.start_ns, Reverse(k.after)));
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
