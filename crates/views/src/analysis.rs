//! The text views of an [`Analysis`]: the criticality table and summary,
//! the path's edges, the diagnostics, the next most critical paths, the
//! overhead correction, the windows and the clock offsets of merged traces.

use crate::text::{cols, counted, dur, elide, fit_names, fits, grid_fit, printable, sm_name};
use critpath_engine::analyses::Lever;
use critpath_engine::results::{CriticalPath, PathSegment, WindowRow};
use critpath_engine::Analysis;
use std::borrow::Cow;
use std::fmt::Write as _;

/// `a` with every name and message its text shows made [`printable`]
/// (borrowed when they all are already): the text views print this, the
/// JSON the analysis as it is.
pub fn printable_analysis(a: &Analysis) -> Cow<'_, Analysis> {
    let shown = |s: &str| matches!(printable(s), Cow::Borrowed(_));
    let p = &a.critical_path;
    let mut all = vec![&p.start.sys, &p.start.sm, &p.end.sys, &p.end.sm];
    for s in &a.states {
        all.extend([&s.sys, &s.sm, &s.state]);
        all.extend(s.blame.iter().map(|b| &b.sm));
    }
    all.extend(a.diagnostics.iter().map(|d| &d.message));
    for seg in a.path.iter().flatten() {
        all.extend([&seg.sys, &seg.sm, &seg.state, &seg.from_sm]);
    }
    for w in a.windows.iter().flatten().flat_map(|w| &w.states) {
        all.extend([&w.sys, &w.sm, &w.state]);
    }
    if all.into_iter().all(|s| shown(s)) {
        return Cow::Borrowed(a);
    }
    let mut a = a.clone();
    let fix = |s: &mut String| {
        if let Cow::Owned(o) = printable(s) {
            *s = o;
        }
    };
    let p = &mut a.critical_path;
    [
        &mut p.start.sys,
        &mut p.start.sm,
        &mut p.end.sys,
        &mut p.end.sm,
    ]
    .into_iter()
    .for_each(fix);
    for s in &mut a.states {
        [&mut s.sys, &mut s.sm, &mut s.state]
            .into_iter()
            .for_each(fix);
        s.blame.iter_mut().for_each(|b| fix(&mut b.sm));
    }
    a.diagnostics.iter_mut().for_each(|d| fix(&mut d.message));
    for seg in a.path.iter_mut().flatten() {
        [&mut seg.sys, &mut seg.sm, &mut seg.state, &mut seg.from_sm]
            .into_iter()
            .for_each(fix);
    }
    for w in a.windows.iter_mut().flatten().flat_map(|w| &mut w.states) {
        [&mut w.sys, &mut w.sm, &mut w.state]
            .into_iter()
            .for_each(fix);
    }
    Cow::Owned(a)
}

/// How the text of an analysis is laid out for where it goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout {
    /// The columns a line may take (`None`: no limit, names in full).
    pub width: Option<usize>,
    /// How many states a default `--top` left out (a footer says so).
    pub folded: usize,
}

/// Whether SM names are shown with their system.
fn shows_sys(a: &Analysis) -> bool {
    let p = &a.critical_path;
    a.states.iter().any(|s| s.sys != "local") || p.start.sys != p.end.sys
}

/// The verdict's what-if: the path with the top state twice as fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Faster {
    /// The predicted path's length.
    pub length_ns: u64,
    /// Edges with time the speed-up scaled (`stats.scaled_edges` of the
    /// prediction): 0 when the state's time is all on links.
    pub scaled_edges: u64,
}

impl From<critpath_engine::Prediction> for Faster {
    fn from(p: critpath_engine::Prediction) -> Self {
        Faster {
            length_ns: p.length_ns,
            scaled_edges: p.scaled_edges,
        }
    }
}

