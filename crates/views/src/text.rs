//! The small pieces every text view is made of: names made safe to print,
//! durations in the unit that reads best, shares, SM names and aligned
//! tables, measured in terminal columns (a CJK character takes two) and
//! elided to a width when asked.

use std::borrow::Cow;
use std::fmt::Write as _;
use unicode_width::UnicodeWidthStr;

/// `s` as a terminal may show it: control characters and other characters
/// that print nothing visible (ESC, newlines, tabs, bidirectional
/// overrides, zero-width spaces...) escaped as JSON writes them (`\u001b`,
/// `\n`, `\t`, `\r`; past U+FFFF `\u{1f600}`), as the safety net of the
/// CLI's standard output does, everything printable (accents, CJK, quotes,
/// backslashes) as it is. A trace may name its SMs and states with any
/// string; every text view prints names through this (JSON keeps them
/// exact). Escaping twice changes nothing.
pub fn printable(s: &str) -> Cow<'_, str> {
    if plain_ascii(s) || s.chars().all(shows_as_is) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            _ if shows_as_is(c) => o.push(c),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            _ if u32::from(c) <= 0xffff => {
                let _ = write!(o, "\\u{:04x}", u32::from(c));
            }
            _ => {
                let _ = write!(o, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(o)
}

/// Whether `c` prints as itself: `escape_debug` leaves it alone when it
/// follows another character (so combining marks stay with their base),
/// or it is a quote or a backslash.
fn shows_as_is(c: char) -> bool {
    if (' '..='~').contains(&c) {
        return true;
    }
    let mut buf = [b'a'; 5];
    let n = c.encode_utf8(&mut buf[1..]).len();
    std::str::from_utf8(&buf[..=n]).is_ok_and(|s| s.escape_debug().count() == 2)
}

/// Whether `s` is only printable ASCII (a space to `~`), as most names
/// are: then it shows as it is, a column a byte. A check of whole bytes
/// that vectorises, where a table of thousands of rows would otherwise
/// look up every character.
fn plain_ascii(s: &str) -> bool {
    s.bytes()
        .fold(true, |all, b| all & (b' '..=b'~').contains(&b))
}

/// How many terminal columns `s` takes.
pub fn cols(s: &str) -> usize {
    if plain_ascii(s) {
        return s.len();
    }
    UnicodeWidthStr::width(s)
}

/// `s` [`printable`], cut in the middle with `…` to take at most `max`
/// columns (whole when it fits).
pub fn elide(s: &str, max: usize) -> String {
    let s = &*printable(s);
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
/// [`MIN_NAME_COLS`]); whole without a width (and [`printable`] either way).
pub fn fit(name: &str, used: usize, width: Option<usize>) -> String {
    match width {
        Some(w) => elide(name, w.saturating_sub(used).max(MIN_NAME_COLS)),
        None => printable(name).into_owned(),
    }
}

/// The line `line` makes of `names`, each [`printable`], cut in the middle
/// (the widest first, none below [`MIN_NAME_COLS`]) until the line takes at
/// most `width` columns; whole without a width. `line` gets the names in
/// the order given and puts each once.
pub fn fit_names(
    names: &[&str],
    width: Option<usize>,
    line: impl Fn(&[String]) -> String,
) -> String {
    let whole: Vec<String> = names.iter().map(|n| printable(n).into_owned()).collect();
    let l = line(&whole);
    let Some(max) = width.filter(|&w| cols(&l) > w) else {
        return l;
    };
    let fixed = cols(&line(&vec![String::new(); names.len()]));
    let room = max.saturating_sub(fixed);
    let mut w: Vec<usize> = whole.iter().map(|n| cols(n)).collect();
    while w.iter().sum::<usize>() > room {
        let widest = (0..w.len())
            .filter(|&i| w[i] > MIN_NAME_COLS)
            .max_by_key(|&i| w[i]);
        let Some(i) = widest else { break };
        w[i] -= 1;
    }
    let cut: Vec<String> = whole.iter().zip(&w).map(|(n, &m)| elide(n, m)).collect();
    line(&cut)
}

/// Whether every line of `s` takes at most `width` columns (any without a
/// width).
pub fn fits(s: &str, width: Option<usize>) -> bool {
    width.is_none_or(|w| s.lines().all(|l| cols(l) <= w))
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

/// An SM's name, with its system when several systems are shown
/// ([`printable`]).
pub fn sm_name(sys: &str, sm: &str, show_sys: bool) -> String {
    if show_sys {
        format!("{}/{}", printable(sys), printable(sm))
    } else {
        printable(sm).into_owned()
    }
}

/// `note: ...` lines.
pub fn notes(o: &mut String, notes: &[String]) {
    for n in notes {
        o.push_str(&format!("note: {}\n", printable(n)));
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
/// [`MIN_NAME_COLS`] each). Cells are [`printable`].
pub fn grid_fit(
    head: &[&str],
    rows: &[Vec<String>],
    right: &[bool],
    width: Option<usize>,
) -> String {
    let head: Vec<Cow<'_, str>> = head.iter().map(|h| printable(h)).collect();
    let rows: Vec<Vec<Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c)).collect())
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| cols(h)).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(cols(c));
        }
    }
    if let Some(max) = width {
        let names: Vec<&str> = head.iter().map(|h| &**h).collect();
        narrow(&mut w, &names, right, max);
    }
    let (mut o, mut line) = (String::new(), String::new());
    for r in std::iter::once(&head).chain(&rows) {
        grid_line(&mut line, r, &w, right);
        o.push_str(line.trim_end());
        o.push('\n');
    }
    o
}

