//! `critpath report`: one self-contained HTML file (no network at view
//! time). It opens with the verdict (the same sentence as `analyze`'s) and
//! the predicted path with the most critical states twice as fast; then the
//! criticality table with the critical rows shown and the rest folded, a
//! timeline of the path's SMs and their neighbours with every state drawn
//! (see [`crate::timeline`]) and the path's dependences as arrows, the
//! cgraph's critical subgraph as SVG (the whole graph on demand), and the
//! next most critical path. Under the summary, one line per kind of
//! diagnostic that changes the answer; the others fold into one line that
//! opens on every diagnostic. Large traces are pruned
//! with a visible note of what was hidden.

use crate::dot::{pruned, subgraph, svg_within, NotDrawn, LAYOUT_DEADLINE};
use crate::report_path::PathPage;
use crate::timeline::Timeline;
use critpath_engine::analyses::NextPath;
use critpath_engine::results::CGraph;
use critpath_engine::Analysis;
use serde::Serialize;
use serde_json::json;

/// The predicted path with some states `factor` times faster.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WhatIf {
    /// `SM: STATE` names.
    pub states: Vec<String>,
    pub factor: f64,
    pub length_ns: u64,
    /// Edges with time the speed-up scaled: 0 when the states' time is all
    /// on links (nothing changed).
    pub scaled_edges: u64,
}

/// What the report shows beside the analysis, computed by the caller.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// What-ifs of the most critical states; when the first names one
    /// state, it is the top state's and the verdict quotes it.
    pub whatif: Vec<WhatIf>,
    /// The timeline's lanes and states (without it, the path alone).
    pub timeline: Option<Timeline>,
    /// The critical path's span, lanes and longest segments.
    pub path: PathPage,
}

/// The report of an analysis (and the next most critical paths) as one
/// HTML page.
pub fn html(a: &Analysis, name: &str, next: &[NextPath], extras: &Extras) -> String {
    let (g, hidden_edges) = pruned(&a.cgraph);
    let critical = critical_subgraph(&a.cgraph);
    let (critical_shown, critical_hidden) = pruned(&critical);
    let all_svg = graph_svg(a, g);
    let cgraph_svg = if critical.edges.is_empty() {
        all_svg.clone()
    } else {
        graph_svg(a, critical_shown)
    };
    let faster = extras
        .whatif
        .first()
        .filter(|w| w.states.len() == 1)
        .map(|w| crate::analysis::Faster {
            length_ns: w.length_ns,
            scaled_edges: w.scaled_edges,
        });
    let verdict = crate::analysis::verdict(a, faster, None);
    let data = json!({
        "name": name,
        "verdict": verdict.trim(),
        "whatif": extras.whatif,
        "critical_path": a.critical_path,
        "stats": a.stats,
        "states": a.states,
        "diagnostics": a.diagnostics.iter().map(|d| json!({"kind": d.kind, "severity": d.kind.severity(), "count": d.count, "message": d.message, "advice": d.kind.advice()})).collect::<Vec<_>>(),
        "segments": extras.path.segments,
        "hidden_segments": extras.path.hidden,
        "hidden_edges": hidden_edges,
        "total_edges": a.cgraph.edges.len(),
        "critical_edges": critical.edges.len(),
        "critical_hidden": critical_hidden,
        "timeline": extras.timeline,
        "started": started(a, extras),
        "next": next,
    });
    // `</` cannot close the script element from inside the JSON.
    let data = serde_json::to_string(&data)
        .expect("json")
        .replace("</", "<\\/");
    let title = if verdict.is_empty() {
        format!("critpath report: {}", esc(name))
    } else {
        esc(verdict.trim())
    };
    TEMPLATE
        .replace("{{TITLE}}", &esc(name))
        .replace("{{VERDICT}}", &title)
        .replace("{{CGRAPH}}", &cgraph_svg)
        .replace("{{CGRAPH_ALL}}", &all_svg)
        .replace("{{DATA}}", &data)
}

/// The wall-clock time (ISO 8601, UTC) the timeline starts at, when the
/// trace's times are since the Unix epoch (a request of a span file: its
/// start); the timeline's times are from then.
fn started(a: &Analysis, extras: &Extras) -> Option<String> {
    if !a.wall_clock {
        return None;
    }
    let t0 = match &extras.timeline {
        Some(tl) => tl.t0,
        None => extras.path.span?.0,
    };
    iso8601(t0)
}

/// `ns` since the Unix epoch as ISO 8601 in UTC, to the microsecond.
pub fn iso8601(ns: u64) -> Option<String> {
    let secs = i64::try_from(ns / 1_000_000_000).ok()?;
    let t = chrono::DateTime::from_timestamp(secs, (ns % 1_000_000_000) as u32)?;
    Some(t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

/// The edges that carry critical time, and their nodes.
fn critical_subgraph(g: &CGraph) -> CGraph {
    let edges = g
        .edges
        .iter()
        .filter(|e| e.critical_ns > 0)
        .cloned()
        .collect();
    subgraph(g, edges)
}

/// `g` (a part of `a`'s cgraph) as SVG, or a note saying why not.
fn graph_svg(a: &Analysis, g: CGraph) -> String {
    let edges = g.edges.len();
    let view = Analysis {
        cgraph: g,
        critical_path: a.critical_path.clone(),
        ..Analysis::default()
    };
    match svg_within(&view, LAYOUT_DEADLINE) {
        Ok(svg) => svg,
        Err(NotDrawn::Empty) => String::from("<p class=note>No transitions to draw.</p>"),
        Err(NotDrawn::Failed(e)) => format!(
            "<p class=note>The cgraph could not be laid out: {}</p>",
            esc(&e)
        ),
        Err(NotDrawn::Late(d)) => format!(
            "<p class=note>The cgraph ({} edges) could not be laid out in {} s; `critpath cgraph -o FILE.dot` writes it for Graphviz.</p>",
            edges,
            d.as_secs()
        ),
    }
}

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page; `{{TITLE}}`, `{{VERDICT}}`, `{{CGRAPH}}`, `{{CGRAPH_ALL}}`
/// and `{{DATA}}` are filled in.
const TEMPLATE: &str = include_str!("report.html");

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn epoch_nanoseconds_are_iso_8601_in_utc() {
        assert_eq!(
            iso8601(1_764_324_000_123_456_789).as_deref(),
            Some("2025-11-28T10:00:00.123456Z")
        );
        assert_eq!(iso8601(0).as_deref(), Some("1970-01-01T00:00:00.000000Z"));
    }
}
