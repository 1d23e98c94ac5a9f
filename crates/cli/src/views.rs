//! Views of an [`Analysis`]: the table a person reads, the JSON of SPEC §5
//! and the combined graph in DOT. Views only format; they never compute.

use critpath_core::Analysis;
use std::fmt::Write as _;

/// A duration in the unit that reads best.
pub fn dur(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} µs", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

fn sm_name(sys: &str, sm: &str, show_sys: bool) -> String {
    if show_sys {
        format!("{sys}/{sm}")
    } else {
        sm.to_string()
    }
}

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
        let rows: Vec<[String; 7]> = a
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                [
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
        let mut w = head.map(|h| h.chars().count());
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let right = [true, false, false, true, true, true, true];
        let line = |o: &mut String, cells: &[String]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i > 0 {
                    l.push_str("  ");
                }
                if right[i] {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                } else {
                    l.push_str(c);
                    if i + 1 < cells.len() {
                        l.push_str(&" ".repeat(pad));
                    }
                }
            }
            let _ = writeln!(o, "{}", l.trim_end());
        };
        o.push('\n');
        line(&mut o, &head.map(String::from));
        for r in &rows {
            line(&mut o, r);
        }
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

/// SPEC §5 JSON.
pub fn json(a: &Analysis) -> String {
    serde_json::to_string_pretty(a).expect("analysis serializes")
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The combined graph in Graphviz DOT: one cluster per SM, edges coloured
/// from black (not critical) to red (most critical), inter-SM edges dashed.
pub fn dot(a: &Analysis) -> String {
    let g = &a.cgraph;
    let len = a.critical_path.length_ns.max(1) as f64;
    let mut o = String::from("digraph cgraph {\n  rankdir=LR;\n  node [shape=box, fontsize=10, style=rounded];\n  edge [fontsize=9];\n");
    let mut clusters: Vec<(&str, &str)> = g
        .nodes
        .iter()
        .map(|n| (n.sys.as_str(), n.sm.as_str()))
        .collect();
    clusters.sort();
    clusters.dedup();
    for (ci, (sys, sm)) in clusters.iter().enumerate() {
        let label = if *sys == "local" {
            sm.to_string()
        } else {
            format!("{sys}: {sm}")
        };
        let _ = writeln!(
            o,
            "  subgraph cluster_{ci} {{\n    label=\"{}\";",
            esc(&label)
        );
        for n in g.nodes.iter().filter(|n| n.sys == *sys && n.sm == *sm) {
            let _ = writeln!(
                o,
                "    n{} [label=\"{} → {}\"];",
                n.id,
                esc(&n.from),
                esc(&n.to)
            );
        }
        o.push_str("  }\n");
    }
    for e in &g.edges {
        let c = (e.critical_ns as f64 / len).clamp(0.0, 1.0);
        let red = (c * 255.0).round() as u8;
        let width = 1.0 + 3.0 * c;
        let _ = writeln!(
            o,
            "  n{} -> n{} [label=\"{}\\n({}, {}, {})\", color=\"#{red:02x}0000\", fontcolor=\"#{red:02x}0000\", penwidth={width:.2}{}];",
            e.from,
            e.to,
            esc(&e.state),
            e.visits,
            dur(e.total_ns),
            dur(e.critical_ns),
            if e.inter { ", style=dashed" } else { "" }
        );
    }
    o.push_str("}\n");
    o
}
