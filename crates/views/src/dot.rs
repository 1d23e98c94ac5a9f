//! The combined graph (cgraph) in Graphviz DOT, drawn as SVG, and pruned to
//! its heaviest edges when it is too large to lay out.

use crate::text::dur;
use critpath_engine::results::{CEdgeRow, CGraph};
use critpath_engine::Analysis;
use std::fmt::Write as _;

/// cgraph edges drawn at most; the rest are summarized.
pub const MAX_EDGES: usize = 400;

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

/// Why a cgraph was not drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum NotDrawn {
    /// It has no transitions.
    Empty,
    /// The layout failed (its error, or what it panicked with).
    Failed(String),
    /// The layout did not finish within the deadline.
    Late(std::time::Duration),
}

impl std::fmt::Display for NotDrawn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotDrawn::Empty => write!(f, "the cgraph has no transitions to draw"),
            NotDrawn::Failed(e) => write!(f, "the cgraph could not be laid out: {e}"),
            NotDrawn::Late(d) => write!(
                f,
                "the cgraph could not be laid out in {} s",
                d.as_secs_f64()
            ),
        }
    }
}

/// How long a cgraph's layout may take.
pub const LAYOUT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(8);

/// [`svg`] within `deadline`, on a thread of its own (left behind when
/// late: it ends with the process); a panic of the layout crate is its
/// failure. Every drawing of a cgraph goes through this.
pub fn svg_within(a: &Analysis, deadline: std::time::Duration) -> Result<String, NotDrawn> {
    if a.cgraph.edges.is_empty() {
        return Err(NotDrawn::Empty);
    }
    let view = Analysis {
        cgraph: a.cgraph.clone(),
        critical_path: a.critical_path.clone(),
        ..Analysis::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("layout".into())
        .spawn(move || {
            let drawn = critpath_trace::contained(|| svg(&view));
            let _ = tx.send(drawn.and_then(|r| r));
        });
    if let Err(e) = spawned {
        return Err(NotDrawn::Failed(e.to_string()));
    }
    match rx.recv_timeout(deadline) {
        Ok(Ok(svg)) => Ok(svg),
        Ok(Err(e)) => Err(NotDrawn::Failed(e)),
        Err(_) => Err(NotDrawn::Late(deadline)),
    }
}

/// The combined graph drawn as SVG (laid out by the `layout-rs` crate,
/// without a deadline: see [`svg_within`]).
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
    Ok(styles_sorted(out.finalize()))
}

/// `svg` with the lines of its `<style>` block sorted: the layout crate
/// writes its font classes in a hash map's order, which changes from run
/// to run; the same graph draws the same bytes.
fn styles_sorted(svg: String) -> String {
    let (Some(open), Some(close)) = (svg.find("<style>"), svg.find("</style>")) else {
        return svg;
    };
    let inner = open + "<style>".len();
    if close < inner {
        return svg;
    }
    let mut lines: Vec<&str> = svg[inner..close].split_inclusive('\n').collect();
    lines.sort_unstable();
    [&svg[..inner], &lines.concat(), &svg[close..]].concat()
}

/// The cgraph kept for drawing: every edge on the critical path, then the
/// edges with the most time, up to `MAX_EDGES`.
pub fn pruned(g: &CGraph) -> (CGraph, usize) {
    if g.edges.len() <= MAX_EDGES {
        return (g.clone(), 0);
    }
    let mut order: Vec<usize> = (0..g.edges.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((g.edges[i].critical_ns, g.edges[i].total_ns)));
    order.truncate(MAX_EDGES);
    let edges: Vec<_> = order.iter().map(|&i| g.edges[i].clone()).collect();
    (subgraph(g, edges), g.edges.len() - MAX_EDGES)
}

/// The graph of `edges` (taken from `g`) and the nodes they join.
pub fn subgraph(g: &CGraph, edges: Vec<CEdgeRow>) -> CGraph {
    let used: std::collections::HashSet<u32> = edges.iter().flat_map(|e| [e.from, e.to]).collect();
    let nodes = g
        .nodes
        .iter()
        .filter(|n| used.contains(&n.id))
        .cloned()
        .collect();
    CGraph { nodes, edges }
}

#[cfg(test)]
mod tests {
    use super::styles_sorted;

    #[test]
    fn the_style_blocks_lines_come_sorted_whatever_order_they_were_written_in() {
        let a = "<svg><style>\n.a9 { x }\n.a15 { y }\n.a10 { z }\n</style><g/></svg>";
        let b = "<svg><style>\n.a10 { z }\n.a9 { x }\n.a15 { y }\n</style><g/></svg>";
        let want = "<svg><style>\n.a10 { z }\n.a15 { y }\n.a9 { x }\n</style><g/></svg>";
        assert_eq!(styles_sorted(a.into()), want);
        assert_eq!(styles_sorted(b.into()), want);
        assert_eq!(styles_sorted("<svg/>".into()), "<svg/>");
    }
}
