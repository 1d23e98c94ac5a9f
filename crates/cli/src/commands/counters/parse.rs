//! Reading what perf wrote: `perf stat -x , -A` counts per CPU, and
//! `perf script` stacks as a call graph.

use super::{kind, INTERRUPTS, PACKETS};
use critpath_kernel::callgraph::{self, CallGraph};
use critpath_views::counters::{Counter, Counts};
use std::collections::BTreeMap;
use std::path::Path;

/// Reads `perf stat -x , -A` output.
pub fn parse_stat(text: &str, events: &[String]) -> Counts {
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

/// Parses `perf script -F comm,tid,ip,sym,dso` stacks (a header line,
/// then a frame per line, innermost first; a blank line ends a sample),
/// leaving out perf's own samples.
pub fn call_graph(text: &str) -> CallGraph {
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
