//! How sure a what-if is (docs/json.md, `predicted_range_ns`): the share of
//! the predicted path that depends on the rest of the machine (a caller's
//! classifier says which states those are: for a recording, CPU waits and
//! interrupts) widens the prediction into a band, `pred·(1 ± share)`. Time a
//! thread waited for a CPU that the recorded program's own threads held is
//! the program's: it is not in the band.

use crate::results::Analysis;

/// Shares (0 to 1) of a path: see [`shares`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shares {
    /// In states that depend on the rest of the machine, with the path
    /// time blamed on what such a state waited for (a CPU's holders) unless
    /// the holder is one of the recorded program's own threads.
    pub machine: f64,
    /// Blamed, in such states, on the program's own threads: contention
    /// among its threads, which another run of the program has again.
    pub program: f64,
}

/// The shares of path `a` whose states `machine(sm, state)` says depend on
/// the rest of the machine; `a.program` names the recorded program's SMs.
pub fn shares(a: &Analysis, machine: fn(&str, &str) -> bool) -> Shares {
    let len = a.critical_path.length_ns;
    if len == 0 {
        return Shares::default();
    }
    let own = super::program_sms(a);
    let (mut outside, mut program) = (0u64, 0u64);
    for s in a.states.iter().filter(|s| machine(&s.sm, &s.state)) {
        outside += s.critical_ns;
        for b in &s.blame {
            match own.contains(b.sm.as_str()) {
                true => program += b.ns,
                false => outside += b.ns,
            }
        }
    }
    let share = |ns: u64| (ns as f64 / len as f64).min(1.0);
    Shares {
        machine: share(outside),
        program: share(program),
    }
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
        assert!((shares(&a, machine).machine - 0.4).abs() < 1e-9);
        // Blame on the program's own threads is its own, not the machine's.
        a.program = vec!["hog:2".into()];
        let s = shares(&a, machine);
        assert!((s.machine - 0.2).abs() < 1e-9 && (s.program - 0.2).abs() < 1e-9);
        assert_eq!(predicted_range(500, 0.4), [300, 700]);
        assert_eq!(predicted_range(500, 0.0), [500, 500]);
        assert_eq!(predicted_range(500, 3.0), [0, 1000]);
        assert_eq!(shares(&Analysis::default(), machine), Shares::default());
    }
}
