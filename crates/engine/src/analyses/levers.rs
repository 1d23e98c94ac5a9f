//! The states the verdict and the report's what-ifs name: the levers a
//! user has. On most traces they are the table's most critical rows. A
//! recording of a program (`Analysis::program`) names only its threads'
//! states, other programs' and the kernel's time being none of the
//! program's to change, and sums up the states of its threads of one name
//! no other program's thread has (`COMM:*`): a program that starts a thread per task has each task's
//! share on a row of its own, and speeding up the task's code speeds up
//! them all. There a thread's lever is its own time on the path: the time
//! charged to it as the holder of a CPU another thread waited for (the
//! waiters' `blame`) is not, since a thread that keeps wanting the CPU
//! takes the same share of it when faster (docs/os-graph.md, "Limits");
//! the waiter's own work is the lever.

use crate::engine::{state_target, without_id};
use crate::results::{Analysis, StateRow};
use crate::Speedup;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A state to speed up: one SM's, or that of every thread of one name.
#[derive(Clone, Debug, PartialEq)]
pub struct Lever {
    pub sys: String,
    /// The SM's name, or `COMM:*` for the threads of that name.
    pub sm: String,
    pub state: String,
    /// The SMs whose rows it sums up (1: the SM's own row).
    pub threads: usize,
    /// Their time on the path, and its share of the path.
    pub critical_ns: u64,
    pub criticality: f64,
}

impl Lever {
    fn of(row: &StateRow) -> Lever {
        Lever {
            sys: row.sys.clone(),
            sm: row.sm.clone(),
            state: row.state.clone(),
            threads: 1,
            critical_ns: row.critical_ns,
            criticality: row.criticality,
        }
    }

    /// The state made `factor` times faster: the one row's state named in
    /// full, or every thread's of the name (`COMM:*:STATE`).
    pub fn speedup(&self, factor: f64) -> Speedup {
        match self.threads {
            1 => Speedup::of_state(&self.sys, &self.sm, &self.state, factor),
            _ => Speedup {
                target: state_target(&self.sys, &self.sm, &self.state),
                factor,
                exact: false,
            },
        }
    }
}

/// The `n` most critical levers of `a` (states with time on its path),
/// most critical first: its rows, or, in a recording of a program, its
/// threads' states with those of threads of one name summed up (ties in
/// the order of the table).
pub fn levers(a: &Analysis, n: usize) -> Vec<Lever> {
    if !a.critical_path.found {
        return Vec::new();
    }
    let rows = a.states.iter().filter(|s| s.critical_ns > 0);
    if a.program.is_empty() {
        return rows.take(n).map(Lever::of).collect();
    }
    let own = super::program_sms(a);
    // A name another program's thread has too is no group: `COMM:*`
    // would speed that thread up as well.
    let shared: HashSet<(&str, &str)> = (a.states.iter())
        .filter(|s| !own.contains(s.sm.as_str()))
        .filter_map(|s| Some((s.sys.as_str(), without_id(&s.sm)?)))
        .collect();
    let mut held = held_on(a);
    let len = a.critical_path.length_ns.max(1) as f64;
    let mut out: Vec<Lever> = Vec::new();
    let mut at: HashMap<(&str, &str, &str), usize> = HashMap::default();
    for row in rows.filter(|s| own.contains(s.sm.as_str())) {
        // The time charged to it as a holder leaves its rows first.
        let h = held.entry((&row.sys, &row.sm)).or_default();
        let ns = row.critical_ns - (*h).min(row.critical_ns);
        *h -= (*h).min(row.critical_ns);
        if ns == 0 {
            continue;
        }
        let comm = without_id(&row.sm)
            .filter(|c| !shared.contains(&(row.sys.as_str(), *c)))
            .unwrap_or(&row.sm);
        match at.get(&(row.sys.as_str(), comm, row.state.as_str())) {
            Some(&i) => {
                let l = &mut out[i];
                l.threads += 1;
                l.sm = format!("{comm}:*");
                l.critical_ns += ns;
            }
            None => {
                at.insert((&row.sys, comm, &row.state), out.len());
                out.push(Lever {
                    critical_ns: ns,
                    ..Lever::of(row)
                });
            }
        }
    }
    out.iter_mut()
        .for_each(|l| l.criticality = l.critical_ns as f64 / len);
    // Stable: equal times keep the table's order.
    out.sort_by_key(|l| std::cmp::Reverse(l.critical_ns));
    out.truncate(n);
    out
}

/// Per (system, SM): the path time charged to it as the holder of what
/// other SMs' states waited for (their `blame`).
fn held_on(a: &Analysis) -> HashMap<(&str, &str), u64> {
    let mut held: HashMap<(&str, &str), u64> = HashMap::default();
    for s in &a.states {
        for b in s.blame.iter().filter(|b| b.sm != s.sm) {
            *held.entry((&s.sys, &b.sm)).or_default() += b.ns;
        }
    }
    held
}

