//! Who held what a state waited for (docs/path-rules.md, "Blame"): for each
//! critical-path inter-SM edge that ends a state through a waited `recv`
//! (a thread waiting for the CPU that its holder left), the path time spent
//! on the sending SM since the path entered it is blamed on that SM. The
//! walk meets the path's edges from its end back; sums are kept per
//! (state, sender SM). A `held` piece (rule 6) is blamed on its holder
//! directly.

use rustc_hash::FxHashMap;

/// Blame gathered during the backwards walk.
#[derive(Default)]
pub(super) struct Blamer {
    /// The blame being gathered: (state key, sender SM, time so far).
    open: Option<(u32, u32, u64)>,
    /// `held` blame not yet summed: consecutive pieces mostly share their
    /// (waiting state, holder), so they add up here first.
    held_run: Option<((u32, u32), u64)>,
    /// (state key, sender SM) -> ns; complete after [`Blamer::end`].
    pub sums: FxHashMap<(u32, u32), u64>,
}

impl Blamer {
    /// The walk meets an edge of `weight` ns between SMs `from_sm` and
    /// `to_sm`, charged to state `key`; `held` when it is the inter-SM edge
    /// of a waited `recv`.
    pub fn edge(&mut self, (from_sm, to_sm): (u32, u32), key: u32, weight: u64, held: bool) {
        match self.open {
            Some((_, sender, ref mut acc)) if !held && from_sm == sender && to_sm == sender => {
                *acc += weight;
                return;
            }
            _ => self.close(),
        }
        if held && from_sm != to_sm {
            self.open = Some((key, from_sm, 0));
        }
    }

    /// The walk meets a `held` piece of `weight` ns: the waiting state
    /// `held_for`'s time, charged to a state of `holder`.
    pub fn held(&mut self, held_for: u32, holder: u32, weight: u64) {
        self.close();
        if weight == 0 {
            return;
        }
        match &mut self.held_run {
            Some((k, acc)) if *k == (held_for, holder) => *acc += weight,
            run => {
                if let Some((k, acc)) = run.replace(((held_for, holder), weight)) {
                    *self.sums.entry(k).or_default() += acc;
                }
            }
        }
    }

    /// The blame being gathered, if any: (state key, sender SM). The only
    /// state that carries from one edge of the walk to the next other than
    /// by adding up.
    pub fn open_pair(&self) -> Option<(u32, u32)> {
        self.open.map(|(key, sender, _)| (key, sender))
    }

    /// A blamer that goes on from a point of the walk where the blame
    /// `open` (see [`Blamer::open_pair`]) was being gathered, counting only
    /// what comes after it.
    pub fn resume(open: Option<(u32, u32)>) -> Blamer {
        Blamer {
            open: open.map(|(key, sender)| (key, sender, 0)),
            ..Blamer::default()
        }
    }

    /// Adds the sums of `other`, a blamer that went on from where this one
    /// stops (both ended).
    pub fn absorb(&mut self, other: Blamer) {
        for (k, ns) in other.sums {
            *self.sums.entry(k).or_default() += ns;
        }
    }

    /// The path's start: all blame is summed.
    pub fn end(&mut self) {
        self.close();
        if let Some((k, acc)) = self.held_run.take() {
            *self.sums.entry(k).or_default() += acc;
        }
    }

    /// The path left the sender (or ended): the open blame is summed.
    pub fn close(&mut self) {
        if let Some((key, sender, acc)) = self.open.take() {
            if acc > 0 {
                *self.sums.entry((key, sender)).or_default() += acc;
            }
        }
    }
}
