//! Analyses built on whole runs of the engine: the next most critical path
//! (paper §5.3, Table 2), the comparison of two runs, and the correction
//! of annotation overhead (VTRACE).

use crate::engine::{Options, Speedup};
use crate::results::{Analysis, StateRow};
use serde::Serialize;
use std::io;

/// The longest path once some states' time is removed.
#[derive(Clone, Debug, Serialize)]
pub struct NextPath {
    pub length_ns: u64,
    /// How much shorter than the critical path, as a fraction (0.36 = 36%).
    pub shorter: f64,
    /// The states whose time was removed, as `SM:STATE` (`SYS/SM:STATE`
    /// outside the local system).
    pub removed: Vec<String>,
    pub states: Vec<StateRow>,
}

fn name(s: &StateRow) -> String {
    if s.sys == "local" {
        format!("{}:{}", s.sm, s.state)
    } else {
        format!("{}/{}:{}", s.sys, s.sm, s.state)
    }
}

/// The `k` next most critical paths. With `remove` empty, each step removes
/// the most critical state of the path before it (cumulatively); otherwise
/// one path with the named states removed. `run` analyzes the trace again
/// with the options given.
pub fn next_paths(
    base: &Analysis,
    k: usize,
    remove: &[String],
    mut run: impl FnMut(Options) -> io::Result<Analysis>,
) -> io::Result<Vec<NextPath>> {
    let full = base.critical_path.length_ns;
    let mut removed: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut current = base.states.clone();
    let steps = if remove.is_empty() { k } else { 1 };
    for _ in 0..steps {
        if remove.is_empty() {
            match current
                .iter()
                .find(|s| s.critical_ns > 0 && !removed.contains(&name(s)))
            {
                Some(top) => removed.push(name(top)),
                None => break,
            }
        } else {
            removed = remove.to_vec();
        }
        let speedups = removed
            .iter()
            .map(|t| Speedup {
                target: t.clone(),
                factor: f64::INFINITY,
            })
            .collect();
        let a = run(Options {
            speedups,
            ..Default::default()
        })?;
        let len = a.critical_path.length_ns;
        out.push(NextPath {
            length_ns: len,
            shorter: if full > 0 {
                1.0 - len as f64 / full as f64
            } else {
                0.0
            },
            removed: removed.clone(),
            states: a.states.clone(),
        });
        current = a.states;
    }
    Ok(out)
}

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

/// What `--correct-overhead` removed (VTRACE's perturbation correction).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Correction {
    /// The cost of one annotation event used (the mean over the SMs
    /// corrected, weighted by their events).
    pub ns_per_event: f64,
    /// Annotation events whose cost was taken out of the states' times.
    pub events: u64,
    /// Time removed from the states' totals.
    pub removed_total_ns: u64,
    /// Time removed from the critical path.
    pub removed_path_ns: u64,
    /// The path's length before the correction.
    pub length_before_ns: u64,
}

/// States the kernel's events bound, not annotations: no annotation event
/// lies inside them.
fn kernel_state(state: &str) -> bool {
    state == "runnable"
        || state.starts_with("blocked:")
        || state.starts_with("interrupted:")
        || state.starts_with("running:syscall:")
}

/// Takes the measured cost of annotation events out of the analysis: each
/// visit of an annotated SM's state holds one event's cost (the part of the
/// call after the time stamp that starts it and the part before the one
/// that ends it), and so does each critical-path edge into an annotated
/// SM's node. Totals lose `cost × visits`, the path `cost` per such edge
/// (never more than an edge weighs); criticalities are recomputed. Needs
/// the path's segments (`Options::keep_path`). `None` when the trace has
/// no calibrated annotations.
pub fn correct_overhead(a: &mut Analysis) -> Option<Correction> {
    use std::collections::HashMap;
    let costs: HashMap<(&str, &str), f64> = a
        .annotation_costs
        .iter()
        .map(|c| ((c.sys.as_str(), c.sm.as_str()), c.ns_per_event))
        .collect();
    if costs.is_empty() {
        return None;
    }
    let mut events = 0u64;
    let mut weighted = 0.0;
    let mut removed_total = 0u64;
    let mut cut: HashMap<(String, String, String), u64> = HashMap::new();
    let mut removed_path = 0u64;
    if let Some(path) = &a.path {
        for seg in path {
            let Some(&c) = costs.get(&(seg.sys.as_str(), seg.sm.as_str())) else {
                continue;
            };
            if kernel_state(&seg.state) {
                continue;
            }
            let w = seg.end_ns - seg.start_ns;
            let x = (c.round() as u64).min(w);
            removed_path += x;
            *cut.entry((seg.sys.clone(), seg.sm.clone(), seg.state.clone()))
                .or_default() += x;
        }
    }
    for row in &mut a.states {
        let Some(&c) = costs.get(&(row.sys.as_str(), row.sm.as_str())) else {
            continue;
        };
        if kernel_state(&row.state) {
            continue;
        }
        let x = ((c * row.visits as f64).round() as u64).min(row.total_ns);
        row.total_ns -= x;
        removed_total += x;
        events += row.visits;
        weighted += c * row.visits as f64;
        if let Some(&k) = cut.get(&(row.sys.clone(), row.sm.clone(), row.state.clone())) {
            row.critical_ns -= k.min(row.critical_ns);
        }
        // Edges shorter than an event lose less than the mean the totals
        // lose: keep critical ≤ total.
        if row.critical_ns > row.total_ns {
            removed_path += row.critical_ns - row.total_ns;
            row.critical_ns = row.total_ns;
        }
    }
    let before = a.critical_path.length_ns;
    a.critical_path.length_ns = before - removed_path.min(before);
    let len = a.critical_path.length_ns;
    for row in &mut a.states {
        row.criticality = if len > 0 {
            row.critical_ns as f64 / len as f64
        } else {
            0.0
        };
    }
    // Path segments keep their times: they place the path on the trace's
    // clock; only the totals change.
    a.states.sort_by_key(|s| std::cmp::Reverse(s.critical_ns));
    let c = Correction {
        ns_per_event: if events > 0 {
            weighted / events as f64
        } else {
            costs.values().sum::<f64>() / costs.len() as f64
        },
        events,
        removed_total_ns: removed_total,
        removed_path_ns: removed_path,
        length_before_ns: before,
    };
    a.overhead_correction = Some(c.clone());
    Some(c)
}