/// The verdict, a line: the state that bounds the path (the first of its
/// levers: see [`critpath_engine::analyses::levers`]), its share, and,
/// when `faster` gives the path's length with that state twice as fast,
/// how much shorter the path gets. In a recording of a program whose
/// path is most in other programs' or the kernel's states, it says so
/// first and names the program's own top state after. Wider than `width`,
/// it takes a line per clause (see [`fit_verdict`]). Empty when no state
/// is on the path.
pub fn verdict(a: &Analysis, faster: Option<Faster>, width: Option<usize>) -> String {
    let p = &a.critical_path;
    let lever = critpath_engine::analyses::levers(a, 1).pop();
    let sys = shows_sys(a);
    let name = lever
        .as_ref()
        .map(|l| lever_name(l, sys))
        .unwrap_or_default();
    let len = dur(p.length_ns);
    let of_path = format!("of {} {len} path", article(&len));
    // Each clause with the name it may cut to fit.
    let mut clauses = match (critpath_engine::analyses::outside(a), &lever) {
        (Some((share, row)), _) => {
            let most = format!(
                "{}: {}",
                sm_name(&row.sys, &row.sm, sys),
                printable(&row.state)
            );
            let own = match &lever {
                Some(l) => format!("the program's own: {name} — {}", pct(l.criticality)),
                None => "none of the program's threads is on it".to_string(),
            };
            let rest = format!(
                "bound by the rest of the machine — {} {of_path} (most: {most}, {})",
                pct(share),
                pct(row.criticality)
            );
            vec![(rest, most), (own, name)]
        }
        (None, Some(l)) => {
            let head = format!("bound by {name} — {} {of_path}", pct(l.criticality));
            vec![(head, name)]
        }
        (None, None) => return String::new(),
    };
    if let Some((f, l)) = faster.zip(lever.as_ref()) {
        clauses.push((twice_as_fast(p, l.critical_ns, f), String::new()));
    }
    let one = clauses.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>();
    let mut o = one.join("; ");
    if let Some(w) = width.filter(|&w| cols(&o) > w) {
        o = fit_verdict(clauses, w);
    }
    o.push('\n');
    o
}

/// A lever as the verdict names it: `SM: STATE`, and how many threads'
/// states it sums up.
fn lever_name(l: &Lever, sys: bool) -> String {
    let name = format!("{}: {}", sm_name(&l.sys, &l.sm, sys), printable(&l.state));
    match l.threads {
        1 => name,
        n => format!("{name} ({n} threads)"),
    }
}

/// A share of the path as the verdict says it.
fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// What the verdict's what-if predicts with a state of `critical` ns on
/// the path twice as fast, the path being `p` and the prediction `faster`.
fn twice_as_fast(
    p: &CriticalPath,
    critical: u64,
    Faster {
        length_ns: f,
        scaled_edges,
    }: Faster,
) -> String {
    // The path's length if it kept its edges: half the state's share
    // off, give or take the rounding of each scaled edge.
    let kept = p.length_ns.saturating_sub(critical / 2);
    let other = if f > kept.saturating_add(p.edges / 2 + 1) {
        " (another path takes over)"
    } else {
        ""
    };
    let gain = if scaled_edges == 0 && f == p.length_ns {
        // Nothing was scaled: the state's path time is on links
        // (sends, awaited transitions), which keep their weights.
        "no edge changed (its path time is a link's wait)".to_string()
    } else if f == 0 {
        "the path vanishes".to_string()
    } else if f >= p.length_ns {
        format!("no shorter{other}")
    } else if p.length_ns as f64 / f as f64 >= 1.1 {
        format!("{:.1}× shorter", p.length_ns as f64 / f as f64)
    } else {
        let pct = 100.0 * (p.length_ns - f) as f64 / p.length_ns as f64;
        format!("{pct:.1}% shorter{other}")
    };
    format!("2× faster → {gain}")
}

