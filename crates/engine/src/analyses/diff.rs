//! The comparison of two runs: path lengths, the most critical state of
//! each, and every state's change in criticality.

use super::name;
use crate::results::{Analysis, StateRow};
use serde::Serialize;

/// One state's change between two runs.
#[derive(Clone, Debug, Serialize)]
pub struct StateChange {
    pub sys: String,
    pub sm: String,
    pub state: String,
    pub criticality_a: f64,
    pub criticality_b: f64,
    pub criticality_change: f64,
    pub critical_ns_a: u64,
    pub critical_ns_b: u64,
    pub total_ns_a: u64,
    pub total_ns_b: u64,
    pub visits_a: u64,
    pub visits_b: u64,
}

/// The comparison of run A with run B.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub length_ns_a: u64,
    pub length_ns_b: u64,
    /// B's path length over A's.
    pub length_ratio: f64,
    pub top_a: Option<String>,
    pub top_b: Option<String>,
    pub top_moved: bool,
    /// Every state of either run, by decreasing size of its criticality change.
    pub states: Vec<StateChange>,
}

/// Compares run A with run B.
pub fn diff(a: &Analysis, b: &Analysis) -> Diff {
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<(String, String, String), StateChange> = BTreeMap::new();
    let blank = |s: &StateRow| StateChange {
        sys: s.sys.clone(),
        sm: s.sm.clone(),
        state: s.state.clone(),
        criticality_a: 0.0,
        criticality_b: 0.0,
        criticality_change: 0.0,
        critical_ns_a: 0,
        critical_ns_b: 0,
        total_ns_a: 0,
        total_ns_b: 0,
        visits_a: 0,
        visits_b: 0,
    };
    for s in &a.states {
        let r = rows
            .entry((s.sys.clone(), s.sm.clone(), s.state.clone()))
            .or_insert_with(|| blank(s));
        r.criticality_a = s.criticality;
        r.critical_ns_a = s.critical_ns;
        r.total_ns_a = s.total_ns;
        r.visits_a = s.visits;
    }
    for s in &b.states {
        let r = rows
            .entry((s.sys.clone(), s.sm.clone(), s.state.clone()))
            .or_insert_with(|| blank(s));
        r.criticality_b = s.criticality;
        r.critical_ns_b = s.critical_ns;
        r.total_ns_b = s.total_ns;
        r.visits_b = s.visits;
    }
    let mut states: Vec<StateChange> = rows.into_values().collect();
    for r in &mut states {
        r.criticality_change = r.criticality_b - r.criticality_a;
    }
    states.sort_by(|x, y| {
        y.criticality_change
            .abs()
            .total_cmp(&x.criticality_change.abs())
            .then_with(|| (&x.sys, &x.sm, &x.state).cmp(&(&y.sys, &y.sm, &y.state)))
    });
    let top = |x: &Analysis| x.states.first().filter(|s| s.critical_ns > 0).map(name);
    let (top_a, top_b) = (top(a), top(b));
    let (la, lb) = (a.critical_path.length_ns, b.critical_path.length_ns);
    Diff {
        length_ns_a: la,
        length_ns_b: lb,
        length_ratio: if la > 0 { lb as f64 / la as f64 } else { 0.0 },
        top_moved: top_a != top_b,
        top_a,
        top_b,
        states,
    }
}
