//! The HTML report of many requests (a span file of several trace ids):
//! the distribution of request lengths with p50/p90/p99, the states that
//! bound the slowest requests against the rest, the aggregate table, and
//! the slowest requests, each a link to its own report (the one-request
//! report of `report --trace ID`, embedded).

use crate::batch::{comparison, states_table, summary, Summary};
use crate::report::esc;
use crate::text::dur;
use std::fmt::Write as _;

/// One of the slowest requests: its id, its path's length, and its own
/// report (a whole HTML page).
pub struct Slow {
    pub trace_id: String,
    pub length_ns: u64,
    pub top: String,
    pub page: String,
}

/// Bars of the histogram of request lengths.
const BINS: usize = 40;

/// The page of `sum` (the requests of `what`), with the `slow` requests'
/// own reports.
pub fn html(sum: &Summary, what: &str, slow: &[Slow]) -> String {
    let verdict = summary(what, &sum.per_trace, &sum.states, sum.length_ns_sum);
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html><html lang=en><meta charset=utf-8><title>critpath: {}</title>{STYLE}\
         <h1>critpath: {}</h1><pre class=verdict>{}</pre>",
        esc(what),
        esc(what),
        esc(&verdict)
    );
    for d in &sum.file_diagnostics {
        let _ = write!(
            o,
            "<p class=caution>{} ({}): {}</p>",
            crate::batch::heading(d),
            d.kind,
            esc(&d.message)
        );
    }
    o.push_str(&distribution(sum));
    let _ = write!(
        o,
        "<section id=tail><h2>The slowest requests against the rest</h2><pre>{}</pre></section>",
        esc(&comparison(&sum.slowest, None))
    );
    let _ = write!(
        o,
        "<section id=states><h2>States over the requests</h2><pre>{}</pre></section>",
        esc(&states_table(&sum.states[..sum.states.len().min(40)], None))
    );
    o.push_str(&slowest(slow));
    o.push_str(SCRIPT);
    o
}

/// `p` (0–100) of sorted `v`, nearest rank.
fn pct(v: &[u64], p: usize) -> u64 {
    let rank = (p * v.len()).div_ceil(100).max(1);
    v[rank.min(v.len()) - 1]
}

/// The histogram of the requests' lengths, p50/p90/p99 marked.
fn distribution(sum: &Summary) -> String {
    let mut v: Vec<u64> = sum.per_trace.iter().map(|r| r.length_ns).collect();
    v.sort_unstable();
    if v.is_empty() {
        return String::new();
    }
    let (lo, hi) = (v[0], v[v.len() - 1]);
    let span = (hi - lo).max(1);
    let bin = |x: u64| (((x - lo) as u128 * BINS as u128 / span as u128) as usize).min(BINS - 1);
    let mut counts = [0u64; BINS];
    v.iter().for_each(|&x| counts[bin(x)] += 1);
    let most = *counts.iter().max().unwrap_or(&1);
    let (w, h) = (800.0, 160.0);
    let bw = w / BINS as f64;
    let mut svg = format!(
        "<svg viewBox='0 0 {w} {}' width={w} role=img aria-label='request lengths'>",
        h + 20.0
    );
    for (i, &c) in counts.iter().enumerate().filter(|x| *x.1 > 0) {
        let bh = h * c as f64 / most as f64;
        let _ = write!(
            svg,
            "<rect x={:.1} y={:.1} width={:.1} height={bh:.1}><title>{c} request(s)</title></rect>",
            i as f64 * bw,
            h - bh,
            bw - 1.0
        );
    }
    let (p50, p90, p99) = (pct(&v, 50), pct(&v, 90), pct(&v, 99));
    for (name, x) in [("p50", p50), ("p90", p90), ("p99", p99)] {
        let at = (x - lo) as f64 / span as f64 * w;
        let _ = write!(
            svg,
            "<line class=mark x1={at:.1} x2={at:.1} y1=0 y2={h}></line><text x={:.1} y={}>{name}</text>",
            at + 2.0,
            h + 14.0
        );
    }
    svg.push_str("</svg>");
    format!(
        "<section id=distribution><h2>Request lengths</h2><p>{} requests: from {} to {}; \
         <b>p50 {}</b>, <b>p90 {}</b>, <b>p99 {}</b></p>{svg}</section>",
        v.len(),
        dur(lo),
        dur(hi),
        dur(p50),
        dur(p90),
        dur(p99)
    )
}

/// The slowest requests: a list of links, then each one's report.
fn slowest(slow: &[Slow]) -> String {
    if slow.is_empty() {
        return String::new();
    }
    let mut o = String::from("<section id=slowest><h2>The slowest requests</h2><ol>");
    for s in slow {
        let _ = write!(
            o,
            "<li><a href='#req-{id}'>{id}</a> {} — {}</li>",
            dur(s.length_ns),
            esc(&s.top),
            id = esc(&s.trace_id)
        );
    }
    o.push_str("</ol>");
    for s in slow {
        let _ = write!(
            o,
            "<details id='req-{id}'><summary>request {id}: {}</summary>\
             <iframe loading=lazy title='request {id}' srcdoc=\"{}\"></iframe></details>",
            dur(s.length_ns),
            esc(&s.page),
            id = esc(&s.trace_id)
        );
    }
    o.push_str("</section>");
    o
}

const STYLE: &str = "<style>body{font:14px system-ui,sans-serif;margin:1.5em;max-width:1100px}\
pre{font:13px ui-monospace,monospace;overflow-x:auto}svg rect{fill:#4a78b5}\
svg .mark{stroke:#c0392b;stroke-width:2}svg text{font:11px sans-serif;fill:#c0392b}\
iframe{width:100%;height:900px;border:1px solid #ccc}.caution{color:#a05000}</style>";

/// A link to a request opens its report.
const SCRIPT: &str = "<script>function openHash(){const d=document.getElementById(decodeURIComponent(location.hash.slice(1)));\
if(d&&d.tagName==='DETAILS'){d.open=true;d.scrollIntoView();}}\
addEventListener('hashchange',openHash);openHash();window.critpathReady=true;</script>";

#[cfg(test)]
mod tests {
    use super::pct;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((pct(&v, 50), pct(&v, 90), pct(&v, 99)), (50, 90, 99));
        assert_eq!(pct(&[7], 99), 7);
    }
}