/// The verdict's clauses (each with the name it may cut) in `w` columns:
/// each on a line of its own, the later ones indented, and a name cut in
/// the middle only if its line is still too wide.
fn fit_verdict(clauses: Vec<(String, String)>, w: usize) -> String {
    let last = clauses.len() - 1;
    let lines: Vec<String> = (clauses.into_iter().enumerate())
        .map(|(i, (c, name))| {
            let indent = if i == 0 { "" } else { "  " };
            let line = format!("{indent}{c}{}", if i < last { ";" } else { "" });
            if cols(&line) <= w || name.is_empty() {
                return line;
            }
            let short = elide(&name, cols(&name).saturating_sub(cols(&line) - w).max(12));
            line.replacen(&name, &short, 1)
        })
        .collect();
    lines.join("\n")
}

/// "a" or "an" before a number said aloud ("an 830 ns", "an 11 µs").
fn article(num: &str) -> &'static str {
    let lead: String = num.chars().take_while(|c| c.is_ascii_digit()).collect();
    let eleven = (lead == "11" || lead == "18")
        || (lead.len() % 3 == 2 && (lead.starts_with("11") || lead.starts_with("18")));
    if lead.starts_with('8') || eleven {
        "an"
    } else {
        "a"
    }
}

/// The criticality table and summary for people.
pub fn table(a: &Analysis, file: &str) -> String {
    table_in(a, file, Layout::default())
}

/// [`table`] laid out by `layout`: names cut to the width, a footer for
/// the states left out.
pub fn table_in(a: &Analysis, file: &str, layout: Layout) -> String {
    let a = &*printable_analysis(a);
    let file = printable(file);
    let mut o = String::new();
    let p = &a.critical_path;
    let show_sys = shows_sys(a);
    let _ = writeln!(
        o,
        "{file}: {}, {}, {}",
        counted(a.stats.records, "record"),
        counted(a.stats.nodes, "node"),
        counted(a.stats.state_machines, "state machine")
    );
    if p.found {
        let from = sm_name(&p.start.sys, &p.start.sm, show_sys);
        let to = sm_name(&p.end.sys, &p.end.sm, show_sys);
        let line = |from: &str, to: &str| {
            format!(
                "critical path: {}{}, {}, from {from} at t={} to {to} at t={}",
                dur(p.length_ns),
                if p.length_ns >= 1000 {
                    format!(" ({} ns)", p.length_ns)
                } else {
                    String::new()
                },
                counted(p.edges, "edge"),
                p.start.t,
                p.end.t
            )
        };
        let l = fit_names(&[&from, &to], layout.width, |n| line(&n[0], &n[1]));
        let _ = writeln!(o, "{l}");
    } else {
        let _ = writeln!(
            o,
            "critical path: none (no node to end at; see diagnostics)"
        );
    }
    if !a.states.is_empty() {
        let rows: Vec<Vec<String>> = a
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    (i + 1).to_string(),
                    sm_name(&s.sys, &s.sm, show_sys),
                    s.state.clone(),
                    s.visits.to_string(),
                    dur(s.total_ns),
                    dur(s.critical_ns),
                    format!("{:.2}%", s.criticality * 100.0),
                ]
            })
            .collect();
        let head = [
            "#",
            "state machine",
            "state",
            "visits",
            "total",
            "critical",
            "criticality",
        ];
        o.push('\n');
        o.push_str(&grid_fit(
            &head,
            &rows,
            &[true, false, false, true, true, true, true],
            layout.width,
        ));
        if layout.folded > 0 {
            let more = counted(layout.folded as u64, "more state");
            let _ = writeln!(
                o,
                "… {more} folded (--top N shows more, --json all of them)"
            );
        }
        o.push_str(&beyond_total(a, show_sys));
        blame_lines(&mut o, a, show_sys);
    }
    if let Some(path) = &a.path {
        let edges = counted(path.len() as u64, "edge");
        let _ = writeln!(o, "\ncritical path, in time order ({edges}):");
        for seg in path {
            o.push_str(&edge_line(seg, show_sys, layout.width));
            o.push('\n');
        }
    }
    o.push_str(&crate::diagnostics::text(&a.diagnostics));
    o
}

