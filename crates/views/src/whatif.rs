//! The text view of a what-if: the baseline and predicted critical paths,
//! and the most critical states then, with their criticality before; names
//! cut in the middle to a width when one is given.

use crate::analysis::printable_analysis;
use crate::text::{cols, dur, elide, fit, printable};
use critpath_engine::analyses::Shares;
use critpath_engine::Analysis;
use critpath_trace::{Diagnostic, DiagnosticKind};
use std::fmt::Write as _;

/// `what` names the speedups applied (`SM:STATE FACTORx faster`); lines
/// take at most `width` columns when given. `band`: the prediction's range
/// and the shares of the predicted path that depend on the rest of the
/// machine and on the program's own threads' contention.
pub fn whatif(
    base: &Analysis,
    pred: &Analysis,
    what: &[String],
    band: Option<([u64; 2], Shares)>,
    top: usize,
    width: Option<usize>,
) -> String {
    let (base, pred) = (&*printable_analysis(base), &*printable_analysis(pred));
    let b = base.critical_path.length_ns;
    let p = pred.critical_path.length_ns;
    let mut o = String::new();
    let _ = writeln!(o, "baseline critical path   {} ({b} ns)", dur(b));
    let with = format!("with {}", printable(&what.join(", ")));
    let _ = writeln!(o, "{}", width.map_or(with.clone(), |w| elide(&with, w)));
    if p == 0 && b > 0 {
        let _ = writeln!(
            o,
            "predicted critical path  0 ns: the path vanishes (nothing on it is left to wait for)"
        );
    } else {
        let _ = writeln!(
            o,
            "predicted critical path  {} ({p} ns): {:.3}x faster",
            dur(p),
            speedup(b, p)
        );
    }
    if pred.stats.scaled_edges == 0 {
        let _ = writeln!(
            o,
            "no edge changed: the states sped up carry no time of their own; their time on the path is on links (a recv's wait since its send, a wait for another SM), which a what-if does not scale"
        );
    }
    let Some(([lo, hi], shares)) = band else {
        return o + &most_critical(base, pred, top, width);
    };
    if shares.machine > 0.0 {
        let _ = writeln!(
            o,
            "predicted {}; {} of the predicted path is CPU contention and interrupts that another run may not see: {}–{}",
            dur(p),
            pct(shares.machine),
            dur(lo),
            dur(hi)
        );
    }
    if shares.program > 0.0 {
        let _ = writeln!(
            o,
            "{} of the predicted path is the program's threads waiting for CPUs its other threads held: another run has it again",
            pct(shares.program),
        );
    }
    o + &most_critical(base, pred, top, width)
}

/// A share as a percentage, with a decimal below 1%.
fn pct(share: f64) -> String {
    match share < 0.01 {
        true => format!("{:.1}%", share * 100.0),
        false => format!("{:.0}%", share * 100.0),
    }
}

/// The most critical states of `pred`, with their criticality in `base`.
fn most_critical(base: &Analysis, pred: &Analysis, top: usize, width: Option<usize>) -> String {
    let mut o = String::new();
    o.push_str("\nmost critical then:\n");
    for s in pred.states.iter().take(top) {
        let was = base
            .states
            .iter()
            .find(|x| x.sys == s.sys && x.sm == s.sm && x.state == s.state)
            .map(|x| x.criticality)
            .unwrap_or(0.0);
        let was = format!("   (was {:.2}%)", was * 100.0);
        let name = format!("{}: {}", s.sm, s.state);
        let _ = writeln!(
            o,
            "  {:>6.2}%  {}{was}",
            s.criticality * 100.0,
            fit(&name, 11 + cols(&was), width)
        );
    }
    input_problems(&mut o, base);
    o
}

/// The problems reading the input (a cut file, skipped lines): both
/// paths cover only the records read.
pub fn read_problems(a: &Analysis) -> Vec<&Diagnostic> {
    a.diagnostics
        .iter()
        .filter(|d| {
            matches!(
                d.kind,
                DiagnosticKind::InputCut | DiagnosticKind::InputSkipped
            )
        })
        .collect()
}

/// [`read_problems`] as text.
fn input_problems(o: &mut String, a: &Analysis) {
    let read = read_problems(a);
    if read.is_empty() {
        return;
    }
    let _ = writeln!(o, "\ndiagnostics ({}):", read.len());
    for d in read {
        let _ = writeln!(o, "  {}: {}", d.kind, d.message);
    }
}

/// How many times shorter the predicted path is (infinite when it is empty).
pub fn speedup(baseline_ns: u64, predicted_ns: u64) -> f64 {
    if predicted_ns > 0 {
        baseline_ns as f64 / predicted_ns as f64
    } else {
        f64::INFINITY
    }
}
