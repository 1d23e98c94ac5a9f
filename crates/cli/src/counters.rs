//! `critpath counters [-e EVENTS] [--sample] -- CMD` (pfmon/q-tools, seed
//! 003): counts events on every CPU while a command runs (`perf stat -a
//! -A`), hardware counters where the machine has them and software
//! counters otherwise, saying which; normalizes each per interrupt, per
//! packet (from the net tracepoints) and per annotated unit of work (SM
//! lives the SDKs ended); and with `--sample`, a sampling profile of the
//! command with its call graph (flat profile, callers and callees, a
//! Graphviz drawing). The command's output and exit status pass through.

use crate::record::{exit_code, has_tracepoint, outlive_interrupts, preflight};
use crate::views::grid;
use crate::Failure;
use critpath_kernel::callgraph::{self, CallGraph};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What is counted when `-e` names nothing: the hardware counters (where
/// the machine has them) and the kernel's software counters.
const DEFAULT_EVENTS: &[&str] = &[
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];

/// The kernel's software counters (the rest without `:` are hardware).
const SOFTWARE: &[&str] = &[
    "task-clock",
    "cpu-clock",
    "context-switches",
    "cs",
    "cpu-migrations",
    "migrations",
    "page-faults",
    "faults",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
];

/// Counted always, as the units the others are normalized by.
const INTERRUPTS: &[&str] = &["irq:irq_handler_entry", "irq:softirq_entry"];
const PACKETS: &[&str] = &["net:net_dev_xmit", "net:netif_receive_skb"];

pub struct Request {
    pub events: Vec<String>,
    pub sample: bool,
    pub frequency: u32,
    pub dot: Option<PathBuf>,
    pub unit: Option<String>,
    pub perf: Option<PathBuf>,
    pub cmd: Vec<String>,
}

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

fn fail(msg: impl Into<String>) -> Failure {
    Failure::Input(msg.into())
}

fn kind(event: &str) -> &'static str {
    if event.contains(':') {
        "tracepoint"
    } else if SOFTWARE.contains(&event) {
        "software"
    } else {
        "hardware"
    }
}

