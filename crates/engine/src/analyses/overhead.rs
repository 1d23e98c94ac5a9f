//! The correction of annotation overhead (VTRACE's perturbation
//! correction): the measured cost of each annotation event is taken out of
//! the states' times and the critical path.

use crate::results::Analysis;
use serde::Serialize;

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

/// Takes the measured cost of annotation events out of the analysis: each
/// visit of an annotated SM's state holds one event's cost (the part of the
/// call after the time stamp that starts it and the part before the one
/// that ends it), and so does each critical-path edge into an annotated
/// SM's node. Totals lose `cost × visits`, the path `cost` per such edge
/// (never more than an edge weighs: the engine sums this per state as it
/// walks the path, [`Analysis::path_overhead`]); criticalities are
/// recomputed. `None` when the trace has
/// no calibrated annotations. `kernel_state` tells the states the
/// kernel's events bound, not annotations (no annotation event lies
/// inside them; for a kernel recording, `critpath_os::names::kernel_bound`).
pub fn correct_overhead(a: &mut Analysis, kernel_state: fn(&str) -> bool) -> Option<Correction> {
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
    for p in &a.path_overhead {
        if kernel_state(&p.state) {
            continue;
        }
        removed_path += p.ns;
        *cut.entry((p.sys.clone(), p.sm.clone(), p.state.clone()))
            .or_default() += p.ns;
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
