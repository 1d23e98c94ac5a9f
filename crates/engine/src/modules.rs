//! Module costs between event pairs (as in VTRACE): a module is the
//! time an SM spends between a begin event and an end event (a transition
//! into, or out of, named states), with the time it is switched out
//! (`runnable`, `blocked:*`) left out; per module the count, mean, standard
//! deviation, median, min and max; modules inside others on the same SM are
//! nested, and each parent gets a derived `OTHER` (its time outside its
//! children). Computed from the engine's state visits, so every trace
//! format serves.

use crate::observer::Visit;
use critpath_trace::{Interner, Sym};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// `*` and `?` wildcards over a whole name.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// A module's begin or end: the SM enters, or leaves, a state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Point {
    Enter(String),
    Leave(String),
}

impl Point {
    /// `STATE` or `enter:STATE`, `leave:STATE`.
    pub fn parse(s: &str) -> Point {
        if let Some(x) = s.strip_prefix("leave:") {
            Point::Leave(x.to_string())
        } else {
            Point::Enter(s.strip_prefix("enter:").unwrap_or(s).to_string())
        }
    }
    fn state(&self) -> &str {
        match self {
            Point::Enter(s) | Point::Leave(s) => s,
        }
    }
}

/// One module of the configuration.
#[derive(Clone, Debug)]
pub struct ModuleSpec {
    pub name: String,
    /// The SMs it applies to (a glob); all when `None`.
    pub sm: Option<String>,
    pub begin: Point,
    pub end: Point,
}

/// A module's statistics (or a parent's derived `OTHER`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ModuleRow {
    pub module: String,
    /// The module its instances were nested in (for `OTHER`: its parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    pub std_ns: f64,
    pub median_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Annotation events inside the instances (for the overhead correction).
    pub events: u64,
}

/// A problem with the configuration against this trace.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ModuleWarning {
    pub module: String,
    pub message: String,
}

/// The result: rows in configuration order, each parent followed by its
/// `OTHER`; and the warnings.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Modules {
    pub modules: Vec<ModuleRow>,
    pub warnings: Vec<ModuleWarning>,
    /// ns per event taken out of every instance, when corrected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_event: Option<f64>,
}

/// An instance being measured.
#[derive(Clone, Copy, Debug)]
struct Open {
    module: usize,
    time: u64,
    events: u64,
    /// Time of instances nested inside it.
    children: u64,
}

#[derive(Default)]
struct Acc {
    durations: Vec<u64>,
    events: u64,
    /// Per parent module: instances nested in it, and their time.
    parents: FxHashMap<usize, u64>,
    /// Time inside it not in nested instances.
    other: Vec<u64>,
}

/// What the tracker knows of one SM.
struct PerSm {
    /// The modules that apply to it.
    mods: Vec<usize>,
    /// Instances begun and not ended, innermost last.
    open: Vec<Open>,
    /// The last state it was in that is not a pause.
    last_real: Option<Sym>,
    /// It is switched out or interrupted.
    paused: bool,
}

/// Does `p` (from the configuration) name leaving (or entering) `st`?
fn same(p: &Point, leave: bool, st: &str) -> bool {
    match p {
        Point::Leave(s) => leave && s == st,
        Point::Enter(s) => !leave && s == st,
    }
}

/// Turns the engine's state visits into module instances.
pub struct Tracker {
    specs: Vec<ModuleSpec>,
    sms: FxHashMap<(Sym, Sym), PerSm>,
    acc: Vec<Acc>,
    /// States seen (for warnings that name the nearest).
    seen_states: FxHashMap<Sym, ()>,
    matched_begin: Vec<bool>,
    unended: Vec<u64>,
    /// Which states pause an instance.
    pause: fn(&str) -> Pause,
}

/// Whether a state pauses a module instance: the names are the caller's
/// (for a kernel recording, critpath-os knows them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// An ordinary state: module time runs.
    No,
    /// The thread is switched out: module time stops, events still count.
    SwitchedOut,
    /// The thread is interrupted: the state it returns to goes on.
    Interrupted,
}

impl Tracker {
    pub fn new(specs: Vec<ModuleSpec>, pause: fn(&str) -> Pause) -> Tracker {
        let n = specs.len();
        Tracker {
            specs,
            pause,
            sms: FxHashMap::default(),
            acc: (0..n).map(|_| Acc::default()).collect(),
            seen_states: FxHashMap::default(),
            matched_begin: vec![false; n],
            unended: vec![0; n],
        }
    }