/// What a line says of the names it is given.
type Describe = fn(&[String]) -> String;

/// An edge of the path in time order: its times, then who was in which
/// state, names cut to fit `width`; on a line of its own below the times
/// when that is still too wide.
fn edge_line(seg: &PathSegment, show_sys: bool, width: Option<usize>) -> String {
    let who = sm_name(&seg.sys, &seg.sm, show_sys);
    let times = format!(
        "  {:>12} .. {:<12} {:>10}  ",
        seg.start_ns,
        seg.end_ns,
        dur(seg.end_ns - seg.start_ns)
    );
    let names = [who.as_str(), &seg.state, &seg.from_sm];
    let (names, what): (&[&str], Describe) = if seg.inter {
        (&names, |n| {
            format!("{} waits on {} in '{}'", n[0], n[2], n[1])
        })
    } else if seg.from_sm != seg.sm {
        // A `held` piece: the time another SM waited for this one.
        (&names, |n| {
            format!("{} in '{}', held for {}", n[0], n[1], n[2])
        })
    } else {
        (&names[..2], |n| format!("{} in '{}'", n[0], n[1]))
    };
    let one = fit_names(names, width, |n| format!("{times}{}", what(n)));
    if fits(&one, width) {
        return one;
    }
    let below = fit_names(names, width, |n| format!("    {}", what(n)));
    format!("{}\n{below}", times.trim_end())
}

/// A footnote for states whose critical time exceeds their total time.
fn beyond_total(a: &Analysis, show_sys: bool) -> String {
    let over: Vec<String> = a
        .states
        .iter()
        .filter(|s| s.critical_ns > s.total_ns)
        .map(|s| {
            format!(
                "{}: {} ({} critical, {} total)",
                sm_name(&s.sys, &s.sm, show_sys),
                s.state,
                dur(s.critical_ns),
                dur(s.total_ns)
            )
        })
        .collect();
    if over.is_empty() {
        return String::new();
    }
    format!(
        "\nnote: critical time exceeds total time for {}: it ends with a recv of a message sent before it began, and a recv charges the whole time since the send to the state it ends (docs/path-rules.md)\n",
        over.join("; ")
    )
}

/// Under the table, who held what each state waited for (most critical
/// states first): "chain:12 runnable — held by hog:13 52%, hog:14 45%".
fn blame_lines(o: &mut String, a: &Analysis, show_sys: bool) {
    let mut first = true;
    for s in a.states.iter().filter(|s| !s.blame.is_empty()).take(10) {
        let all: u64 = s.blame.iter().map(|b| b.ns).sum();
        if all == 0 {
            continue;
        }
        if first {
            o.push('\n');
            first = false;
        }
        // Holders of at least 1% by name (three at least), the rest counted.
        let share = |ns: u64| ns as f64 * 100.0 / all as f64;
        let named = s
            .blame
            .iter()
            .enumerate()
            .take_while(|(i, b)| *i < 3 || share(b.ns) >= 1.0)
            .count();
        let mut held: Vec<String> = s.blame[..named]
            .iter()
            .map(|b| format!("{} {:.0}%", b.sm, share(b.ns)))
            .collect();
        if named < s.blame.len() {
            let rest: u64 = s.blame[named..].iter().map(|b| b.ns).sum();
            let n = s.blame.len() - named;
            held.push(format!("{n} more {:.0}%", share(rest)));
        }
        let _ = writeln!(
            o,
            "{} {} — held by {} ({} of path time on the holders)",
            sm_name(&s.sys, &s.sm, show_sys),
            s.state,
            held.join(", "),
            dur(all)
        );
    }
}

