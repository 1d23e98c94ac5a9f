//! The text view of a what-if: the baseline and predicted critical paths,
//! and the most critical states then, with their criticality before.

use crate::text::dur;
use critpath_engine::Analysis;
use std::fmt::Write as _;

/// `what` names the speedups applied (`SM:STATE FACTORx faster`).
pub fn whatif(base: &Analysis, pred: &Analysis, what: &[String], top: usize) -> String {
    let b = base.critical_path.length_ns;
    let p = pred.critical_path.length_ns;
    let mut o = String::new();
    let _ = writeln!(o, "baseline critical path   {} ({b} ns)", dur(b));
    let _ = writeln!(o, "with {}", what.join(", "));
    if p == 0 && b > 0 {
        let _ = write!(
            o,
            "predicted critical path  0 ns: the path vanishes (nothing on it is left to wait for)\n\nmost critical then:\n"
        );
    } else {
        let _ = write!(
            o,
            "predicted critical path  {} ({p} ns): {:.3}x faster\n\nmost critical then:\n",
            dur(p),
            speedup(b, p)
        );
    }
    for s in pred.states.iter().take(top) {
        let was = base
            .states
            .iter()
            .find(|x| x.sys == s.sys && x.sm == s.sm && x.state == s.state)
            .map(|x| x.criticality)
            .unwrap_or(0.0);
        let _ = writeln!(
            o,
            "  {:>6.2}%  {}: {}   (was {:.2}%)",
            s.criticality * 100.0,
            s.sm,
            s.state,
            was * 100.0
        );
    }
    o
}

/// How many times shorter the predicted path is (infinite when it is empty).
pub fn speedup(baseline_ns: u64, predicted_ns: u64) -> f64 {
    if predicted_ns > 0 {
        baseline_ns as f64 / predicted_ns as f64
    } else {
        f64::INFINITY
    }
}
