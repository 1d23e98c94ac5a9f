//! The text view of what bounds a GPU trace's critical path (HTA's
//! `bound_by` categories plus communication) and, for several ranks, the
//! straggler of each step.

use crate::text::dur;
use critpath_gpu::{GpuBreakdown, RankOffset, RanksReport};
use std::fmt::Write as _;

/// "bound by: cpu 98.1% · gpu compute 1.5% · ..." and the verdict.
pub fn breakdown(b: &GpuBreakdown) -> String {
    let total = b.hta_comparable_ns() + b.cpu_between_ops_ns + b.sync_return_ns;
    if total == 0 {
        return String::new();
    }
    let share = |ns: u64| 100.0 * ns as f64 / total as f64;
    let cats = [
        ("cpu", b.cpu_bound_ns),
        ("gpu compute", b.gpu_compute_bound_ns),
        ("launch delay", b.gpu_kernel_launch_overhead_ns),
        ("kernel-kernel gaps", b.gpu_kernel_kernel_overhead_ns),
        ("communication", b.communication_bound_ns),
        ("cpu between ops", b.cpu_between_ops_ns),
        ("sync return", b.sync_return_ns),
    ];
    let parts: Vec<String> = cats
        .iter()
        .filter(|c| c.1 > 0)
        .map(|(name, ns)| format!("{name} {:.1}% ({})", share(*ns), dur(*ns)))
        .collect();
    let mut o = format!("\nGPU path by category: {}\n", parts.join(" · "));
    if !b.bound.is_empty() {
        let _ = writeln!(
            o,
            "the path is {} (HTA's categories; {} of it counted as HTA does)",
            b.bound.replace('_', " "),
            dur(b.hta_comparable_ns())
        );
    }
    o
}

/// Steps named per straggler in the text (the JSON has every step).
const STEPS_SHOWN: usize = 3;

/// One rank's clock offset, and whether it is aligned as the JSON's
/// `aligned` says: a rank not claimed aligned says why.
fn offset_line(off: &RankOffset) -> String {
    let head = format!(
        "rank {} ({}): clock offset {} ns",
        off.rank, off.file, off.offset_ns
    );
    if off.aligned {
        return format!("{head}, aligned on {} collectives", off.collectives);
    }
    if off.collectives == 0 {
        return format!(
            "{head}, not aligned: it shares no matched collective with the other ranks (collective-unmatched)"
        );
    }
    let against = off
        .against
        .map_or(String::from("the ranks before it"), |r| format!("rank {r}"));
    format!(
        "{head}, not aligned: the ends of its {} collectives matched with {against} spread over {} ns and their collective counts differ (collective-unmatched)",
        off.collectives, off.end_spread_ns
    )
}

/// The clock offsets of the ranks and, per straggler, the steps it held up.
pub fn ranks(r: &RanksReport) -> String {
    let mut o = String::new();
    // The first file's rank is the reference (offset 0); another rank is
    // named when its clock was moved or is not claimed aligned.
    for off in r
        .offsets
        .iter()
        .skip(1)
        .filter(|o| o.offset_ns != 0 || !o.aligned)
    {
        let _ = writeln!(o, "{}", offset_line(off));
    }
    let steps = r.steps.len();
    for g in r.stragglers(STEPS_SHOWN) {
        let _ = writeln!(
            o,
            "rank {} arrived last in {} of {steps} step(s); the others waited {} in all ({} a step)",
            g.rank,
            g.steps,
            dur(g.others_waited_ns),
            dur(g.others_waited_ns / g.steps.max(1))
        );
        let longest: Vec<String> = g
            .longest
            .iter()
            .map(|s| format!("{} {}", s.step, dur(s.others_waited_ns)))
            .collect();
        let more = g.steps.saturating_sub(g.longest.len() as u64);
        let _ = writeln!(
            o,
            "  {}: {}{}",
            if more > 0 { "longest waits" } else { "waits" },
            longest.join(", "),
            if more > 0 {
                format!(" (and {more} more step(s): --json lists every step)")
            } else {
                String::new()
            }
        );
    }
    if r.unmatched > 0 {
        let _ = writeln!(
            o,
            "{} collective kernel(s) had no partner on some rank of their group",
            r.unmatched
        );
    }
    o
}