/// The next most critical paths (paper §5.3, Table 2), names cut to fit
/// `width` when given.
pub fn next_paths(
    next: &[critpath_engine::analyses::NextPath],
    top: usize,
    width: Option<usize>,
) -> String {
    let mut o = String::new();
    for (i, p) in next.iter().enumerate() {
        let head = format!(
            "next most critical path{}: {} ({} ns), {:.1}% shorter,",
            if next.len() > 1 {
                format!(" #{}", i + 1)
            } else {
                String::new()
            },
            dur(p.length_ns),
            p.length_ns,
            p.shorter * 100.0,
        );
        // Too wide for a line, what was removed goes on the next one.
        let removed: Vec<&str> = p.removed.iter().map(String::as_str).collect();
        let one = fit_names(&removed, None, |n| {
            format!("{head} with {} removed", n.join(", "))
        });
        let l = match fits(&one, width) {
            true => one,
            false => {
                let with = fit_names(&removed, width, |n| {
                    format!("  with {} removed", n.join(", "))
                });
                format!("{head}\n{with}")
            }
        };
        let _ = writeln!(o, "\n{l}");
        for (j, s) in p
            .states
            .iter()
            .filter(|s| s.critical_ns > 0)
            .take(top)
            .enumerate()
        {
            let lead = format!("  {:>3}  {:>7.2}%  ", j + 1, s.criticality * 100.0);
            let l = fit_names(&[&s.sm, &s.state], width, |n| {
                format!("{lead}{}: {}", n[0], n[1])
            });
            let _ = writeln!(o, "{l}");
        }
    }
    o
}

/// What `--correct-overhead` removed.
pub fn correction(a: &Analysis) -> String {
    let Some(c) = &a.overhead_correction else {
        return String::new();
    };
    format!(
        "\noverhead correction: {:.1} ns per annotation event x {} events: {} removed from the states' totals, {} from the critical path (it was {})\n",
        c.ns_per_event,
        c.events,
        dur(c.removed_total_ns),
        dur(c.removed_path_ns),
        dur(c.length_before_ns)
    )
}

/// The most windows printed; more are folded with a message.
pub const MAX_WINDOWS: usize = 1_000;

/// The critical path by time window (folded when there are more than
/// [`MAX_WINDOWS`]): each window's three most critical states, within
/// `width` when given (names cut, as many of the three as fit).
pub fn windows(a: &Analysis, width: Option<usize>) -> String {
    let a = &*printable_analysis(a);
    let Some(ws) = &a.windows else {
        return String::new();
    };
    let mut o = String::from("\ncritical path by time window:\n");
    if ws.len() > MAX_WINDOWS {
        let span = ws.last().map_or(0, |w| w.end_ns) - ws.first().map_or(0, |w| w.start_ns);
        let _ = writeln!(
            o,
            "  {} windows are too many to print (at most {MAX_WINDOWS}); a window of {} or wider gives fewer (--json lists them all)",
            ws.len(),
            dur(span.div_ceil(MAX_WINDOWS as u64).max(1))
        );
        return o;
    }
    for w in ws {
        o.push_str(&window_line(w, width));
        o.push('\n');
    }
    o
}

/// A window's times and its most critical states (three, fewer when they
/// do not fit `width` with their names cut).
fn window_line(w: &WindowRow, width: Option<usize>) -> String {
    let times = format!(
        "  {:>14} .. {:<14} {:>10}  ",
        w.start_ns,
        w.end_ns,
        dur(w.path_ns)
    );
    let mut k = w.states.len().min(3);
    loop {
        let tops = &w.states[..k];
        let names: Vec<&str> = tops
            .iter()
            .flat_map(|s| [s.sm.as_str(), &s.state])
            .collect();
        let l = fit_names(&names, width, |n| {
            let each: Vec<String> = tops
                .iter()
                .zip(n.chunks(2))
                .map(|(s, n)| format!("{}: {} {:.0}%", n[0], n[1], s.share * 100.0))
                .collect();
            format!("{times}{}", each.join(", "))
        });
        if k <= 1 || width.is_none_or(|w| cols(&l) <= w) {
            return l;
        }
        k -= 1;
    }
}

