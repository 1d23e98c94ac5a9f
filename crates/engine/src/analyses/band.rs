//! How sure a what-if is (docs/json.md, `predicted_range_ns`): the share of
//! the baseline path that depends on the rest of the machine (a caller's
//! classifier says which states those are: for a recording, CPU waits and
//! interrupts) widens the prediction into a band, `pred·(1 ± share)`.

use crate::results::Analysis;

/// The share (0 to 1) of the baseline path `a` spent in states that
/// `machine(sm, state)` says depend on the rest of the machine, counting
/// the path time blamed on what such a state waited for (a CPU's holders).
pub fn machine_share(a: &Analysis, machine: fn(&str, &str) -> bool) -> f64 {
    let len = a.critical_path.length_ns;
    if len == 0 {
        return 0.0;
    }
    let ns: u64 = a
        .states
        .iter()
        .filter(|s| machine(&s.sm, &s.state))
        .map(|s| s.critical_ns + s.blame.iter().map(|b| b.ns).sum::<u64>())
        .sum();
    (ns as f64 / len as f64).min(1.0)
}

/// The band around prediction `pred` (ns) for share `s`:
/// `[pred·(1−s), pred·(1+s)]`, never below 0.
pub fn predicted_range(pred: u64, s: f64) -> [u64; 2] {
    let s = s.clamp(0.0, 1.0);
    let p = pred as f64;
    [
        (p * (1.0 - s)).round().max(0.0) as u64,
        (p * (1.0 + s)).round() as u64,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Blame, StateRow};

    fn row(sm: &str, state: &str, critical_ns: u64, blame: u64) -> StateRow {
        StateRow {
            sys: "local".into(),
            sm: sm.into(),
            state: state.into(),
            visits: 1,
            total_ns: critical_ns,
            critical_ns,
            criticality: 0.0,
            slack_ns: None,
            slack_mean_ns: None,
            blame: if blame > 0 {
                vec![Blame {
                    sm: "hog:2".into(),
                    ns: blame,
                }]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn the_share_counts_machine_states_and_their_blame() {
        let mut a = Analysis::default();
        a.critical_path.length_ns = 1000;
        a.states = vec![
            row("w:1", "running", 600, 0),
            row("w:1", "runnable", 100, 200),
            row("hog:2", "running", 200, 0),
            row("irq:eth0", "running", 100, 0),
        ];
        let machine = |sm: &str, st: &str| st == "runnable" || sm.starts_with("irq:");
        // runnable 100 + its blame 200 + irq 100.
        assert!((machine_share(&a, machine) - 0.4).abs() < 1e-9);
        assert_eq!(predicted_range(500, 0.4), [300, 700]);
        assert_eq!(predicted_range(500, 0.0), [500, 500]);
        assert_eq!(predicted_range(500, 3.0), [0, 1000]);
        assert_eq!(machine_share(&Analysis::default(), machine), 0.0);
    }
}
