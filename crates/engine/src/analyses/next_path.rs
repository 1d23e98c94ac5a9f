//! The next most critical paths (paper §5.3, Table 2): the longest path
//! once the most critical states' time is removed, step by step, by running
//! the engine again with those states made infinitely fast.

use super::name;
use crate::engine::{Options, Speedup};
use crate::results::{Analysis, StateRow};
use serde::Serialize;

/// The longest path once some states' time is removed.
#[derive(Clone, Debug, Serialize)]
pub struct NextPath {
    pub length_ns: u64,
    /// How much shorter than the critical path, as a fraction (0.36 = 36%).
    pub shorter: f64,
    /// The states whose time was removed, as `SM:STATE` (`SYS/SM:STATE`
    /// outside the local system).
    pub removed: Vec<String>,
    pub states: Vec<StateRow>,
}

/// The `k` next most critical paths. With `remove` empty, each step removes
/// the most critical state of the path before it (cumulatively); otherwise
/// one path with the named states removed. `run` analyzes the trace again
/// with the options given, the ends (`from`, `to`) of `ends`: the base
/// analysis's, so that each next path runs between the same ends.
pub fn next_paths<E>(
    base: &Analysis,
    k: usize,
    remove: &[String],
    ends: &Options,
    mut run: impl FnMut(Options) -> Result<Analysis, E>,
) -> Result<Vec<NextPath>, E> {
    let full = base.critical_path.length_ns;
    let mut removed: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut current = base.states.clone();
    let steps = if remove.is_empty() { k } else { 1 };
    for _ in 0..steps {
        if remove.is_empty() {
            match current
                .iter()
                .find(|s| s.critical_ns > 0 && !removed.contains(&name(s)))
            {
                Some(top) => removed.push(name(top)),
                None => break,
            }
        } else {
            removed = remove.to_vec();
        }
        let speedups = removed
            .iter()
            .map(|t| Speedup {
                target: t.clone(),
                factor: f64::INFINITY,
                // The states it removes itself are table rows, named in full.
                exact: remove.is_empty(),
            })
            .collect();
        let a = run(Options {
            speedups,
            from: ends.from.clone(),
            to: ends.to.clone(),
            ..Default::default()
        })?;
        let len = a.critical_path.length_ns;
        out.push(NextPath {
            length_ns: len,
            shorter: if full > 0 {
                1.0 - len as f64 / full as f64
            } else {
                0.0
            },
            removed: removed.clone(),
            states: a.states.clone(),
        });
        current = a.states;
    }
    Ok(out)
}
