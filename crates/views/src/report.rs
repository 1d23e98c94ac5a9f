//! `critpath report`: one self-contained HTML file (no network at view
//! time): a summary with the diagnostics and the paper's advice, the
//! criticality table (sortable, filterable), the cgraph as SVG with pan and
//! zoom where clicking a state shows its numbers, a zoomable timeline of the
//! critical path with one lane per SM, and the next most critical path.
//! Large traces are pruned with a visible note of what was hidden.

use crate::dot::{pruned, svg};
use critpath_engine::analyses::NextPath;
use critpath_engine::results::PathSegment;
use critpath_engine::Analysis;
use serde_json::json;

/// Timeline segments drawn at most.
const MAX_SEGMENTS: usize = 20_000;

/// Adjacent segments of one SM and state merge; the longest are kept.
fn timeline(path: &[PathSegment]) -> (Vec<&PathSegment>, usize) {
    let mut keep: Vec<&PathSegment> = path.iter().filter(|s| s.end_ns > s.start_ns).collect();
    let dropped = keep.len().saturating_sub(MAX_SEGMENTS);
    if dropped > 0 {
        keep.sort_by_key(|s| std::cmp::Reverse(s.end_ns - s.start_ns));
        keep.truncate(MAX_SEGMENTS);
        keep.sort_by_key(|s| s.start_ns);
    }
    (keep, dropped)
}

/// The report of an analysis (and the next most critical paths) as one
/// HTML page.
pub fn html(a: &Analysis, name: &str, next: &[NextPath]) -> String {
    let (g, hidden_edges) = pruned(&a.cgraph);
    let shown = Analysis {
        cgraph: g,
        ..Analysis::default()
    };
    let cgraph_svg = if a.cgraph.edges.is_empty() {
        String::from("<p class=note>No transitions to draw.</p>")
    } else {
        let mut view = shown.clone();
        view.critical_path = a.critical_path.clone();
        match svg(&view) {
            Ok(svg) => svg,
            Err(e) => format!(
                "<p class=note>The cgraph could not be laid out: {}</p>",
                esc(&e)
            ),
        }
    };
    let (segs, hidden_segs) = timeline(a.path.as_deref().unwrap_or(&[]));
    let data = json!({
        "name": name,
        "critical_path": a.critical_path,
        "stats": a.stats,
        "states": a.states,
        "diagnostics": a.diagnostics.iter().map(|d| json!({"kind": d.kind, "message": d.message, "advice": d.kind.advice()})).collect::<Vec<_>>(),
        "segments": segs,
        "hidden_segments": hidden_segs,
        "hidden_edges": hidden_edges,
        "total_edges": a.cgraph.edges.len(),
        "next": next,
    });
    // `</` cannot close the script element from inside the JSON.
    let data = serde_json::to_string(&data)
        .expect("json")
        .replace("</", "<\\/");
    TEMPLATE
        .replace("{{TITLE}}", &esc(name))
        .replace("{{CGRAPH}}", &cgraph_svg)
        .replace("{{DATA}}", &data)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page; `{{TITLE}}`, `{{CGRAPH}}` and `{{DATA}}` are filled in.
const TEMPLATE: &str = include_str!("report.html");
