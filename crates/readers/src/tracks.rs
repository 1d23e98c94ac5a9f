//! What the importers of other tools' traces share: tracks of nested slices
//! turned into `call`/`ret` records with `idle` gaps, links between tracks,
//! and the ordering of everything that happens at one time.
//!
//! The records are put in time order by an external sort
//! ([`crate::extsort`]): past a budget they wait on disk, so a trace of any
//! length is imported in bounded memory.

use crate::extsort::{self, ExtSort, Fields, Sorted, Spill};
use critpath_trace::{
    Event, Interner, LinkId, Location, Parts, Pos, ReadError, Record, RecordSource, Sym, Who,
};
use std::collections::HashMap;
use std::io;

/// Records kept in memory before the sort spills (56 bytes each on disk,
/// about 60 in memory: some 30 MB).
const RECORD_BUDGET: usize = 1 << 19;

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

/// A record with what orders it: time, phase at that time, then the order
/// it was made in.
#[derive(Clone, Copy, Debug)]
struct Keyed {
    phase: u8,
    seq: u64,
    rec: Record,
    /// For a link named later ([`Tracks::push_numbered_link`]): the symbol
    /// of its name's prefix, the number being the record's `LinkId::Num`;
    /// `u32::MAX` otherwise.
    prefix: u32,
}

impl Keyed {
    fn key(&self) -> (u64, u8, u64) {
        (self.rec.t, self.phase, self.seq)
    }
}

impl PartialEq for Keyed {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Keyed {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

/// Records being built; `P` orders what happens at one time (lower first).
pub struct Tracks<P> {
    recs: ExtSort<Keyed>,
    seq: u64,
    /// The first error writing the sort's temporary files.
    spill_error: Option<io::Error>,
    pub strings: Interner,
    pub idle: Sym,
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
        Self::with_budget(extsort::budget_from_env(RECORD_BUDGET))
    }

    /// Tracks that keep at most `budget` records in memory.
    pub fn with_budget(budget: usize) -> Self {
        let mut strings = Interner::new();
        let idle = strings.intern("idle");
        Tracks {
            recs: ExtSort::new(budget),
            seq: 0,
            spill_error: None,
            strings,
            idle,
            _phase: std::marker::PhantomData,
        }
    }

    /// The order the next record is made in (later ones count up from it):
    /// an importer that builds tracks one after the other gives each its
    /// own range, so ties at one time follow the tracks' order.
    pub fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    pub fn push(&mut self, t: u64, phase: P, ev: Event) {
        self.push_keyed(t, phase, ev, u32::MAX);
    }

    /// A `send` or `recv` whose link is named `PREFIX` followed by the
    /// number `n` (`ev`'s id is `LinkId::Num(n)`): the name is made when
    /// the record is handed out, as a transient link id, so a trace of
    /// millions of links keeps none of their names in memory.
    pub fn push_numbered_link(&mut self, t: u64, phase: P, ev: Event, prefix: Sym) {
        self.push_keyed(t, phase, ev, prefix.0);
    }

    fn push_keyed(&mut self, t: u64, phase: P, ev: Event, prefix: u32) {
        let rec = Record {
            t,
            sys: Sym::LOCAL,
            ev,
        };
        let k = Keyed {
            phase: phase.into(),
            seq: self.seq,
            rec,
            prefix,
        };
        self.seq += 1;
        if let Err(e) = self.recs.push(k) {
            self.spill_error.get_or_insert(e);
        }
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
        let fail = |e: io::Error| {
            ReadError::new(
                name,
                Location::File,
                format!("cannot sort the trace's records in a temporary file: {e}"),
                true,
            )
        };
        if let Some(e) = self.spill_error {
            return Err(fail(e));
        }
        Ok(TrackSource {
            sorted: self.recs.finish().map_err(fail)?,
            strings: self.strings,
            rename,
            stacks: HashMap::new(),
            name: name.to_string(),
            index: 0,
        })
    }
}

/// The records of [`Tracks`] in time order; a receive re-enters the state
/// its SM is in at that moment.
pub struct TrackSource {
    sorted: Sorted<Keyed>,
    strings: Interner,
    rename: HashMap<Sym, Sym>,
    stacks: HashMap<Sym, Vec<Sym>>,
    name: String,
    index: u64,
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
        let next = self.sorted.next_item().map_err(|e| {
            ReadError::new(
                &self.name,
                Location::File,
                format!("cannot read back the trace's records from a temporary file: {e}"),
                true,
            )
        })?;
        let Some(k) = next else {
            return Ok(None);
        };
        self.index += 1;
        let mut r = k.rec;
        if k.prefix != u32::MAX {
            self.name_link(&mut r, Sym(k.prefix));
        }
        Ok(Some((self.settle(r), Pos::Record(self.index))))
    }
    fn strings(&self) -> &Interner {
        &self.strings
    }
}

