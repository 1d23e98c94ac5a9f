//! Two text views that compare: two runs state by state (`diff`), and each
//! state against the critical path by its slack (`slack`). Given a width,
//! names are cut in the middle so that no line is wider.

use crate::text::{cols, dur, fit};
use critpath_engine::Analysis;
use std::fmt::Write as _;

/// Two runs compared, within `width` columns when given.
pub fn diff(
    d: &critpath_engine::analyses::Diff,
    a: &str,
    b: &str,
    top: usize,
    width: Option<usize>,
) -> String {
    let mut o = String::new();
    let len_a = format!(": critical path {}", dur(d.length_ns_a));
    let _ = writeln!(o, "A: {}{len_a}", fit(a, 3 + cols(&len_a), width));
    let len_b = format!(
        ": critical path {} ({:.3}x A)",
        dur(d.length_ns_b),
        d.length_ratio
    );
    let _ = writeln!(o, "B: {}{len_b}", fit(b, 3 + cols(&len_b), width));
    let none = "none".to_string();
    let (top_a, top_b) = (
        d.top_a.as_ref().unwrap_or(&none),
        d.top_b.as_ref().unwrap_or(&none),
    );
    if d.top_moved {
        let half = width.map(|w| w.saturating_sub(26) / 2);
        let _ = writeln!(
            o,
            "the bottleneck moved: {} -> {}",
            fit(top_a, 0, half),
            fit(top_b, 0, half)
        );
    } else {
        let _ = writeln!(o, "the bottleneck stayed: {}", fit(top_a, 23, width));
    }
    let changed: Vec<_> = d
        .states
        .iter()
        .filter(|s| {
            s.criticality_a != s.criticality_b
                || s.critical_ns_a != s.critical_ns_b
                || s.total_ns_a != s.total_ns_b
                || s.visits_a != s.visits_b
        })
        .collect();
    if changed.is_empty() {
        let _ = writeln!(
            o,
            "\nno difference: every state has the same criticality and total time in both runs"
        );
        return o;
    }
    let _ = writeln!(
        o,
        "\n{:>9}  {:>9}  {:>9}  {:>10}  {:>10}  state",
        "crit A", "crit B", "change", "total A", "total B"
    );
    for s in changed.into_iter().take(top) {
        let _ = writeln!(
            o,
            "{:>8.2}%  {:>8.2}%  {:>+8.2}%  {:>10}  {:>10}  {}",
            s.criticality_a * 100.0,
            s.criticality_b * 100.0,
            s.criticality_change * 100.0,
            dur(s.total_ns_a),
            dur(s.total_ns_b),
            fit(&format!("{}: {}", s.sm, s.state), DIFF_ROW_COLS, width)
        );
    }
    o
}

/// Columns a row of `diff` takes before the state's name.
const DIFF_ROW_COLS: usize = 57;
/// Columns a row of `slack` takes before the state's name.
const SLACK_ROW_COLS: usize = 62;

/// States by slack: how much each could grow before it joins the path,
/// within `width` columns when given.
pub fn slack(a: &Analysis, file: &str, width: Option<usize>) -> String {
    let mut o = String::new();
    let len = format!(
        ": critical path {} ({} ns)",
        dur(a.critical_path.length_ns),
        a.critical_path.length_ns
    );
    let _ = writeln!(o, "{}{len}\n", fit(file, cols(&len), width));
    let _ = writeln!(
        o,
        "{:>12}  {:>12}  {:>10}  {:>10}  {:>8}  state",
        "least slack", "mean slack", "critical", "total", "visits"
    );
    for s in &a.states {
        let (least, mean) = match (s.slack_ns, s.slack_mean_ns) {
            (Some(v), Some(m)) => (dur(v), dur(m.round() as u64)),
            _ => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            o,
            "{:>12}  {:>12}  {:>10}  {:>10}  {:>8}  {}",
            least,
            mean,
            dur(s.critical_ns),
            dur(s.total_ns),
            s.visits,
            fit(&format!("{}: {}", s.sm, s.state), SLACK_ROW_COLS, width)
        );
    }
    o
}
