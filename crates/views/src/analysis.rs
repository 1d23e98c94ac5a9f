//! The text views of an [`Analysis`]: the criticality table and summary,
//! the path's edges, the diagnostics, the next most critical paths, the
//! overhead correction, the windows and the clock offsets of merged traces.

use crate::text::{dur, grid, sm_name};
use critpath_engine::Analysis;
use std::fmt::Write as _;

/// The criticality table and summary for people.
pub fn table(a: &Analysis, file: &str) -> String {
    let mut o = String::new();
    let p = &a.critical_path;
    let show_sys = a.states.iter().any(|s| s.sys != "local") || p.start.sys != p.end.sys;
    let _ = writeln!(
        o,
        "{file}: {} records, {} nodes, {} state machines",
        a.stats.records, a.stats.nodes, a.stats.state_machines
    );
    if p.found {
        let _ = writeln!(
            o,
            "critical path: {}{}, {} edges, from {} at t={} to {} at t={}",
            dur(p.length_ns),
            if p.length_ns >= 1000 {
                format!(" ({} ns)", p.length_ns)
            } else {
                String::new()
            },
            p.edges,
            sm_name(&p.start.sys, &p.start.sm, show_sys),
            p.start.t,
            sm_name(&p.end.sys, &p.end.sm, show_sys),
            p.end.t
        );
    } else {
        let _ = writeln!(
            o,
            "critical path: none (no node to end at; see diagnostics)"
        );
    }
    if !a.states.is_empty() {
        let rows: Vec<Vec<String>> = a
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    (i + 1).to_string(),
                    sm_name(&s.sys, &s.sm, show_sys),
                    s.state.clone(),
                    s.visits.to_string(),
                    dur(s.total_ns),
                    dur(s.critical_ns),
                    format!("{:.2}%", s.criticality * 100.0),
                ]
            })
            .collect();
        let head = [
            "#",
            "state machine",
            "state",
            "visits",
            "total",
            "critical",
            "criticality",
        ];
        o.push('\n');
        o.push_str(&grid(
            &head,
            &rows,
            &[true, false, false, true, true, true, true],
        ));
        blame_lines(&mut o, a, show_sys);
    }
    if let Some(path) = &a.path {
        let _ = writeln!(o, "\ncritical path, in time order ({} edges):", path.len());
        for seg in path {
            let who = sm_name(&seg.sys, &seg.sm, show_sys);
            let what = if seg.inter {
                format!("{who} waits on {} in '{}'", seg.from_sm, seg.state)
            } else {
                format!("{who} in '{}'", seg.state)
            };
            let _ = writeln!(
                o,
                "  {:>12} .. {:<12} {:>10}  {what}",
                seg.start_ns,
                seg.end_ns,
                dur(seg.end_ns - seg.start_ns)
            );
        }
    }
    if !a.diagnostics.is_empty() {
        let _ = writeln!(o, "\ndiagnostics ({}):", a.diagnostics.len());
        for d in &a.diagnostics {
            let _ = writeln!(o, "  {}: {}", d.kind, d.message);
        }
    }
    o
}

/// Under the table, who held what each state waited for (most critical
/// states first): "chain:12 runnable — held by hog:13 52%, hog:14 45%".
fn blame_lines(o: &mut String, a: &Analysis, show_sys: bool) {
    let mut first = true;
    for s in a.states.iter().filter(|s| !s.blame.is_empty()).take(10) {
        let all: u64 = s.blame.iter().map(|b| b.ns).sum();
        if all == 0 {
            continue;
        }
        if first {
            o.push('\n');
            first = false;
        }
        let held: Vec<String> = s
            .blame
            .iter()
            .map(|b| format!("{} {:.0}%", b.sm, b.ns as f64 * 100.0 / all as f64))
            .collect();
        let _ = writeln!(
            o,
            "{} {} — held by {} ({} of path time on the holders)",
            sm_name(&s.sys, &s.sm, show_sys),
            s.state,
            held.join(", "),
            dur(all)
        );
    }
}

/// The next most critical paths (paper §5.3, Table 2).
pub fn next_paths(next: &[critpath_engine::analyses::NextPath], top: usize) -> String {
    let mut o = String::new();
    for (i, p) in next.iter().enumerate() {
        let _ = writeln!(
            o,
            "\nnext most critical path{}: {} ({} ns), {:.1}% shorter, with {} removed",
            if next.len() > 1 {
                format!(" #{}", i + 1)
            } else {
                String::new()
            },
            dur(p.length_ns),
            p.length_ns,
            p.shorter * 100.0,
            p.removed.join(", ")
        );
        for (j, s) in p
            .states
            .iter()
            .filter(|s| s.critical_ns > 0)
            .take(top)
            .enumerate()
        {
            let _ = writeln!(
                o,
                "  {:>3}  {:>7.2}%  {}: {}",
                j + 1,
                s.criticality * 100.0,
                s.sm,
                s.state
            );
        }
    }
    o
}

/// What `--correct-overhead` removed.
pub fn correction(a: &Analysis) -> String {
    let Some(c) = &a.overhead_correction else {
        return String::new();
    };
    format!(
        "\noverhead correction: {:.1} ns per annotation event x {} events: {} removed from the states' totals, {} from the critical path (it was {})\n",
        c.ns_per_event,
        c.events,
        dur(c.removed_total_ns),
        dur(c.removed_path_ns),
        dur(c.length_before_ns)
    )
}

/// The critical path by time window.
pub fn windows(a: &Analysis) -> String {
    let Some(ws) = &a.windows else {
        return String::new();
    };
    let mut o = String::from("\ncritical path by time window:\n");
    for w in ws {
        let tops: Vec<String> = w
            .states
            .iter()
            .take(3)
            .map(|s| format!("{}: {} {:.0}%", s.sm, s.state, s.share * 100.0))
            .collect();
        let _ = writeln!(
            o,
            "  {:>14} .. {:<14} {:>10}  {}",
            w.start_ns,
            w.end_ns,
            dur(w.path_ns),
            tops.join(", ")
        );
    }
    o
}

/// How the clocks of several traces were aligned.
pub fn offsets(o: &[critpath_import::multi::ClockOffset]) -> String {
    let mut t = String::from("clocks aligned from send/recv pairs between the traces:\n");
    for x in o {
        let _ = writeln!(
            t,
            "  {:<30} system {:<12} offset {:>12} ns  ({}; {} out, {} in)",
            x.file, x.sys, x.offset_ns, x.method, x.links_out, x.links_in
        );
    }
    t.push('\n');
    t
}