/// How the clocks of several traces were aligned.
pub fn offsets(o: &[critpath_import::multi::ClockOffset]) -> String {
    let mut t = String::from("clocks aligned from send/recv pairs between the traces:\n");
    for x in o {
        let _ = writeln!(
            t,
            "  {:<30} system {:<12} offset {:>12} ns  ({}; {} out, {} in)",
            printable(&x.file),
            printable(&x.sys),
            x.offset_ns,
            x.method,
            x.links_out,
            x.links_in
        );
    }
    t.push('\n');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use critpath_engine::results::StateRow;

    fn row(sm: &str, state: &str, critical_ns: u64) -> StateRow {
        StateRow {
            sys: "vm".into(),
            sm: sm.into(),
            state: state.into(),
            visits: 1,
            total_ns: critical_ns,
            critical_ns,
            criticality: critical_ns as f64 / 1e9,
            slack_ns: None,
            slack_mean_ns: None,
            blame: Vec::new(),
        }
    }

    /// A recording of a program (`main`, two `slow` threads) beside a
    /// compiler, on a path of 1 s.
    fn recording(rows: Vec<StateRow>) -> Analysis {
        let mut a = Analysis::default();
        a.critical_path.found = true;
        a.critical_path.length_ns = 1_000_000_000;
        a.critical_path.edges = 10;
        a.states = rows;
        a.program = ["main:1", "slow:2", "slow:3"].map(String::from).to_vec();
        a
    }

    const HALF: Faster = Faster {
        length_ns: 800_000_000,
        scaled_edges: 4,
    };

    #[test]
    fn a_verdict_names_the_programs_threads_of_one_name_together() {
        let a = recording(vec![
            row("main:1", "running", 300_000_000),
            row("slow:2", "running", 200_000_000),
            row("slow:3", "running", 200_000_000),
            row("cc1:9", "running", 100_000_000),
        ]);
        assert_eq!(
            verdict(&a, Some(HALF), None),
            "bound by vm/slow:*: running (2 threads) — 40% of a 1.000 s path; 2× faster → 1.2× shorter\n"
        );
    }

    #[test]
    fn a_path_mostly_outside_the_program_says_so_first() {
        let a = recording(vec![
            row("cc1:9", "running", 500_000_000),
            row("main:1", "running", 300_000_000),
            row("kworker/0:1:7", "running", 100_000_000),
        ]);
        let one = "bound by the rest of the machine — 60% of a 1.000 s path (most: vm/cc1:9: running, 50%); the program's own: vm/main:1: running — 30%; 2× faster → 1.2× shorter";
        assert_eq!(verdict(&a, Some(HALF), None), format!("{one}\n"));
        // Too wide: a clause a line; narrower still, a name is cut.
        let cut = verdict(&a, Some(HALF), Some(80));
        let first = cut.lines().next().unwrap();
        assert!(first.contains("(most: vm/cc1…nning, 50%);"), "{cut}");
        assert!(cols(first) < 86, "{cut}");
        let lines = verdict(&a, Some(HALF), Some(90));
        assert_eq!(
            lines.lines().collect::<Vec<_>>(),
            [
                "bound by the rest of the machine — 60% of a 1.000 s path (most: vm/cc1:9: running, 50%);",
                "  the program's own: vm/main:1: running — 30%;",
                "  2× faster → 1.2× shorter"
            ]
        );
        // No thread of the program on the path: no what-if either.
        let b = recording(vec![row("cc1:9", "running", 500_000_000)]);
        assert_eq!(
            verdict(&b, Some(HALF), None),
            "bound by the rest of the machine — 50% of a 1.000 s path (most: vm/cc1:9: running, 50%); none of the program's threads is on it\n"
        );
    }
}
