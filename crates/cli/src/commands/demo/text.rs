//! The demo's text: a run's throughput, critical path and most critical
//! states, two runs side by side, and what moved between them in a sentence.

use super::model::Run;
use super::Args;
use critpath_views::dur;
use critpath_views::text::{cols, elide};

fn label(s: &critpath_engine::results::StateRow) -> String {
    format!("{}: {}", s.sm, s.state)
}

/// The columns the widest of a run's `top` state names takes.
pub fn label_cols(r: &Run, top: usize) -> usize {
    let labels = r.analysis.states.iter().take(top).map(|s| cols(&label(s)));
    labels.max().unwrap_or(0)
}

/// A run in lines: throughput, critical path, most critical states (their
/// names cut in the middle to `names` columns when given).
pub fn summary(r: &Run, top: usize, names: Option<usize>) -> Vec<String> {
    let mut lines = vec![
        format!("throughput      {:.0} Mb/s", r.outcome.throughput_mbps),
        format!(
            "critical path   {}",
            dur(r.analysis.critical_path.length_ns)
        ),
        "most critical".to_string(),
    ];
    for s in r.analysis.states.iter().take(top) {
        let name = match names {
            Some(n) => elide(&label(s), n),
            None => label(s),
        };
        lines.push(format!("  {:>5.1}%  {name}", s.criticality * 100.0));
    }
    lines
}

/// Two columns of lines.
pub fn side_by_side(a: &[String], b: &[String]) -> String {
    let w = a.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 4;
    let mut o = String::new();
    for i in 0..a.len().max(b.len()) {
        let l = a.get(i).map(String::as_str).unwrap_or("");
        let r = b.get(i).map(String::as_str).unwrap_or("");
        o.push_str(format!("{l:<w$}{r}").trim_end());
        o.push('\n');
    }
    o
}

/// What moved between two runs, in a sentence.
pub fn story(a: &Run, b: &Run) -> String {
    let (Some(ta), Some(tb)) = (a.analysis.states.first(), b.analysis.states.first()) else {
        return String::new();
    };
    let speed = b.outcome.throughput_mbps / a.outcome.throughput_mbps.max(1e-9);
    let find = |r: &Run, sm: &str, st: &str| {
        r.analysis
            .states
            .iter()
            .find(|s| s.sm == sm && s.state == st)
            .map(|s| s.criticality * 100.0)
            .unwrap_or(0.0)
    };
    if ta.sm == tb.sm && ta.state == tb.state {
        format!(
            "On both buses {} bounds the stream ({:.0}% and {:.0}% of the critical path); the faster bus changes throughput by {:.2}x.\n",
            label(ta),
            ta.criticality * 100.0,
            tb.criticality * 100.0,
            speed
        )
    } else {
        format!(
            "On {} the stream is bound by {} ({:.0}% of the critical path), a place no software profiler sees.\n\
             On {} throughput rises {:.2}x and the bottleneck moves to {} ({:.0}%); {} falls to {:.1}%.\n",
            a.cfg.bus.describe(),
            label(ta),
            ta.criticality * 100.0,
            b.cfg.bus.describe(),
            speed,
            label(tb),
            tb.criticality * 100.0,
            label(ta),
            find(b, &ta.sm, &ta.state),
        )
    }
}

/// What was simulated.
pub fn header(args: &Args) -> String {
    format!(
        "critpath demo: {} sends of {}-byte UDP payloads, netfilter {}, from a host through a NIC on an I/O bus\n\
         (the system of Saidi et al. §5.2, simulated; every component recorded as state machines and analyzed by critpath)\n\n",
        args.packets,
        args.payload,
        if args.netfilter() { "on" } else { "off" }
    )
}
