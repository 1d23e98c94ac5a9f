//! The slowest requests against the rest: which state bounds the tail, and
//! which bounds the typical request (as CRISP does for tail latency).

use crate::{Aggregate, StateAgg, TraceResult};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// The slowest `fraction` of the requests and the rest (`slowest` in
/// docs/json.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The fraction asked for (0.1: the slowest 10%).
    pub fraction: f64,
    /// Requests in the slowest part, and in the rest.
    pub slow_traces: u64,
    pub rest_traces: u64,
    /// The shortest critical path among the slowest requests (0 when there
    /// are none).
    pub slow_min_length_ns: u64,
    /// The state with the most summed critical time in the slowest part,
    /// and in the rest.
    pub slow_top: Option<StateAgg>,
    pub rest_top: Option<StateAgg>,
    /// That state's summed critical time over the part's summed path
    /// length: the share of the part's path it holds.
    pub slow_top_share: f64,
    pub rest_top_share: f64,
}

/// Longest path first; equal lengths by (file, trace id).
fn slowest_first(a: &TraceResult, b: &TraceResult) -> Ordering {
    b.length_ns
        .cmp(&a.length_ns)
        .then_with(|| (&a.file, &a.trace_id).cmp(&(&b.file, &b.trace_id)))
}

/// How many of `n` requests are the slowest `fraction`: ⌈fraction·n⌉
/// (a product within 1e-9 of a whole number counts as that number), at
/// least 1 when `fraction` > 0 and there is a request, at most `n`.
pub(crate) fn slow_count(n: usize, fraction: f64) -> usize {
    if n == 0 || fraction.is_nan() || fraction <= 0.0 {
        return 0;
    }
    let x = fraction * n as f64;
    let k = if (x - x.round()).abs() < 1e-9 {
        x.round()
    } else {
        x.ceil()
    };
    (k as usize).clamp(1, n)
}

/// The slowest `fraction` of `results` (longest path first, equal lengths
/// by (file, trace id)) and the rest (by (file, trace id)). The split
/// does not depend on the order of `results`.
pub fn slowest(results: &[TraceResult], fraction: f64) -> (Vec<TraceResult>, Vec<TraceResult>) {
    let mut all = results.to_vec();
    all.sort_by(slowest_first);
    let k = slow_count(all.len(), fraction);
    let mut rest = all.split_off(k);
    rest.sort_by(|a, b| (&a.file, &a.trace_id).cmp(&(&b.file, &b.trace_id)));
    (all, rest)
}

/// Aggregates the slowest `fraction` of `results` and the rest, and names
/// the state that bounds each.
pub fn compare(results: &[TraceResult], fraction: f64) -> Comparison {
    let (slow, rest) = slowest(results, fraction);
    let part = |rs: &[TraceResult]| {
        let mut agg = Aggregate::new();
        rs.iter().for_each(|r| agg.add(r));
        let top = agg.finish().into_iter().next();
        let share = match &top {
            Some(t) if agg.length_ns_sum() > 0 => {
                t.critical_ns_sum as f64 / agg.length_ns_sum() as f64
            }
            _ => 0.0,
        };
        (top, share)
    };
    let (slow_top, slow_top_share) = part(&slow);
    let (rest_top, rest_top_share) = part(&rest);
    Comparison {
        fraction,
        slow_traces: slow.len() as u64,
        rest_traces: rest.len() as u64,
        slow_min_length_ns: slow.last().map_or(0, |r| r.length_ns),
        slow_top,
        rest_top,
        slow_top_share,
        rest_top_share,
    }
}
