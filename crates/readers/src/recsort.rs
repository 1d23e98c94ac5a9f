//! Records put in time order with an external sort ([`crate::extsort`]):
//! by time, then a class the maker gives (lower first at one time), then
//! the order they were made in. Past a budget they wait on disk, so a trace
//! of any length is ordered in bounded memory. The importers' tracks
//! ([`crate::tracks`]) and the GPU traces' records are ordered here.

use crate::extsort::{self, disk_error, ExtSort, Fields, Sorted, Spill};
use critpath_trace::{Event, LinkId, Parts, ReadError, Record, Sym, Who};

/// Records kept in memory before the sort spills (about 60 bytes each in
/// memory and on disk: some 30 MB).
pub const RECORD_BUDGET: usize = 1 << 19;

/// A record with what orders it: time, phase at that time, then the order
/// it was made in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keyed {
    pub(crate) phase: u8,
    /// Records of a lower group come first at one time and phase.
    group: u32,
    pub(crate) seq: u64,
    pub(crate) rec: Record,
    /// For a link named later ([`Tracks::push_numbered_link`]): the symbol
    /// of its name's prefix, the number being the record's `LinkId::Num`;
    /// `u32::MAX` otherwise.
    pub(crate) prefix: u32,
}

impl Keyed {
    fn key(&self) -> (u64, u8, u32, u64) {
        (self.rec.t, self.phase, self.group, self.seq)
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

/// Records being ordered.
pub struct RecordSort {
    recs: ExtSort<Keyed>,
    group: u32,
    seq: u64,
}

impl Default for RecordSort {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordSort {
    /// A sort that keeps up to `CRITPATH_SORT_ITEMS` records in memory
    /// (about half a million by default).
    pub fn new() -> Self {
        Self::with_budget(extsort::sort_budget(RECORD_BUDGET))
    }

    /// A sort that keeps at most `budget` records in memory.
    pub fn with_budget(budget: usize) -> Self {
        RecordSort {
            recs: ExtSort::new(budget),
            group: 0,
            seq: 0,
        }
    }

    /// The group of the records made from now on: at one time and class,
    /// a lower group's records come first, then each group's in the order
    /// made.
    pub fn set_group(&mut self, group: u32) {
        self.group = group;
    }

    /// A record at `t` of ordering class `class`.
    pub fn push(&mut self, t: u64, class: u8, ev: Event) {
        self.push_keyed(t, class, ev, u32::MAX);
    }

    /// [`RecordSort::push`] in group `group`, whatever the group of the
    /// records made from now on.
    pub fn push_in_group(&mut self, t: u64, class: u8, group: u32, ev: Event) {
        self.push_at(t, (class, group), ev, u32::MAX);
    }

    /// [`RecordSort::push`] with the symbol of a numbered link's prefix
    /// (see `Tracks::push_numbered_link`).
    pub(crate) fn push_keyed(&mut self, t: u64, class: u8, ev: Event, prefix: u32) {
        self.push_at(t, (class, self.group), ev, prefix);
    }

    fn push_at(&mut self, t: u64, (class, group): (u8, u32), ev: Event, prefix: u32) {
        let rec = Record {
            t,
            sys: Sym::LOCAL,
            ev,
        };
        let k = Keyed {
            phase: class,
            group,
            seq: self.seq,
            rec,
            prefix,
        };
        self.seq += 1;
        self.recs.push(k);
    }

    /// The records in order; an error is one writing the sort's temporary
    /// files, said of the input `name`.
    pub fn finish(self, name: &str) -> Result<SortedRecords, ReadError> {
        let sorted = self.recs.finish();
        Ok(SortedRecords {
            sorted: sorted.map_err(|e| disk_error(name, "sort the trace's records in", e))?,
            name: name.to_string(),
        })
    }
}

/// The records of a [`RecordSort`], in order.
pub struct SortedRecords {
    sorted: Sorted<Keyed>,
    name: String,
}

impl SortedRecords {
    pub(crate) fn next_keyed(&mut self) -> Result<Option<Keyed>, ReadError> {
        let doing = "read back the trace's records from";
        (self.sorted.next_item()).map_err(|e| disk_error(&self.name, doing, e))
    }

    /// The next record; `Ok(None)` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>, ReadError> {
        Ok(self.next_keyed()?.map(|k| k.rec))
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
    // t, phase, group, seq; sys; the event's parts (kind, subject kind and
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
        out.extend_from_slice(&self.group.to_le_bytes());
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
        let (t, phase, group) = (f.u64(), f.u8(), f.u32());
        let (seq, sys) = (f.u64(), Sym(f.u32()));
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
            group,
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
                ended: true,
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
                group: 7,
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
}
