//! What the engine tells observers while it streams: each state visit that
//! ends and each dependence that resolves ([`Visit`]), handed to an
//! [`Observer`] together with the string table its symbols refer to.
//! Timelines, module costs and profiles are observers: they build their own
//! tables as the trace goes by and never hold the trace.

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

/// Watches the engine's pass over a trace. Both methods do nothing unless
/// implemented.
pub trait Observer {
    /// A state visit ended or a dependence resolved; `strings` resolves its
    /// symbols.
    fn visit(&mut self, _v: &Visit, _strings: &Interner) {}
    /// A batch of records has been fed (the pump calls this; a good time to
    /// flush what was gathered).
    fn after_batch(&mut self, _strings: &Interner) {}
}

/// Any closure over visits is an observer.
impl<F: FnMut(&Visit, &Interner)> Observer for F {
    fn visit(&mut self, v: &Visit, strings: &Interner) {
        self(v, strings)
    }
}
