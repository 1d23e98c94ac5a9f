//! The text view of module costs (VTRACE's): count, mean, std, median,
//! min, max and total per module, nested modules indented.

use crate::text::{dur, grid};
use critpath_engine::modules::Modules;

/// The table for people.
pub fn table(m: &Modules, name: &str) -> String {
    let mut o = format!("{name}: module costs (time switched out left out)\n");
    if let Some(c) = m.ns_per_event {
        o.push_str(&format!(
            "overhead correction: {c:.1} ns per annotation event taken out of each instance\n"
        ));
    }
    o.push('\n');
    let rows: Vec<Vec<String>> = m
        .modules
        .iter()
        .map(|r| {
            let indent = if r.parent.is_some() { "  " } else { "" };
            vec![
                format!("{indent}{}", r.module),
                r.count.to_string(),
                dur(r.mean_ns.round() as u64),
                dur(r.std_ns.round() as u64),
                dur(r.median_ns),
                dur(r.min_ns),
                dur(r.max_ns),
                dur(r.total_ns),
            ]
        })
        .collect();
    o.push_str(&grid(
        &[
            "module", "count", "mean", "std", "median", "min", "max", "total",
        ],
        &rows,
        &[false, true, true, true, true, true, true, true],
    ));
    if m.modules.is_empty() {
        o.push_str("(no module instance was measured; see the warnings)\n");
    }
    o
}
