//! What the engine tells observers while it streams: each state visit that
//! ends and each dependence that resolves ([`Visit`]), handed to an
//! [`Observer`] together with the string table its symbols refer to.
//! Timelines, module costs and profiles are observers: they build their own
//! tables as the trace goes by and never hold the trace.

use crate::results::PathSegment;
use critpath_trace::{Interner, Sym};

/// What happened, for views that draw timelines: a state visit that ended,
/// or a dependence between SMs (a send received, a wait resolved). Names are
/// symbols of the source's string table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    State {
        sys: Sym,
        sm: Sym,
        state: Sym,
        start: u64,
        end: u64,
    },
    Link {
        from_sys: Sym,
        from_sm: Sym,
        to_sys: Sym,
        to_sm: Sym,
        sent: u64,
        received: u64,
        wait: bool,
    },
}

/// One edge of the critical path as the walk back meets it. Names are
/// symbols of the source's string table, as in [`Visit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathEdge {
    pub sys: Sym,
    /// The SM the edge's time is charged to: the one whose node ends the
    /// edge, or the holder of the state for a `held` piece.
    pub sm: Sym,
    /// The state the edge's time is charged to (none on an edge without
    /// one).
    pub state: Option<Sym>,
    /// The SM whose node starts the edge (differs from `sm` on inter-SM
    /// edges).
    pub from_sm: Sym,
    pub inter: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    /// An inter-SM edge into a receive whose link the source inferred
    /// (see [`PathSegment::inferred`]).
    pub inferred: bool,
}

impl PathEdge {
    /// The edge as a result row, its names resolved by `strings`.
    pub fn row(&self, strings: &Interner) -> PathSegment {
        PathSegment {
            sys: strings.resolve(self.sys).to_string(),
            sm: strings.resolve(self.sm).to_string(),
            state: self
                .state
                .map_or_else(String::new, |s| strings.resolve(s).to_string()),
            from_sm: strings.resolve(self.from_sm).to_string(),
            inter: self.inter,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            inferred: self.inferred,
        }
    }
}

/// Watches the engine's pass over a trace. Both methods do nothing unless
/// implemented.
pub trait Observer {
    /// A state visit ended or a dependence resolved; `strings` resolves its
    /// symbols.
    fn visit(&mut self, _v: &Visit, _strings: &Interner) {}
    /// A batch of records has been fed (the pump calls this; a good time to
    /// flush what was gathered).
    fn after_batch(&mut self, _strings: &Interner) {}
    /// Does it take the critical path's edges ([`Observer::path_edge`])?
    /// Then the path needs not be kept (`Options::keep_path`) to be seen.
    fn wants_path(&self) -> bool {
        false
    }
    /// One edge of the critical path, as the walk back from the path's end
    /// finds it: from the last edge to the first; `strings` resolves its
    /// symbols.
    fn path_edge(&mut self, _edge: &PathEdge, _strings: &Interner) {}
}

/// Any closure over visits is an observer.
impl<F: FnMut(&Visit, &Interner)> Observer for F {
    fn visit(&mut self, v: &Visit, strings: &Interner) {
        self(v, strings)
    }
}