    /// One visit (visits of an SM come in time order). A visit of a
    /// switched-out or interrupted state pauses the SM; coming back to the
    /// state it was in is not a new entry, and a state is left when the SM
    /// goes on to another one (so a preemption neither ends nor begins an
    /// instance).
    pub fn visit(&mut self, v: &Visit, strings: &Interner) {
        let Visit::State {
            sys,
            sm,
            state,
            start,
            end,
        } = *v
        else {
            return;
        };
        self.seen_states.entry(state).or_insert(());
        let specs = &self.specs;
        let per = self.sms.entry((sys, sm)).or_insert_with(|| {
            let name = strings.resolve(sm);
            let mods = (0..specs.len())
                .filter(|&i| specs[i].sm.as_deref().is_none_or(|g| glob(g, name)))
                .collect();
            PerSm {
                mods,
                open: Vec::new(),
                last_real: None,
                paused: false,
            }
        });
        if per.mods.is_empty() {
            return;
        }
        let st = strings.resolve(state);
        let pause = (self.pause)(st);
        let out = pause == Pause::SwitchedOut;
        let mut ended = Vec::new();
        if pause != Pause::No {
            per.paused = true;
        } else {
            let resumed = per.paused && per.last_real == Some(state);
            per.paused = false;
            if !resumed {
                let left = per.last_real.map(|l| strings.resolve(l));
                let events = [(true, left), (false, Some(st))];
                for (leave, at) in events {
                    let Some(at) = at else { continue };
                    // Ends first, then begins: one event can do both.
                    for &m in per.mods.iter() {
                        if same(&specs[m].end, leave, at) {
                            close(&mut per.open, m, &mut ended);
                        }
                    }
                    for &m in per.mods.iter() {
                        if same(&specs[m].begin, leave, at) {
                            per.open.push(Open {
                                module: m,
                                time: 0,
                                events: 0,
                                children: 0,
                            });
                            self.matched_begin[m] = true;
                        }
                    }
                }
                per.last_real = Some(state);
            }
        }
        let dur = end - start;
        for o in per.open.iter_mut() {
            o.events += 1;
            if !out {
                o.time += dur;
            }
        }
        self.record(ended);
    }

    /// Adds ended instances to their modules' statistics.
    fn record(&mut self, ended: Vec<(Open, Option<usize>)>) {
        for (o, parent) in ended {
            let a = &mut self.acc[o.module];
            a.durations.push(o.time);
            a.events += o.events;
            a.other.push(o.time.saturating_sub(o.children));
            if let Some(p) = parent {
                *a.parents.entry(p).or_default() += 1;
            }
        }
    }

    /// The table; `cost` (ns per annotation event) is taken out of every
    /// instance when given.
    pub fn finish(mut self, strings: &Interner, cost: Option<f64>) -> Modules {
        // The end of the trace (or of the SM's life) leaves its last state.
        let mut ended = Vec::new();
        for per in self.sms.values_mut() {
            if let Some(last) = per.last_real.map(|l| strings.resolve(l)) {
                let leaving: Vec<usize> = per
                    .open
                    .iter()
                    .map(|o| o.module)
                    .filter(|&m| same(&self.specs[m].end, true, last))
                    .collect();
                for m in leaving {
                    close(&mut per.open, m, &mut ended);
                }
            }
            for o in &per.open {
                self.unended[o.module] += 1;
            }
        }
        self.record(ended);
        let mut out = Modules {
            ns_per_event: cost,
            ..Default::default()
        };
        let names: Vec<String> = self.specs.iter().map(|s| s.name.clone()).collect();
        let states: Vec<&str> = self
            .seen_states
            .keys()
            .map(|&s| strings.resolve(s))
            .collect();
        for (i, spec) in self.specs.iter().enumerate() {
            let a = &mut self.acc[i];
            if a.durations.is_empty() {
                let what = if !self.matched_begin[i] {
                    let s = spec.begin.state();
                    format!(
                        "its begin event (state \"{s}\"{}) never occurs in this trace{}",
                        spec.sm
                            .as_ref()
                            .map(|g| format!(" of an SM matching {g}"))
                            .unwrap_or_default(),
                        if states.contains(&s) {
                            String::new()
                        } else {
                            crate::engine::nearest(s, &states)
                        }
                    )
                } else {
                    let s = spec.end.state();
                    format!(
                        "it begins {} time(s) but its end event (state \"{s}\") never follows on the same SM{}",
                        self.unended[i],
                        if states.contains(&s) {
                            String::new()
                        } else {
                            crate::engine::nearest(s, &states)
                        }
                    )
                };
                out.warnings.push(ModuleWarning {
                    module: spec.name.clone(),
                    message: format!("module {}: {what}; no instance measured", spec.name),
                });
                continue;
            }
            if self.unended[i] > 0 {
                out.warnings.push(ModuleWarning {
                    module: spec.name.clone(),
                    message: format!(
                        "module {}: {} instance(s) had not ended when the trace did; they are left out",
                        spec.name, self.unended[i]
                    ),
                });
            }
            let per_event = cost.unwrap_or(0.0);
            let correct = |d: &mut Vec<u64>, events_each: f64| {
                if per_event > 0.0 {
                    for x in d.iter_mut() {
                        *x = x.saturating_sub((per_event * events_each).round() as u64);
                    }
                }
            };
            let n = a.durations.len() as f64;
            let mean_events = a.events as f64 / n;
            correct(&mut a.durations, mean_events);
            let parent = a
                .parents
                .iter()
                .max_by_key(|(_, &c)| c)
                .map(|(&p, _)| names[p].clone());
            out.modules
                .push(row(&spec.name, parent, &mut a.durations, a.events));
            let has_children = self.acc.iter().any(|c| c.parents.contains_key(&i));
            if has_children {
                let a = &mut self.acc[i];
                correct(&mut a.other, 0.0);
                out.modules.push(row(
                    &format!("{}/OTHER", spec.name),
                    Some(spec.name.clone()),
                    &mut a.other,
                    0,
                ));
            }
        }
        out
    }
}

