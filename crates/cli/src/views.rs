//! Views of an [`Analysis`]: the table a person reads, the JSON of SPEC §5
//! and the combined graph in DOT. Views only format; they never compute.

use critpath_engine::Analysis;
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
/// A text table: columns as wide as their widest cell, two spaces apart,
/// right-aligned where `right` says.
pub fn grid(head: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let mut line = |cells: &[String]| {
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
    line(&head.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        line(r);
    }
    o
}

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

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The combined graph in Graphviz DOT: one cluster per SM (or, with
/// `clusters` off, the SM in each node's label), edges coloured from black
/// (not critical) to red (most critical), inter-SM edges dashed.
pub fn dot(a: &Analysis, clusters: bool) -> String {
    let g = &a.cgraph;
    let len = a.critical_path.length_ns.max(1) as f64;
    let mut o = String::from("digraph cgraph {\n  rankdir=LR;\n  node [shape=box, fontsize=10, style=rounded];\n  edge [fontsize=9];\n");
    let mut sms: Vec<(&str, &str)> = g
        .nodes
        .iter()
        .map(|n| (n.sys.as_str(), n.sm.as_str()))
        .collect();
    sms.sort();
    sms.dedup();
    for (ci, (sys, sm)) in sms.iter().enumerate() {
        let label = if *sys == "local" {
            sm.to_string()
        } else {
            format!("{sys}: {sm}")
        };
        let indent = if clusters {
            let _ = writeln!(
                o,
                "  subgraph cluster_{ci} {{\n    label=\"{}\";",
                esc(&label)
            );
            "    "
        } else {
            "  "
        };
        for n in g.nodes.iter().filter(|n| n.sys == *sys && n.sm == *sm) {
            let text = if clusters {
                format!("{} → {}", n.from, n.to)
            } else {
                format!("{label}\n{} → {}", n.from, n.to)
            };
            let _ = writeln!(o, "{indent}n{} [label=\"{}\"];", n.id, esc(&text));
        }
        if clusters {
            o.push_str("  }\n");
        }
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

/// The combined graph drawn as SVG (laid out by the `layout-rs` crate).
pub fn svg(a: &Analysis) -> Result<String, String> {
    use layout::backends::svg::SVGWriter;
    use layout::gv::{DotParser, GraphBuilder};
    let text = dot(a, false);
    let tree = DotParser::new(&text).process()?;
    let mut builder = GraphBuilder::new();
    builder.visit_graph(&tree);
    let mut graph = builder.get();
    let mut out = SVGWriter::new();
    graph.do_it(false, false, false, &mut out);
    Ok(out.finalize())
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

/// The critical path by time window.
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

/// Two runs compared.
pub fn diff(d: &critpath_engine::analyses::Diff, a: &str, b: &str, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "A: {a}: critical path {}", dur(d.length_ns_a));
    let _ = writeln!(
        o,
        "B: {b}: critical path {} ({:.3}x A)",
        dur(d.length_ns_b),
        d.length_ratio
    );
    let none = "none".to_string();
    if d.top_moved {
        let _ = writeln!(
            o,
            "the bottleneck moved: {} -> {}",
            d.top_a.as_ref().unwrap_or(&none),
            d.top_b.as_ref().unwrap_or(&none)
        );
    } else {
        let _ = writeln!(
            o,
            "the bottleneck stayed: {}",
            d.top_a.as_ref().unwrap_or(&none)
        );
    }
    let _ = writeln!(
        o,
        "\n{:>9}  {:>9}  {:>9}  {:>10}  {:>10}  state",
        "crit A", "crit B", "change", "total A", "total B"
    );
    for s in d.states.iter().take(top) {
        let _ = writeln!(
            o,
            "{:>8.2}%  {:>8.2}%  {:>+8.2}%  {:>10}  {:>10}  {}: {}",
            s.criticality_a * 100.0,
            s.criticality_b * 100.0,
            s.criticality_change * 100.0,
            dur(s.total_ns_a),
            dur(s.total_ns_b),
            s.sm,
            s.state
        );
    }
    o
}

/// States by slack: how much each could grow before it joins the path.
pub fn slack(a: &Analysis, file: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{file}: critical path {} ({} ns)\n",
        dur(a.critical_path.length_ns),
        a.critical_path.length_ns
    );
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
            "{:>12}  {:>12}  {:>10}  {:>10}  {:>8}  {}: {}",
            least,
            mean,
            dur(s.critical_ns),
            dur(s.total_ns),
            s.visits,
            s.sm,
            s.state
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
