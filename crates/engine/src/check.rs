//! The invariants `critpath check` verifies on an analysis: the combined
//! graph's (docs/path-rules.md) and the critical path's own consistency,
//! plus the trace diagnostics that mean the trace itself is inconsistent
//! (those whose kind [`is_trace_error`](critpath_trace::DiagnosticKind::is_trace_error)).

use crate::results::Analysis;
use critpath_trace::Diagnostic;
use rustc_hash::{FxHashMap, FxHashSet};

/// The diagnostics that mean the trace breaks the event model.
pub fn trace_errors(a: &Analysis) -> Vec<&Diagnostic> {
    a.diagnostics
        .iter()
        .filter(|d| d.kind.is_trace_error())
        .collect()
}

/// Every invariant violation found, as readable sentences (empty when all hold).
pub fn violations(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    let g = &a.cgraph;
    let mut seen = FxHashSet::default();
    let mut kind: FxHashMap<u32, (&str, &str)> = FxHashMap::default();
    for n in &g.nodes {
        if !seen.insert((&n.sys, &n.sm, &n.from, &n.to)) {
            out.push(format!(
                "cgraph: more than one node for transition {} -> {} of {}/{}",
                n.from, n.to, n.sys, n.sm
            ));
        }
        kind.insert(n.id, (&n.from, &n.to));
    }
    let mut ins: FxHashMap<u32, u64> = FxHashMap::default();
    let mut outs: FxHashMap<u32, u64> = FxHashMap::default();
    for e in &g.edges {
        if e.critical_ns > e.total_ns {
            out.push(format!(
                "cgraph: edge '{}' {} -> {} has critical time {} ns above its total {} ns",
                e.state, e.from, e.to, e.critical_ns, e.total_ns
            ));
        }
        if !e.inter {
            *ins.entry(e.to).or_default() += e.visits;
            *outs.entry(e.from).or_default() += e.visits;
        }
    }
    for n in &g.nodes {
        if n.from == "start" || n.to == "end" {
            continue;
        }
        let i = ins.get(&n.id).copied().unwrap_or(0);
        let o = outs.get(&n.id).copied().unwrap_or(0);
        if i.abs_diff(o) > 1 {
            out.push(format!(
                "cgraph: node {} -> {} of {}/{} has {i} visits in but {o} out (they may differ by one at most)",
                n.from, n.to, n.sys, n.sm
            ));
        }
    }
    let critical: u64 = a.states.iter().map(|s| s.critical_ns).sum();
    if a.critical_path.found && critical != a.critical_path.length_ns {
        out.push(format!(
            "critical path: the states' critical times add up to {critical} ns, not the path length {} ns",
            a.critical_path.length_ns
        ));
    }
    out
}