/// Closes the innermost open instance of module `m`. Instances opened after
/// it stay open (modules may overlap); the one opened before it, if any, is
/// its parent and counts its time as a child's.
fn close(open: &mut Vec<Open>, m: usize, ended: &mut Vec<(Open, Option<usize>)>) {
    let Some(pos) = open.iter().rposition(|o| o.module == m) else {
        return;
    };
    let o = open.remove(pos);
    let parent = pos.checked_sub(1).map(|p| {
        open[p].children += o.time;
        open[p].module
    });
    ended.push((o, parent));
}

fn row(name: &str, parent: Option<String>, d: &mut [u64], events: u64) -> ModuleRow {
    d.sort_unstable();
    let n = d.len() as f64;
    let total: u64 = d.iter().sum();
    let mean = total as f64 / n;
    let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    ModuleRow {
        module: name.to_string(),
        parent,
        count: d.len() as u64,
        total_ns: total,
        mean_ns: mean,
        std_ns: var.sqrt(),
        median_ns: d[d.len() / 2],
        min_ns: d[0],
        max_ns: d[d.len() - 1],
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel recording's names, as critpath-os gives them.
    fn os_pause(state: &str) -> Pause {
        if state == "runnable" || state.starts_with("blocked:") {
            Pause::SwitchedOut
        } else if state.starts_with("interrupted:") {
            Pause::Interrupted
        } else {
            Pause::No
        }
    }

    fn visits(strings: &mut Interner, sm: &str, seq: &[(&str, u64, u64)]) -> Vec<Visit> {
        let (sys, sm) = (strings.intern("local"), strings.intern(sm));
        seq.iter()
            .map(|&(s, a, b)| Visit::State {
                sys,
                sm,
                state: strings.intern(s),
                start: a,
                end: b,
            })
            .collect()
    }

    fn spec(name: &str, begin: &str, end: &str) -> ModuleSpec {
        ModuleSpec {
            name: name.into(),
            sm: None,
            begin: Point::parse(begin),
            end: Point::parse(end),
        }
    }

    #[test]
    fn nested_modules_switched_out_time_and_other() {
        let mut st = Interner::new();
        // request: recv .. reply; parse inside it: parse .. leave:parse.
        let v = visits(
            &mut st,
            "srv",
            &[
                ("idle", 0, 10),
                ("recv", 10, 20),
                ("parse", 20, 50),
                ("runnable", 50, 80), // switched out: not counted
                ("compute", 80, 100),
                ("reply", 100, 105),
                ("idle", 105, 200),
                ("recv", 200, 210),
                ("parse", 210, 220),
                ("compute", 220, 260),
                ("reply", 260, 262),
            ],
        );
        let mut t = Tracker::new(
            vec![
                spec("request", "recv", "reply"),
                spec("parse", "parse", "leave:parse"),
            ],
            os_pause,
        );
        for x in &v {
            t.visit(x, &st);
        }
        let m = t.finish(&st, None);
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        let r = &m.modules[0];
        assert_eq!((r.module.as_str(), r.count), ("request", 2));
        // 10 + 30 + 20 = 60 and 10 + 10 + 40 = 60.
        assert_eq!((r.total_ns, r.min_ns, r.max_ns), (120, 60, 60));
        assert_eq!(r.std_ns, 0.0);
        let o = &m.modules[1];
        assert_eq!(o.module, "request/OTHER");
        // 60 - 30 and 60 - 10.
        assert_eq!((o.total_ns, o.min_ns, o.max_ns), (80, 30, 50));
        let p = &m.modules[2];
        assert_eq!(
            (p.module.as_str(), p.parent.as_deref()),
            ("parse", Some("request"))
        );
        assert_eq!((p.count, p.total_ns, p.median_ns), (2, 40, 30));
        assert_eq!(p.mean_ns, 20.0);
        assert_eq!(p.std_ns, 10.0);
    }

    #[test]
    fn a_module_whose_begin_never_occurs_names_the_nearest_states_once() {
        let mut st = Interner::new();
        let v = visits(&mut st, "srv", &[("recv", 0, 10), ("reply", 10, 20)]);
        let mut t = Tracker::new(vec![spec("request", "recieve", "reply")], os_pause);
        for x in &v {
            t.visit(x, &st);
        }
        let m = t.finish(&st, None);
        let w = &m.warnings[0].message;
        assert!(
            w.contains("never occurs in this trace; nearest: recv, reply; no instance"),
            "{w}"
        );
    }

    #[test]
    fn a_preemption_neither_ends_nor_begins_an_instance() {
        let mut st = Interner::new();
        let v = visits(
            &mut st,
            "t",
            &[
                ("work", 0, 10),
                ("runnable", 10, 20),
                ("work", 20, 30),
                ("interrupted:irq:eth0", 30, 33),
                ("work", 33, 40),
                ("idle", 40, 50),
                ("work", 50, 60),
                ("idle", 60, 61),
            ],
        );
        let mut t = Tracker::new(
            vec![
                spec("w", "work", "leave:work"),
                spec("cycle", "work", "work"),
            ],
            os_pause,
        );
        for x in &v {
            t.visit(x, &st);
        }
        let m = t.finish(&st, None);
        let w = &m.modules[0];
        // 10 + 10 + 3 (interrupt) + 7, then 10; the runnable 10 left out.
        assert_eq!((w.count, w.max_ns, w.min_ns), (2, 30, 10));
        let c = &m.modules[1];
        // work .. work: one complete cycle (0..50 less runnable), one open.
        assert_eq!((c.count, c.total_ns), (1, 40));
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    }

    #[test]
    fn events_that_never_occur_are_warned_about_with_the_nearest_names() {
        let mut st = Interner::new();
        let v = visits(&mut st, "a", &[("work", 0, 5), ("idle", 5, 9)]);
        let mut t = Tracker::new(
            vec![spec("m", "wrok", "idle"), spec("n", "work", "done")],
            os_pause,
        );
        for x in &v {
            t.visit(x, &st);
        }
        let m = t.finish(&st, None);
        assert!(m.modules.is_empty());
        assert_eq!(m.warnings.len(), 2);
        assert!(
            m.warnings[0].message.contains("never occurs")
                && m.warnings[0].message.contains("work")
        );
        assert!(
            m.warnings[1].message.contains("never follows")
                && m.warnings[1].message.contains("done")
        );
    }

    #[test]
    fn per_event_correction_and_globs() {
        let mut st = Interner::new();
        let mut v = visits(
            &mut st,
            "w1",
            &[("a", 0, 100), ("b", 100, 150), ("c", 150, 160)],
        );
        v.extend(visits(&mut st, "x1", &[("a", 0, 100), ("c", 100, 110)]));
        let mut s = spec("ab", "a", "c");
        s.sm = Some("w*".into());
        let mut t = Tracker::new(vec![s], os_pause);
        for x in &v {
            t.visit(x, &st);
        }
        let m = t.finish(&st, Some(10.0));
        let r = &m.modules[0];
        // Only w1: 150 ns over two events, less 10 ns each.
        assert_eq!((r.count, r.events, r.total_ns), (1, 2, 130));
        assert!(glob("a*c?", "abbcd") && !glob("a*c?", "abbc") && glob("*", ""));
    }
}
