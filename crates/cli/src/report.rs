//! `critpath report`: one self-contained HTML file (no network at view
//! time): a summary with the diagnostics and the paper's advice, the
//! criticality table (sortable, filterable), the cgraph as SVG with pan and
//! zoom where clicking a state shows its numbers, a zoomable timeline of the
//! critical path with one lane per SM, and the next most critical path.
//! Large traces are pruned with a visible note of what was hidden.

use crate::views;
use critpath_engine::analyses::NextPath;
use critpath_engine::results::{CGraph, PathSegment};
use critpath_engine::Analysis;
use serde_json::json;

/// cgraph edges drawn at most; the rest are summarized.
pub const MAX_EDGES: usize = 400;
/// Timeline segments drawn at most.
const MAX_SEGMENTS: usize = 20_000;

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
    let used: std::collections::HashSet<u32> = edges.iter().flat_map(|e| [e.from, e.to]).collect();
    let nodes = g
        .nodes
        .iter()
        .filter(|n| used.contains(&n.id))
        .cloned()
        .collect();
    (CGraph { nodes, edges }, g.edges.len() - MAX_EDGES)
}

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
        match views::svg(&view) {
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

const TEMPLATE: &str = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>critpath: {{TITLE}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
header { background: #222; color: #eee; padding: 10px 20px; }
header h1 { font-size: 18px; margin: 0; }
main { padding: 10px 20px; }
section { margin: 16px 0; }
h2 { font-size: 16px; border-bottom: 1px solid #ccc; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #f4f4f4; padding: 8px 12px; border-radius: 6px; min-width: 120px; }
.card b { display: block; font-size: 18px; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: left; }
th { cursor: pointer; background: #fafafa; user-select: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.sel { background: #ffe8e8; }
.bar { display: inline-block; height: 8px; background: #c00; vertical-align: middle; }
.note { color: #a60; }
.diag { margin: 4px 0; }
.diag .k { font-weight: bold; }
.diag .adv { color: #555; font-style: italic; }
#cgraph { border: 1px solid #ccc; height: 520px; overflow: hidden; position: relative; cursor: grab; }
#cgraph svg { width: 100%; height: 100%; }
#cgraph text { cursor: pointer; }
#panel { position: absolute; right: 8px; top: 8px; background: #fff; border: 1px solid #c00; padding: 8px; display: none; max-width: 360px; }
#timeline { border: 1px solid #ccc; overflow: hidden; cursor: zoom-in; }
.cols { display: flex; gap: 20px; } .cols > div { flex: 1; min-width: 0; }
input[type=search] { padding: 4px; width: 260px; }
</style></head>
<body>
<header><h1>critpath report: {{TITLE}}</h1></header>
<main>
<section id="summary"><h2>Summary</h2><div class="cards" id="cards"></div><div id="diags"></div></section>
<section class="cols">
<div><h2>Criticality</h2>
<input type="search" id="filter" placeholder="filter states or state machines"> <span id="tablenote" class="note"></span>
<table id="states"><thead><tr>
<th data-k="sm">state machine</th><th data-k="state">state</th><th class="num" data-k="visits">visits</th>
<th class="num" data-k="total_ns">total</th><th class="num" data-k="critical_ns">critical</th><th class="num" data-k="criticality">criticality</th>
</tr></thead><tbody></tbody></table></div>
<div id="nextbox"></div>
</section>
<section><h2>Combined graph</h2><p id="cgnote" class="note"></p>
<div id="cgraph">{{CGRAPH}}<div id="panel"></div></div>
<p>Drag to pan, wheel to zoom, click a state's label for its numbers. Edge colour goes from black (not critical) to red; dashed edges are dependences between state machines.</p></section>
<section><h2>Critical path timeline</h2><p id="tlnote" class="note"></p><div id="timeline"></div>
<p>Wheel to zoom in time, drag to pan; one lane per state machine, the path's segments in red.</p></section>
</main>
<script type="application/json" id="data">{{DATA}}</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
function dur(ns) {
  ns = Math.round(ns);
  if (ns < 1e3) return ns + " ns";
  if (ns < 1e6) return (ns / 1e3).toFixed(2) + " µs";
  if (ns < 1e9) return (ns / 1e6).toFixed(2) + " ms";
  return (ns / 1e9).toFixed(3) + " s";
}
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
const smName = s => s.sys === "local" ? s.sm : s.sys + "/" + s.sm;

// Summary.
const cp = D.critical_path;
const systems = new Set(D.states.map(s => s.sys)).size;
const cards = [
  ["critical path", cp.found ? dur(cp.length_ns) : "none"],
  ["from", cp.found ? cp.start.sm : "-"], ["to", cp.found ? cp.end.sm : "-"],
  ["systems", systems], ["state machines", D.stats.state_machines],
  ["records", D.stats.records], ["diagnostics", D.diagnostics.length]];
for (const [k, v] of cards) { const c = el("div", {class: "card"}); c.append(el("span", {}, k), el("b", {}, String(v))); document.getElementById("cards").append(c); }
const diags = document.getElementById("diags");
if (!cp.found) diags.append(el("p", {class: "note", id: "nopath"}, D.stats.records === 0
  ? "This trace holds no records, so there is no critical path."
  : "No critical path was found (nothing reachable from the start): see the diagnostics."));
for (const d of D.diagnostics) {
  const p = el("div", {class: "diag"});
  p.append(el("span", {class: "k"}, d.kind + ": "), el("span", {}, d.message + " "), el("span", {class: "adv"}, d.advice));
  diags.append(p);
}

// Criticality table.
let sortKey = "critical_ns", sortDir = -1, selected = null;
const tbody = document.querySelector("#states tbody");
function renderTable() {
  const f = document.getElementById("filter").value.toLowerCase();
  const rows = D.states.filter(s => !f || (smName(s) + " " + s.state).toLowerCase().includes(f));
  rows.sort((a, b) => (a[sortKey] < b[sortKey] ? -1 : a[sortKey] > b[sortKey] ? 1 : 0) * sortDir);
  tbody.replaceChildren();
  const MAX_ROWS = 2000;
  document.getElementById("tablenote").textContent = rows.length > MAX_ROWS
    ? "Showing " + MAX_ROWS + " of " + rows.length + " states; filter or sort to see others." : "";
  for (const s of rows.slice(0, MAX_ROWS)) {
    const tr = el("tr", {"data-sm": s.sm, "data-state": s.state});
    if (selected && selected.sm === s.sm && selected.state === s.state) tr.className = "sel";
    const bar = el("span", {class: "bar", style: "width:" + Math.round(s.criticality * 60) + "px"});
    const c = el("td", {class: "num"}, (s.criticality * 100).toFixed(2) + "% "); c.prepend(bar);
    tr.append(el("td", {}, smName(s)), el("td", {}, s.state), el("td", {class: "num"}, String(s.visits)),
      el("td", {class: "num"}, dur(s.total_ns)), el("td", {class: "num"}, dur(s.critical_ns)), c);
    tr.onclick = () => select(s.sm, s.state);
    tbody.append(tr);
  }
}
document.querySelectorAll("#states th").forEach(th => th.onclick = () => {
  const k = th.dataset.k; sortDir = (k === sortKey) ? -sortDir : (k === "sm" || k === "state" ? 1 : -1); sortKey = k; renderTable();
});
document.getElementById("filter").oninput = renderTable;
renderTable();

// Selecting a state: its numbers in the panel, its row highlighted.
function select(sm, state) {
  const rows = D.states.filter(s => s.state === state && (sm === null || s.sm === sm));
  const panel = document.getElementById("panel");
  panel.replaceChildren();
  if (!rows.length) { panel.style.display = "none"; return; }
  selected = {sm: rows[0].sm, state: rows[0].state};
  for (const s of rows) {
    const div = el("div", {class: "stateinfo"});
    div.append(el("b", {}, smName(s) + ": " + s.state), el("br"),
      el("span", {}, "visits " + s.visits + ", total " + dur(s.total_ns) + ", critical " + dur(s.critical_ns) + ", criticality " + (s.criticality * 100).toFixed(2) + "%"));
    panel.append(div);
  }
  panel.style.display = "block";
  renderTable();
}

// cgraph: pan and zoom by the SVG viewBox; click a label.
const svg = document.querySelector("#cgraph svg");
const cgnote = document.getElementById("cgnote");
if (D.hidden_edges > 0) cgnote.textContent = "Large graph: showing the " + (D.total_edges - D.hidden_edges) + " edges with the most critical and total time; " + D.hidden_edges + " of " + D.total_edges + " edges hidden.";
if (svg) {
  let vb = (svg.getAttribute("viewBox") || "0 0 1000 1000").split(/[ ,]+/).map(Number);
  const set = () => svg.setAttribute("viewBox", vb.join(" "));
  svg.addEventListener("wheel", e => {
    e.preventDefault();
    const r = svg.getBoundingClientRect(), k = e.deltaY > 0 ? 1.2 : 1 / 1.2;
    const mx = vb[0] + (e.clientX - r.left) / r.width * vb[2], my = vb[1] + (e.clientY - r.top) / r.height * vb[3];
    vb = [mx - (mx - vb[0]) * k, my - (my - vb[1]) * k, vb[2] * k, vb[3] * k]; set();
  }, {passive: false});
  let drag = null;
  svg.addEventListener("mousedown", e => { drag = [e.clientX, e.clientY, vb[0], vb[1]]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", e => {
    if (!drag) return;
    const r = svg.getBoundingClientRect();
    vb[0] = drag[2] - (e.clientX - drag[0]) / r.width * vb[2]; vb[1] = drag[3] - (e.clientY - drag[1]) / r.height * vb[3]; set();
  });
  const states = new Set(D.states.map(s => s.state));
  svg.querySelectorAll("text").forEach(t => {
    // An edge label's first line is its state.
    const first = t.querySelector("tspan");
    const name = (first ? first.textContent : t.textContent).trim();
    if (states.has(name)) { t.classList.add("state-label"); t.addEventListener("click", e => { e.stopPropagation(); select(null, name); }); }
  });
}

// Timeline: one lane per SM, zoom and pan in time.
const segs = D.segments;
const tl = document.getElementById("timeline");
if (D.hidden_segments > 0) document.getElementById("tlnote").textContent = D.hidden_segments + " short segments hidden (the " + segs.length + " longest are drawn).";
if (!segs.length) { tl.append(el("p", {class: "note"}, "No critical path to draw.")); }
else {
  const lanes = [...new Set(segs.map(s => (s.sys === "local" ? "" : s.sys + "/") + s.sm))];
  const t0 = Math.min(...segs.map(s => s.start_ns)), t1 = Math.max(...segs.map(s => s.end_ns));
  let view = [t0, Math.max(t1, t0 + 1)];
  const W = 1000, LH = 22, LW = 160, H = lanes.length * LH + 24;
  const NS = "http://www.w3.org/2000/svg";
  const tsvg = document.createElementNS(NS, "svg");
  tsvg.setAttribute("viewBox", `0 0 ${W} ${H}`); tsvg.setAttribute("width", "100%"); tsvg.id = "timeline-svg";
  tl.append(tsvg);
  function draw() {
    tsvg.replaceChildren();
    const x = t => LW + (t - view[0]) / (view[1] - view[0]) * (W - LW);
    lanes.forEach((l, i) => {
      const t = document.createElementNS(NS, "text"); t.setAttribute("x", 4); t.setAttribute("y", i * LH + 15); t.setAttribute("font-size", 11); t.textContent = l; tsvg.append(t);
      const line = document.createElementNS(NS, "line"); line.setAttribute("x1", LW); line.setAttribute("x2", W); line.setAttribute("y1", i * LH + LH - 2); line.setAttribute("y2", i * LH + LH - 2); line.setAttribute("stroke", "#eee"); tsvg.append(line);
    });
    for (const s of segs) {
      if (s.end_ns < view[0] || s.start_ns > view[1]) continue;
      const i = lanes.indexOf((s.sys === "local" ? "" : s.sys + "/") + s.sm);
      const r = document.createElementNS(NS, "rect");
      const xa = Math.max(LW, x(s.start_ns)), xb = Math.min(W, x(s.end_ns));
      r.setAttribute("x", xa); r.setAttribute("width", Math.max(0.5, xb - xa)); r.setAttribute("y", i * LH + 3); r.setAttribute("height", LH - 8);
      r.setAttribute("fill", s.inter ? "#f99" : "#c00"); r.setAttribute("class", "seg");
      const title = document.createElementNS(NS, "title"); title.textContent = `${s.sm}: ${s.state} ${dur(s.end_ns - s.start_ns)}${s.inter ? " (waiting on " + s.from_sm + ")" : ""}`; r.append(title);
      r.addEventListener("click", () => select(s.sm, s.state));
      tsvg.append(r);
    }
    const ax = document.createElementNS(NS, "text"); ax.setAttribute("x", LW); ax.setAttribute("y", H - 6); ax.setAttribute("font-size", 10);
    ax.textContent = `${dur(view[0] - t0)} .. ${dur(view[1] - t0)} after the path's start`; tsvg.append(ax);
  }
  draw();
  tsvg.addEventListener("wheel", e => {
    e.preventDefault();
    const r = tsvg.getBoundingClientRect(), f = Math.min(1, Math.max(0, ((e.clientX - r.left) / r.width * W - LW) / (W - LW)));
    const at = view[0] + f * (view[1] - view[0]), k = e.deltaY > 0 ? 1.25 : 0.8;
    view = [at - (at - view[0]) * k, at + (view[1] - at) * k]; draw();
  }, {passive: false});
  let tdrag = null;
  tsvg.addEventListener("mousedown", e => { tdrag = [e.clientX, view[0], view[1]]; });
  window.addEventListener("mouseup", () => { tdrag = null; });
  window.addEventListener("mousemove", e => {
    if (!tdrag) return;
    const r = tsvg.getBoundingClientRect(), dt = (e.clientX - tdrag[0]) / r.width * (tdrag[2] - tdrag[1]) * W / (W - LW);
    view = [tdrag[1] - dt, tdrag[2] - dt]; draw();
  });
}

// The next most critical path, beside the table.
if (D.next.length) {
  const box = document.getElementById("nextbox");
  for (const n of D.next) {
    box.append(el("h2", {}, "Next most critical path: " + dur(n.length_ns) + ", " + (n.shorter * 100).toFixed(1) + "% shorter"));
    box.append(el("p", {}, "with " + n.removed.join(", ") + " removed"));
    const t = el("table", {class: "next"});
    for (const s of n.states.filter(s => s.critical_ns > 0).slice(0, 15)) {
      const tr = el("tr"); tr.append(el("td", {}, smName(s) + ": " + s.state), el("td", {class: "num"}, (s.criticality * 100).toFixed(2) + "%")); t.append(tr);
    }
    box.append(t);
  }
}
window.critpathReady = true;
</script>
</body></html>
"##;
