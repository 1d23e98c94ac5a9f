//! The per-state table: every state visited, with its visits, total and
//! critical time, criticality and (when computed) slack, most critical first.

use super::{Engine, NONE32};
use crate::results::{Blame, StateRow};
use critpath_trace::Interner;
use rustc_hash::FxHashMap;

/// Per state key: least slack and mean slack, when computed.
pub(super) type Slack = Option<Vec<Option<(u64, f64)>>>;

impl Engine<'_> {
    /// Adds the time on each state's intra-SM cgraph edges to its total (a
    /// `held` piece's time is the waiting state's).
    pub(super) fn add_totals(&mut self) {
        for (ce, c) in self.g.cedges.iter().zip(&self.g.counts) {
            let key = if ce.held_for != NONE32 {
                ce.held_for
            } else {
                ce.key
            };
            if !ce.inter && key != NONE32 {
                self.m.keys[key as usize].total += c.total;
            }
        }
    }

    /// The state table for a path of `len` ns, with slack and the blame of
    /// waited-for holders ((state key, sender SM) -> ns).
    pub(super) fn state_rows(
        &self,
        len: u64,
        (slack, blame): (&Slack, &FxHashMap<(u32, u32), u64>),
        strings: &Interner,
    ) -> Vec<StateRow> {
        let mut held: FxHashMap<u32, Vec<Blame>> = FxHashMap::default();
        for (&(key, sm), &ns) in blame {
            let s = &self.m.sms[sm as usize];
            let row_sys = self.m.sms[self.m.keys[key as usize].sm as usize].sys;
            let name = strings.resolve(s.name);
            // The holder's system is named when it is not the state's.
            let sm = if s.sys == row_sys {
                name.to_string()
            } else {
                format!("{}/{name}", strings.resolve(s.sys))
            };
            held.entry(key).or_default().push(Blame { sm, ns });
        }
        for v in held.values_mut() {
            v.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.sm.cmp(&b.sm)));
        }
        // Sized once: the table is the largest thing an analysis of many
        // states keeps, and a growing vector would hold up to twice it.
        let all = !self.opts.critical_states_only;
        let shown = |k: &&super::machines::Key| k.critical > 0 || (all && k.visits > 0);
        let mut states: Vec<StateRow> =
            Vec::with_capacity(self.m.keys.iter().filter(shown).count());
        states.extend(
            self.m
                .keys
                .iter()
                .enumerate()
                .filter(|(_, k)| shown(k))
                .map(|(i, k)| {
                    let s = &self.m.sms[k.sm as usize];
                    let slack = slack.as_ref().and_then(|v| v[i]);
                    StateRow {
                        sys: strings.resolve(s.sys).to_string(),
                        sm: strings.resolve(s.name).to_string(),
                        state: strings.resolve(k.state).to_string(),
                        visits: k.visits,
                        total_ns: k.total,
                        critical_ns: k.critical,
                        criticality: if len > 0 {
                            k.critical as f64 / len as f64
                        } else {
                            0.0
                        },
                        slack_ns: slack.map(|x| x.0),
                        slack_mean_ns: slack.map(|x| x.1),
                        blame: held.remove(&(i as u32)).unwrap_or_default(),
                    }
                }),
        );
        states.sort_by(|a, b| {
            b.critical_ns
                .cmp(&a.critical_ns)
                .then(b.total_ns.cmp(&a.total_ns))
                .then_with(|| (&a.sys, &a.sm, &a.state).cmp(&(&b.sys, &b.sm, &b.state)))
        });
        states
    }
}