/// An optional symbol as a field: `u32::MAX` for none.
fn opt(s: Option<Sym>) -> u32 {
    s.map_or(u32::MAX, |s| s.0)
}

fn unopt(v: u32) -> Option<Sym> {
    (v != u32::MAX).then_some(Sym(v))
}

impl Spill for Keyed {
    // t, phase, seq; sys, kind, subject, four symbols, link, waited; prefix.
    // t, phase, seq; sys; the event's parts (kind, subject kind and
    // symbol, four symbols, link kind, number and symbol, waited); prefix.
    fn put(&self, out: &mut Vec<u8>) {
        let p = self.rec.ev.parts();
        let (wk, w) = match p.who {
            None => (0, 0),
            Some(Who::Sm(s)) => (1, s.0),
            Some(Who::Thread(s)) => (2, s.0),
            Some(Who::Cpu(s)) => (3, s.0),
        };
        let (lk, lv, ls) = match p.id {
            None => (0, 0, 0),
            Some(LinkId::Num(n)) => (1, n, 0),
            Some(LinkId::Str { sym, key }) => (2, key, sym.0),
        };
        out.extend_from_slice(&self.rec.t.to_le_bytes());
        out.push(self.phase);
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.rec.sys.0.to_le_bytes());
        out.extend_from_slice(&[p.kind, wk]);
        out.extend_from_slice(&w.to_le_bytes());
        for s in p.syms {
            out.extend_from_slice(&opt(s).to_le_bytes());
        }
        out.push(lk);
        out.extend_from_slice(&lv.to_le_bytes());
        out.extend_from_slice(&ls.to_le_bytes());
        out.push(u8::from(p.waited));
        out.extend_from_slice(&self.prefix.to_le_bytes());
    }

    fn take(b: &[u8]) -> Self {
        let mut f = Fields::new(b);
        let (t, phase, seq, sys) = (f.u64(), f.u8(), f.u64(), Sym(f.u32()));
        let (kind, wk, w) = (f.u8(), f.u8(), Sym(f.u32()));
        let syms = [f.u32(), f.u32(), f.u32(), f.u32()].map(unopt);
        let (lk, lv, ls) = (f.u8(), f.u64(), f.u32());
        let waited = f.u8() != 0;
        let prefix = f.u32();
        let who = match wk {
            1 => Some(Who::Sm(w)),
            2 => Some(Who::Thread(w)),
            3 => Some(Who::Cpu(w)),
            _ => None,
        };
        let id = match lk {
            1 => Some(LinkId::Num(lv)),
            2 => Some(LinkId::Str {
                sym: Sym(ls),
                key: lv,
            }),
            _ => None,
        };
        let parts = Parts {
            kind,
            who,
            syms,
            id,
            waited,
        };
        // The sort wrote these bytes itself: every layout is one of a record.
        let ev = Event::from_parts(parts).expect("a record the sort wrote");
        Keyed {
            phase,
            seq,
            rec: Record { t, sys, ev },
            prefix,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Event> {
        let (a, b, c, d) = (Sym(1), Sym(2), Sym(3), Sym(4));
        let who = Who::Thread(a);
        let id = LinkId::Str { sym: d, key: 99 };
        vec![
            Event::State { who, state: b },
            Event::Wait {
                who: Who::Cpu(a),
                state: b,
                on: Some(c),
                on_sys: None,
                on_state: Some(d),
            },
            Event::Send { who, id },
            Event::Recv {
                who: Who::Sm(b),
                id: LinkId::Num(7),
                state: c,
                waited: true,
            },
            Event::Held {
                who,
                on: c,
                on_state: d,
            },
            Event::End { who },
            Event::Call { who, func: c },
            Event::Ret { who, func: c },
            Event::Push { thread: a, sm: b },
            Event::Pop { thread: a, sm: b },
            Event::Switch { cpu: c, thread: a },
        ]
    }

    #[test]
    fn every_kind_of_record_survives_the_disk() {
        for (i, ev) in every_kind().into_iter().enumerate() {
            let k = Keyed {
                phase: 3,
                seq: i as u64,
                rec: Record {
                    t: 1 << 40,
                    sys: Sym(5),
                    ev,
                },
                prefix: i as u32,
            };
            let mut bytes = Vec::new();
            k.put(&mut bytes);
            let back = Keyed::take(&bytes);
            assert_eq!(
                (back.key(), back.rec, back.prefix),
                (k.key(), k.rec, k.prefix)
            );
        }
    }

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
