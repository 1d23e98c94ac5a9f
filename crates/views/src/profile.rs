//! The text views of a process and kernel profile (KTAU's): the
//! process-centric table with one process in detail, and the kernel-wide
//! table of CPUs, interrupts and distributions across processes.

use crate::text::{cols, dur, fit, grid, grid_fit, grid_parts, notes, pct};
use critpath_kernel::profile::{Profile, Unit};

fn interrupts_ns(u: &Unit) -> u64 {
    u.interrupts.iter().map(|c| c.ns).sum()
}

/// The process-centric view: a line per process, then one process in
/// detail; within `width` columns when given (the process table in two,
/// times then switches and interrupts, when it is too wide, and names cut
/// in the middle).
pub fn process_table(
    p: &Profile,
    name: &str,
    top: usize,
    detail: Option<u32>,
    width: Option<usize>,
) -> String {
    let mut o = format!(
        "{name}: process profile over {} ({} kernel events)\n\n",
        dur(p.span_ns),
        p.kernel_events
    );
    // A trace without threads (JSONL, spans): its SMs stand for them.
    let (units, what) = if p.processes.is_empty() {
        (&p.sms, "SMs")
    } else {
        (&p.processes, "processes")
    };
    let rows: Vec<Vec<String>> = units
        .iter()
        .take(top)
        .map(|u| {
            vec![
                u.name.clone(),
                u.threads.len().max(1).to_string(),
                dur(u.on_cpu_ns),
                dur(u.running_ns()),
                dur(u.runnable_ns()),
                dur(u.blocked_ns()),
                u.voluntary.to_string(),
                u.involuntary.to_string(),
                u.interrupts
                    .iter()
                    .map(|c| c.count)
                    .sum::<u64>()
                    .to_string(),
                dur(interrupts_ns(u)),
            ]
        })
        .collect();
    o.push_str(&grid_parts(
        &[
            if what == "SMs" { "SM" } else { "process" },
            "threads",
            "on-CPU",
            "running",
            "runnable",
            "blocked",
            "voluntary",
            "involuntary",
            "interrupts",
            "intr time",
        ],
        &rows,
        &[false, true, true, true, true, true, true, true, true, true],
        width,
        &[&[1, 2, 3, 4, 5], &[6, 7, 8, 9]],
    ));
    if units.len() > top {
        o.push_str(&format!(
            "({top} of {} {what}; --top N for more, --json for all)\n",
            units.len()
        ));
    }
    if what == "processes" && !p.sms.is_empty() {
        o.push_str(&format!(
            "(and {} SMs that are not threads: interrupt contexts, annotated SMs; --by kernel, --json)\n",
            p.sms.len()
        ));
    }
    let chosen = match detail {
        Some(pid) => units.iter().find(|u| u.pid == Some(pid)),
        None => units.first(),
    };
    if let Some(u) = chosen {
        o.push('\n');
        o.push_str(&unit_detail(u, width));
    }
    notes(&mut o, &p.notes);
    o
}

/// One process (or thread): its states inclusive and exclusive, the
/// interrupts it suffered, its functions, its value events; names cut to
/// fit `width` when given.
pub fn unit_detail(u: &Unit, width: Option<usize>) -> String {
    let rest = format!(
        "{}: states (inclusive holds the sub-states)",
        if u.threads.len() > 1 {
            format!(" ({} threads)", u.threads.len())
        } else {
            String::new()
        }
    );
    let mut o = format!("{}{rest}\n", fit(&u.name, cols(&rest), width));
    let whole: u64 = u
        .inclusive
        .iter()
        .filter(|(k, _)| !k.contains(':'))
        .map(|(_, v)| *v)
        .sum();
    let rows: Vec<Vec<String>> = u
        .inclusive
        .iter()
        .map(|(state, incl)| {
            let depth = state.matches(':').count();
            vec![
                format!("{}{state}", "  ".repeat(depth)),
                dur(*incl),
                pct(*incl, whole),
                dur(u.exclusive.get(state).copied().unwrap_or(0)),
                u.visits.get(state).copied().unwrap_or(0).to_string(),
            ]
        })
        .collect();
    o.push_str(&grid_fit(
        &["state", "inclusive", "share", "exclusive", "visits"],
        &rows,
        &[false, true, true, true, true],
        width,
    ));
    o.push_str(&format!(
        "context switches: {} voluntary, {} involuntary; on-CPU {}\n",
        u.voluntary,
        u.involuntary,
        dur(u.on_cpu_ns)
    ));
    if !u.interrupts.is_empty() {
        o.push_str("\ninterrupts while current\n");
        let rows: Vec<Vec<String>> = u
            .interrupts
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.count.to_string(),
                    dur(c.ns),
                    dur(c.ns / c.count.max(1)),
                ]
            })
            .collect();
        o.push_str(&grid_fit(
            &["context", "count", "time", "mean"],
            &rows,
            &[false, true, true, true],
            width,
        ));
    }
    if !u.functions.is_empty() {
        o.push_str("\nfunctions (on-CPU time)\n");
        let rows: Vec<Vec<String>> = u
            .functions
            .iter()
            .map(|f| {
                vec![
                    f.function.clone(),
                    f.calls.to_string(),
                    dur(f.inclusive_ns),
                    dur(f.exclusive_ns),
                ]
            })
            .collect();
        o.push_str(&grid_fit(
            &["function", "calls", "inclusive", "exclusive"],
            &rows,
            &[false, true, true, true],
            width,
        ));
    }
    if !u.values.is_empty() {
        o.push_str("\nvalue events\n");
        o.push_str(&values_table(&u.values, width));
    }
    o
}