/// Runs the command under `perf stat` (and `perf record` when sampling).
pub fn run(req: &Request) -> Result<Counts, Failure> {
    let (perf, tfs) = preflight(
        &req.cmd,
        req.perf.as_deref(),
        "critpath counters [-e EVENTS]",
        "counted",
    )?;
    let mut notes = Vec::new();
    let mut events: Vec<String> = if req.events.is_empty() {
        DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect()
    } else {
        req.events
            .iter()
            .flat_map(|e| e.split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    };
    for e in events.iter().filter(|e| kind(e) == "tracepoint") {
        if !has_tracepoint(&tfs, e) {
            return Err(fail(format!(
                "{e}: this kernel has no such tracepoint (see `perf list tracepoint`)"
            )));
        }
    }
    for tp in INTERRUPTS.iter().chain(PACKETS) {
        if !events.iter().any(|e| e == tp) {
            if has_tracepoint(&tfs, tp) {
                events.push(tp.to_string());
            } else {
                notes.push(format!("this kernel has no {tp} tracepoint"));
            }
        }
    }
    let dir =
        tempfile::tempdir().map_err(|e| fail(format!("cannot make a scratch directory: {e}")))?;
    let stat = dir.path().join("stat.csv");
    let samples = dir.path().join("samples.data");
    let annot = dir.path().join("units.annot");
    let mut args: Vec<String> = Vec::new();
    if req.sample {
        args.extend(
            [
                "record",
                "-q",
                "-g",
                "-F",
                &req.frequency.to_string(),
                "-e",
                "cpu-clock",
                "-o",
                &samples.display().to_string(),
                "--",
                &perf.display().to_string(),
            ]
            .map(str::to_string),
        );
    }
    args.extend(
        [
            "stat",
            "-a",
            "-A",
            "-x",
            ",",
            "-o",
            &stat.display().to_string(),
            "-e",
            &events.join(","),
            "--",
        ]
        .map(str::to_string),
    );
    args.extend(req.cmd.iter().cloned());
    outlive_interrupts();
    let status = Command::new(&perf)
        .args(&args)
        .env("CRITPATH_OUT", &annot)
        .status()
        .map_err(|e| fail(format!("cannot run {}: {e}", perf.display())))?;
    let code = exit_code(&status);
    let text = std::fs::read_to_string(&stat).map_err(|_| {
        fail(format!(
            "perf stat wrote no counts (exit status {code}); see its messages above"
        ))
    })?;
    let mut counts = parse_stat(&text, &events);
    counts.command = req.cmd.clone();
    counts.exit_status = code;
    counts.notes.extend(notes);
    if !counts.hardware {
        let asked: Vec<&str> = events
            .iter()
            .filter(|e| kind(e) == "hardware")
            .map(String::as_str)
            .collect();
        counts.notes.push(if asked.is_empty() {
            "software counters and tracepoints only (no hardware counter was asked for)".into()
        } else {
            format!(
                "this machine has no hardware counters for {} (a VM without a virtual PMU?): the figures are the kernel's software counters and tracepoints",
                asked.join(", ")
            )
        });
    }
    counts.units = units(&annot);
    counts.unit = match &req.unit {
        Some(u) => {
            if !counts.units.contains_key(u) {
                counts.notes.push(format!(
                    "no annotated unit named {u} ended (units seen: {})",
                    if counts.units.is_empty() {
                        "none; annotate the program with the critpath SDK".to_string()
                    } else {
                        counts.units.keys().cloned().collect::<Vec<_>>().join(", ")
                    }
                ));
            }
            Some(u.clone())
        }
        // The SM with the most lives, if it has more than one.
        None => counts
            .units
            .iter()
            .filter(|(name, n)| !name.contains(':') && **n > 1)
            .max_by_key(|(name, n)| (**n, std::cmp::Reverse((*name).clone())))
            .map(|(n, _)| n.clone()),
    };
    if counts.unit.is_none() && !counts.units.is_empty() {
        counts.notes.push(format!(
            "no annotated SM ended more than once: name the unit of work with --unit SM or --unit SM:STATE (seen: {})",
            counts.units.keys().take(12).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let per_unit = counts
        .unit
        .as_ref()
        .and_then(|u| counts.units.get(u))
        .map(|&n| n as f64);
    let (irq, pk) = (counts.interrupts, counts.packets);
    for c in &mut counts.counters {
        let ratio = |d: f64| c.total.filter(|_| d > 0.0).map(|t| t / d);
        c.per_interrupt = ratio(irq);
        c.per_packet = ratio(pk);
        c.per_unit = per_unit.and_then(ratio);
    }
    if req.sample {
        let g = profile(&perf, &samples)?;
        if g.samples == 0 {
            counts
                .notes
                .push("the sampling profile has no samples of the command".into());
        }
        if let Some(path) = &req.dot {
            std::fs::write(path, g.dot(0.01))
                .map_err(|e| fail(format!("{}: cannot write: {e}", path.display())))?;
        }
        counts.profile = Some(g);
    }
    Ok(counts)
}

/// Reads `perf stat -x , -A` output.
fn parse_stat(text: &str, events: &[String]) -> Counts {
    let mut by_event: BTreeMap<&str, (String, BTreeMap<usize, Option<f64>>)> = BTreeMap::new();
    let mut cpus = 0;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 4 {
            continue;
        }
        let Some(cpu) = f[0]
            .strip_prefix("CPU")
            .and_then(|c| c.parse::<usize>().ok())
        else {
            continue;
        };
        cpus = cpus.max(cpu + 1);
        let Some(ev) = events.iter().find(|e| e.as_str() == f[3]) else {
            continue;
        };
        let value = f[1].parse::<f64>().ok();
        let e = by_event.entry(ev).or_default();
        e.0 = f[2].to_string();
        e.1.insert(cpu, value);
    }
    let mut not_supported = Vec::new();
    let mut counters = Vec::new();
    let mut hardware = false;
    let (mut interrupts, mut packets) = (0.0, 0.0);
    for ev in events {
        let Some((unit, vals)) = by_event.get(ev.as_str()) else {
            not_supported.push(ev.clone());
            continue;
        };
        let per_cpu: Vec<Option<f64>> =
            (0..cpus).map(|c| vals.get(&c).copied().flatten()).collect();
        let total = per_cpu
            .iter()
            .any(Option::is_some)
            .then(|| per_cpu.iter().flatten().sum::<f64>());
        match total {
            None => not_supported.push(ev.clone()),
            Some(t) => {
                if kind(ev) == "hardware" {
                    hardware = true;
                }
                if INTERRUPTS.contains(&ev.as_str()) {
                    interrupts += t;
                }
                if PACKETS.contains(&ev.as_str()) {
                    packets += t;
                }
            }
        }
        counters.push(Counter {
            event: ev.clone(),
            kind: kind(ev),
            per_cpu,
            total,
            unit: unit.clone(),
            per_interrupt: None,
            per_packet: None,
            per_unit: None,
        });
    }
    Counts {
        command: Vec::new(),
        exit_status: 0,
        cpus,
        hardware,
        not_supported,
        counters,
        interrupts,
        packets,
        units: BTreeMap::new(),
        unit: None,
        profile: None,
        notes: Vec::new(),
    }
}

/// Units of work the SDKs annotated: per SM name its lives ended (`SM`),
/// and per state its entries (`SM:STATE`).
fn units(annot: &Path) -> BTreeMap<String, u64> {
    use critpath_readers::annot::{Annot, AnnotReader};
    let mut out = BTreeMap::new();
    let Ok(mut r) = AnnotReader::open(annot) else {
        return out;
    };
    // Per thread (and task), the SMs begun.
    let mut stacks: std::collections::HashMap<(u32, u32, u64), Vec<String>> = Default::default();
    while let Some(a) = r.next_annotation() {
        let stack = stacks.entry((a.pid, a.tid, a.task)).or_default();
        match a.what {
            Annot::BeginSm(name) => stack.push(name.to_string()),
            Annot::EndSm(name) => {
                *out.entry(name.to_string()).or_default() += 1;
                if let Some(i) = stack.iter().rposition(|s| s == name) {
                    stack.truncate(i);
                }
            }
            // Every transition into a state is an entry (a new item
            // entering `work` is one even when the last item was in it).
            Annot::State(state) | Annot::Recv { state, .. } | Annot::Wait { state, .. } => {
                if let Some(sm) = stack.last() {
                    *out.entry(format!("{sm}:{state}")).or_default() += 1;
                }
            }
            Annot::Send(_) => {}
        }
    }
    out
}

/// The command's samples, symbolized by `perf script`, as a call graph.
fn profile(perf: &Path, samples: &Path) -> Result<CallGraph, Failure> {
    let out = Command::new(perf)
        .args(["script", "-F", "comm,tid,ip,sym,dso", "-i"])
        .arg(samples)
        .output()
        .map_err(|e| fail(format!("cannot run perf script: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "perf script could not read the samples: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(call_graph(&String::from_utf8_lossy(&out.stdout)))
}

/// Parses `perf script -F comm,tid,ip,sym,dso` stacks (a header line,
/// then a frame per line, innermost first; a blank line ends a sample),
/// leaving out perf's own samples.
fn call_graph(text: &str) -> CallGraph {
    let mut b = callgraph::Builder::new();
    let mut stack: Vec<String> = Vec::new();
    let mut keep = false;
    let mut flush = |stack: &mut Vec<String>, keep: bool| {
        if keep {
            b.add(stack);
        }
        stack.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut stack, keep);
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            flush(&mut stack, keep);
            let comm = line.split_whitespace().next().unwrap_or("");
            keep = comm != "perf" && comm != "perf-exec";
            continue;
        }
        let mut parts = line.split_whitespace();
        let addr = parts.next().unwrap_or("");
        let rest: Vec<&str> = parts.collect();
        let (sym, dso) = match rest.split_last() {
            Some((d, s)) if d.starts_with('(') => {
                (s.join(" "), d.trim_matches(|c| c == '(' || c == ')'))
            }
            _ => (rest.join(" "), ""),
        };
        if sym == "[unknown]" {
            if addr.trim_start_matches('0').is_empty() {
                continue;
            }
            let lib = Path::new(dso)
                .file_name()
                .map_or(dso.to_string(), |f| f.to_string_lossy().into_owned());
            stack.push(format!("[unknown in {lib}]"));
        } else {
            stack.push(sym);
        }
    }
    flush(&mut stack, keep);
    b.finish()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv_is_read_per_cpu_with_unsupported_counters() {
        let text = "# started\n\nCPU0,10.5,msec,task-clock,1,100.00,1.0,CPUs utilized\nCPU1,11.5,msec,task-clock,1,100.00,,\nCPU0,<not supported>,,instructions,0,100.00,,\nCPU1,<not supported>,,instructions,0,100.00,,\nCPU0,3,,irq:irq_handler_entry,1,100.00,,\nCPU1,1,,irq:softirq_entry,1,100.00,,\n";
        let ev: Vec<String> = [
            "task-clock",
            "instructions",
            "irq:irq_handler_entry",
            "irq:softirq_entry",
        ]
        .map(String::from)
        .to_vec();
        let c = parse_stat(text, &ev);
        assert_eq!(c.cpus, 2);
        assert!(!c.hardware);
        assert_eq!(c.not_supported, vec!["instructions"]);
        assert_eq!(c.counters[0].total, Some(22.0));
        assert_eq!(c.counters[0].unit, "msec");
        assert_eq!(c.counters[0].kind, "software");
        assert_eq!(c.interrupts, 4.0);
        assert_eq!(c.counters[2].per_cpu, vec![Some(3.0), None]);
    }

    #[test]
    fn perf_script_stacks_become_a_call_graph_without_perfs_own_samples() {
        let text = "perf 10 \n\t ffff clear_page_erms ([kernel.kallsyms])\n\nfunctions 11 \n\t 1139 compute (/tmp/functions)\n\t 1160 handle (/tmp/functions)\n\t 1190 main (/tmp/functions)\n\t 7f00 [unknown] (/usr/lib/libc.so.6)\n\t 0 [unknown] ([unknown])\n\nfunctions 11 \n\t 1100 parse (/tmp/functions)\n\t 1160 handle (/tmp/functions)\n";
        let g = call_graph(text);
        assert_eq!(g.samples, 2);
        assert!(g.flat.iter().all(|r| r.function != "clear_page_erms"));
        let (callers, _) = g.neighbours("main");
        assert_eq!(callers[0].caller, "[unknown in libc.so.6]");
        let h = g.flat.iter().find(|r| r.function == "handle").unwrap();
        assert_eq!((h.self_samples, h.inclusive), (0, 2));
    }
}
