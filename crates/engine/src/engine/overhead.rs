//! The engine's part of the overhead's correction (`--correct-overhead`,
//! [`crate::analyses::correct_overhead`]): the walk back takes one
//! annotation event's cost out of each path edge charged to an annotated
//! SM (never more than the edge weighs) and sums it per cgraph edge
//! (`walk.rs`); here, each SM's cost, and those sums per state, so that the
//! correction needs not the path's segments.

use super::{Engine, NONE32};
use crate::results::PathOverhead;
use critpath_trace::{AnnotationCost, Interner};
use rustc_hash::FxHashMap;

impl Engine<'_> {
    /// The cost of one annotation event the source measured on each SM it
    /// names (`Summary::annotation_costs`).
    pub fn annotation_costs(&mut self, costs: &[AnnotationCost]) {
        self.annotation_costs = costs.to_vec();
    }

    /// Each SM's cost of one annotation event, rounded to the nanosecond (0:
    /// none); empty when the source measured none.
    pub(super) fn event_costs(&self, strings: &Interner) -> Vec<u64> {
        if self.annotation_costs.is_empty() {
            return Vec::new();
        }
        let by_name: FxHashMap<(&str, &str), f64> = (self.annotation_costs.iter())
            .map(|c| ((c.sys.as_str(), c.sm.as_str()), c.ns_per_event))
            .collect();
        (self.m.sms.iter())
            .map(|s| {
                let name = (strings.resolve(s.sys), strings.resolve(s.name));
                by_name.get(&name).map_or(0, |c| c.round() as u64)
            })
            .collect()
    }

    /// The annotations' cost on the path, per cgraph edge (`cut`), summed
    /// per state its edges are charged to (the state of no name for edges
    /// of none).
    pub(super) fn path_overhead(&self, cut: &[u64], strings: &Interner) -> Vec<PathOverhead> {
        let mut by_state: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        for (ce, &ns) in self.g.cedges.iter().zip(cut) {
            if ns > 0 {
                *by_state
                    .entry((self.charged_sm(ce.to, ce.key), ce.key))
                    .or_default() += ns;
            }
        }
        let mut rows: Vec<PathOverhead> = (by_state.into_iter())
            .map(|((sm, key), ns)| {
                let s = &self.m.sms[sm as usize];
                PathOverhead {
                    sys: strings.resolve(s.sys).to_string(),
                    sm: strings.resolve(s.name).to_string(),
                    state: match key {
                        NONE32 => String::new(),
                        key => strings.resolve(self.m.keys[key as usize].state).to_string(),
                    },
                    ns,
                }
            })
            .collect();
        rows.sort_by(|x, y| (&x.sys, &x.sm, &x.state).cmp(&(&y.sys, &y.sm, &y.state)));
        rows
    }
}