/// The rest of the machine on the path of a recording of a program whose
/// most critical row is not one of the program's threads: the share of
/// the path outside the program's threads and that row.
pub fn outside(a: &Analysis) -> Option<(f64, &StateRow)> {
    let top = a.states.first().filter(|s| s.critical_ns > 0)?;
    let len = a.critical_path.length_ns;
    if a.program.is_empty() || !a.critical_path.found || len == 0 {
        return None;
    }
    let own = super::program_sms(a);
    if own.contains(top.sm.as_str()) {
        return None;
    }
    let ns: u64 = (a.states.iter())
        .filter(|s| !own.contains(s.sm.as_str()))
        .map(|s| s.critical_ns)
        .sum();
    Some(((ns as f64 / len as f64).min(1.0), top))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sm: &str, state: &str, critical_ns: u64) -> StateRow {
        StateRow {
            sys: "vm".into(),
            sm: sm.into(),
            state: state.into(),
            visits: 1,
            total_ns: critical_ns,
            critical_ns,
            criticality: critical_ns as f64 / 1000.0,
            slack_ns: None,
            slack_mean_ns: None,
            blame: Vec::new(),
        }
    }

    fn recording(rows: Vec<StateRow>, program: &[&str]) -> Analysis {
        let mut a = Analysis::default();
        a.critical_path.found = true;
        a.critical_path.length_ns = 1000;
        a.states = rows;
        a.program = program.iter().map(|s| s.to_string()).collect();
        a
    }

    #[test]
    fn a_trace_of_no_program_has_its_rows_as_levers() {
        let mut a = recording(vec![row("a", "x", 300), row("b", "y", 200)], &[]);
        a.states.push(row("c", "z", 0));
        let l = levers(&a, 5);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].sm.as_str(), l[0].threads), ("a", 1));
        assert!(l[0].speedup(2.0).exact);
        assert!(outside(&a).is_none());
    }

    #[test]
    fn threads_of_one_name_sum_up_and_other_programs_are_no_lever() {
        let a = recording(
            vec![
                row("rustc:9", "running", 300),
                row("main:1", "running", 150),
                row("slow:2", "running", 100),
                row("slow:3", "running", 100),
                row("slow:4", "runnable", 50),
                row("worker:5", "running", 20),
            ],
            &["main:1", "slow:2", "slow:3", "slow:4", "worker:5"],
        );
        let l = levers(&a, 3);
        let got: Vec<_> = l.iter().map(|l| (&*l.sm, &*l.state, l.threads)).collect();
        assert_eq!(
            got,
            [
                ("slow:*", "running", 2),
                ("main:1", "running", 1),
                ("slow:4", "runnable", 1)
            ]
        );
        assert_eq!(l[0].critical_ns, 200);
        assert!((l[0].criticality - 0.2).abs() < 1e-12);
        let s = l[0].speedup(2.0);
        assert_eq!((s.target.as_str(), s.exact), ("vm/slow:*:running", false));
        let (share, top) = outside(&a).expect("rustc tops the table");
        assert_eq!(top.sm, "rustc:9");
        assert!((share - 0.3).abs() < 1e-12);
        // Another program's thread named `slow` too: each of the
        // program's is a lever of its own.
        let mut b = a.clone();
        b.states.push(row("slow:77", "running", 10));
        let l = levers(&b, 1);
        assert_eq!((l[0].sm.as_str(), l[0].threads), ("main:1", 1));
    }

    #[test]
    fn time_charged_to_a_holder_of_a_cpu_is_no_lever() {
        let mut waits = row("chain:2", "runnable", 0);
        waits.blame = ["hog:3", "hog:4"]
            .map(|sm| crate::results::Blame {
                sm: sm.into(),
                ns: 300,
            })
            .to_vec();
        let a = recording(
            vec![
                row("hog:3", "running", 310),
                row("hog:4", "running", 300),
                row("chain:2", "running", 200),
                waits,
            ],
            &["chain:2", "hog:3", "hog:4"],
        );
        let l = levers(&a, 3);
        let got: Vec<_> = l.iter().map(|l| (&*l.sm, l.critical_ns)).collect();
        assert_eq!(got, [("chain:2", 200), ("hog:3", 10)]);
        assert!((l[1].criticality - 0.01).abs() < 1e-12);
    }

    #[test]
    fn a_program_on_top_has_no_outside() {
        let a = recording(
            vec![
                row("main:1", "running", 600),
                row("rustc:9", "running", 300),
            ],
            &["main:1"],
        );
        assert!(outside(&a).is_none());
        assert_eq!(levers(&a, 2).len(), 1);
    }
}
