//! `critpath profile` (KTAU's process and kernel profiles) and
//! `critpath packets` (the life of a packet): the trace streams
//! through the engine once, the kernel events of a perf.data recording go
//! to `critpath-kernel`'s collectors as they are decoded, and the tables
//! or JSON are printed here.

use crate::views::{dur, grid};
use crate::Failure;
use critpath_import::AnySource;
use critpath_kernel::packets::{Packets, Tracker, LAYERS};
use critpath_kernel::profile::{Profile, Profiler, StateVisits, Unit};
use critpath_trace::{ReadError, RecordSource};
use std::path::Path;

/// The profile of a trace; for a perf.data recording, also the pid of the
/// recorded command.
pub fn profile(trace: &Path) -> Result<(Profile, Option<u32>, Option<ReadError>), Failure> {
    let mut src = critpath_import::open(trace)?;
    if let AnySource::Perf(p) = &mut src {
        p.observe(Box::new(Profiler::new()));
    }
    let mut states = StateVisits::default();
    let (_, err) = crate::stream_visits(&mut src, trace, |v, _| states.visit(v))?;
    let kernel = match &mut src {
        AnySource::Perf(p) => p.take_observer::<Profiler>(),
        _ => None,
    };
    let target = src
        .scope()
        .from
        .and_then(|sm| critpath_os::names::thread_tid(&sm));
    let profile = kernel.unwrap_or_default().finish(states, src.strings());
    // The recorded command's main thread → its process.
    let target = target.and_then(|tid| {
        profile
            .threads
            .iter()
            .find(|u| u.tid == Some(tid))
            .and_then(|u| u.pid)
    });
    Ok((profile, target, err))
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

fn interrupts_ns(u: &Unit) -> u64 {
    u.interrupts.iter().map(|c| c.ns).sum()
}

/// The process-centric view: a line per process, then one process in
/// detail.
pub fn process_table(p: &Profile, name: &str, top: usize, detail: Option<u32>) -> String {
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
    o.push_str(&grid(
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
        o.push_str(&unit_detail(u));
    }
    notes(&mut o, &p.notes);
    o
}

fn notes(o: &mut String, notes: &[String]) {
    for n in notes {
        o.push_str(&format!("note: {n}\n"));
    }
}

/// One process (or thread): its states inclusive and exclusive, the
/// interrupts it suffered, its functions, its value events.
pub fn unit_detail(u: &Unit) -> String {
    let mut o = format!(
        "{}{}: states (inclusive holds the sub-states)\n",
        u.name,
        if u.threads.len() > 1 {
            format!(" ({} threads)", u.threads.len())
        } else {
            String::new()
        }
    );
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
    o.push_str(&grid(
        &["state", "inclusive", "share", "exclusive", "visits"],
        &rows,
        &[false, true, true, true, true],
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
        o.push_str(&grid(
            &["context", "count", "time", "mean"],
            &rows,
            &[false, true, true, true],
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
        o.push_str(&grid(
            &["function", "calls", "inclusive", "exclusive"],
            &rows,
            &[false, true, true, true],
        ));
    }
    if !u.values.is_empty() {
        o.push_str("\nvalue events\n");
        o.push_str(&values_table(&u.values));
    }
    o
}

fn values_table(v: &[critpath_kernel::profile::ValueRow]) -> String {
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
    grid(
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
    )
}

/// The kernel-wide view: interrupts per CPU, switches, idle time, value
/// events and the distributions across processes.
pub fn kernel_table(p: &Profile, name: &str) -> String {
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
    o.push_str(&grid(
        &["cpu", "context", "count", "time", "mean"],
        &rows,
        &[true, false, true, true, true],
    ));
    if !p.values.is_empty() {
        o.push_str("\nvalue events\n");
        o.push_str(&values_table(&p.values));
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
        o.push_str(&grid(
            &["metric", "processes", "median", "p90", "max", "outliers"],
            &rows,
            &[false, true, true, true, false, false],
        ));
    }
    notes(&mut o, &p.notes);
    o
}

/// Follows the packets of a perf.data recording.
pub fn packets(trace: &Path, limit: usize) -> Result<(Packets, Option<ReadError>), Failure> {
    let mut src = critpath_import::open(trace)?;
    match &mut src {
        AnySource::Perf(p) => p.observe(Box::new(Tracker::new(limit))),
        other => {
            return Err(Failure::Input(format!(
                "{}: a {:?} trace has no kernel packet events; `critpath packets` reads a perf.data recording made with `critpath record --net --syscalls -o FILE -- CMD`",
                trace.display(),
                other.format()
            )))
        }
    }
    let (_, err) = crate::stream_visits(&mut src, trace, |_, _| {})?;
    let tracker = match &mut src {
        AnySource::Perf(p) => p.take_observer::<Tracker>(),
        _ => None,
    };
    Ok((tracker.unwrap_or_else(|| Tracker::new(0)).finish(), err))
}

/// Shares per layer, per-buffer costs and a timeline of the first packets.
pub fn packets_table(p: &Packets, name: &str) -> String {
    let mut o = format!(
        "{name}: {} packets ({} delivered to a thread, {} unfinished)",
        p.packets, p.delivered, p.unfinished
    );
    if p.sends > 0 {
        o.push_str(&format!(
            " from {} send calls, {:.0} bytes per call",
            p.sends, p.bytes_per_send
        ));
    }
    o.push_str("\n\n");
    let rows: Vec<Vec<String>> = p
        .layers
        .iter()
        .map(|l| {
            let per_send = p
                .per_send_ns
                .iter()
                .find(|(n, _)| *n == l.layer)
                .map_or("-".to_string(), |(_, v)| dur(v.round() as u64));
            vec![
                l.layer.clone(),
                l.packets.to_string(),
                dur(l.mean_ns.round() as u64),
                per_send,
                dur(l.total_ns),
                format!("{:.1}%", 100.0 * l.share),
            ]
        })
        .collect();
    o.push_str(&grid(
        &["layer", "packets", "mean", "per send", "total", "share"],
        &rows,
        &[false, true, true, true, true, true],
    ));
    if p.packets == 0 {
        o.push_str("(no packet was followed to the end of its life)\n");
    }
    if !p.timeline.is_empty() {
        o.push_str(&format!(
            "\ntimeline of the first {} packets (letters: {})\n",
            p.timeline.len(),
            LAYERS
                .iter()
                .map(|l| format!("{}={l}", letter(l)))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let t0 = p.timeline.iter().map(|r| r.start).min().unwrap_or(0);
        let rows: Vec<Vec<String>> = p
            .timeline
            .iter()
            .map(|r| {
                let total: u64 = r.layers.iter().map(|l| l.1).sum();
                vec![
                    r.skb.clone(),
                    r.len.to_string(),
                    r.sender.clone().unwrap_or_else(|| "-".into()),
                    r.receiver.clone().unwrap_or_else(|| "-".into()),
                    format!("+{}", dur(r.start - t0)),
                    dur(total),
                    bar(&r.layers, total, 40),
                ]
            })
            .collect();
        o.push_str(&grid(
            &[
                "skb", "len", "sender", "receiver", "start", "life", "layers",
            ],
            &rows,
            &[false, true, false, false, true, true, false],
        ));
    }
    notes(&mut o, &p.notes);
    o
}

fn letter(layer: &str) -> char {
    match layer {
        "socket" => 'k',
        "syscall" => 'y',
        "softirq" => 'S',
        "stack" => 's',
        "copy" => 'c',
        _ => layer.chars().next().unwrap_or('?'),
    }
}

/// A packet's life drawn in `width` columns, a letter per layer.
fn bar(layers: &[(String, u64)], total: u64, width: usize) -> String {
    let mut o = String::new();
    let mut acc = 0u64;
    for (name, ns) in layers {
        acc += ns;
        let upto = if total == 0 {
            0
        } else {
            (acc as f64 / total as f64 * width as f64).round() as usize
        };
        let mut n = upto.saturating_sub(o.chars().count());
        if n == 0 && *ns > 0 && o.chars().count() < width {
            n = 1;
        }
        o.extend(std::iter::repeat_n(letter(name), n));
    }
    o
}