/// [`grid`], or, when its lines are wider than `width`, one table per part
/// of `parts` (indices of the columns after the first), each under the
/// first column again, a blank line apart, and [`grid_fit`] to the width.
pub fn grid_parts(
    head: &[&str],
    rows: &[Vec<String>],
    right: &[bool],
    width: Option<usize>,
    parts: &[&[usize]],
) -> String {
    let whole = grid(head, rows, right);
    if fits(&whole, width) {
        return whole;
    }
    let tables: Vec<String> = parts
        .iter()
        .map(|part| {
            let idx: Vec<usize> = std::iter::once(0).chain(part.iter().copied()).collect();
            let head: Vec<&str> = idx.iter().map(|&i| head[i]).collect();
            let right: Vec<bool> = idx.iter().map(|&i| right[i]).collect();
            let rows: Vec<Vec<String>> = rows
                .iter()
                .map(|r| idx.iter().map(|&i| r[i].clone()).collect())
                .collect();
            grid_fit(&head, &rows, &right, width)
        })
        .collect();
    tables.join("\n")
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

/// One line of a grid into `l`: each cell in its column's width `w`
/// (cut in the middle when wider), padded on the side `right` says, two
/// spaces apart; the last left-aligned cell unpadded.
fn grid_line(l: &mut String, cells: &[Cow<'_, str>], w: &[usize], right: &[bool]) {
    l.clear();
    for (i, c) in cells.iter().enumerate() {
        // A cell wider than its column is cut in the middle.
        let cut;
        let c = match cols(c) <= w[i] {
            true => &**c,
            false => {
                cut = elide(c, w[i]);
                cut.as_str()
            }
        };
        let pad = w[i].saturating_sub(cols(c));
        if i > 0 {
            l.push_str("  ");
        }
        if right[i] {
            l.extend(std::iter::repeat_n(' ', pad));
            l.push_str(c);
        } else {
            l.push_str(c);
            if i + 1 < cells.len() {
                l.extend(std::iter::repeat_n(' ', pad));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_what_prints_nothing_and_keeps_the_rest() {
        assert_eq!(
            printable("a\u{1b}[31mb\nc\td\u{7}\0"),
            "a\\u001b[31mb\\nc\\td\\u0007\\u0000"
        );
        assert_eq!(printable("x\u{202e}y\u{200b}"), "x\\u202ey\\u200b");
        assert_eq!(printable("\u{e0001}"), "\\u{e0001}");
        for kept in [
            "解码帧",
            "café",
            "cafe\u{301}",
            "नमस्ते",
            "a\\b \"q\" 'q'",
            "",
        ] {
            assert!(matches!(printable(kept), Cow::Borrowed(_)), "{kept}");
        }
        let once = printable("\u{1b}\n").into_owned();
        assert_eq!(printable(&once), once);
    }

    #[test]
    fn fit_names_cuts_the_widest_first_and_none_below_the_minimum() {
        let line = |n: &[String]| format!("{} waits on {}", n[0], n[1]);
        let (long, short) = ("l".repeat(60), "s".repeat(14));
        let names = [long.as_str(), short.as_str()];
        assert_eq!(
            fit_names(&names, None, line),
            line(&[long.clone(), short.clone()])
        );
        let cut = fit_names(&names, Some(40), line);
        assert_eq!(cols(&cut), 40);
        assert!(cut.ends_with(&format!(" waits on {short}")), "{cut}");
        let narrow = fit_names(&names, Some(20), line);
        assert_eq!(
            narrow,
            format!("llllll…lllll waits on {}", elide(&short, 12))
        );
    }

    #[test]
    fn grid_cells_are_escaped_measured_in_columns_and_cut_to_fit() {
        let head = ["#", "name", "ms"];
        let rows = vec![
            vec!["1".into(), "解码\u{1b}x".into(), "5".into()],
            vec!["10".into(), "a".repeat(30), "12345".into()],
            vec!["2".into(), "tail ".into(), "".into()],
        ];
        let right = [true, false, true];
        // Whole: the escape takes six columns, each CJK character two.
        assert_eq!(
            grid(&head, &rows, &right),
            format!(
                " #  name{}     ms\n 1  解码\\u001bx{}      5\n10  {}  12345\n 2  tail\n",
                " ".repeat(26),
                " ".repeat(19),
                "a".repeat(30),
            )
        );
        // In 30 columns the name column narrows to 19: the long name is
        // cut in the middle, the shorter ones padded.
        let cut = grid_fit(&head, &rows, &right, Some(30));
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(
            lines[2],
            format!("10  {}…{}  12345", "a".repeat(9), "a".repeat(9))
        );
        assert_eq!(
            lines[1],
            format!(" 1  解码\\u001bx{}      5", " ".repeat(8))
        );
        assert!(lines.iter().all(|l| cols(l) <= 30), "{cut}");
    }

    #[test]
    fn grid_parts_splits_a_table_too_wide_under_its_first_column() {
        let head = ["name", "a", "b"];
        let rows = vec![vec!["x".repeat(20), "1".repeat(20), "2".repeat(20)]];
        let right = [false, true, true];
        let parts: &[&[usize]] = &[&[1], &[2]];
        let whole = grid_parts(&head, &rows, &right, None, parts);
        assert_eq!(whole, grid(&head, &rows, &right));
        let split = grid_parts(&head, &rows, &right, Some(50), parts);
        let x = "x".repeat(20);
        let a = format!("{:>20}", "a");
        let b = format!("{:>20}", "b");
        let (ones, twos) = ("1".repeat(20), "2".repeat(20));
        assert_eq!(
            split,
            format!(
                "name{}  {a}\n{x}  {ones}\n\nname{}  {b}\n{x}  {twos}\n",
                " ".repeat(16),
                " ".repeat(16)
            )
        );
    }

    #[test]
    fn table_cells_and_elided_names_are_printable() {
        let g = grid(&["name"], &[vec!["a\nb".into()]], &[false]);
        assert_eq!(g, "name\na\\nb\n");
        assert_eq!(elide("\u{1b}xyz", 40), "\\u001bxyz");
    }
}
