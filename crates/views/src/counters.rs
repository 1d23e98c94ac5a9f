//! What `critpath counters` measured (its JSON output) and its text view:
//! the counters per CPU, normalized per interrupt, packet and unit of work,
//! and with sampling, gprof's flat profile and call graph.

use crate::text::grid;
use critpath_kernel::callgraph::CallGraph;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct Counter {
    pub event: String,
    /// `hardware`, `software` or `tracepoint`.
    pub kind: &'static str,
    /// Per CPU; `None` where the machine cannot count it.
    pub per_cpu: Vec<Option<f64>>,
    pub total: Option<f64>,
    pub unit: String,
    pub per_interrupt: Option<f64>,
    pub per_packet: Option<f64>,
    pub per_unit: Option<f64>,
}

#[derive(Serialize)]
pub struct Counts {
    pub command: Vec<String>,
    pub exit_status: u8,
    pub cpus: usize,
    /// Whether any hardware counter counted.
    pub hardware: bool,
    /// Events the machine cannot count here.
    pub not_supported: Vec<String>,
    pub counters: Vec<Counter>,
    pub interrupts: f64,
    pub packets: f64,
    /// Annotated units: SM lives ended, per SM name.
    pub units: BTreeMap<String, u64>,
    /// The SM whose lives are the unit of `per_unit`.
    pub unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<CallGraph>,
    pub notes: Vec<String>,
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => format!("{:.0}", x),
        Some(x) => format!("{:.2}", x),
    }
}

/// The tables for people.
pub fn table(c: &Counts, top: usize) -> String {
    let mut o = format!(
        "counters while `{}` ran (exit status {}), all {} CPUs\n\n",
        c.command.join(" "),
        c.exit_status,
        c.cpus
    );
    let unit_col = c.unit.as_ref().map(|u| format!("per {u}"));
    let mut head: Vec<String> = vec!["event".into(), "kind".into()];
    head.extend((0..c.cpus).map(|i| format!("cpu{i}")));
    head.extend(["total".into(), "per interrupt".into(), "per packet".into()]);
    if let Some(u) = &unit_col {
        head.push(u.clone());
    }
    let rows: Vec<Vec<String>> = c
        .counters
        .iter()
        .map(|k| {
            let mut r = vec![
                if k.unit.is_empty() {
                    k.event.clone()
                } else {
                    format!("{} ({})", k.event, k.unit)
                },
                k.kind.to_string(),
            ];
            if k.total.is_none() {
                r.extend((0..c.cpus).map(|_| "-".to_string()));
                r.push("not supported".into());
                r.extend(["-".into(), "-".into()]);
            } else {
                r.extend(k.per_cpu.iter().map(|v| num(*v)));
                r.push(num(k.total));
                r.push(num(k.per_interrupt));
                r.push(num(k.per_packet));
            }
            if unit_col.is_some() {
                r.push(num(k.per_unit));
            }
            r
        })
        .collect();
    let h: Vec<&str> = head.iter().map(String::as_str).collect();
    let right: Vec<bool> = (0..h.len()).map(|i| i >= 2).collect();
    o.push_str(&grid(&h, &rows, &right));
    o.push_str(&format!(
        "interrupts (hard + soft): {:.0}; packets (sent + received): {:.0}",
        c.interrupts, c.packets
    ));
    if let Some(u) = &c.unit {
        o.push_str(&format!(
            "; {u}: {} annotated units",
            c.units.get(u).copied().unwrap_or(0)
        ));
    }
    o.push('\n');
    if let Some(g) = &c.profile {
        o.push_str(&profile_table(g, top));
    }
    for n in &c.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// gprof's two views: the flat profile, then each top function with its
/// callers above and callees below.
fn profile_table(g: &CallGraph, top: usize) -> String {
    let mut o = format!("\nflat profile: {} samples\n", g.samples);
    let rows: Vec<Vec<String>> = g
        .flat
        .iter()
        .take(top)
        .map(|r| {
            vec![
                format!("{:.1}%", 100.0 * r.self_share),
                r.self_samples.to_string(),
                format!("{:.1}%", 100.0 * r.inclusive_share),
                r.inclusive.to_string(),
                r.function.clone(),
            ]
        })
        .collect();
    o.push_str(&grid(
        &["self %", "self", "incl %", "incl", "function"],
        &rows,
        &[true, true, true, true, false],
    ));
    o.push_str(
        "\ncall graph (callers above each function, callees below; samples along each arc)\n",
    );
    let mut by_incl: Vec<_> = g.flat.iter().collect();
    by_incl.sort_by(|a, b| {
        b.inclusive
            .cmp(&a.inclusive)
            .then_with(|| a.function.cmp(&b.function))
    });
    for r in by_incl.into_iter().take(top) {
        let (callers, callees) = g.neighbours(&r.function);
        for a in callers.iter().take(5) {
            o.push_str(&format!("    {:>8}  {}\n", a.samples, a.caller));
        }
        o.push_str(&format!(
            "  [{:.1}%] {}  (self {}, incl {})\n",
            100.0 * r.inclusive_share,
            r.function,
            r.self_samples,
            r.inclusive
        ));
        for a in callees.iter().take(5) {
            o.push_str(&format!("    {:>8}    {}\n", a.samples, a.callee));
        }
        o.push_str("  ----\n");
    }
    o
}
