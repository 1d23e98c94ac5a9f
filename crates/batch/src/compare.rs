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
    let (slow, rest) = split(results, fraction);
    let owned = |rs: Vec<&TraceResult>| rs.into_iter().cloned().collect();
    (owned(slow), owned(rest))
}

/// [`slowest`], borrowed.
fn split(results: &[TraceResult], fraction: f64) -> (Vec<&TraceResult>, Vec<&TraceResult>) {
    let mut all: Vec<&TraceResult> = results.iter().collect();
    all.sort_by(|a, b| slowest_first(a, b));
    let k = slow_count(all.len(), fraction);
    let mut rest = all.split_off(k);
    rest.sort_by(|a, b| (&a.file, &a.trace_id).cmp(&(&b.file, &b.trace_id)));
    (all, rest)
}

/// Aggregates the slowest `fraction` of `results` and the rest, and names
/// the state that bounds each.
pub fn compare(results: &[TraceResult], fraction: f64) -> Comparison {
    compare_and_total(results, fraction).0
}

/// [`compare`], and the aggregate of all of `results`, in one pass over
/// them: each request is added to its part, and the whole is the two
/// parts merged (an aggregate does not depend on the order of its
/// requests).
pub fn compare_and_total(results: &[TraceResult], fraction: f64) -> (Comparison, Aggregate) {
    let mut all: Vec<&TraceResult> = results.iter().collect();
    let k = slow_count(all.len(), fraction);
    // The k slowest first, in no order, the k-th of them in its place.
    if k > 0 && k < all.len() {
        all.select_nth_unstable_by(k - 1, |a, b| slowest_first(a, b));
    }
    let (slow, rest) = all.split_at(k);
    let (slow_agg, rest_agg) = aggregate_both(slow, rest);
    let part = |agg: Aggregate| {
        let top = agg.top();
        let share = match &top {
            Some(t) if agg.length_ns_sum() > 0 => {
                t.critical_ns_sum as f64 / agg.length_ns_sum() as f64
            }
            _ => 0.0,
        };
        (top, share, agg)
    };
    let (slow_top, slow_top_share, mut total) = part(slow_agg);
    let (rest_top, rest_top_share, rest_agg) = part(rest_agg);
    total.merge(rest_agg);
    let slow_min_length_ns = slow.iter().map(|r| r.length_ns).min().unwrap_or(0);
    let c = Comparison {
        fraction,
        slow_traces: slow.len() as u64,
        rest_traces: rest.len() as u64,
        slow_min_length_ns,
        slow_top,
        rest_top,
        slow_top_share,
        rest_top_share,
    };
    (c, total)
}

/// Requests below which [`aggregate_both`] stays on the caller's thread
/// (in the crate's tests, 2: the property tests of small batches go
/// through both threads).
const ON_TWO_THREADS: usize = if cfg!(test) { 2 } else { 4096 };

/// The aggregates of `slow` and of `rest`; of many requests, on two
/// threads: one takes the slowest and the first of the rest, the other the
/// rest of the rest, which joins its part (the order does not matter).
fn aggregate_both(slow: &[&TraceResult], rest: &[&TraceResult]) -> (Aggregate, Aggregate) {
    let of = |rs: &[&TraceResult]| {
        let mut agg = Aggregate::new();
        rs.iter().for_each(|r| agg.add(r));
        agg
    };
    let n = slow.len() + rest.len();
    if n < ON_TWO_THREADS {
        return (of(slow), of(rest));
    }
    let (first, second) = rest.split_at((n / 2).saturating_sub(slow.len()).min(rest.len()));
    std::thread::scope(|scope| {
        let other = scope.spawn(|| of(second));
        let slow_agg = of(slow);
        let mut rest_agg = of(first);
        rest_agg.merge(other.join().expect("an aggregate's thread panicked"));
        (slow_agg, rest_agg)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StateCrit;

    fn req(file: &str, id: &str, length_ns: u64, sm: &str) -> TraceResult {
        TraceResult {
            file: file.into(),
            trace_id: id.into(),
            length_ns,
            states: vec![StateCrit {
                sys: "local".into(),
                sm: sm.into(),
                state: "s".into(),
                critical_ns: length_ns / 2,
                criticality: 0.5,
            }],
            unmatched: None,
        }
    }

    #[test]
    fn slow_counts_round_up_and_keep_at_least_one() {
        assert_eq!(slow_count(2000, 0.1), 200);
        assert_eq!(slow_count(40, 0.1), 4);
        assert_eq!(slow_count(5, 0.1), 1);
        assert_eq!(slow_count(11, 0.1), 2);
        assert_eq!(slow_count(3, 1.0), 3);
        assert_eq!(slow_count(0, 0.1), 0);
        assert_eq!(slow_count(10, 0.0), 0);
    }

    #[test]
    fn equal_lengths_are_split_by_file_and_trace_id_whatever_the_order() {
        let rs = vec![
            req("b", "1", 10, "x"),
            req("a", "2", 10, "x"),
            req("a", "1", 10, "x"),
            req("c", "1", 5, "y"),
        ];
        let mut rev = rs.clone();
        rev.reverse();
        let (slow, rest) = slowest(&rs, 0.5);
        let ids: Vec<(&str, &str)> = slow
            .iter()
            .chain(&rest)
            .map(|r| (r.file.as_str(), r.trace_id.as_str()))
            .collect();
        assert_eq!(ids, [("a", "1"), ("a", "2"), ("b", "1"), ("c", "1")]);
        assert_eq!(slowest(&rev, 0.5), (slow, rest));
    }

    #[test]
    fn the_comparison_names_each_part_s_top_state_and_its_share() {
        let mut rs: Vec<TraceResult> = (0..9)
            .map(|i| req("f", &i.to_string(), 10, "fast"))
            .collect();
        rs.push(req("f", "9", 100, "slow"));
        let c = compare(&rs, 0.1);
        assert_eq!(
            (c.slow_traces, c.rest_traces, c.slow_min_length_ns),
            (1, 9, 100)
        );
        assert_eq!(c.slow_top.as_ref().map(|t| t.sm.as_str()), Some("slow"));
        assert_eq!(c.rest_top.as_ref().map(|t| t.sm.as_str()), Some("fast"));
        assert_eq!((c.slow_top_share, c.rest_top_share), (0.5, 0.5));
        let none = compare(&[], 0.1);
        assert_eq!((none.slow_top, none.rest_top), (None, None));
    }
}
