//! The small pieces every text view is made of: durations in the unit that
//! reads best, shares, SM names and aligned tables, measured in terminal
//! columns (a CJK character takes two) and elided to a width when asked.

use std::fmt::Write as _;
use unicode_width::UnicodeWidthStr;

/// How many terminal columns `s` takes.
pub fn cols(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut in the middle with `…` to take at most `max` columns (unchanged
/// when it fits).
pub fn elide(s: &str, max: usize) -> String {
    if cols(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let budget = max - 1;
    let (head_w, tail_w) = (budget.div_ceil(2), budget / 2);
    let mut head = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = cols(c.encode_utf8(&mut [0; 4]));
        if used + w > head_w {
            break;
        }
        used += w;
        head.push(c);
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used_t = 0;
    for c in s.chars().rev() {
        let w = cols(c.encode_utf8(&mut [0; 4]));
        if used_t + w > tail_w {
            break;
        }
        used_t += w;
        tail.push(c);
    }
    head.push('…');
    head.extend(tail.into_iter().rev());
    head
}

/// `name` cut in the middle so that a line of `used` other columns and the
/// name takes at most `width` columns (the name keeps at least
/// [`MIN_NAME_COLS`]); unchanged without a width.
pub fn fit(name: &str, used: usize, width: Option<usize>) -> String {
    match width {
        Some(w) => elide(name, w.saturating_sub(used).max(MIN_NAME_COLS)),
        None => name.to_string(),
    }
}

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

/// `n` and the noun it counts, singular for one: `1 record`, `3 records`.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
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
    grid_fit(head, rows, right, None)
}

/// Narrowest a name column is cut to.
const MIN_NAME_COLS: usize = 12;

/// [`grid`] within `width` columns when given: the left-aligned (name)
/// columns, widest first, are narrowed and their cells cut in the middle
/// one column at a time, until the lines fit (or the names are down to
/// [`MIN_NAME_COLS`] each).
pub fn grid_fit(
    head: &[&str],
    rows: &[Vec<String>],
    right: &[bool],
    width: Option<usize>,
) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| cols(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(cols(c));
        }
    }
    if let Some(max) = width {
        narrow(&mut w, head, right, max);
    }
    let mut o = String::new();
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    for r in std::iter::once(&head).chain(rows) {
        let cut: Vec<String> = r.iter().zip(&w).map(|(c, &n)| elide(c, n)).collect();
        let _ = writeln!(o, "{}", grid_line(&cut, &w, right).trim_end());
    }
    o
}

/// Narrows the left-aligned columns of widths `w` until the line takes at
/// most `max` columns or none can be narrowed further.
fn narrow(w: &mut [usize], head: &[&str], right: &[bool], max: usize) {
    let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    while total(w) > max {
        let widest = (0..w.len())
            .filter(|&i| !right[i] && w[i] > MIN_NAME_COLS.max(cols(head[i])))
            .max_by_key(|&i| w[i]);
        let Some(i) = widest else { break };
        w[i] -= 1;
    }
}

fn grid_line(cells: &[String], w: &[usize], right: &[bool]) -> String {
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate() {
        let pad = w[i].saturating_sub(cols(c));
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
