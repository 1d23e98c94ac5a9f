//! What the importers of other tools' traces share: tracks of nested slices
//! turned into `call`/`ret` records with `idle` gaps, links between tracks,
//! and the ordering of everything that happens at one time.
//!
//! The records are put in time order by an external sort
//! ([`crate::recsort`]): past a budget they wait on disk, so a trace of any
//! length is imported in bounded memory.

use crate::extsort;
use crate::recsort::{RecordSort, SortedRecords, RECORD_BUDGET};
use crate::ties::Ties;
use critpath_trace::{
    Diagnostic, Event, Interner, LinkId, Pos, ReadError, Record, RecordSource, Scope, Summary, Sym,
    Who,
};
use rustc_hash::FxHashMap;
use std::collections::HashMap;

/// A slice on one track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub start: u64,
    pub end: u64,
    pub name: Sym,
    /// Position in the input, to keep ties in file order.
    pub order: u64,
}

impl Slice {
    /// The order a track's slices nest in: by start, then longest (the
    /// enclosing one first), then file order.
    pub fn nesting_key(&self) -> (u64, std::cmp::Reverse<u64>, u64) {
        (self.start, std::cmp::Reverse(self.end), self.order)
    }
}

/// Records being built; `P` orders what happens at one time (lower first).
pub struct Tracks<P> {
    recs: RecordSort,
    pub strings: Interner,
    pub idle: Sym,
    /// What the importer found about the input as a whole, handed out
    /// with the records' summary ([`RecordSource::summary`]).
    pub diagnostics: Vec<Diagnostic>,
    /// The part of the records an analysis covers when the user names no
    /// start or destination ([`RecordSource::scope`]).
    pub scope: Scope,
    /// The phases of sends and receives put in a causal order at each
    /// time ([`Tracks::order_links`]).
    links: Option<[u8; 2]>,
    _phase: std::marker::PhantomData<P>,
}

impl<P: Into<u8> + Copy> Default for Tracks<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Into<u8> + Copy> Tracks<P> {
    /// Tracks whose records sort in memory up to `CRITPATH_SORT_ITEMS`
    /// (about half a million by default), then on disk.
    pub fn new() -> Self {
        Self::with_budget(extsort::sort_budget(RECORD_BUDGET))
    }

    /// Tracks that keep at most `budget` records in memory.
    pub fn with_budget(budget: usize) -> Self {
        let mut strings = Interner::new();
        let idle = strings.intern("idle");
        Tracks {
            recs: RecordSort::with_budget(budget),
            strings,
            idle,
            diagnostics: Vec::new(),
            scope: Scope::default(),
            links: None,
            _phase: std::marker::PhantomData,
        }
    }

    /// The group of the records made from now on: an importer that builds
    /// tracks one after the other gives each its rank, so ties at one time
    /// follow the tracks' order.
    pub fn set_group(&mut self, group: u32) {
        self.recs.set_group(group);
    }

    /// At each time, the records of phases `send` and `recv` (sends and
    /// receives whose order the importer does not know) are handed out
    /// in a causal order: each SM's in the order pushed, each receive
    /// after the sends of its link; otherwise by phase and order pushed.
    /// `send` is the lower phase (the one that sorts first).
    pub fn order_links(&mut self, send: P, recv: P) {
        let (send, recv) = (send.into(), recv.into());
        assert!(send < recv, "sends sort before receives");
        self.links = Some([send, recv]);
    }

    pub fn push(&mut self, t: u64, phase: P, ev: Event) {
        self.recs.push(t, phase.into(), ev);
    }

    /// [`Tracks::push`] at a place `(phase, group)`: at one time and
    /// phase, a lower group's records come first, then each group's in the
    /// order made. The group of later records is left as it was.
    pub fn push_in(&mut self, t: u64, (phase, group): (P, u32), ev: Event) {
        self.recs.push_in_group(t, phase.into(), group, ev);
    }

    /// A `send` or `recv` whose link is named `PREFIX` followed by the
    /// number `n` (`ev`'s id is `LinkId::Num(n)`): the name is made when
    /// the record is handed out, as a transient link id, so a trace of
    /// millions of links keeps none of their names in memory.
    pub fn push_numbered_link(&mut self, t: u64, phase: P, ev: Event, prefix: Sym) {
        self.recs.push_keyed(t, phase.into(), ev, prefix.0);
    }

    /// A track's slices as nested calls and returns, starting `idle` at the
    /// first slice (`init` phase); a slice that outlives the one enclosing
    /// it is cut at that one's end.
    pub fn track(&mut self, sm: Sym, slices: &mut [Slice], init: P, phase: P) {
        slices.sort_by_key(Slice::nesting_key);
        self.nest(sm, slices.iter().copied(), init, phase);
    }

