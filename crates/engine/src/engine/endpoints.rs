//! The path's ends as the user names them (a thread's SM may be named
//! without its id where that names one SM): the start SM must occur in the
//! trace, and the destination (`SM`, `SYS/SM`, optionally `:STATE` or
//! `: STATE`) is that
//! SM's last node or its last transition into the state; without one, the
//! node with the greatest `L`.

use super::names::{nearest, sm_named, How};
use super::{Engine, NodeRef, UNREACHED};
use crate::error::{Error, Result};
use critpath_trace::{Diagnostic, Interner};

/// A node the path can end at, and its SM.
pub(super) type Dest = (NodeRef, u32);

impl Engine<'_> {
    /// The destination node and its SM (`None`: nothing to walk back from),
    /// and a `disconnected` finding when the start does not reach it.
    pub(super) fn destination(
        &self,
        strings: &Interner,
    ) -> Result<(Option<Dest>, Option<Diagnostic>)> {
        let mut dest = self.best;
        if let Some(spec) = &self.opts.to {
            dest = self.find_to(spec, strings)?;
        }
        if let Some(f) = &self.opts.from {
            if !self.m.sms.iter().any(|s| s.is_from) {
                return Err(Error::UnknownFrom {
                    spec: f.clone(),
                    nearest: self.nearest_sms(f, strings),
                });
            }
            if let Some(sms) = self.from_matched.ambiguous() {
                return Err(Error::AmbiguousFrom {
                    spec: f.clone(),
                    count: sms.len(),
                    matches: self.sm_labels(sms, strings),
                });
            }
            if let Some(sms) = self.from_matched.in_several_systems() {
                return Err(Error::AmbiguousFrom {
                    spec: f.clone(),
                    count: sms.len(),
                    matches: self.sm_labels(sms, strings),
                });
            }
        }
        self.check_speedups_used(strings)?;
        let unreachable = matches!(dest, Some((n, _)) if n.l == UNREACHED);
        if self.opts.from.is_some() && (dest.is_none() || unreachable) {
            return Ok((None, Some(self.disconnected(dest.map(|d| d.1), strings))));
        }
        Ok((dest, None))
    }

    /// The node `spec` (`SM[:STATE]`) names, and its SM.
    fn find_to(&self, spec: &str, strings: &Interner) -> Result<Option<Dest>> {
        // Try the whole spec as an SM name, then split at each ':' from the right.
        let mut cands: Vec<(&str, Option<&str>)> = vec![(spec, None)];
        for (i, _) in spec
            .match_indices(':')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            cands.push((&spec[..i], Some(&spec[i + 1..])));
        }
        for (sm_name, state) in cands {
            let sms = self.sms_named(sm_name, strings);
            match sms[..] {
                [] => continue,
                [sm] => return self.last_node(spec, (sm, sm_name), state, strings),
                _ => {
                    return Err(Error::AmbiguousTo {
                        spec: spec.to_string(),
                        sm: sm_name.to_string(),
                        count: sms.len(),
                        matches: self.sm_labels(&sms, strings),
                    })
                }
            }
        }
        Err(Error::UnknownTo {
            spec: spec.to_string(),
            nearest: self.nearest_sms(spec, strings),
        })
    }

    /// The SMs `name` names: those of that full name if any, else the
    /// threads it names without their id or as `COMM:*`.
    fn sms_named(&self, name: &str, strings: &Interner) -> Vec<u32> {
        let mut by: [Vec<u32>; 2] = Default::default();
        for (i, s) in self.m.sms.iter().enumerate() {
            match sm_named(name, strings.resolve(s.sys), strings.resolve(s.name)) {
                Some(How::Exact) => by[0].push(i as u32),
                Some(_) => by[1].push(i as u32),
                None => {}
            }
        }
        let [exact, other] = by;
        if exact.is_empty() {
            other
        } else {
            exact
        }
    }

    /// SM `sm`'s last node, or its last transition into `state`.
    fn last_node(
        &self,
        spec: &str,
        (sm, sm_name): (u32, &str),
        state: Option<&str>,
        strings: &Interner,
    ) -> Result<Option<Dest>> {
        let Some(st) = state else {
            let s = &self.m.sms[sm as usize];
            let n = s.last.or(s.last_trans);
            return Ok(n.map(|n| (n, sm)));
        };
        // `SM: STATE`, as tables print it, names the state without the space.
        for name in [st, st.trim_start()] {
            if let Some(&k) = strings
                .get(name)
                .and_then(|sym| self.m.key_index.get(&(sm, sym)))
            {
                return Ok(self.m.keys[k as usize].last_trans.map(|n| (n, sm)));
            }
        }
        let states: Vec<&str> = self
            .m
            .keys
            .iter()
            .filter(|k| k.sm == sm)
            .map(|k| strings.resolve(k.state))
            .collect();
        Err(Error::UnknownToState {
            spec: spec.to_string(),
            sm: sm_name.to_string(),
            state: st.to_string(),
            nearest: nearest(st, &states),
        })
    }

    /// "; nearest: ..." among the trace's SM names.
    fn nearest_sms(&self, want: &str, strings: &Interner) -> String {
        let names: Vec<&str> = self.m.sms.iter().map(|s| strings.resolve(s.name)).collect();
        nearest(want, &names)
    }
}
