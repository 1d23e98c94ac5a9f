//! The small pieces every text view is made of: durations in the unit that
//! reads best, shares, SM names and aligned tables.

use std::fmt::Write as _;

/// A duration in the unit that reads best.
pub fn dur(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} µs", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

/// `part` as a percentage of `whole`, `-` when there is no whole.
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

/// An SM's name, with its system when several systems are shown.
pub fn sm_name(sys: &str, sm: &str, show_sys: bool) -> String {
    if show_sys {
        format!("{sys}/{sm}")
    } else {
        sm.to_string()
    }
}

/// `note: ...` lines.
pub fn notes(o: &mut String, notes: &[String]) {
    for n in notes {
        o.push_str(&format!("note: {n}\n"));
    }
}

/// A text table: columns as wide as their widest cell, two spaces apart,
/// right-aligned where `right` says.
pub fn grid(head: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    for r in std::iter::once(&head).chain(rows) {
        let _ = writeln!(o, "{}", grid_line(r, &w, right).trim_end());
    }
    o
}

fn grid_line(cells: &[String], w: &[usize], right: &[bool]) -> String {
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate() {
        let pad = w[i] - c.chars().count();
        if i > 0 {
            l.push_str("  ");
        }
        if right[i] {
            l.push_str(&" ".repeat(pad));
            l.push_str(c);
        } else {
            l.push_str(c);
            if i + 1 < cells.len() {
                l.push_str(&" ".repeat(pad));
            }
        }
    }
    l
}
