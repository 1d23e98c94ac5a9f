//! A sampling profile with its call graph, as gprof prints it (the
//! pfmon/q-tools view): from sampled call stacks, per function
//! the samples in it (self) and under it (inclusive), its callers and
//! callees with the samples along each arc, and a Graphviz drawing of the
//! arcs that matter.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlatRow {
    pub function: String,
    /// Samples whose innermost frame is this function.
    #[serde(rename = "self")]
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack (once each).
    pub inclusive: u64,
    pub self_share: f64,
    pub inclusive_share: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Arc {
    pub caller: String,
    pub callee: String,
    /// Samples taken with the callee called from the caller.
    pub samples: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CallGraph {
    pub samples: u64,
    /// By self samples, most first.
    pub flat: Vec<FlatRow>,
    /// By samples, most first.
    pub arcs: Vec<Arc>,
}

/// Adds up stacks into a call graph.
#[derive(Default)]
pub struct Builder {
    samples: u64,
    selfs: FxHashMap<String, u64>,
    incl: FxHashMap<String, u64>,
    arcs: FxHashMap<(String, String), u64>,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// One sample's stack, innermost frame first.
    pub fn add(&mut self, stack: &[String]) {
        let Some(leaf) = stack.first() else { return };
        self.samples += 1;
        *self.selfs.entry(leaf.clone()).or_default() += 1;
        // Recursion counts a function, and an arc, once per sample.
        let mut seen = FxHashSet::default();
        for f in stack {
            if seen.insert(f) {
                *self.incl.entry(f.clone()).or_default() += 1;
            }
        }
        let mut arcs = FxHashSet::default();
        for w in stack.windows(2) {
            let (callee, caller) = (&w[0], &w[1]);
            if arcs.insert((caller, callee)) {
                *self
                    .arcs
                    .entry((caller.clone(), callee.clone()))
                    .or_default() += 1;
            }
        }
    }

    pub fn finish(self) -> CallGraph {
        let n = self.samples.max(1) as f64;
        let mut flat: Vec<FlatRow> = self
            .incl
            .iter()
            .map(|(f, &i)| {
                let s = self.selfs.get(f).copied().unwrap_or(0);
                FlatRow {
                    function: f.clone(),
                    self_samples: s,
                    inclusive: i,
                    self_share: s as f64 / n,
                    inclusive_share: i as f64 / n,
                }
            })
            .collect();
        flat.sort_by(|a, b| {
            b.self_samples
                .cmp(&a.self_samples)
                .then(b.inclusive.cmp(&a.inclusive))
                .then_with(|| a.function.cmp(&b.function))
        });
        let mut arcs: Vec<Arc> = self
            .arcs
            .into_iter()
            .map(|((caller, callee), samples)| Arc {
                caller,
                callee,
                samples,
            })
            .collect();
        arcs.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| (&a.caller, &a.callee).cmp(&(&b.caller, &b.callee)))
        });
        CallGraph {
            samples: self.samples,
            flat,
            arcs,
        }
    }
}

impl CallGraph {
    /// The callers of `f` and the callees of `f`, most samples first.
    pub fn neighbours(&self, f: &str) -> (Vec<&Arc>, Vec<&Arc>) {
        (
            self.arcs.iter().filter(|a| a.callee == f).collect(),
            self.arcs.iter().filter(|a| a.caller == f).collect(),
        )
    }

    /// Graphviz: functions with at least `min_share` of the samples
    /// inclusive, arcs between them labelled with their samples.
    pub fn dot(&self, min_share: f64) -> String {
        let keep: FxHashMap<&str, &FlatRow> = self
            .flat
            .iter()
            .filter(|r| r.inclusive_share >= min_share)
            .map(|r| (r.function.as_str(), r))
            .collect();
        let mut names: Vec<&&str> = keep.keys().collect();
        names.sort();
        let id: FxHashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (**n, i)).collect();
        let mut o =
            String::from("digraph callgraph {\n  node [shape=box, fontname=\"monospace\"];\n");
        for n in &names {
            let r = keep[**n];
            // Darker for more self time.
            let shade = 95 - (60.0 * r.self_share).round() as i64;
            let _ = writeln!(
                o,
                "  f{} [label=\"{}\\nself {:.1}% | incl {:.1}%\", style=filled, fillcolor=\"gray{}\"];",
                id[**n],
                escape(n),
                100.0 * r.self_share,
                100.0 * r.inclusive_share,
                shade.clamp(30, 95)
            );
        }
        let n = self.samples.max(1) as f64;
        for a in &self.arcs {
            if let (Some(x), Some(y)) = (id.get(a.caller.as_str()), id.get(a.callee.as_str())) {
                let share = a.samples as f64 / n;
                if share >= min_share {
                    let _ = writeln!(
                        o,
                        "  f{x} -> f{y} [label=\"{}\", penwidth={:.1}];",
                        a.samples,
                        1.0 + 4.0 * share
                    );
                }
            }
        }
        o.push_str("}\n");
        o
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn self_inclusive_and_arcs_as_gprof_counts_them() {
        let mut b = Builder::new();
        for _ in 0..6 {
            b.add(&st("compute handle main"));
        }
        for _ in 0..2 {
            b.add(&st("parse handle main"));
        }
        b.add(&st("handle main"));
        // Recursion: fib twice on one stack counts once.
        b.add(&st("fib fib main"));
        let g = b.finish();
        assert_eq!(g.samples, 10);
        let row = |f: &str| g.flat.iter().find(|r| r.function == f).unwrap().clone();
        assert_eq!((row("main").self_samples, row("main").inclusive), (0, 10));
        assert_eq!(
            (row("handle").self_samples, row("handle").inclusive),
            (1, 9)
        );
        assert_eq!(
            (row("compute").self_samples, row("compute").inclusive),
            (6, 6)
        );
        assert_eq!(row("fib").inclusive, 1);
        assert_eq!(g.flat[0].function, "compute");
        let (callers, callees) = g.neighbours("handle");
        assert_eq!(callers.len(), 1);
        assert_eq!(
            (callers[0].caller.as_str(), callers[0].samples),
            ("main", 9)
        );
        let c: Vec<(&str, u64)> = callees
            .iter()
            .map(|a| (a.callee.as_str(), a.samples))
            .collect();
        assert_eq!(c, vec![("compute", 6), ("parse", 2)]);
        let fib = g.arcs.iter().find(|a| a.caller == "fib").unwrap();
        assert_eq!(fib.samples, 1);
        let dot = g.dot(0.15);
        assert!(dot.contains("compute\\nself 60.0% | incl 60.0%"), "{dot}");
        assert!(!dot.contains("fib"), "under 15%: {dot}");
        assert_eq!(dot.matches("->").count(), 3, "{dot}");
    }
}
