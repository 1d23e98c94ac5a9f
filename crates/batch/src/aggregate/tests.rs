//! The aggregate's definitions on known inputs, and its independence from
//! the order requests are added and merged in.

use super::*;
use crate::{StateCrit, TraceResult};
use proptest::prelude::*;

fn req(id: &str, length_ns: u64, states: &[(&str, u64)]) -> TraceResult {
    TraceResult {
        file: "f".into(),
        trace_id: id.into(),
        length_ns,
        states: states
            .iter()
            .map(|&(name, ns)| StateCrit {
                sys: "local".into(),
                sm: name.into(),
                state: "s".into(),
                critical_ns: ns,
                criticality: ns as f64 / length_ns as f64,
            })
            .collect(),
        unmatched: None,
    }
}

#[test]
fn percentiles_are_nearest_rank_with_zeros_where_not_critical() {
    // 10 requests of 100 ns; "a" is critical in 4 of them with 10..40 ns.
    let mut agg = Aggregate::new();
    for i in 0..10u64 {
        let states: Vec<(&str, u64)> = if i < 4 {
            vec![("a", 10 * (i + 1)), ("b", 100 - 10 * (i + 1))]
        } else {
            vec![("b", 100)]
        };
        agg.add(&req(&i.to_string(), 100, &states));
    }
    let rows = agg.finish();
    let b = &rows[0];
    assert_eq!((b.sm.as_str(), b.traces, b.critical_ns_sum), ("b", 10, 900));
    let a = &rows[1];
    assert_eq!((a.sm.as_str(), a.traces, a.critical_ns_sum), ("a", 4, 100));
    // Values: six zeros, then 0.1, 0.2, 0.3, 0.4.
    assert_eq!(a.criticality_p50, 0.0); // rank 5
    assert_eq!(a.criticality_p90, 0.3); // rank 9
    assert_eq!(a.criticality_p99, 0.4); // rank 10
    assert!((a.criticality_mean - 0.1).abs() < 1e-12);
    // b: 0.6, 0.7, 0.8, 0.9, then six 1.0.
    assert_eq!(b.criticality_p50, 1.0);
    assert!((b.criticality_mean - 0.9).abs() < 1e-12);
    assert_eq!(agg.traces(), 10);
    assert_eq!(agg.length_ns_sum(), 1000);
}

#[test]
fn percentile_ranks_on_small_and_empty_inputs() {
    assert_eq!(percentile(&[], 0, 50), 0.0);
    assert_eq!(percentile(&[0.5], 1, 1), 0.5);
    assert_eq!(percentile(&[0.25, 0.75], 2, 50), 0.25); // rank 1
    assert_eq!(percentile(&[0.25, 0.75], 2, 51), 0.75); // rank 2
    assert_eq!(percentile(&[0.25, 0.75], 3, 50), 0.25); // zero, 0.25, 0.75: rank 2
    assert_eq!(percentile(&[0.25, 0.75], 3, 33), 0.0);
    assert_eq!(mean(&[0.25, 0.75], 4), 0.25);
}

#[test]
fn rows_tie_on_summed_time_by_name() {
    let mut agg = Aggregate::new();
    agg.add(&req("1", 10, &[("z", 5), ("a", 5)]));
    let names: Vec<String> = agg.finish().iter().map(StateAgg::name).collect();
    assert_eq!(names, ["a: s", "z: s"]);
}

#[test]
fn an_aggregate_survives_json() {
    let mut agg = Aggregate::new();
    agg.add(&req("1", 10, &[("z", 5), ("a", 3)]));
    let back: Aggregate = serde_json::from_str(&serde_json::to_string(&agg).unwrap()).unwrap();
    assert_eq!(back, agg);
    assert_eq!(back.finish(), agg.finish());
}

/// Random requests over a few states, with lengths that make
/// criticalities whose float sums depend on the order of summation.
fn requests() -> impl Strategy<Value = Vec<TraceResult>> {
    let one = (
        1u64..1_000_003,
        proptest::collection::vec((0usize..5, 1u64..1000), 0..5),
    );
    proptest::collection::vec(one, 0..60).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (len, sts))| {
                let names = ["a", "b", "c", "d", "e"];
                let mut seen = [false; 5];
                let sts: Vec<(&str, u64)> = sts
                    .into_iter()
                    .filter(|&(k, _)| !std::mem::replace(&mut seen[k], true))
                    .map(|(k, ns)| (names[k], ns.min(len)))
                    .collect();
                req(&i.to_string(), len, &sts)
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn order_and_partition_do_not_change_the_result(
        rs in requests(),
        seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let mut serial = Aggregate::new();
        rs.iter().for_each(|r| serial.add(r));
        // Shuffle deterministically from the seed.
        let mut shuffled = rs.clone();
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        // Cut into parts, aggregate each, merge in reverse order.
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(shuffled.len() + 1)).collect();
        at.sort();
        let mut parts = Vec::new();
        let mut from = 0;
        for &to in at.iter().chain([shuffled.len()].iter()) {
            let mut p = Aggregate::new();
            shuffled[from..to].iter().for_each(|r| p.add(r));
            parts.push(p);
            from = to;
        }
        let mut merged = Aggregate::new();
        for p in parts.into_iter().rev() {
            merged.merge(p);
        }
        prop_assert_eq!(merged.traces(), serial.traces());
        let (a, b) = (merged.finish(), serial.finish());
        prop_assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!(x.criticality_mean.to_bits(), y.criticality_mean.to_bits());
            prop_assert_eq!(x, y);
        }
    }
}

proptest! {
    /// The one-pass comparison and total agree with their definitions:
    /// the slowest part and the rest as `slowest` splits them, each
    /// aggregated and its first row taken; the total over all requests.
    #[test]
    fn the_one_pass_comparison_is_the_definition(
        rs in requests(),
        fraction in prop_oneof![Just(0.0), Just(0.1), Just(0.5), Just(1.0), 0.0f64..1.0],
    ) {
        let (c, total) = crate::compare_and_total(&rs, fraction);
        let mut all = Aggregate::new();
        rs.iter().for_each(|r| all.add(r));
        prop_assert_eq!(total.finish(), all.finish());
        prop_assert_eq!(total.length_ns_sum(), all.length_ns_sum());
        let (slow, rest) = crate::slowest(&rs, fraction);
        let agg = |part: &[TraceResult]| {
            let mut a = Aggregate::new();
            part.iter().for_each(|r| a.add(r));
            a
        };
        let (s, r) = (agg(&slow), agg(&rest));
        prop_assert_eq!(&c.slow_top, &s.finish().into_iter().next());
        prop_assert_eq!(&c.rest_top, &r.finish().into_iter().next());
        prop_assert_eq!(s.top(), s.finish().into_iter().next());
        prop_assert_eq!(c.slow_traces as usize, slow.len());
        prop_assert_eq!(c.slow_min_length_ns, slow.last().map_or(0, |r| r.length_ns));
    }
}

#[test]
fn the_top_of_equal_times_is_the_least_state_as_in_the_table() {
    let mut agg = Aggregate::new();
    agg.add(&req(
        "1",
        100,
        &[("c", 30), ("b", 30), ("d", 30), ("a", 10)],
    ));
    agg.add(&req("2", 100, &[("d", 20), ("b", 20), ("c", 20)]));
    let top = agg.top().expect("a state");
    assert_eq!(top.sm, "b");
    assert_eq!(Some(top), agg.finish().into_iter().next());
}
