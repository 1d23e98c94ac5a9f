//! What the importers of other tools' traces share: tracks of nested slices
//! turned into `call`/`ret` records with `idle` gaps, links between tracks,
//! and the ordering of everything that happens at one time.

use critpath_trace::{Event, Interner, Record, Sym, VecSource, Who};
use std::collections::HashMap;

/// A slice on one track.
pub struct Slice {
    pub start: u64,
    pub end: u64,
    pub name: String,
    /// Position in the input, to keep ties in file order.
    pub order: usize,
}

/// Records being built; `P` orders what happens at one time (lower first).
pub struct Tracks<P> {
    recs: Vec<(u64, P, usize, Record)>,
    pub strings: Interner,
    pub idle: Sym,
}

impl<P: Ord + Copy> Default for Tracks<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Ord + Copy> Tracks<P> {
    pub fn new() -> Self {
        let mut strings = Interner::new();
        let idle = strings.intern("idle");
        Tracks {
            recs: Vec::new(),
            strings,
            idle,
        }
    }

    pub fn push(&mut self, t: u64, phase: P, ev: Event) {
        let seq = self.recs.len();
        self.recs.push((
            t,
            phase,
            seq,
            Record {
                t,
                sys: Sym::LOCAL,
                ev,
            },
        ));
    }

    /// A track's slices as nested calls and returns, starting `idle` at the
    /// first slice (`init` phase); a slice that outlives the one enclosing
    /// it is cut at that one's end.
    pub fn track(&mut self, sm: Sym, slices: &mut [Slice], init: P, phase: P) {
        if slices.is_empty() {
            return;
        }
        let who = Who::Sm(sm);
        // Enclosing slices first: by start, then longest, then file order.
        slices.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.end.cmp(&a.end))
                .then(a.order.cmp(&b.order))
        });
        self.push(
            slices[0].start,
            init,
            Event::State {
                who,
                state: self.idle,
            },
        );
        let mut stack: Vec<(u64, Sym)> = Vec::new();
        for s in slices.iter() {
            while let Some(&(end, f)) = stack.last() {
                if end > s.start {
                    break;
                }
                stack.pop();
                self.push(end, phase, Event::Ret { who, func: f });
            }
            let end = stack.last().map_or(s.end, |&(pe, _)| s.end.min(pe));
            let f = self.strings.intern(&s.name);
            self.push(s.start, phase, Event::Call { who, func: f });
            stack.push((end, f));
        }
        while let Some((end, f)) = stack.pop() {
            self.push(end, phase, Event::Ret { who, func: f });
        }
    }

    /// The records in time order (phases, then insertion order, at one
    /// time); a receive re-enters the state its SM is in at that moment.
    pub fn finish(mut self) -> VecSource {
        self.recs
            .sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut stacks: HashMap<Sym, Vec<Sym>> = HashMap::new();
        let mut out = Vec::with_capacity(self.recs.len());
        for (_, _, _, mut r) in self.recs {
            match &mut r.ev {
                Event::State {
                    who: Who::Sm(sm),
                    state,
                } => stacks.entry(*sm).or_default().push(*state),
                Event::Call {
                    who: Who::Sm(sm),
                    func,
                } => stacks.entry(*sm).or_default().push(*func),
                Event::Ret {
                    who: Who::Sm(sm), ..
                } => {
                    stacks.entry(*sm).or_default().pop();
                }
                Event::Recv {
                    who: Who::Sm(sm),
                    state,
                    ..
                } => {
                    if let Some(&top) = stacks.get(sm).and_then(|s| s.last()) {
                        *state = top;
                    }
                }
                _ => {}
            }
            out.push(r);
        }
        VecSource::new(out, self.strings)
    }
}