    /// [`Tracks::track`] of slices already in nesting order
    /// ([`Slice::nesting_key`]).
    pub fn nest(&mut self, sm: Sym, slices: impl IntoIterator<Item = Slice>, init: P, phase: P) {
        let who = Who::Sm(sm);
        let mut stack: Vec<(u64, Sym)> = Vec::new();
        let mut first = true;
        for s in slices {
            if first {
                let idle = self.idle;
                self.push(s.start, init, Event::State { who, state: idle });
                first = false;
            }
            while let Some(&(end, f)) = stack.last() {
                if end > s.start {
                    break;
                }
                stack.pop();
                self.push(end, phase, Event::Ret { who, func: f });
            }
            let end = stack.last().map_or(s.end, |&(pe, _)| s.end.min(pe));
            self.push(s.start, phase, Event::Call { who, func: s.name });
            stack.push((end, s.name));
        }
        while let Some((end, f)) = stack.pop() {
            self.push(end, phase, Event::Ret { who, func: f });
        }
    }

    /// The records in time order (phases, then insertion order, at one
    /// time) as a source; `rename` maps the SMs named by a placeholder to
    /// their final names. An error is one writing the sort's temporary
    /// files, for the input `name`.
    pub fn finish(self, name: &str, rename: HashMap<Sym, Sym>) -> Result<TrackSource, ReadError> {
        Ok(TrackSource {
            sorted: self.recs.finish(name)?,
            ties: self.links.map(Ties::new),
            strings: self.strings,
            rename: rename.into_iter().collect(),
            stacks: FxHashMap::default(),
            index: 0,
            diagnostics: self.diagnostics,
            scope: self.scope,
        })
    }
}

/// The records of [`Tracks`] in time order; a receive re-enters the state
/// its SM is in at that moment.
pub struct TrackSource {
    sorted: SortedRecords,
    ties: Option<Ties>,
    strings: Interner,
    rename: FxHashMap<Sym, Sym>,
    stacks: FxHashMap<Sym, Vec<Sym>>,
    index: u64,
    diagnostics: Vec<Diagnostic>,
    scope: Scope,
}

impl TrackSource {
    /// The record as the engine sees it: its SM renamed, a receive given
    /// the state its SM is in.
    fn settle(&mut self, mut r: Record) -> Record {
        let sm = match &mut r.ev {
            Event::State { who, .. }
            | Event::Call { who, .. }
            | Event::Ret { who, .. }
            | Event::Send { who, .. }
            | Event::Recv { who, .. } => match who {
                Who::Sm(sm) => {
                    *sm = self.rename.get(sm).copied().unwrap_or(*sm);
                    *sm
                }
                _ => return r,
            },
            _ => return r,
        };
        let stack = self.stacks.entry(sm).or_default();
        match &mut r.ev {
            Event::State { state, .. } => stack.push(*state),
            Event::Call { func, .. } => stack.push(*func),
            Event::Ret { .. } => {
                stack.pop();
            }
            Event::Recv { state, .. } => {
                if let Some(&top) = stack.last() {
                    *state = top;
                }
            }
            _ => {}
        }
        r
    }
}

impl TrackSource {
    /// The numbered link of `r` named `PREFIX` + number, as a transient id.
    fn name_link(&mut self, r: &mut Record, prefix: Sym) {
        if let Event::Send { id, .. } | Event::Recv { id, .. } = &mut r.ev {
            if let LinkId::Num(n) = *id {
                let text = format!("{}{n}", self.strings.resolve(prefix));
                *id = self.strings.transient_link(&text);
            }
        }
    }
}

impl RecordSource for TrackSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let next = match &mut self.ties {
            Some(ties) => ties.next(&mut self.sorted)?,
            None => self.sorted.next_keyed()?,
        };
        let Some(k) = next else {
            return Ok(None);
        };
        self.index += 1;
        let mut r = k.rec;
        if k.prefix != u32::MAX {
            self.name_link(&mut r, Sym(k.prefix));
        }
        Ok(Some((self.settle(r), Pos::record(self.index))))
    }
    fn strings(&self) -> &Interner {
        &self.strings
    }
    fn summary(&mut self) -> Summary {
        Summary {
            diagnostics: std::mem::take(&mut self.diagnostics),
            ..Summary::default()
        }
    }
    fn scope(&mut self) -> Scope {
        self.scope.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct P;
    impl From<P> for u8 {
        fn from(_: P) -> u8 {
            0
        }
    }

    fn records(budget: usize) -> Vec<Record> {
        let mut tr: Tracks<P> = Tracks::with_budget(budget);
        let f = tr.strings.intern("f");
        for lane in 0..20u64 {
            let sm = tr.strings.intern(&format!("lane{lane}"));
            let mut slices: Vec<Slice> = (0..50u64)
                .rev()
                .map(|i| Slice {
                    start: i * 10 + lane,
                    end: i * 10 + lane + 5,
                    name: f,
                    order: i,
                })
                .collect();
            tr.track(sm, &mut slices, P, P);
        }
        let mut src = tr.finish("t", HashMap::new()).unwrap();
        let mut out = Vec::new();
        while let Some((r, _)) = src.next_record().unwrap() {
            out.push(r);
        }
        out
    }

    #[test]
    fn records_sorted_on_disk_come_out_as_those_sorted_in_memory() {
        let disk = records(7);
        assert_eq!(disk.len(), 20 * (1 + 50 * 2));
        assert!(disk.windows(2).all(|w| w[0].t <= w[1].t));
        assert_eq!(disk, records(1_000_000));
    }
}