fn values_table(v: &[critpath_kernel::profile::ValueRow], width: Option<usize>) -> String {
    let rows: Vec<Vec<String>> = v
        .iter()
        .map(|r| {
            let hist: Vec<String> = r
                .histogram
                .iter()
                .map(|(low, n)| format!("{low}+:{n}"))
                .collect();
            vec![
                r.event.clone(),
                r.count.to_string(),
                format!("{:.1}", r.mean),
                r.min.to_string(),
                r.max.to_string(),
                hist.join(" "),
            ]
        })
        .collect();
    grid_fit(
        &[
            "event",
            "count",
            "mean",
            "min",
            "max",
            "histogram (from:count)",
        ],
        &rows,
        &[false, true, true, true, true, false],
        width,
    )
}

/// The kernel-wide view: interrupts per CPU, switches, idle time, value
/// events and the distributions across processes; within `width` columns
/// when given (the outliers under the distributions when they do not fit
/// beside them, and names cut in the middle).
pub fn kernel_table(p: &Profile, name: &str, width: Option<usize>) -> String {
    let mut o = format!(
        "{name}: kernel profile over {} ({} kernel events)\n\n",
        dur(p.span_ns),
        p.kernel_events
    );
    let rows: Vec<Vec<String>> = p
        .cpus
        .iter()
        .map(|c| {
            let n: u64 = c.interrupts.iter().map(|x| x.count).sum();
            let t: u64 = c.interrupts.iter().map(|x| x.ns).sum();
            vec![
                c.cpu.to_string(),
                dur(c.idle_ns),
                pct(c.idle_ns, p.span_ns),
                c.voluntary.to_string(),
                c.involuntary.to_string(),
                n.to_string(),
                dur(t),
                pct(t, p.span_ns),
            ]
        })
        .collect();
    o.push_str(&grid(
        &[
            "cpu",
            "idle",
            "idle %",
            "voluntary",
            "involuntary",
            "interrupts",
            "intr time",
            "intr %",
        ],
        &rows,
        &[true; 8],
    ));
    o.push_str("\ninterrupts, softirqs and timers per CPU (nested handlers left out)\n");
    let rows: Vec<Vec<String>> = p
        .cpus
        .iter()
        .flat_map(|c| {
            c.interrupts.iter().map(move |x| {
                vec![
                    c.cpu.to_string(),
                    x.name.clone(),
                    x.count.to_string(),
                    dur(x.ns),
                    dur(x.ns / x.count.max(1)),
                ]
            })
        })
        .collect();
    o.push_str(&grid_fit(
        &["cpu", "context", "count", "time", "mean"],
        &rows,
        &[true, false, true, true, true],
        width,
    ));
    if !p.values.is_empty() {
        o.push_str("\nvalue events\n");
        o.push_str(&values_table(&p.values, width));
    }
    if !p.distributions.is_empty() {
        o.push_str("\nacross processes (CDF; --json for every point)\n");
        let rows: Vec<Vec<String>> = p
            .distributions
            .iter()
            .map(|d| {
                let f = |v: u64| {
                    if d.metric.ends_with("_ns") {
                        dur(v)
                    } else {
                        v.to_string()
                    }
                };
                let top = d.cdf.last().map(|c| c.name.clone()).unwrap_or_default();
                let out: Vec<String> = d
                    .outliers
                    .iter()
                    .take(3)
                    .map(|c| format!("{} ({})", c.name, f(c.value)))
                    .collect();
                vec![
                    d.metric.clone(),
                    d.processes.to_string(),
                    f(d.median),
                    f(d.p90),
                    format!("{} {top}", f(d.max)),
                    if out.is_empty() {
                        "-".into()
                    } else {
                        out.join(", ")
                    },
                ]
            })
            .collect();
        o.push_str(&grid_parts(
            &["metric", "processes", "median", "p90", "max", "outliers"],
            &rows,
            &[false, true, true, true, false, false],
            width,
            &[&[1, 2, 3, 4], &[5]],
        ));
    }
    notes(&mut o, &p.notes);
    o
}
