//! The critical path broken down by time windows: each path edge's time
//! span is clipped at window boundaries and charged to its state, and each
//! window lists its states by critical time.

use super::{Engine, NONE32};
use crate::error::Error;
use crate::results::{WindowRow, WindowState};
use critpath_trace::Interner;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Critical time per window and state key, gathered during the walk.
/// Their number is capped: past `max` windows the walk stops gathering
/// them and only measures the path's span, for the error.
pub(super) struct Windows {
    /// Window length in ns (never 0).
    len: u64,
    /// The most windows there may be.
    max: u64,
    /// Window index -> state key -> critical ns.
    per: BTreeMap<u64, FxHashMap<u32, u64>>,
    /// The path's span so far (earliest start, latest end), once there are
    /// too many windows.
    over: Option<(u64, u64)>,
}

impl Windows {
    /// Windows of `len` ns, at most `max` of them, or `None` when not
    /// asked for (or 0).
    pub fn new(len: Option<u64>, max: u64) -> Option<Windows> {
        len.filter(|&d| d > 0).map(|len| Windows {
            len,
            max,
            per: BTreeMap::new(),
            over: None,
        })
    }

    /// Charges the path's time from `a` to `b` to state key `key`.
    pub fn add(&mut self, key: u32, (mut a, b): (u64, u64)) {
        if a >= b {
            return;
        }
        let d = self.len;
        if let Some((lo, hi)) = &mut self.over {
            (*lo, *hi) = (a.min(*lo), b.max(*hi));
            return;
        }
        // At most this many windows are new (the span's, less any kept).
        let spans = (b - 1) / d - a / d + 1;
        if self.per.len() as u64 + spans > self.max.saturating_add(1) {
            let lo = (self.per.first_key_value()).map_or(a, |(k, _)| a.min(k * d));
            let hi = (self.per.last_key_value())
                .map_or(b, |(k, _)| b.max(k.saturating_add(1).saturating_mul(d)));
            self.per.clear();
            self.over = Some((lo, hi));
            return;
        }
        while a < b {
            let k = a / d;
            let end = b.min((k + 1).saturating_mul(d));
            *self.per.entry(k).or_default().entry(key).or_default() += end - a;
            a = end;
        }
    }

    /// The error when the path needs more windows than allowed.
    pub fn too_many(&self) -> Option<Error> {
        let (lo, hi) = self.over?;
        Some(Error::TooManyWindows {
            window_ns: self.len,
            span_ns: hi - lo,
            windows: (hi - 1) / self.len - lo / self.len + 1,
            max: self.max,
        })
    }
}

impl Engine<'_> {
    /// The windows as result rows, states by decreasing critical time.
    pub(super) fn window_rows(&self, w: Windows, strings: &Interner) -> Vec<WindowRow> {
        let d = w.len;
        w.per
            .into_iter()
            .map(|(k, per)| {
                let path_ns: u64 = per.values().sum();
                let mut states: Vec<WindowState> = per
                    .into_iter()
                    .filter(|&(key, ns)| key != NONE32 && ns > 0)
                    .map(|(key, ns)| {
                        let k = &self.m.keys[key as usize];
                        let s = &self.m.sms[k.sm as usize];
                        WindowState {
                            sys: strings.resolve(s.sys).to_string(),
                            sm: strings.resolve(s.name).to_string(),
                            state: strings.resolve(k.state).to_string(),
                            critical_ns: ns,
                            share: ns as f64 / path_ns.max(1) as f64,
                        }
                    })
                    .collect();
                states.sort_by(|a, b| {
                    b.critical_ns
                        .cmp(&a.critical_ns)
                        .then_with(|| (&a.sm, &a.state).cmp(&(&b.sm, &b.state)))
                });
                WindowRow {
                    start_ns: k * d,
                    end_ns: (k + 1) * d,
                    path_ns,
                    states,
                }
            })
            .collect()
    }
}
